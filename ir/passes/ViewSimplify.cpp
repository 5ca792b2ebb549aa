// canonicalize, the views between element-wise operations in a segment (see
// Canonicalize.h).
//
// Imported HLO states every broadcast and every keepdims as a view: a
// softmax row maximum is `reduce` (dropping the axis), `reshape` (putting a
// unit axis back, often twice through a chain), `broadcast` (to the row
// shape), then `subtract`. Fusion joins operations whose operands are
// produced by other members, and views are not members, so each view ended
// a loop nest. mdl's broadcasting makes most of them unnecessary:
// 1. A chain of reshapes is one reshape of the chain's source (none when
//    the shapes agree).
// 2. A reshape that only inserts or removes axes of size 1 is pushed into
//    the single-use value it reshapes: a reduction then keeps its axes
//    (keepdims) instead of dropping them, an element-wise operation
//    computes at the new shape (its operands reshaped in turn; scalars stay
//    as they are), a broadcast of a scalar broadcasts to the new shape.
// 3. An element-wise operand that is a broadcast_to is read unbroadcast
//    when the operation's result keeps its shape (NumPy broadcasting does
//    the rest, in the loop nest, at no cost).
// 4. Operations nothing reads any more are dropped.
// Every rewrite computes the same values: only shapes of size-1 axes and
// where a broadcast happens change.
#include "ir/passes/CanonicalizeInternal.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <unordered_map>

namespace mdl::passes {

using namespace ir;

namespace {

using Ints = std::vector<int64_t>;

Ints nonUnit(const Ints &s) {
  Ints out;
  for (int64_t d : s)
    if (d != 1)
      out.push_back(d);
  return out;
}

bool isElementwise(const Operation &op) {
  return op.results.size() == 1 && !stdlib::isRowReduction(op.kind) &&
         stdlib::isFusibleKind(op.kind, op.results[0]->type.dtype);
}

/// NumPy's broadcast of two shapes; false when they do not broadcast.
bool broadcast(Ints a, Ints b, Ints &out) {
  if (a.size() < b.size())
    std::swap(a, b);
  out = a;
  size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    int64_t &o = out[off + i];
    if (b[i] == o || b[i] == 1)
      continue;
    if (o != 1)
      return false;
    o = b[i];
  }
  return true;
}

class ViewSimplifier {
public:
  /// Counts the uses of each value and records who reads it (the kind of
  /// its one reader matters for reshape chains).
  explicit ViewSimplifier(Region &body) : body_(body) {
    for (auto &op : body.ops)
      for (const Value *v : op->operands) {
        ++uses_[v];
        readers_[v] = op->kind;
      }
  }

  int run() {
    std::vector<std::unique_ptr<Operation>> old = std::move(body_.ops);
    body_.ops.clear();
    for (auto &op : old) {
      remap(*op);
      // The rules compare sizes: shapes with symbols (a generic function's
      // segments, before specialization) are left as they are.
      if (isStatic(*op)) {
        if (op->kind == OpKind::Reshape && reshape(*op))
          continue;
        if (isElementwise(*op))
          unbroadcast(*op);
      }
      body_.push(std::move(op));
    }
    return changed_ + dropDead();
  }

private:
  static bool isStatic(const Operation &op) {
    for (const Value *v : op.operands)
      if (!v->type.isStatic())
        return false;
    for (const auto &r : op.results)
      if (!r->type.isStatic())
        return false;
    return true;
  }

  void remap(Operation &op) {
    for (Value *&v : op.operands)
      if (auto it = map_.find(v); it != map_.end())
        v = it->second;
  }

  bool isReshape(const Value *v) const {
    return v->def && v->def->parent == &body_ && v->def->kind == OpKind::Reshape;
  }

  /// Rules 1 and 2 for `op`; true when it is replaced (and not kept).
  bool reshape(Operation &op) {
    Value *result = op.results[0].get();
    // The outermost reshape of a chain does the work.
    if (uses_[result] == 1 && users(result) == OpKind::Reshape)
      return false;
    Value *src = op.operands[0];
    while (isReshape(src))
      src = src->def->operands[0];
    if (!src->type.isStatic())
      return false;
    Ints to = result->type.sizes();
    Value *repl;
    if (src->type.sizes() == to) {
      repl = src;
    } else if (nonUnit(src->type.sizes()) == nonUnit(to)) {
      Expander ex(op);
      repl = reshapeInto(ex, src, to);
      pushNew(ex);
    } else if (src == op.operands[0]) {
      return false; // a reshape of its own kind, already direct
    } else {
      Expander ex(op);
      repl = ex.reshape(src, to);
      pushNew(ex);
    }
    map_[result] = repl;
    uses_[repl] += uses_[result];
    ++changed_;
    return true;
  }

