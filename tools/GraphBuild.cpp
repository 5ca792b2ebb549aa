// From the partitioned IR to the picture's nodes, edges and scopes
// (GraphModel.h); the first half of `mdl graph`, after `partition`.
//
// The walk:
// 1. Start at the entry: its arguments become input nodes of the host
//    program, its `return` operands output nodes.
// 2. Segments are transparent: their region arguments stand for their
//    operands and their results for what they yield, so edges join the
//    operations that really produce and consume each value.
// 3. A call is drawn inline, as a scope of its own: the callee's arguments
//    stand for the call's operands, its results for the returned values. The
//    same function called twice is drawn twice, once per instance.
// 4. `for`, `while` and `if` become a header and a footer node in the host
//    program, their regions scopes: initial values flow into the header,
//    the index and carried values out of it; yielded values flow into the
//    footer, the results out of it, and a back edge joins footer to header.
// 5. A transfer (`transfer`, `to`, `reveal`) becomes a landing node on its
//    destination device, labeled with its size and kind, reached by a
//    transfer edge from the value it moves.
// 6. A global read becomes one node per (global, device) in the device's
//    "load time" scope: it is materialized once, when the program loads.
// 7. Scalar literals that only gave a loop its bounds are folded into the
//    header's label and dropped.
// Values are looked up through a map keyed by pointer, never iterated, so
// the output order is program order.
#include "ir/passes/InsertTransfers.h"
#include "stdlib/Registry.h"
#include "ir/passes/PlacementSummary.h"
#include "tools/GraphModel.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace mdl::tools::graph {

using namespace ir;

