// canonicalize, the segments of the host program (see Canonicalize.h).
//
// partition ends a run of device operations wherever the host program reads
// a global, and InsertTransfers turns unplaced constant computations into
// globals (`__hoisted.N`): an imported attention's `broadcast(0.125)` and
// `broadcast(-inf)` cut its softmax into three segments, and fusion, which
// works within a segment, then writes and reads the scores twice more than
// needed. For the devices whose segments the JIT prepares:
// 1. A segment operand read from a `const` global whose initializer is
//    cheap (small constants and views of them) is computed inside the
//    segment instead: the initializer is cloned at the segment's start and
//    the argument dropped (a scalar broadcast then fuses as a scalar).
// 2. Global reads nothing reads any more are dropped.
// 3. Two segments of one device with nothing between them become one: the
//    second's arguments that the first computes read the first's values,
//    and the first's results that only the second read are no longer
//    results.
#include "ir/passes/CanonicalizeInternal.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

#include <unordered_map>
#include <unordered_set>

namespace mdl::passes {

using namespace ir;

namespace {

/// Constants above this many elements stay globals (a fusion copies
/// constants of up to 4,096 elements into itself; a larger one is data).
constexpr int64_t kMaxCheapElements = 4096;

bool cheapInit(const Global &g) {
  if (g.isParam || !g.init)
    return false;
  for (auto &op : g.init->ops) {
    if (op->kind == OpKind::Yield)
      continue;
    if (op->kind == OpKind::Constant) {
      if (op->results[0]->type.numElements() > kMaxCheapElements)
        return false;
      continue;
    }
    if (!stdlib::hasTrait(op->kind, stdlib::trait::View))
      return false;
  }
  return stdlib::terminatorOf(*g.init) != nullptr;
}

/// Every use of each value in `r` and the regions nested in it.
void countUses(const Region &r, std::unordered_map<const Value *, int> &uses) {
  for (auto &op : r.ops) {
    for (const Value *v : op->operands)
      ++uses[v];
    for (auto &sub : op->regions)
      countUses(*sub, uses);
  }
}

/// A segment being assembled: operands (outside values) and their
/// arguments, the body, the yielded values.
class SegmentBuilder {
public:
  explicit SegmentBuilder(const Operation &like)
      : seg_(std::make_unique<Operation>(OpKind::Segment, like.loc)) {
    seg_->device = like.device;
    seg_->placement = like.placement;
    seg_->attrs = like.attrs;
    body_ = seg_->addRegion();
  }

  /// The argument standing for outside value `v` (made on first use).
  Value *argFor(Value *v) {
    if (auto it = args_.find(v); it != args_.end())
      return it->second;
    seg_->operands.push_back(v);
    Value *a = body_->addArg(v->type);
    a->device = seg_->device;
    a->secret = v->secret;
    args_[v] = a;
    return a;
  }

  /// Moves the operations of `from` but its yield in, mapping each operand
  /// through `map` first (values not in it are left as they are).
  void take(Region &from, const ValueMap &map) {
    for (auto &op : from.ops) {
      if (op->kind == OpKind::Yield)
        continue;
      remapOperands(*op, map);
      body_->push(std::move(op));
    }
  }

  void push(std::unique_ptr<Operation> op) { body_->push(std::move(op)); }

  /// Yields `inner` values; returns the new segment's results, in order.
  std::unique_ptr<Operation> finish(const std::vector<Value *> &inner, const Location &at) {
    auto y = std::make_unique<Operation>(OpKind::Yield, at);
    for (Value *v : inner) {
      y->operands.push_back(v);
      Value *r = seg_->addResult(v->type);
      r->device = seg_->device;
      r->secret = v->secret;
    }
    body_->push(std::move(y));
    return std::move(seg_);
  }

private:
  std::unique_ptr<Operation> seg_;
  Region *body_;
  std::unordered_map<const Value *, Value *> args_;
};

class SegmentMerger {
public:
  SegmentMerger(const Module &m, Region &r) : m_(m), r_(r) {}

  int run() {
    int changed = sinkConstants();
    changed += dropDeadGlobalReads();
    changed += mergeNeighbours();
    return changed;
  }

private:
  bool prepared(const Operation &op) const {
    return op.kind == OpKind::Segment && stdlib::jitPreparesSegments(m_, op.device);
  }

  /// The initializer of the global `read` reads, when it is cheap.
  const Global *cheapGlobal(const Value *v) const {
    const Operation *read = v->def;
    if (!read || read->kind != OpKind::Global || read->parent != &r_)
      return nullptr;
    int g = m_.findGlobal(read->stringAttr("name"));
    if (g < 0 || !cheapInit(m_.globals[size_t(g)]))
      return nullptr;
    return &m_.globals[size_t(g)];
  }

  /// Replaces `old` (at index i of the region) by `repl`, whose results
  /// stand for `old`'s in order, and rewrites later uses.
  void replace(size_t i, std::unique_ptr<Operation> repl) {
    ValueMap map;
    for (size_t k = 0; k < repl->results.size(); ++k)
      map[r_.ops[i]->results[k].get()] = repl->results[k].get();
    repl->parent = &r_;
    r_.ops[i] = std::move(repl);
    for (size_t j = i + 1; j < r_.ops.size(); ++j)
      remapOperands(*r_.ops[j], map);
  }