  /// Appends the operations an Expander made, counting their reads and
  /// applying rule 3 to them too.
  void pushNew(Expander &ex) {
    for (auto &n : ex.ops) {
      for (const Value *v : n->operands) {
        ++uses_[v];
        readers_[v] = n->kind;
      }
      if (isElementwise(*n))
        unbroadcast(*n);
      body_.push(std::move(n));
    }
  }

  /// The kind of operation that reads `v` (when one does).
  OpKind users(const Value *v) const {
    auto it = readers_.find(v);
    return it == readers_.end() ? OpKind::Yield : it->second;
  }

  /// `v` at shape `to` (unit axes apart, the same elements), computed by
  /// reshaping its single-use definition's inputs instead where possible.
  Value *reshapeInto(Expander &ex, Value *v, const Ints &to) {
    if (v->type.sizes() == to)
      return v;
    const Operation *def = v->def;
    bool single = def && def->parent == &body_ && uses_[v] == 1;
    if (single && stdlib::isRowReduction(def->kind) && !def->boolAttr("keepdims") &&
        def->operands[0]->type.isStatic()) {
      Ints kept = def->operands[0]->type.sizes();
      for (int64_t a : def->intListAttr("axis"))
        kept[size_t(a)] = 1;
      if (kept == to) {
        std::vector<NamedAttr> attrs = def->attrs;
        for (NamedAttr &a : attrs)
          if (a.name == "keepdims")
            a.value = Attribute::boolean(true);
        return ex.emit(def->kind, def->operands, attrs);
      }
    }
    if (single && isElementwise(*def) && v->type.rank() > 0) {
      Ints shape = v->type.sizes();
      bool fits = true;
      for (const Value *o : def->operands)
        fits &= o->type.isStatic() && (o->type.sizes() == shape || o->type.rank() == 0);
      if (fits) {
        std::vector<Value *> ops;
        for (Value *o : def->operands)
          ops.push_back(o->type.rank() == 0 ? o : reshapeInto(ex, o, to));
        Value *r = ex.emit(def->kind, ops, def->attrs);
        if (r->type.sizes() == to && r->type.dtype == v->type.dtype)
          return r;
        // (not expected: the operations made are dropped as dead)
      }
    }
    if (def && def->parent == &body_ && def->kind == OpKind::BroadcastTo &&
        def->operands[0]->type.numElements() == 1) {
      Shape s;
      for (int64_t n : to)
        s.push_back(Dim::of(n));
      return ex.emit(OpKind::BroadcastTo, {def->operands[0]}, {{"shape", Attribute::dimList(s)}});
    }
    return ex.reshape(v, to);
  }

  /// Rule 3.
  void unbroadcast(Operation &op) {
    Ints want = op.results[0]->type.sizes();
    for (size_t i = 0; i < op.operands.size(); ++i) {
      Value *v = op.operands[i];
      if (!v->def || v->def->parent != &body_ || v->def->kind != OpKind::BroadcastTo)
        continue;
      Value *inner = v->def->operands[0];
      if (!inner->type.isStatic())
        continue;
      Ints shape;
      bool ok = true;
      for (size_t k = 0; k < op.operands.size() && ok; ++k) {
        Ints s = k == i ? inner->type.sizes() : op.operands[k]->type.sizes();
        ok = broadcast(shape, s, shape);
      }
      if (!ok || shape != want)
        continue;
      op.operands[i] = inner;
      --uses_[v];
      ++uses_[inner];
      ++changed_;
    }
  }

  /// Rule 4, from the end (so that chains die at once).
  int dropDead() {
    std::unordered_map<const Value *, int> uses;
    for (auto &op : body_.ops)
      for (const Value *v : op->operands)
        ++uses[v];
    int dropped = 0;
    std::vector<std::unique_ptr<Operation>> kept; // in reverse
    for (size_t i = body_.ops.size(); i-- > 0;) {
      Operation &op = *body_.ops[i];
      bool dead = op.kind != OpKind::Yield && op.regions.empty() &&
                  !stdlib::isOrchestration(op.kind);
      for (auto &r : op.results)
        dead &= !uses.count(r.get()) || uses[r.get()] == 0;
      if (dead) {
        for (const Value *v : op.operands)
          --uses[v];
        ++dropped;
      } else {
        kept.push_back(std::move(body_.ops[i]));
      }
    }
    std::reverse(kept.begin(), kept.end());
    body_.ops = std::move(kept);
    return dropped;
  }

  Region &body_;
  std::unordered_map<const Value *, int> uses_;
  std::unordered_map<const Value *, OpKind> readers_;
  ValueMap map_;
  int changed_ = 0;
};

} // namespace

int simplifyViews(Region &segmentBody) { return ViewSimplifier(segmentBody).run(); }

} // namespace mdl::passes