namespace {

constexpr int kMaxCallDepth = 64;

std::string lineSuffix(const Location &loc) {
  return loc.valid() ? "line " + std::to_string(loc.line) : std::string();
}

/// `what` and its source line on the next line of a node label.
std::string lineBelow(const std::string &what, const Location &loc) {
  return loc.valid() ? what + "\n" + lineSuffix(loc) : what;
}

/// `what (line N)` for a scope label; `(call, line N)` with a kind.
std::string lineAfter(const std::string &what, const Location &loc,
                      const std::string &kind = "") {
  std::string inside = kind;
  if (loc.valid())
    inside += (inside.empty() ? "" : ", ") + lineSuffix(loc);
  return inside.empty() ? what : what + " (" + inside + ")";
}

std::string resultTypes(const Operation &op) {
  std::string s;
  for (const auto &r : op.results)
    s += (s.empty() ? "" : ", ") + r->type.str();
  return s;
}

/// The value of a scalar literal as source text; empty for anything else.
std::string scalarLiteral(const Operation &op) {
  if (op.kind != OpKind::Constant)
    return {};
  const Attribute *a = op.attr("value");
  if (!a || a->kind() != Attribute::Kind::Dense)
    return {};
  const DenseData &d = a->asDense();
  if (!d.type.isScalar())
    return {};
  if (d.type.dtype == DType::Bool)
    return d.elementAsInt(0) ? "true" : "false";
  if (d.type.dtype == DType::F64)
    return formatReal(d.elementAsDouble(0));
  if (isFloat(d.type.dtype))
    return formatFloat(float(d.elementAsDouble(0)));
  return std::to_string(d.elementAsInt(0));
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class Builder {
public:
  Builder(const Module &m, Graph &g) : m_(m), g_(g) {}

  bool run(const Function &entry, std::string &error) {
    g_.scopes.push_back({-1, ScopeKind::Root, ""});
    std::string file =
        entry.loc.valid() ? baseName(fileName(entry.loc.file)) : "";
    g_.title = (file.empty() ? "" : file + ": ") + entry.name;
    std::vector<Value *> args = entry.args();
    for (size_t i = 0; i < args.size(); ++i) {
      std::string name = i < entry.argNames.size() && !entry.argNames[i].empty()
                             ? entry.argNames[i]
                             : "arg " + std::to_string(i);
      std::string where =
          args[i]->device >= 0 ? "\non " + deviceName(args[i]->device) : "";
      nodeOf_[args[i]] =
          addNode(NodeKind::Input, -1, 0,
                  "input " + name + "\n" + args[i]->type.str() + where);
    }
    if (!region(*entry.body, 0, error))
      return false;
    if (const Operation *ret = stdlib::terminatorOf(*entry.body))
      for (size_t i = 0; i < ret->operands.size(); ++i) {
        int n = addNode(NodeKind::Output, -1, 0,
                        "result " + std::to_string(i) + "\n" +
                            ret->operands[i]->type.str());
        edgeFrom(ret->operands[i], n, EdgeKind::Data);
      }
    pruneFoldedLiterals();
    return true;
  }

private:
  std::string deviceName(int d) const {
    return d >= 0 && d < int(m_.devices.size()) ? m_.devices[d].name : "?";
  }

  int addNode(NodeKind kind, int area, int scope, std::string label) {
    g_.nodes.push_back({kind, area, scope, std::move(label)});
    fed_.push_back(false);
    return int(g_.nodes.size()) - 1;
  }

  int addScope(int parent, ScopeKind kind, std::string label) {
    g_.scopes.push_back({parent, kind, std::move(label)});
    return int(g_.scopes.size()) - 1;
  }

  void addEdge(int from, int to, EdgeKind kind, const std::string &label = "") {
    // Edges out of a header or footer are control-flow plumbing.
    NodeKind fk = g_.nodes[from].kind;
    if (kind == EdgeKind::Data &&
        (fk == NodeKind::Header || fk == NodeKind::Footer))
      kind = EdgeKind::Control;
    if (!seenEdges_.insert({from, to, int(kind), label}).second)
      return;
    g_.edges.push_back({from, to, kind, label});
    fed_[to] = true;
  }

  int nodeFor(const Value *v) const {
    auto it = nodeOf_.find(v);
    return it == nodeOf_.end() ? -1 : it->second;
  }

  void edgeFrom(const Value *v, int to, EdgeKind kind,
                const std::string &label = "") {
    int from = nodeFor(v);
    if (from >= 0)
      addEdge(from, to, kind, label);
  }

  /// Makes `vals` stand for the nodes of `srcs`, pairwise.
  void alias(const std::vector<Value *> &vals,
             const std::vector<Value *> &srcs) {
    for (size_t i = 0; i < vals.size() && i < srcs.size(); ++i)
      nodeOf_[vals[i]] = nodeFor(srcs[i]);
  }
  void aliasResults(const Operation &op, const Operation *term) {
    if (!term)
      return;
    for (size_t i = 0; i < op.results.size() && i < term->operands.size(); ++i)
      nodeOf_[op.results[i].get()] = nodeFor(term->operands[i]);
  }
  void aliasArgs(const Region &r, int node, size_t first = 0) {
    for (size_t i = first; i < r.args.size(); ++i)
      nodeOf_[r.args[i].get()] = node;
  }

  static std::vector<Value *> argsOf(const Region &r) {
    std::vector<Value *> out;
    for (const auto &a : r.args)
      out.push_back(a.get());
    return out;
  }

  bool region(const Region &r, int scope, std::string &error) {
    for (const auto &op : r.ops)
      if (!operation(*op, scope, error))
        return false;
    return true;
  }

  bool operation(const Operation &op, int scope, std::string &error) {
    switch (op.kind) {
    case OpKind::Yield:
    case OpKind::Return:
      return true; // read by the operation that owns the region
    case OpKind::Segment:
      alias(argsOf(*op.region(0)), op.operands);
      if (!region(*op.region(0), scope, error))
        return false;
      aliasResults(op, stdlib::terminatorOf(*op.region(0)));
      return true;
    case OpKind::Call:
      return call(op, scope, error);
    case OpKind::For:
      return forLoop(op, scope, error);
    case OpKind::While:
      return whileLoop(op, scope, error);
    case OpKind::If:
      return ifElse(op, scope, error);
    case OpKind::Print: {
      int n = addNode(NodeKind::Print, -1, scope, lineBelow("print", op.loc));
      for (const Value *v : op.operands)
        edgeFrom(v, n, EdgeKind::Data);
      return true;
    }
    case OpKind::Global:
      global(op);
      return true;
    default:
      break;
    }
    if (stdlib::isTransfer(op.kind)) {
      transfer(op, scope);
      return true;
    }
    std::string literal = scalarLiteral(op);
    int n;
    if (!literal.empty()) {
      n = addNode(NodeKind::Constant, op.device, scope,
                  literal + " : " + resultTypes(op));
    } else {
      std::string label = lineBelow(
          std::string(opName(op.kind)) + "\n" + resultTypes(op), op.loc);
      n = addNode(NodeKind::Op, op.device, scope, label);
    }
    for (const Value *v : op.operands)
      edgeFrom(v, n, EdgeKind::Data);
    for (const auto &r : op.results)
      nodeOf_[r.get()] = n;
    return true;
  }

  bool call(const Operation &op, int scope, std::string &error) {
    const Attribute *callee = op.attr("callee");
    const Function *f = callee && callee->kind() == Attribute::Kind::Symbol
                            ? m_.findFunction(callee->asSymbol())
                            : nullptr;
    if (!f) {
      error = "call at line " + std::to_string(op.loc.line) +
              " names no function of the module";
      return false;
    }
    if (depth_ >= kMaxCallDepth) {
      error = "calls nest deeper than " + std::to_string(kMaxCallDepth) +
              " levels (at " + f->name + ", line " +
              std::to_string(op.loc.line) + ")";
      return false;
    }
    int inner =
        addScope(scope, ScopeKind::Call, lineAfter(f->name, op.loc, "call"));
    alias(f->args(), op.operands);
    ++depth_;
    bool ok = region(*f->body, inner, error);
    --depth_;
    if (ok)
      aliasResults(op, stdlib::terminatorOf(*f->body));
    return ok;
  }

  /// A loop bound given by a scalar literal: its text (the literal's node is
  /// dropped at the end if nothing else reads it).
  std::string boundText(const Value *v) {
    int n = nodeFor(v);
    if (n >= 0 && g_.nodes[n].kind == NodeKind::Constant) {
      const std::string &label = g_.nodes[n].label;
      return label.substr(0, label.find(" : "));
    }
    return {};
  }

  /// A header and its footer in the host program; results leave the footer.
  std::pair<int, int> headerPair(const Operation &op, int scope,
                                 const std::string &title) {
    int header = addNode(NodeKind::Header, -1, scope, lineBelow(title, op.loc));
    int footer = addNode(NodeKind::Footer, -1, scope,
                         "end " + std::string(opName(op.kind)));
    for (const auto &r : op.results)
      nodeOf_[r.get()] = footer;
    return {header, footer};
  }

  /// Walks one region of a control-flow operation as scope `label` below
  /// `scope`; its arguments stand for the header, its yielded values flow
  /// into the footer labeled `yieldLabel`.
  bool body(const Region &r, int scope, ScopeKind kind,
            const std::string &label, int header, int footer,
            const std::string &yieldLabel, std::string &error) {
    int inner = addScope(scope, kind, label);
    aliasArgs(r, header);
    size_t first = g_.nodes.size();
    if (!region(r, inner, error))
      return false;
    if (const Operation *term = stdlib::terminatorOf(r))
      for (const Value *v : term->operands)
        edgeFrom(v, footer, EdgeKind::Control, yieldLabel);
    // Operations that read nothing from before the region would float to
    // the top of the picture: hang them below the header.
    for (size_t n = first; n < g_.nodes.size(); ++n)
      if (!fed_[n] && g_.nodes[n].kind != NodeKind::Global)
        addEdge(header, int(n), EdgeKind::Layout);
    return true;
  }

  bool forLoop(const Operation &op, int scope, std::string &error) {
    // Operands: lower bound, upper bound, initial carried values.
    std::string lo = op.operands.size() > 1 ? boundText(op.operands[0]) : "";
    std::string hi = op.operands.size() > 1 ? boundText(op.operands[1]) : "";
    std::string range = !lo.empty() && !hi.empty() ? " " + lo + ".." + hi : "";
    auto [header, footer] = headerPair(op, scope, "for" + range);
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (i < 2 && !range.empty())
        continue;
      edgeFrom(op.operands[i], header, EdgeKind::Control,
               i < 2 ? "bounds" : "init");
    }
    if (!body(*op.region(0), scope, ScopeKind::LoopBody,
              lineAfter("for body", op.loc), header, footer, "next", error))
      return false;
    addEdge(footer, header, EdgeKind::Back, "repeat");
    return true;
  }

  bool whileLoop(const Operation &op, int scope, std::string &error) {
    auto [header, footer] = headerPair(op, scope, "while");
    for (const Value *v : op.operands)
      edgeFrom(v, header, EdgeKind::Control, "init");
    if (op.regions.size() != 2 ||
        !body(*op.region(0), scope, ScopeKind::WhileCond,
              lineAfter("while cond", op.loc), header, footer, "cond", error) ||
        !body(*op.region(1), scope, ScopeKind::LoopBody,
              lineAfter("while body", op.loc), header, footer, "next", error))
      return false;
    addEdge(footer, header, EdgeKind::Back, "repeat");
    return true;
  }

  bool ifElse(const Operation &op, int scope, std::string &error) {
    auto [header, footer] = headerPair(op, scope, "if");
    for (const Value *v : op.operands)
      edgeFrom(v, header, EdgeKind::Control, "cond");
    addEdge(header, footer, EdgeKind::Layout);
    if (op.regions.size() != 2 ||
        !body(*op.region(0), scope, ScopeKind::Then,
              lineAfter("if then", op.loc), header, footer, "then", error) ||
        !body(*op.region(1), scope, ScopeKind::Else,
              lineAfter("if else", op.loc), header, footer, "else", error))
      return false;
    return true;
  }

  void global(const Operation &op) {
    const Attribute *name = op.attr("name");
    std::string sym = name && name->kind() == Attribute::Kind::Symbol
                          ? name->asSymbol()
                          : "?";
    auto key = std::make_pair(sym, op.device);
    auto it = globalNodes_.find(key);
    int n;
    if (it != globalNodes_.end()) {
      n = it->second;
    } else {
      int gi = m_.findGlobal(sym);
      std::string label;
      if (sym.rfind("__hoisted", 0) == 0)
        label = "hoisted const";
      else
        label = std::string(gi >= 0 && m_.globals[gi].isParam ? "param "
                                                              : "const ") +
                sym;
      label += "\n" + resultTypes(op);
      if (loadScope_ < 0)
        loadScope_ = addScope(0, ScopeKind::LoadTime, "load time");
      n = addNode(NodeKind::Global, op.device, loadScope_, label);
      globalNodes_[key] = n;
    }
    for (const auto &r : op.results)
      nodeOf_[r.get()] = n;
  }

  void transfer(const Operation &op, int scope) {
    const Value *src = op.operands.empty() ? nullptr : op.operands[0];
    std::string kind;
    if (op.kind == OpKind::To) {
      kind = "to";
    } else if (op.kind == OpKind::Reveal) {
      kind = "reveal";
    } else if (op.attr("from")) {
      kind = "implicit";
    } else {
      bool index = src && src->region && src->index == 0 &&
                   src->region->parent &&
                   src->region->parent->kind == OpKind::For;
      kind = index ? "loop index" : "from host";
    }
    // The label sits on the landing node, not the edge: several transfers
    // leaving one value would otherwise stack their labels on each other.
    std::string what =
        (op.results.empty() ? ""
                            : passes::byteString(op.result()->type) + " ") +
        "(" + kind + ")";
    int n = addNode(NodeKind::Landing, op.device, scope, what);
    std::string from =
        src && src->device >= 0 ? deviceName(src->device) : "host program";
    if (src)
      edgeFrom(src, n, EdgeKind::Transfer,
               from + " -> " + deviceName(op.device) + ": " + what +
                   (op.loc.valid() ? ", " + lineSuffix(op.loc) : ""));
    for (const auto &r : op.results)
      nodeOf_[r.get()] = n;
  }

  /// Drops scalar literals nobody reads any more (their value went into a
  /// loop header's label) and renumbers the edges.
  void pruneFoldedLiterals() {
    std::vector<bool> used(g_.nodes.size(), false);
    for (const Edge &e : g_.edges)
      if (e.kind != EdgeKind::Layout)
        used[e.from] = used[e.to] = true;
    std::vector<int> renumber(g_.nodes.size(), -1);
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (g_.nodes[i].kind == NodeKind::Constant && !used[i])
        continue;
      renumber[i] = int(kept.size());
      kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
    std::vector<Edge> edges;
    for (Edge &e : g_.edges)
      if (renumber[e.from] >= 0 && renumber[e.to] >= 0)
        edges.push_back(
            {renumber[e.from], renumber[e.to], e.kind, std::move(e.label)});
    g_.edges = std::move(edges);
  }

  const Module &m_;
  Graph &g_;
  std::unordered_map<const Value *, int> nodeOf_; // lookup only
  std::map<std::pair<std::string, int>, int> globalNodes_;
  std::set<std::tuple<int, int, int, std::string>> seenEdges_;
  std::vector<bool> fed_; // per node: some edge leads into it
  int depth_ = 0;
  int loadScope_ = -1;
};

} // namespace

bool buildGraph(const Module &m, const std::string &entry, Graph &out,
                std::string &error) {
  const Function *f = m.findFunction(entry);
  if (!f) {
    error = "the program has no function '" + entry + "' to draw";
    return false;
  }
  out = Graph();
  return Builder(m, out).run(*f, error);
}

} // namespace mdl::tools::graph
