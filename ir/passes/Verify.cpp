// The IR verifier.
//
// 1. Walk each function (and each global's initializer) in order, keeping
//    the set of visible values: arguments, then each operation's results;
//    values defined in a region stop being visible when it ends.
// 2. Check each operation's structure by kind, and re-run the shape rule of
//    standard-library operations to compare result types.
#include "ir/passes/Verify.h"
#include "stdlib/Registry.h"

#include <unordered_set>

namespace mdl::passes {

using namespace ir;

namespace {

class Verifier {
public:
  explicit Verifier(const Module &m) : m_(m) {}

  std::vector<std::string> run() {
    for (const Global &g : m_.globals) {
      visible_.clear();
      if (!g.init) {
        fail(g.loc, "global @" + g.name + " has no initializer");
        continue;
      }
      if (g.pinnedDevice >= int(m_.devices.size()))
        fail(g.loc, "global @" + g.name + " is pinned to an unknown device");
      inGlobal_ = true;
      checkRegion(*g.init, {g.type}, /*isFunction=*/false);
      inGlobal_ = false;
    }
    for (auto &f : m_.functions) {
      visible_.clear();
      fn_ = f.get();
      checkRegion(*f->body, f->resultTypes, /*isFunction=*/true);
    }
    return problems_;
  }

private:
  void fail(const Location &loc, const std::string &msg) {
    problems_.push_back((loc.valid() ? loc.str() + ": " : std::string()) + msg);
  }

  static std::string typeList(const std::vector<TensorType> &ts) {
    std::string s;
    for (auto &t : ts)
      s += (s.empty() ? "" : ", ") + t.str();
    return "(" + s + ")";
  }

  static bool compatible(const std::vector<TensorType> &a, const std::vector<TensorType> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!typesCompatible(a[i], b[i]))
        return false;
    return true;
  }

  static std::vector<TensorType> typesOf(const std::vector<Value *> &vs) {
    std::vector<TensorType> out;
    for (Value *v : vs)
      out.push_back(v->type);
    return out;
  }

  static std::vector<TensorType> resultTypes(const Operation &op) {
    std::vector<TensorType> out;
    for (auto &r : op.results)
      out.push_back(r->type);
    return out;
  }

  // Checks a region whose terminator must yield (or return) `expected`.
  void checkRegion(const Region &r, const std::vector<TensorType> &expected,
                   bool isFunction) {
    std::vector<const Value *> added;
    for (auto &a : r.args) {
      visible_.insert(a.get());
      added.push_back(a.get());
    }
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const Operation &op = *r.ops[i];
      bool last = i + 1 == r.ops.size();
      if ((op.kind == OpKind::Yield || op.kind == OpKind::Return) && !last)
        fail(op.loc, std::string(opName(op.kind)) + " must be the last operation of its region");
      checkOp(op);
      for (auto &res : op.results) {
        visible_.insert(res.get());
        added.push_back(res.get());
      }
    }
    const Operation *term = stdlib::terminatorOf(r);
    OpKind want = isFunction ? OpKind::Return : OpKind::Yield;
    if (!term || term->kind != want) {
      fail(r.parent ? r.parent->loc : Location{},
           std::string("region must end with '") + opName(want) + "'");
    } else if (!compatible(typesOf(term->operands), expected)) {
      fail(term->loc, std::string(opName(want)) + " gives " + typeList(typesOf(term->operands)) +
                          " but " + typeList(expected) + " is expected");
    }
    for (const Value *v : added)
      visible_.erase(v);
  }

