// Per-opcode translation, control flow and calls: while, conditional (the
// predicate form and the indexed `branch_computations` form), call, fusion
// and custom-call.
//
// A while loop becomes mdl's `while` with the flattened loop state as its
// carried values: the condition and body computations are inlined into the
// operation's two regions. A conditional becomes `if`, an indexed one a
// chain of `if`s on `index == k` whose last branch also takes indices out
// of range (XLA's rule). Calls keep their function; fusions are inlined.
// Of custom-calls only the annotations that are identities (`Sharding`,
// `SPMDFullToShardShape`, `SPMDShardToFullShape`) are supported.
#include "frontend/hlo/HloOpContext.h"
#include "stdlib/Registry.h"

namespace mdl::frontend::hlo {

using namespace ir;

namespace {

struct Control : OpCtx {
  // Inlines `c` into a new region of `op` whose arguments (when `withArgs`)
  // are the leaves of `state`; yields its root and checks the root's types.
  bool region(Operation *op, const HloComputation &c, const std::vector<Value *> &params,
              bool withArgs, const std::vector<TensorType> &yieldTypes) {
    Region *saved = t.region();
    Region *r = op->addRegion();
    std::vector<Value *> args = params;
    if (withArgs) {
      args.clear();
      for (Value *v : params)
        args.push_back(r->addArg(v->type));
    }
    t.setRegion(r);
    HVal root = t.inlineComputation(c, args);
    t.setRegion(saved);
    if (root.poisoned)
      return false;
    bool ok = root.leaves.size() == yieldTypes.size();
    for (size_t i = 0; ok && i < yieldTypes.size(); ++i)
      ok = root.leaves[i]->type == yieldTypes[i];
    if (!ok) {
      t.malformed("computation '" + c.name + "' gives " + c.rootInstruction().shape.str() +
                  ", which does not match the values it must produce here");
      return false;
    }
    auto y = std::make_unique<Operation>(OpKind::Yield, t.loc());
    y->operands = root.leaves;
    r->push(std::move(y));
    return true;
  }

  std::vector<TensorType> typesOf(const std::vector<Value *> &vs) {
    std::vector<TensorType> out;
    for (Value *v : vs)
      out.push_back(v->type);
    return out;
  }

  Operation *structural(OpKind k, std::vector<Value *> operands,
                        const std::vector<TensorType> &types) {
    auto op = std::make_unique<Operation>(k, t.loc());
    op->operands = std::move(operands);
    for (const TensorType &ty : types)
      op->addResult(ty);
    return t.region()->push(std::move(op));
  }

  bool whileLoop() {
    if (!arity(1))
      return poison();
    const HloComputation *cond = t.computationAttr("condition");
    const HloComputation *body = t.computationAttr("body");
    std::vector<TensorType> types;
    if (!cond || !body || !resultTypes(types))
      return poison();
    const std::vector<Value *> &init = ops[0]->leaves;
    if (typesOf(init) != types) {
      t.malformed("while state " + ops[0]->shape->str() + " does not match its shape " +
                  inst.shape.str());
      return poison();
    }
    Operation *w = structural(OpKind::While, init, types);
    if (!region(w, *cond, init, true, {TensorType::scalar(DType::Bool)}) ||
        !region(w, *body, init, true, types))
      return poison();
    for (auto &r : w->results)
      out.leaves.push_back(r.get());
    return true;
  }

  // if index == k { branch k } else { next }, the last branch unconditional.
  bool branchChain(Value *index, const std::vector<const HloComputation *> &branches, size_t k,
                   const std::vector<TensorType> &types, std::vector<Value *> &results) {
    const std::vector<Value *> &arg = ops[k + 1]->leaves;
    if (k + 1 == branches.size()) {
      HVal root = t.inlineComputation(*branches[k], arg);
      if (root.poisoned || typesOf(root.leaves) != types) {
        if (!root.poisoned)
          t.malformed("branch '" + branches[k]->name + "' does not give " + inst.shape.str());
        return false;
      }
      results = root.leaves;
      return true;
    }
    Value *c = t.emit1(OpKind::Eq, {index, t.scalarConstant(index->type.dtype, double(k))}, {},
                       TensorType::scalar(DType::Bool));
    if (!c)
      return false;
    Operation *op = structural(OpKind::If, {c}, types);
    if (!region(op, *branches[k], arg, false, types))
      return false;
    Region *saved = t.region();
    Region *r = op->addRegion();
    t.setRegion(r);
    std::vector<Value *> rest;
    bool ok = branchChain(index, branches, k + 1, types, rest);
    t.setRegion(saved);
    if (!ok)
      return false;
    auto y = std::make_unique<Operation>(OpKind::Yield, t.loc());
    y->operands = rest;
    r->push(std::move(y));
    for (auto &res : op->results)
      results.push_back(res.get());
    return true;
  }