  int sinkConstants() {
    int changed = 0;
    for (size_t i = 0; i < r_.ops.size(); ++i) {
      Operation &seg = *r_.ops[i];
      if (!prepared(seg))
        continue;
      bool any = false;
      for (Value *v : seg.operands)
        any |= cheapGlobal(v) != nullptr;
      if (!any)
        continue;
      SegmentBuilder b(seg);
      Region &body = *seg.regions[0];
      ValueMap map;
      for (size_t k = 0; k < seg.operands.size(); ++k) {
        Value *v = seg.operands[k];
        const Global *g = cheapGlobal(v);
        if (!g) {
          map[body.args[k].get()] = b.argFor(v);
          continue;
        }
        ValueMap inner;
        for (auto &op : g->init->ops) {
          if (op->kind == OpKind::Yield)
            continue;
          std::unique_ptr<Operation> c = cloneOp(*op, inner);
          c->device = seg.device;
          c->placement = PlacementKind::Inferred;
          for (auto &res : c->results)
            res->device = seg.device;
          b.push(std::move(c));
        }
        map[body.args[k].get()] = inner.at(stdlib::terminatorOf(*g->init)->operands[0]);
      }
      std::vector<Value *> yielded;
      for (Value *v : stdlib::terminatorOf(body)->operands)
        yielded.push_back(v->region == &body ? map.at(v) : v);
      b.take(body, map);
      replace(i, b.finish(yielded, seg.loc));
      ++changed;
    }
    return changed;
  }

  int dropDeadGlobalReads() {
    std::unordered_map<const Value *, int> uses;
    countUses(r_, uses);
    int dropped = 0;
    std::vector<std::unique_ptr<Operation>> kept;
    for (auto &op : r_.ops) {
      if (op->kind == OpKind::Global && !uses.count(op->results[0].get())) {
        ++dropped;
        continue;
      }
      kept.push_back(std::move(op));
    }
    r_.ops = std::move(kept);
    return dropped;
  }

  int mergeNeighbours() {
    int merged = 0;
    for (size_t i = 0; i + 1 < r_.ops.size();) {
      Operation &a = *r_.ops[i], &b = *r_.ops[i + 1];
      if (!prepared(a) || !prepared(b) || a.device != b.device) {
        ++i;
        continue;
      }
      merge(i);
      ++merged;
    }
    return merged;
  }

  /// Segments i and i + 1 become one, at i.
  void merge(size_t i) {
    Operation &a = *r_.ops[i], &b = *r_.ops[i + 1];
    Region &ab = *a.regions[0], &bb = *b.regions[0];
    std::unordered_map<const Value *, int> uses;
    for (size_t j = i + 2; j < r_.ops.size(); ++j) {
      for (const Value *v : r_.ops[j]->operands)
        ++uses[v];
      for (auto &sub : r_.ops[j]->regions)
        countUses(*sub, uses);
    }
    SegmentBuilder s(a);
    ValueMap mapA, mapB;
    for (size_t k = 0; k < a.operands.size(); ++k)
      mapA[ab.args[k].get()] = s.argFor(a.operands[k]);
    const Operation *ya = stdlib::terminatorOf(ab);
    auto innerOf = [&](const Value *v) {
      Value *x = ya->operands[v->index];
      auto it = mapA.find(x);
      return it == mapA.end() ? x : it->second;
    };
    for (size_t k = 0; k < b.operands.size(); ++k) {
      Value *v = b.operands[k];
      mapB[bb.args[k].get()] = v->def == &a ? innerOf(v) : s.argFor(v);
    }
    // Results: the first's still read after the second, then the second's.
    std::vector<Value *> yielded;
    std::vector<const Value *> stands;
    for (auto &res : a.results)
      if (uses.count(res.get())) {
        yielded.push_back(innerOf(res.get()));
        stands.push_back(res.get());
      }
    const Operation *yb = stdlib::terminatorOf(bb);
    for (size_t k = 0; k < b.results.size(); ++k) {
      Value *x = yb->operands[k];
      auto it = mapB.find(x);
      yielded.push_back(it == mapB.end() ? x : it->second);
      stands.push_back(b.results[k].get());
    }
    s.take(ab, mapA);
    s.take(bb, mapB);
    std::unique_ptr<Operation> n = s.finish(yielded, a.loc);
    ValueMap map;
    for (size_t k = 0; k < stands.size(); ++k)
      map[stands[k]] = n->results[k].get();
    n->parent = &r_;
    r_.ops[i] = std::move(n);
    r_.ops.erase(r_.ops.begin() + long(i) + 1);
    for (size_t j = i + 1; j < r_.ops.size(); ++j)
      remapOperands(*r_.ops[j], map);
  }

  const Module &m_;
  Region &r_;
};

} // namespace

int mergeSegments(const Module &m, Region &r) { return SegmentMerger(m, r).run(); }

} // namespace mdl::passes
