// The text form of protocol programs (Program.h): printing and a small
// hand-written parser, one item per line.
//
//   program := "mpc.program" "slots" INT NL item*
//   item    := "input" SLOT "owner" INT ("fixed" | "integer") SHAPE
//            | SLOT "=" NAME [SLOT ("," SLOT)*] ["{" attr ("," attr)* "}"] ":"
//            SHAPE | "output" SLOT ("reveal" | "shared")
//   attr    := NAME "=" ("i" | "f") "[" [NUMBER ("," NUMBER)*] "]"
//   SLOT    := "%" INT | "%_" (an absent optional operand)
//   SHAPE   := "[" [INT ("," INT)*] "]"
// '#' starts a comment. Numbers are read and written with from_chars and
// to_chars (shortest round trip, independent of the locale).
#include "backend/mpc/Program.h"

#include <cctype>
#include <charconv>
#include <sstream>

namespace mdl::backend::mpc {

namespace {

std::string numberText(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string listText(const std::vector<int64_t> &v) { return shapeToString(v); }

std::string slotText(int s) { return s < 0 ? "%_" : "%" + std::to_string(s); }

// A cursor over one line.
class LineParser {
public:
  LineParser(const std::string &line, int number) : s_(line), line_(number) {}

  void skipSpace() {
    while (pos_ < s_.size() &&
           std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool atEnd() {
    skipSpace();
    return pos_ >= s_.size();
  }
  bool peek(char c) {
    skipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool consume(const std::string &token) {
    skipSpace();
    if (s_.compare(pos_, token.size(), token) != 0)
      return false;
    pos_ += token.size();
    return true;
  }
  llvm::Error expect(const std::string &token) {
    return consume(token) ? llvm::Error::success()
                          : error("expected '" + token + "'");
  }
  std::string word() {
    skipSpace();
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
            s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    return s_.substr(start, pos_ - start);
  }
  llvm::Expected<int64_t> integer() {
    skipSpace();
    int64_t v = 0;
    auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (r.ec != std::errc())
      return error("expected an integer");
    pos_ = size_t(r.ptr - s_.data());
    return v;
  }
  llvm::Expected<double> real() {
    skipSpace();
    double v = 0;
    auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (r.ec != std::errc())
      return error("expected a number");
    pos_ = size_t(r.ptr - s_.data());
    return v;
  }
  llvm::Expected<int> slot() {
    if (!consume("%"))
      return error("expected a slot such as %3");
    if (consume("_"))
      return -1;
    auto v = integer();
    if (!v)
      return v.takeError();
    if (*v < 0 || *v > (1 << 30))
      return error("slot %" + std::to_string(*v) + " is out of range");
    return int(*v);
  }
  /// `[a, b, ...]` of items `item` reads.
  template <typename T, typename Item> llvm::Expected<std::vector<T>> list(Item item) {
    if (auto err = expect("["))
      return err;
    std::vector<T> v;
    if (consume("]"))
      return v;
    do {
      auto x = item();
      if (!x)
        return x.takeError();
      v.push_back(*x);
    } while (consume(","));
    if (auto err = expect("]"))
      return err;
    return v;
  }
  llvm::Expected<std::vector<int64_t>> intList() {
    return list<int64_t>([this] { return integer(); });
  }
  llvm::Expected<std::vector<double>> realList() {
    return list<double>([this] { return real(); });
  }
  llvm::Error error(const std::string &message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "program line " + std::to_string(line_) +
                                       ", column " + std::to_string(pos_ + 1) +
                                       ": " + message);
  }

private:
  const std::string &s_;
  size_t pos_ = 0;
  int line_;
};

llvm::Error parseInstruction(LineParser &lp, Program &p) {
  Instruction ins;
  auto result = lp.slot();
  if (!result)
    return result.takeError();
  ins.result = *result;
  if (auto err = lp.expect("="))
    return err;
  std::string name = lp.word();
  const ProgramOpInfo *info = programOpByName(name);
  if (!info)
    return lp.error("unknown operation '" + name + "'");
  ins.op = info->kind;
  if (lp.peek('%')) {
    do {
      auto s = lp.slot();
      if (!s)
        return s.takeError();
      ins.operands.push_back(*s);
    } while (lp.consume(","));
  }
  if (lp.consume("{")) {
    do {
      ProgramAttr a;
      a.name = lp.word();
      if (a.name.empty())
        return lp.error("expected an attribute name");
      if (auto err = lp.expect("="))
        return err;
      if (lp.consume("i")) {
        auto v = lp.intList();
        if (!v)
          return v.takeError();
        a.kind = AttrKind::Ints;
        a.ints = std::move(*v);
      } else if (lp.consume("f")) {
        auto v = lp.realList();
        if (!v)
          return v.takeError();
        a.kind = AttrKind::Floats;
        a.floats = std::move(*v);
      } else {
        return lp.error("attribute values are i[...] or f[...]");
      }
      ins.attrs.push_back(std::move(a));
    } while (lp.consume(","));
    if (auto err = lp.expect("}"))
      return err;
  }
  if (auto err = lp.expect(":"))
    return err;
  auto shape = lp.intList();
  if (!shape)
    return shape.takeError();
  ins.shape = std::move(*shape);
  p.instructions.push_back(std::move(ins));
  return llvm::Error::success();
}

} // namespace

std::string printProgram(const Program &p) {
  std::ostringstream os;
  os << "mpc.program slots " << p.numSlots << "\n";
  for (const ProgramInput &in : p.inputs)
    os << "input " << slotText(in.slot) << " owner " << in.owner << " "
       << (in.encoding == EncodingKind::Fixed ? "fixed" : "integer") << " "
       << shapeToString(in.shape) << "\n";
  for (const Instruction &ins : p.instructions) {
    os << slotText(ins.result) << " = " << programOpInfo(ins.op).name;
    for (size_t k = 0; k < ins.operands.size(); ++k)
      os << (k ? ", " : " ") << slotText(ins.operands[k]);
    if (!ins.attrs.empty()) {
      os << " {";
      for (size_t k = 0; k < ins.attrs.size(); ++k) {
        const ProgramAttr &a = ins.attrs[k];
        os << (k ? ", " : "") << a.name << " = ";
        if (a.kind == AttrKind::Ints) {
          os << "i" << listText(a.ints);
        } else {
          os << "f[";
          for (size_t j = 0; j < a.floats.size(); ++j)
            os << (j ? ", " : "") << numberText(a.floats[j]);
          os << "]";
        }
      }
      os << "}";
    }
    os << " : " << shapeToString(ins.shape) << "\n";
  }
  for (const ProgramOutput &o : p.outputs)
    os << "output " << slotText(o.slot) << (o.reveal ? " reveal" : " shared")
       << "\n";
  return os.str();
}

llvm::Expected<Program> parseProgram(const std::string &text) {
  Program p;
  std::istringstream is(text);
  std::string raw;
  int number = 0;
  bool header = false;
  while (std::getline(is, raw)) {
    ++number;
    std::string line = raw.substr(0, raw.find('#'));
    LineParser lp(line, number);
    if (lp.atEnd())
      continue;
    if (!header) {
      if (!lp.consume("mpc.program"))
        return lp.error("expected 'mpc.program slots N' first");
      if (auto err = lp.expect("slots"))
        return err;
      auto n = lp.integer();
      if (!n)
        return n.takeError();
      if (*n < 0 || *n > (1 << 30))
        return lp.error("slot count " + std::to_string(*n) +
                        " is out of range");
      p.numSlots = int(*n);
      header = true;
    } else if (lp.consume("input")) {
      ProgramInput in;
      auto s = lp.slot();
      if (!s)
        return s.takeError();
      in.slot = *s;
      if (auto err = lp.expect("owner"))
        return err;
      auto owner = lp.integer();
      if (!owner)
        return owner.takeError();
      in.owner = int(*owner);
      std::string enc = lp.word();
      if (enc != "fixed" && enc != "integer")
        return lp.error("expected 'fixed' or 'integer', found '" + enc + "'");
      in.encoding =
          enc == "fixed" ? EncodingKind::Fixed : EncodingKind::Integer;
      auto shape = lp.intList();
      if (!shape)
        return shape.takeError();
      in.shape = std::move(*shape);
      p.inputs.push_back(std::move(in));
    } else if (lp.consume("output")) {
      ProgramOutput o;
      auto s = lp.slot();
      if (!s)
        return s.takeError();
      o.slot = *s;
      std::string how = lp.word();
      if (how != "reveal" && how != "shared")
        return lp.error("expected 'reveal' or 'shared', found '" + how + "'");
      o.reveal = how == "reveal";
      p.outputs.push_back(o);
    } else {
      if (auto err = parseInstruction(lp, p))
        return err;
    }
    if (!lp.atEnd())
      return lp.error("unexpected text at the end of the line");
  }
  if (!header)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "empty program: expected 'mpc.program slots N'");
  if (auto err = verifyProgram(p))
    return err;
  return p;
}

} // namespace mdl::backend::mpc
