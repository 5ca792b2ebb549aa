// The HLO module grammar, read straight off the mapped text:
//
//   module      := [`HloModule` name [`:`] (`,` attr)*] table* computation*
//   table       := (`FileNames` | `FunctionNames` | `FileLocations` |
//                   `StackFrames`) (int (string | `{...}`))*
//   computation := [`ENTRY`] name [`(` (name `:` shape),* `)` `->` shape] `{`
//                  instruction* `}`
//   instruction := [`ROOT`] name `=` shape opcode `(` operands `)` (`,` attr)*
//   operands    := ((shape)? name),*  |  int (parameter)  |  literal (constant)
//   attr        := name `=` raw-value
//   shape       := type `[` dims `]` [layout] | `(` shape,* `)` | `b(` shape `)`
//
// Comments (`//`, `/* */`, including `/*index=N*/`) may appear anywhere.
#include "frontend/hlo/HloReader.h"

#include <unordered_set>

namespace mdl::frontend::hlo {

namespace {

class Reader {
public:
  Reader(const char *b, const char *e, const HloReadOptions &o) : c_(b, e), opts_(o) {}

  void run(HloModule &m) {
    if (c_.atEnd())
      c_.fail("the file holds no HLO computation");
    header(m);
    while (!c_.atEnd()) {
      HloComputation comp;
      computation(comp);
      if (comp.isEntry) {
        if (m.entry >= 0)
          Cursor::failAt(comp.pos, "a second ENTRY computation '" + comp.name + "'");
        m.entry = int(m.computations.size());
      }
      m.computations.push_back(std::move(comp));
    }
    if (m.computations.empty())
      c_.fail("the file holds no HLO computation");
    if (m.entry < 0)
      m.entry = int(m.computations.size()) - 1;
  }

private:
  // `HloModule name[:], attr=value, ...` and the location tables.
  void header(HloModule &m) {
    Cursor probe = c_;
    if (probe.name() == "HloModule") {
      c_.name();
      std::string_view n = c_.name();
      if (n.empty())
        c_.fail("expected the module name after 'HloModule', found " + c_.found());
      m.name = std::string(Cursor::bare(n));
      c_.accept(':');
      std::vector<HloAttr> ignored;
      attributes(ignored);
    }
    while (true) {
      Cursor t = c_;
      std::string_view w = t.name();
      if (w != "FileNames" && w != "FunctionNames" && w != "FileLocations" && w != "StackFrames")
        return;
      char next = t.peek();
      if (!(next >= '0' && next <= '9'))
        return; // a computation that happens to have that name
      c_ = t;
      while (true) {
        char d = c_.peek();
        if (!(d >= '0' && d <= '9'))
          break;
        c_.integer("as a table index");
        char v = c_.peek();
        if (v == '"')
          c_.quoted();
        else if (v == '{')
          c_.skipBalanced();
        else
          c_.fail("expected a string or '{' in a location table, found " + c_.found());
      }
    }
  }

  void computation(HloComputation &comp) {
    c_.skipSpace();
    comp.pos = c_.pos();
    Cursor probe = c_;
    if (probe.name() == "ENTRY") {
      c_.name();
      comp.isEntry = true;
      c_.skipSpace();
      comp.pos = c_.pos();
    }
    std::string_view n = c_.name();
    if (n.empty())
      c_.fail("expected a computation name, found " + c_.found());
    comp.name = std::string(Cursor::bare(n));
    if (c_.peek() == '(') {
      c_.advance();
      if (!c_.accept(')')) {
        do {
          if (c_.name().empty())
            c_.fail("expected a parameter name, found " + c_.found());
          c_.expect(':', "after a parameter name");
          shape(0);
        } while (c_.accept(','));
        c_.expect(')', "after the parameter list");
      }
      if (!c_.acceptArrow())
        c_.fail("expected '->' after the parameter list, found " + c_.found());
      shape(0);
    }
    c_.expect('{', "to open computation '" + comp.name + "'");
    std::unordered_set<std::string> names;
    while (c_.peek() != '}') {
      if (c_.atEnd())
        Cursor::failAt(comp.pos, "computation '" + comp.name + "' is not closed with '}'");
      HloInstruction inst;
      instruction(inst);
      if (!names.insert(inst.name).second)
        Cursor::failAt(inst.pos, "instruction '" + inst.name + "' is defined twice in '" +
                                     comp.name + "'");
      if (inst.isRoot) {
        if (comp.root >= 0)
          Cursor::failAt(inst.pos, "a second ROOT in computation '" + comp.name + "'");
        comp.root = int(comp.instructions.size());
      }
      comp.instructions.push_back(std::move(inst));
      if (c_.offset() >= nextReport_) {
        nextReport_ = c_.offset() + (size_t(1) << 20);
        if (opts_.progress)
          opts_.progress(c_.offset());
      }
    }
    c_.advance();
    std::vector<HloAttr> ignored; // `}, execution_thread="..."`
    attributes(ignored);
    if (comp.instructions.empty())
      Cursor::failAt(comp.pos, "computation '" + comp.name + "' has no instructions");
    if (comp.root < 0)
      comp.root = int(comp.instructions.size()) - 1;
  }

