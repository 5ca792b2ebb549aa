// regroup:
// 1. Dissolve: in every region, a segment on a dissolvable device is
//    replaced by its operations (its arguments by the values it was given,
//    its results by the values it yielded).
// 2. Inline: a call whose callee is small (at most kInlineLimit
//    operations) and straight-line (segments on dissolvable devices and
//    reads of globals, then its return) is replaced by a copy of the
//    callee's body, dissolved.
// 3. Hoist: reads of globals (operations without operands) move to the
//    front of their region, in their order, so they no longer cut runs of
//    device operations in two.
// Later uses of a replaced value read its replacement.
#include "ir/passes/Regroup.h"
#include "stdlib/Registry.h"

#include <algorithm>

namespace mdl::passes {

using namespace ir;

namespace {

/// Callees with more device operations than this stay calls.
constexpr size_t kInlineLimit = 64;

using Dissolvable = std::function<bool(int)>;

Value *lookup(const ValueMap &map, Value *v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

void replaceOps(Region &r, std::vector<std::unique_ptr<Operation>> &out) {
  r.ops.clear();
  for (auto &op : out)
    r.push(std::move(op));
}

void dissolve(Region &r, const Dissolvable &ok) {
  std::vector<std::unique_ptr<Operation>> out;
  ValueMap map;
  for (auto &op : r.ops) {
    remapOperands(*op, map);
    if (op->kind != OpKind::Segment || !ok(op->device)) {
      for (auto &sub : op->regions)
        if (op->kind != OpKind::Segment)
          dissolve(*sub, ok);
      out.push_back(std::move(op));
      continue;
    }
    Region &body = *op->regions[0];
    ValueMap args;
    for (size_t i = 0; i < body.args.size(); ++i)
      args[body.args[i].get()] = op->operands[i];
    Operation *y = stdlib::terminatorOf(body);
    for (auto &inner : body.ops) {
      if (inner.get() == y)
        break;
      remapOperands(*inner, args);
      out.push_back(std::move(inner));
    }
    for (size_t i = 0; i < op->results.size(); ++i)
      map[op->results[i].get()] = lookup(args, y->operands[i]);
  }
  replaceOps(r, out);
}

bool inlinable(const Function &callee, const Dissolvable &ok) {
  size_t ops = 0;
  for (auto &op : callee.body->ops) {
    if (op->kind == OpKind::Global || op->kind == OpKind::Return)
      continue;
    if (op->kind != OpKind::Segment || !ok(op->device))
      return false;
    for (auto &inner : op->regions[0]->ops)
      if (!inner->regions.empty())
        return false;
    ops += op->regions[0]->ops.size();
  }
  return ops <= kInlineLimit;
}

int inlineCalls(const Module &m, Region &r, const Dissolvable &ok, std::set<std::string> &names) {
  int inlined = 0;
  std::vector<std::unique_ptr<Operation>> out;
  ValueMap map;
  for (auto &op : r.ops) {
    remapOperands(*op, map);
    const Function *callee =
        op->kind == OpKind::Call ? m.findFunction(op->stringAttr("callee")) : nullptr;
    if (!callee || !inlinable(*callee, ok)) {
      for (auto &sub : op->regions)
        if (op->kind != OpKind::Segment)
          inlined += inlineCalls(m, *sub, ok, names);
      out.push_back(std::move(op));
      continue;
    }
    ValueMap copy;
    const Region &body = *callee->body;
    for (size_t i = 0; i < body.args.size(); ++i)
      copy[body.args[i].get()] = op->operands[i];
    Region inlined_;
    for (auto &inner : body.ops)
      inlined_.push(cloneOp(*inner, copy));
    dissolve(inlined_, ok);
    Operation *ret = stdlib::terminatorOf(inlined_);
    for (size_t i = 0; i < op->results.size(); ++i)
      map[op->results[i].get()] = ret->operands[i];
    for (auto &inner : inlined_.ops)
      if (inner.get() != ret)
        out.push_back(std::move(inner));
    names.insert(callee->name);
    ++inlined;
  }
  replaceOps(r, out);
  return inlined;
}

void hoistGlobals(Region &r) {
  std::stable_partition(r.ops.begin(), r.ops.end(), [](const std::unique_ptr<Operation> &op) {
    return op->kind == OpKind::Global;
  });
  for (auto &op : r.ops)
    if (op->kind != OpKind::Segment)
      for (auto &sub : op->regions)
        hoistGlobals(*sub);
}

} // namespace

int regroup(const Module &m, Function &f, const Dissolvable &dissolvable,
            std::set<std::string> &inlined) {
  dissolve(*f.body, dissolvable);
  int n = inlineCalls(m, *f.body, dissolvable, inlined);
  hoistGlobals(*f.body);
  return n;
}

} // namespace mdl::passes