  void checkOp(const Operation &op) {
    for (Value *v : op.operands)
      if (!visible_.count(v))
        fail(op.loc, std::string(opName(op.kind)) + " uses a value that is not defined before it");
    if (op.device >= int(m_.devices.size()))
      fail(op.loc, "operation placed on an unknown device");
    std::vector<TensorType> results = resultTypes(op);
    switch (op.kind) {
    case OpKind::Constant: {
      const Attribute *a = op.attr("value");
      if (!a || a->kind() != Attribute::Kind::Dense)
        fail(op.loc, "constant needs a dense 'value'");
      else if (results.size() != 1 || a->asDense().type != results[0] ||
               a->asDense().bytes.size() != size_t(a->asDense().type.byteSize()))
        fail(op.loc, "constant data does not match its type");
      return;
    }
    case OpKind::Global: {
      int g = m_.findGlobal(op.stringAttr("name"));
      if (g < 0)
        fail(op.loc, "global reads unknown @" + op.stringAttr("name"));
      else if (results.size() != 1 || !typesCompatible(results[0], m_.globals[g].type))
        fail(op.loc, "global @" + op.stringAttr("name") + " has type " +
                         m_.globals[g].type.str());
      return;
    }
    case OpKind::Load:
      if (!inGlobal_)
        fail(op.loc, "load is only allowed in a global's initializer");
      if (op.stringAttr("file").empty() || results.size() != 1)
        fail(op.loc, "load needs a 'file' and one result");
      return;
    case OpKind::Call: {
      Function *callee = m_.findFunction(op.stringAttr("callee"));
      if (!callee) {
        fail(op.loc, "call to unknown function @" + op.stringAttr("callee"));
        return;
      }
      if (callee->body->args.size() != op.operands.size() ||
          callee->resultTypes.size() != results.size())
        fail(op.loc, "call to @" + callee->name + " has the wrong number of operands or results");
      else if (callee->symbols.empty()) {
        std::vector<TensorType> params;
        for (auto &a : callee->body->args)
          params.push_back(a->type);
        if (!compatible(typesOf(op.operands), params))
          fail(op.loc, "call to @" + callee->name + " passes " +
                           typeList(typesOf(op.operands)) + ", expected " + typeList(params));
      }
      return;
    }
    case OpKind::If: {
      if (op.operands.size() != 1 || op.operands[0]->type != TensorType::scalar(DType::Bool))
        fail(op.loc, "if needs one bool scalar condition");
      if (op.regions.size() != 2) {
        fail(op.loc, "if needs two regions");
        return;
      }
      for (auto &r : op.regions) {
        if (!r->args.empty())
          fail(op.loc, "if regions take no arguments");
        checkRegion(*r, results, false);
      }
      return;
    }
    case OpKind::For: {
      if (op.operands.size() < 2 || op.regions.size() != 1) {
        fail(op.loc, "for needs bounds and one region");
        return;
      }
      for (int i = 0; i < 2; ++i)
        if (op.operands[i]->type != TensorType::scalar(DType::I64))
          fail(op.loc, "for bounds must be i64 scalars");
      std::vector<TensorType> carried(
          typesOf(std::vector<Value *>(op.operands.begin() + 2, op.operands.end())));
      const Region &body = *op.regions[0];
      std::vector<TensorType> args;
      for (auto &a : body.args)
        args.push_back(a->type);
      std::vector<TensorType> want = {TensorType::scalar(DType::I64)};
      want.insert(want.end(), carried.begin(), carried.end());
      if (!compatible(args, want))
        fail(op.loc, "for region arguments " + typeList(args) + " should be " + typeList(want));
      if (!compatible(results, carried))
        fail(op.loc, "for results " + typeList(results) + " differ from carried " +
                         typeList(carried));
      checkRegion(body, carried, false);
      return;
    }
    case OpKind::While: {
      if (op.regions.size() != 2) {
        fail(op.loc, "while needs a condition and a body region");
        return;
      }
      std::vector<TensorType> carried = typesOf(op.operands);
      for (auto &r : op.regions) {
        std::vector<TensorType> args;
        for (auto &a : r->args)
          args.push_back(a->type);
        if (!compatible(args, carried))
          fail(op.loc, "while region arguments " + typeList(args) + " should be " +
                           typeList(carried));
      }
      if (!compatible(results, carried))
        fail(op.loc, "while results differ from carried values");
      checkRegion(*op.regions[0], {TensorType::scalar(DType::Bool)}, false);
      checkRegion(*op.regions[1], carried, false);
      return;
    }
    case OpKind::Segment:
    case OpKind::Fusion: {
      if (op.regions.size() != 1) {
        fail(op.loc, std::string(opName(op.kind)) + " needs one region");
        return;
      }
      const Region &body = *op.regions[0];
      std::vector<TensorType> args;
      for (auto &a : body.args)
        args.push_back(a->type);
      if (!compatible(args, typesOf(op.operands)))
        fail(op.loc, std::string(opName(op.kind)) + " arguments do not match its operands");
      // A segment is isolated: only its own arguments are visible inside.
      auto saved = visible_;
      visible_.clear();
      checkRegion(body, results, false);
      visible_ = std::move(saved);
      return;
    }
    case OpKind::Yield:
    case OpKind::Return:
      if (!results.empty())
        fail(op.loc, std::string(opName(op.kind)) + " has no results");
      return;
    default:
      break;
    }
    const stdlib::OpInfo &info = stdlib::opInfo(op.kind);
    if (!info.infer)
      return;
    std::vector<NamedAttr> attrs = op.attrs;
    stdlib::InferResult r = stdlib::inferTypes(op.kind, typesOf(op.operands), attrs);
    if (!r.ok()) {
      fail(op.loc, std::string(opName(op.kind)) + ": " + r.error->message);
      return;
    }
    if (!compatible(r.types, results))
      fail(op.loc, std::string(opName(op.kind)) + " results " + typeList(results) +
                       " differ from the shape rule's " + typeList(r.types));
  }

  const Module &m_;
  const Function *fn_ = nullptr;
  bool inGlobal_ = false;
  std::unordered_set<const Value *> visible_;
  std::vector<std::string> problems_;
};

} // namespace

std::vector<std::string> verifyModule(const Module &m) { return Verifier(m).run(); }

} // namespace mdl::passes