  void instruction(HloInstruction &inst) {
    Cursor probe = c_;
    if (probe.name() == "ROOT" && probe.peek() != '=') {
      c_.name();
      inst.isRoot = true;
    }
    c_.skipSpace();
    inst.pos = c_.pos();
    std::string_view n = c_.name();
    if (n.empty())
      c_.fail("expected an instruction name, found " + c_.found());
    inst.name = std::string(Cursor::bare(n));
    c_.expect('=', "after instruction name '" + inst.name + "'");
    inst.shape = shape(0);
    c_.skipSpace();
    HloPos opPos = c_.pos();
    std::string_view op = c_.name();
    if (op.empty() || op[0] == '%')
      c_.fail("expected an opcode, found " + c_.found());
    inst.opcode = std::string(op);
    if (c_.here() != '(')
      Cursor::failAt(opPos, "expected '(' after opcode '" + inst.opcode + "', found " + c_.found());
    c_.advance();
    if (inst.opcode == "parameter") {
      inst.parameterNumber = c_.integer("as the parameter number");
      if (inst.parameterNumber < 0)
        c_.fail("a parameter number cannot be negative");
      c_.expect(')', "after the parameter number");
    } else if (inst.opcode == "constant") {
      readLiteral(c_, inst, opts_, weightKey(inst.name));
    } else {
      operands(inst);
    }
    attributes(inst.attrs);
  }

  // A key for the weight file: the instruction name, made unique.
  std::string weightKey(const std::string &name) {
    std::string key = name;
    for (int i = 2; !keys_.insert(key).second; ++i)
      key = name + "#" + std::to_string(i);
    return key;
  }

  void operands(HloInstruction &inst) {
    if (c_.accept(')'))
      return;
    do {
      char ch = c_.peek();
      if (ch == '(') {
        shape(0); // inline tuple operand shape
      } else {
        Cursor probe = c_;
        std::string_view w = probe.name();
        if (!w.empty() && w[0] != '%' && (probe.here() == '[' || (w == "b" && probe.here() == '(')))
          shape(0); // inline array operand shape
      }
      HloOperand o;
      c_.skipSpace();
      o.pos = c_.pos();
      std::string_view n = c_.name();
      if (n.empty())
        c_.fail("expected an operand name, found " + c_.found());
      o.name = std::string(Cursor::bare(n));
      inst.operands.push_back(std::move(o));
    } while (c_.accept(','));
    c_.expect(')', "after the operands of '" + inst.name + "'");
  }

  // `, name=value` repeated; the list ends at the first token that is not a
  // comma followed by `name=`.
  void attributes(std::vector<HloAttr> &out) {
    while (true) {
      Cursor probe = c_;
      if (!probe.accept(','))
        return;
      std::string_view n = probe.name();
      if (n.empty() || !probe.accept('='))
        c_.fail("expected 'name=value' after ',', found " + probe.found());
      c_ = probe;
      HloAttr a;
      a.name = std::string(n);
      c_.skipBlanks();
      a.pos = c_.pos();
      a.value = std::string(c_.rawValue());
      out.push_back(std::move(a));
    }
  }

  HloShape shape(int depth) {
    if (depth > kMaxNesting)
      c_.fail("shape nested more than " + std::to_string(kMaxNesting) + " deep");
    HloShape s;
    char ch = c_.peek();
    if (ch == '(') {
      c_.advance();
      s.isTuple = true;
      if (!c_.accept(')')) {
        do
          s.elements.push_back(shape(depth + 1));
        while (c_.accept(','));
        c_.expect(')', "to close a tuple shape");
      }
      return s;
    }
    c_.skipSpace();
    HloPos at = c_.pos();
    std::string_view t = c_.name();
    if (t.empty() || t[0] == '%')
      Cursor::failAt(at, "expected a shape, found " + c_.found());
    if (t == "b" && c_.here() == '(') {
      c_.advance();
      s = shape(depth + 1);
      s.buffer = true;
      c_.expect(')', "to close a buffer shape");
      return s;
    }
    s.type = std::string(t);
    for (char k : s.type)
      if (!((k >= 'a' && k <= 'z') || (k >= '0' && k <= '9')))
        Cursor::failAt(at, "'" + s.type + "' is not an element type");
    if (c_.here() != '[')
      Cursor::failAt(at, "expected '[' after element type '" + s.type + "', found " + c_.found());
    c_.advance();
    int64_t elements = 1;
    if (!c_.accept(']')) {
      do {
        c_.skipSpace();
        bool bounded = false;
        if (c_.here() == '?') {
          c_.advance();
          s.dynamic = true;
          s.dims.push_back(1);
          continue;
        }
        if (c_.here() == '<' && c_.at(1) == '=') {
          c_.advance(2);
          bounded = true;
          s.dynamic = true;
          if (c_.peek() == '?') {
            c_.advance();
            s.dims.push_back(1);
            continue;
          }
        }
        c_.skipSpace();
        HloPos dimPos = c_.pos();
        int64_t d = c_.integer("as a dimension");
        if (d < 0)
          Cursor::failAt(dimPos, "dimension " + std::to_string(d) + " is negative");
        if (d > 0 && elements > (int64_t(1) << 56) / d)
          c_.fail("shape has too many elements");
        elements *= d;
        s.dims.push_back(d);
        (void)bounded;
      } while (c_.accept(','));
      c_.expect(']', "to close the dimensions");
    }
    if (s.dims.size() > 64)
      Cursor::failAt(at, "shape has more than 64 dimensions");
    if (c_.here() == '{') // a layout, written right after the dimensions
      c_.skipBalanced();
    return s;
  }

  Cursor c_;
  const HloReadOptions &opts_;
  std::unordered_set<std::string> keys_;
  size_t nextReport_ = size_t(1) << 20;
};

} // namespace

std::optional<HloSyntaxError> readHloText(const char *begin, const char *end,
                                          const HloReadOptions &opts, HloModule &out) {
  try {
    Reader(begin, end, opts).run(out);
  } catch (const HloSyntaxError &e) {
    return e;
  }
  return std::nullopt;
}

} // namespace mdl::frontend::hlo