  bool conditional() {
    if (!atLeast(2))
      return poison();
    std::vector<TensorType> types;
    Value *sel = arg(0);
    if (!sel || !resultTypes(types))
      return poison();
    std::vector<const HloComputation *> branches;
    if (inst.attr("branch_computations")) {
      const HloAttr *a = inst.attr("branch_computations");
      auto names = parseNameList(a->value);
      if (!names || names->empty()) {
        t.malformed("branch_computations must list computations", a);
        return poison();
      }
      for (const std::string &n : *names) {
        const HloComputation *c = t.findComputation(n);
        if (!c) {
          t.malformed("no computation named '" + n + "'", a);
          return poison();
        }
        branches.push_back(c);
      }
    } else {
      const HloComputation *tc = t.computationAttr("true_computation");
      const HloComputation *fc = t.computationAttr("false_computation");
      if (!tc || !fc)
        return poison();
      if (sel->type != TensorType::scalar(DType::Bool)) {
        t.malformed("a conditional with true/false computations needs a pred[] selector");
        return poison();
      }
      branches = {tc, fc};
    }
    if (ops.size() != branches.size() + 1) {
      t.malformed("conditional has " + std::to_string(branches.size()) + " branches but " +
                  std::to_string(ops.size() - 1) + " branch operands");
      return poison();
    }
    std::vector<Value *> results;
    if (sel->type.dtype == DType::Bool && sel->type.isScalar() && !inst.attr("branch_computations")) {
      Operation *op = structural(OpKind::If, {sel}, types);
      if (!region(op, *branches[0], ops[1]->leaves, false, types) ||
          !region(op, *branches[1], ops[2]->leaves, false, types))
        return poison();
      for (auto &r : op->results)
        results.push_back(r.get());
    } else {
      if (!sel->type.isScalar() || !(isInteger(sel->type.dtype) || sel->type.dtype == DType::Bool)) {
        t.malformed("a conditional's branch index must be an integer scalar");
        return poison();
      }
      if (sel->type.dtype == DType::Bool) // pred index: false is branch 0
        sel = t.emit1(OpKind::Cast, {sel}, {{"dtype", Attribute::dtype(DType::I32)}},
                      TensorType::scalar(DType::I32));
      if (!sel || !branchChain(sel, branches, 0, types, results))
        return poison();
    }
    out.leaves = results;
    return true;
  }

  bool call() {
    const HloComputation *c = t.computationAttr("to_apply");
    std::vector<TensorType> types;
    if (!c || !resultTypes(types))
      return poison();
    Function *f = t.functionFor(*c);
    std::vector<Value *> args;
    for (const HVal *v : ops)
      args.insert(args.end(), v->leaves.begin(), v->leaves.end());
    std::vector<TensorType> params;
    for (auto &a : f->body->args)
      params.push_back(a->type);
    if (typesOf(args) != params || f->resultTypes != types) {
      t.malformed("call of '" + c->name + "' does not match its parameters and result");
      return poison();
    }
    auto op = std::make_unique<Operation>(OpKind::Call, t.loc());
    op->operands = args;
    op->attrs = {{"callee", Attribute::symbol(f->name)}};
    for (const TensorType &ty : types)
      op->addResult(ty);
    Operation *p = t.region()->push(std::move(op));
    for (auto &r : p->results)
      out.leaves.push_back(r.get());
    return true;
  }

  bool fusion() {
    const HloComputation *c = t.computationAttr("calls");
    if (!c)
      return poison();
    std::vector<Value *> args;
    for (const HVal *v : ops)
      args.insert(args.end(), v->leaves.begin(), v->leaves.end());
    HVal root = t.inlineComputation(*c, args);
    if (root.poisoned)
      return poison();
    out.leaves = root.leaves;
    return true;
  }

  bool customCall() {
    const HloAttr *target = t.need("custom_call_target");
    if (!target)
      return poison();
    std::string name = unquote(target->value);
    if (name == "Sharding" || name == "SPMDFullToShardShape" || name == "SPMDShardToFullShape") {
      if (!arity(1))
        return poison();
      out.leaves = ops[0]->leaves;
      return true;
    }
    t.unsupported("custom-call:" + name, "custom-call target '" + name +
                                             "' is not implemented by mdl");
    return poison();
  }
};

} // namespace

bool translateControlFlow(Translator &t, const HloInstruction &inst,
                          const std::vector<const HVal *> &ops, HVal &out) {
  Control c{{t, inst, ops, out}};
  const std::string &op = inst.opcode;
  if (op == "while")
    return c.whileLoop();
  if (op == "conditional")
    return c.conditional();
  if (op == "call")
    return c.call();
  if (op == "fusion")
    return c.fusion();
  if (op == "custom-call")
    return c.customCall();
  return false;
}

} // namespace mdl::frontend::hlo
