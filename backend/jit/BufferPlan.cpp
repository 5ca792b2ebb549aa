// Buffer planning:
// 1. Number the operations in walk order (an operation with regions spans
//    from its own position to its last nested one).
// 2. Walk the function and give each value a location: arguments, globals
//    and constants their own roots; operation results a fresh arena root;
//    shape operations and host-memory transfers a view of their operand;
//    host-memory segments are transparent (their arguments and results are
//    the values outside). A view that some consumer needs contiguous is
//    copied into a root of its own where it is defined.
// 3. Liveness: each root lives from its first definition to its last use; a
//    use inside a loop of a value defined outside it counts at the loop's
//    end; a loop's carried slots live through the whole loop.
// 4. In-place updates: an update (UpdatesOperand) whose operand's root is
//    read by nothing after it takes that root for its result.
// 5. Destinations: a loop's initial value, a yielded value or a returned
//    value whose root nothing else needs takes over the destination (the
//    carried slot, the `if` result, the caller's result buffer), so no copy
//    is made; a convolution whose epilogue adds a residual that dies there
//    is computed in the residual's root.
// 6. Arena roots are placed by assignOffsets, one arena per memory space.
#include "backend/jit/BufferPlan.h"
#include "backend/jit/InlineOps.h"
#include "backend/jit/Runtime.h"
#include "ir/passes/Canonicalize.h"
#include "stdlib/ConvEpilogue.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <climits>
#include <set>

namespace mdl::backend::jit {

using namespace ir;

int FunctionPlan::rep(int r) const {
  while (rootRep[size_t(r)] != r)
    r = rootRep[size_t(r)];
  return r;
}

std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

bool isContiguous(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides) {
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0)
      return true;
    if (shape[i] != 1 && strides[i] != acc)
      return false;
    acc *= shape[i];
  }
  return true;
}

std::optional<MatrixLayout> matrixLayout(int64_t rows, int64_t cols, int64_t rowStride,
                                         int64_t colStride) {
  if (cols == 1 || colStride == 1) {
    int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rowStride;
    if (ld >= std::max<int64_t>(cols, 1))
      return MatrixLayout{false, ld};
  }
  if (rows == 1 || rowStride == 1) {
    int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : colStride;
    if (ld >= std::max<int64_t>(rows, 1))
      return MatrixLayout{true, ld};
  }
  return std::nullopt;
}

int64_t assignOffsets(std::vector<PlanInterval> &items) {
  constexpr int64_t kAlign = 64;
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].bytes != items[b].bytes)
      return items[a].bytes > items[b].bytes;
    return items[a].start < items[b].start;
  });
  int64_t total = 0;
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i : order) {
    PlanInterval &it = items[i];
    int64_t size = (std::max<int64_t>(it.bytes, 1) + kAlign - 1) / kAlign * kAlign;
    busy.clear();
    for (size_t j : placed)
      if (items[j].start <= it.end && it.start <= items[j].end)
        busy.push_back({items[j].offset,
                        items[j].offset + (std::max<int64_t>(items[j].bytes, 1) + kAlign - 1) /
                                              kAlign * kAlign});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto &[lo, hi] : busy) {
      if (off + size <= lo)
        break;
      off = std::max(off, hi);
    }
    it.offset = off;
    total = std::max(total, off + size);
    placed.push_back(i);
  }
  return total;
}

namespace {

bool isViewOp(OpKind k) { return stdlib::isView(k); }


/// numpy's no-copy reshape: new strides for `to` over the same elements as
/// (`from`, `strides`), or false when the elements are not evenly spaced.
bool reshapeStrides(const std::vector<int64_t> &from, const std::vector<int64_t> &strides,
                    const std::vector<int64_t> &to, std::vector<int64_t> &out) {
  std::vector<int64_t> of, os;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == 0) {
      out = rowMajor(to);
      return true;
    }
    if (from[i] != 1) {
      of.push_back(from[i]);
      os.push_back(strides[i]);
    }
  }
  out.assign(to.size(), 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  std::vector<int64_t> nf;
  std::vector<size_t> nidx;
  for (size_t i = 0; i < to.size(); ++i)
    if (to[i] != 1) {
      nf.push_back(to[i]);
      nidx.push_back(i);
    }
  while (ni < nf.size() && oi < of.size()) {
    int64_t np = nf[ni], op = of[oi];
    while (np != op) {
      if (np < op)
        np *= nf[nj++];
      else
        op *= of[oj++];
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (os[k] != of[k + 1] * os[k + 1])
        return false;
    out[nidx[nj - 1]] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k)
      out[nidx[k - 1]] = out[nidx[k]] * nf[k];
    ni = nj++;
    oi = oj++;
  }
  return ni == nf.size() && oi == of.size();
}

class Planner {
public:
  Planner(const Module &m, const Function &f, const std::vector<bool> &hostMemory,
          const std::vector<bool> &inlineSegments)
      : m_(m), f_(f), hostMemory_(hostMemory), inline_(inlineSegments) {}

  FunctionPlan run() {
    plan_.hostMemory = hostMemory_;
    plan_.inlineSegments = inline_;
    number(*f_.body);
    for (size_t i = 0; i < f_.body->args.size(); ++i) {
      const Value *a = f_.body->args[i].get();
      int r = newRoot(Root::Kind::Arg, space(a), a);
      plan_.roots[size_t(r)].index = int(i);
      setOwn(a, r);
    }
    walk(*f_.body);
    for (auto &[v, src] : aliasOf_)
      plan_.locs[v] = plan_.locs.at(resolve(src));
    liveness();
    inPlaceUpdates(*f_.body);
    destinations();
    place();
    return std::move(plan_);
  }

private:
  // --- Locations -----------------------------------------------------------

  int space(const Value *v) const {
    int d = v->device;
    return d >= 0 && size_t(d) < hostMemory_.size() && !hostMemory_[size_t(d)] ? d : -1;
  }
  bool inlinesSegments(int d) const {
    return d < 0 || size_t(d) >= inline_.size() || inline_[size_t(d)];
  }

  int newRoot(Root::Kind k, int sp, const Value *v, int64_t bytes = -1) {
    Root r;
    r.kind = k;
    r.space = sp;
    r.value = v;
    r.bytes = bytes >= 0 ? bytes : (v ? v->type.byteSize() : 0);
    r.start = INT_MAX;
    r.end = -1;
    plan_.roots.push_back(r);
    plan_.rootRep.push_back(int(plan_.roots.size() - 1));
    uses_.emplace_back();
    return int(plan_.roots.size() - 1);
  }

  void setOwn(const Value *v, int root) {
    plan_.locs[v] = ValueLoc{root, 0, rowMajor(v->type.sizes()), true};
  }

  int own(const Value *v) {
    int r = newRoot(Root::Kind::Arena, space(v), v);
    setOwn(v, r);
    return r;
  }

  const Value *resolve(const Value *v) const {
    for (auto it = aliasOf_.find(v); it != aliasOf_.end(); it = aliasOf_.find(v))
      v = it->second;
    return v;
  }

  void alias(const Value *v, const Value *src) {
    aliasOf_[v] = src;
    plan_.locs[v] = plan_.locs.at(resolve(src));
  }

  const ValueLoc &locOf(const Value *v) const { return plan_.locs.at(resolve(v)); }

  /// Makes `v` contiguous: a view is copied into a root of its own.
  void requireContiguous(const Value *v) {
    const Value *src = resolve(v);
    ValueLoc &l = plan_.locs.at(src);
    if (l.contiguous)
      return;
    plan_.copyFrom[src] = l;
    own(src);
  }

  void handle(const Operation &op) {
    plan_.handleOf[&op] = int(plan_.handles.size());
    plan_.handles.push_back(&op);
  }

  void view(const Operation &op) {
    const Value *x = op.operands[0];
    const Value *y = op.results[0].get();
    ValueLoc l = locOf(x);
    std::vector<int64_t> xs = x->type.sizes(), ys = y->type.sizes();
    switch (op.kind) {
    case OpKind::Reshape: {
      std::vector<int64_t> st;
      if (l.contiguous) {
        st = rowMajor(ys);
      } else if (!reshapeStrides(xs, l.strides, ys, st)) {
        requireContiguous(x);
        l = locOf(x);
        st = rowMajor(ys);
      }
      l.strides = st;
      break;
    }
    case OpKind::ExpandDims: {
      int64_t axis = op.intAttr("axis", 0);
      l.strides.insert(l.strides.begin() + axis, 0);
      break;
    }
    case OpKind::Squeeze: {
      const std::vector<int64_t> &axes = op.intListAttr("axis");
      std::vector<int64_t> st;
      for (size_t i = 0; i < xs.size(); ++i)
        if (std::find(axes.begin(), axes.end(), int64_t(i)) == axes.end())
          st.push_back(l.strides[i]);
      l.strides = st;
      break;
    }
    case OpKind::Transpose: {
      const std::vector<int64_t> &perm = op.intListAttr("perm");
      std::vector<int64_t> st;
      for (int64_t p : perm)
        st.push_back(l.strides[size_t(p)]);
      l.strides = st;
      break;
    }
    case OpKind::Slice: {
      const std::vector<int64_t> &start = op.intListAttr("start"), &stop = op.intListAttr("stop"),
                                 &step = op.intListAttr("step"), &drop = op.intListAttr("drop");
      std::vector<int64_t> st;
      for (size_t i = 0; i < xs.size(); ++i) {
        if (std::find(drop.begin(), drop.end(), int64_t(i)) != drop.end()) {
          int64_t idx = start[i] < 0 ? start[i] + xs[i] : start[i];
          l.offset += idx * l.strides[i];
          continue;
        }
        stdlib::SliceDim sd = stdlib::normalizeSliceDim(xs[i], start[i], stop[i], step[i]);
        if (sd.len > 0)
          l.offset += sd.start * l.strides[i];
        st.push_back(l.strides[i] * sd.step);
      }
      l.strides = st;
      break;
    }
    default: { // broadcast_to
      std::vector<int64_t> st(ys.size(), 0);
      size_t off = ys.size() - xs.size();
      for (size_t i = 0; i < xs.size(); ++i)
        st[off + i] = xs[i] == 1 ? 0 : l.strides[i];
      l.strides = st;
      break;
    }
    }
    l.contiguous = isContiguous(ys, l.strides);
    plan_.locs[y] = l;
  }

  /// Whether the runtime's matmul reads the two operands as they are (a
  /// matmul, or a dot_general in the matrix-product form canonicalize
  /// gives it, of element types the runtime multiplies).
  bool matmulFits(const Operation &op) {
    if (op.kind == OpKind::DotGeneral && !passes::isMatmulFormDot(op))
      return false;
    if (matmulCode(op.operands[0]->type.dtype, op.results[0]->type.dtype) < 0)
      return false;
    for (int side = 0; side < 2; ++side) {
      const Value *v = op.operands[size_t(side)];
      const ValueLoc &l = locOf(v);
      std::vector<int64_t> s = v->type.sizes();
      int64_t rows, cols, rs, cs;
      if (s.size() == 1) {
        rows = side == 0 ? 1 : s[0];
        cols = side == 0 ? s[0] : 1;
        rs = side == 0 ? 0 : l.strides[0];
        cs = side == 0 ? l.strides[0] : 0;
      } else {
        rows = s[s.size() - 2];
        cols = s.back();
        rs = l.strides[s.size() - 2];
        cs = l.strides.back();
      }
      if (s.size() > 6 || !matrixLayout(rows, cols, rs, cs))
        return false;
    }
    return op.results[0]->type.rank() <= 6;
  }

  void walk(const Region &r) {
    for (auto &opPtr : r.ops) {
      const Operation &op = *opPtr;
      switch (op.kind) {
      case OpKind::Segment:
        if (inlinesSegments(op.device)) {
          const Region &body = *op.regions[0];
          for (size_t i = 0; i < body.args.size(); ++i)
            alias(body.args[i].get(), op.operands[i]);
          walk(body);
          const Operation *y = stdlib::terminatorOf(body);
          for (size_t i = 0; i < op.results.size(); ++i)
            alias(op.results[i].get(), y->operands[i]);
        } else {
          handle(op);
          for (Value *v : op.operands)
            requireContiguous(v);
          for (auto &res : op.results)
            own(res.get());
        }
        break;
      case OpKind::Fusion:
        for (auto &res : op.results)
          own(res.get());
        break;
      case OpKind::Constant: {
        int root = newRoot(Root::Kind::Constant, -1, op.results[0].get());
        plan_.roots[size_t(root)].source = &op;
        setOwn(op.results[0].get(), root);
        break;
      }
      case OpKind::Global: {
        const Value *v = op.results[0].get();
        int root = newRoot(Root::Kind::Global, space(v), v);
        plan_.roots[size_t(root)].source = &op;
        setOwn(v, root);
        break;
      }
      case OpKind::Transfer: case OpKind::To: case OpKind::Reveal:
        if (space(op.operands[0]) < 0 && space(op.results[0].get()) < 0) {
          alias(op.results[0].get(), op.operands[0]);
        } else {
          requireContiguous(op.operands[0]);
          own(op.results[0].get());
        }
        break;
      case OpKind::If:
        for (auto &res : op.results)
          own(res.get());
        walk(*op.regions[0]);
        walk(*op.regions[1]);
        break;
      case OpKind::For: {
        handle(op); // where an interrupt is reported
        const Region &body = *op.regions[0];
        int idx = newRoot(Root::Kind::Arena, -1, body.args[0].get());
        plan_.indexRoot[&op] = idx;
        setOwn(body.args[0].get(), idx);
        for (size_t k = 0; k < op.results.size(); ++k) {
          int c = own(op.results[k].get());
          carried_[&op].push_back(c);
          setOwn(body.args[k + 1].get(), c);
        }
        loops_.push_back(&op);
        walk(body);
        break;
      }
      case OpKind::While:
        handle(op);
        for (size_t k = 0; k < op.results.size(); ++k) {
          int c = own(op.results[k].get());
          carried_[&op].push_back(c);
          setOwn(op.regions[0]->args[k].get(), c);
          setOwn(op.regions[1]->args[k].get(), c);
        }
        loops_.push_back(&op);
        walk(*op.regions[0]);
        walk(*op.regions[1]);
        break;
      case OpKind::Yield: case OpKind::Return:
        break;
      case OpKind::Call:
        for (Value *v : op.operands)
          requireContiguous(v);
        for (auto &res : op.results)
          own(res.get());
        break;
      case OpKind::Print:
        for (Value *v : op.operands)
          requireContiguous(v);
        handle(op);
        break;
      case OpKind::Matmul: case OpKind::DotGeneral:
        if (!matmulFits(op)) {
          for (Value *v : op.operands)
            requireContiguous(v);
          handle(op);
        }
        own(op.results[0].get());
        break;
      default:
        if (isViewOp(op.kind) && space(op.results[0].get()) < 0) {
          view(op);
          break;
        }
        if (const InlineOpInfo *io = inlineOp(op);
            io && space(op.results[0].get()) < 0) {
          for (size_t i = 0; i < op.operands.size(); ++i)
            if (i < 32 && (io->contiguous >> i & 1u))
              requireContiguous(op.operands[i]);
          for (auto &res : op.results)
            own(res.get());
          if (io->handle)
            handle(op);
          plan_.inlined.insert(&op);
          break;
        }
        for (Value *v : op.operands)
          requireContiguous(v);
        for (auto &res : op.results)
          own(res.get());
        handle(op);
        break;
      }
    }
  }

  void number(const Region &r) {
    for (auto &op : r.ops) {
      pos_[op.get()] = next_++;
      bool opaque = op->kind == OpKind::Fusion ||
                    (op->kind == OpKind::Segment && !inlinesSegments(op->device));
      if (!opaque)
        for (auto &sub : op->regions)
          number(*sub);
      end_[op.get()] = next_ - 1;
    }
  }

  // --- Liveness ------------------------------------------------------------

  int rootOfValue(const Value *v) const { return plan_.rep(locOf(v).root); }

  void define(int root, int at) {
    Root &r = plan_.roots[size_t(plan_.rep(root))];
    r.start = std::min(r.start, at);
    r.end = std::max(r.end, at);
  }

  void use(int root, int at) {
    int rr = plan_.rep(root);
    Root &r = plan_.roots[size_t(rr)];
    r.end = std::max(r.end, at);
    uses_[size_t(rr)].push_back(at);
  }

  // Where a use of `v` by `op` counts: at the end of every loop between
  // the use and v's definition.
  int usePos(const Value *v, const Operation &op) const {
    const Value *src = resolve(v);
    int p = pos_.at(&op);
    const Region *home = src->def ? src->def->parent : src->region;
    for (const Region *r = op.parent; r && r != home;) {
      const Operation *owner = r->parent;
      if (!owner)
        break;
      if (owner->kind == OpKind::For || owner->kind == OpKind::While)
        p = std::max(p, end_.at(owner));
      r = owner->parent;
    }
    return p;
  }

  void liveRegion(const Region &r) {
    for (auto &opPtr : r.ops) {
      const Operation &op = *opPtr;
      int p = pos_.at(&op);
      for (Value *v : op.operands)
        use(rootOfValue(v), usePos(v, op));
      for (auto &res : op.results) {
        if (!aliasOf_.count(res.get())) // a segment's results are its inner values
          define(rootOfValue(res.get()), p);
        if (auto it = plan_.copyFrom.find(res.get()); it != plan_.copyFrom.end())
          use(it->second.root, p);
      }
      if (op.kind == OpKind::For || op.kind == OpKind::While) {
        int e = end_.at(&op);
        if (op.kind == OpKind::For) {
          define(plan_.indexRoot.at(&op), p);
          define(plan_.indexRoot.at(&op), e);
        }
        for (int c : carried_[&op]) {
          define(c, p);
          define(c, e);
        }
      }
      bool opaque = op.kind == OpKind::Fusion ||
                    (op.kind == OpKind::Segment && !inlinesSegments(op.device));
      if (!opaque)
        for (auto &sub : op.regions)
          liveRegion(*sub);
    }
  }

  void liveness() { liveRegion(*f_.body); }

  // --- In-place updates ----------------------------------------------------

  /// Whether the old contents of `root` are read after position `p`. Uses
  /// after the end of a loop that carries the root, when `p` is in that
  /// loop's body, read the loop's result (what the last iteration yielded),
  /// not the value updated at `p`.
  bool readAfter(int root, int p) const {
    int limit = INT_MAX;
    for (const Operation *loop : loops_) {
      const Region &body = *loop->regions.back();
      if (body.ops.empty() || p < pos_.at(body.ops.front().get()) || p > end_.at(loop))
        continue;
      for (int c : carried_.at(loop))
        if (plan_.rep(c) == root)
          limit = std::min(limit, end_.at(loop));
    }
    for (int q : uses_[size_t(root)])
      if (q > p && q <= limit)
        return true;
    return false;
  }

  /// Computes an update in its operand's buffer when the operand dies there.
  void updateInPlace(const Operation &op) {
    int p = pos_.at(&op);
    bool any = false;
    for (size_t i = 0; i < op.results.size() && i < op.operands.size(); ++i) {
      const Value *x = op.operands[i], *y = op.results[i].get();
      int rx = rootOfValue(x), ry = rootOfValue(y);
      const Root &r = plan_.roots[size_t(rx)], &ryRoot = plan_.roots[size_t(ry)];
      const ValueLoc &l = locOf(x);
      if (r.kind != Root::Kind::Arena || r.space >= 0 || ryRoot.space != r.space ||
          !l.contiguous || l.offset != 0 || x->type.byteSize() != r.bytes ||
          y->type.byteSize() != r.bytes || usePos(x, op) != p || readAfter(rx, p))
        return;
      for (size_t j = 0; j < op.operands.size(); ++j)
        if (j != i && rootOfValue(op.operands[j]) == rx)
          return;
      any = true;
    }
    if (!any)
      return;
    for (size_t i = 0; i < op.results.size() && i < op.operands.size(); ++i)
      merge(rootOfValue(op.results[i].get()), rootOfValue(op.operands[i]));
    plan_.inPlace.insert(&op);
  }

  void inPlaceUpdates(const Region &r) {
    for (auto &opPtr : r.ops) {
      const Operation &op = *opPtr;
      if (stdlib::updatesOperand(op.kind) && (plan_.inlined.count(&op) || plan_.handleOf.count(&op)))
        updateInPlace(op);
      bool opaque = op.kind == OpKind::Fusion ||
                    (op.kind == OpKind::Segment && !inlinesSegments(op.device));
      if (!opaque)
        for (auto &sub : op.regions)
          inPlaceUpdates(*sub);
    }
  }

  // --- Destinations --------------------------------------------------------

  /// Whether `v` can be computed straight into `dest`: v fills a whole
  /// arena root of the same size and space, defined after `after` and
  /// dead after `until`.
  bool movable(const Value *v, int dest, int after, int until) const {
    int rv = rootOfValue(v);
    const Root &r = plan_.roots[size_t(rv)], &d = plan_.roots[size_t(plan_.rep(dest))];
    const ValueLoc &l = locOf(v);
    return rv != plan_.rep(dest) && r.kind == Root::Kind::Arena && d.kind == Root::Kind::Arena &&
           r.space == d.space && r.bytes == d.bytes && l.contiguous && l.offset == 0 &&
           v->type.byteSize() == r.bytes && r.start > after && r.end <= until;
  }

  void merge(int from, int into) {
    from = plan_.rep(from);
    into = plan_.rep(into);
    if (from == into)
      return;
    Root &a = plan_.roots[size_t(from)], &b = plan_.roots[size_t(into)];
    b.start = std::min(b.start, a.start);
    b.end = std::max(b.end, a.end);
    uses_[size_t(into)].insert(uses_[size_t(into)].end(), uses_[size_t(from)].begin(),
                               uses_[size_t(from)].end());
    plan_.rootRep[size_t(from)] = into;
  }

  bool usedBetween(int root, int lo, int hi) const {
    for (int p : uses_[size_t(plan_.rep(root))])
      if (p >= lo && p <= hi)
        return true;
    return false;
  }

  void destinationsIn(const Region &r) {
    for (auto &opPtr : r.ops) {
      const Operation &op = *opPtr;
      int p = pos_.at(&op), e = end_.at(&op);
      bool opaque = op.kind == OpKind::Fusion ||
                    (op.kind == OpKind::Segment && !inlinesSegments(op.device));
      if (!opaque)
        for (auto &sub : op.regions)
          destinationsIn(*sub);
      if (op.kind == OpKind::For || op.kind == OpKind::While) {
        const std::vector<int> &slots = carried_[&op];
        size_t first = op.kind == OpKind::For ? 2 : 0;
        std::set<int> taken;
        // The initial value is moved in when the loop is its last reader.
        for (size_t k = 0; k < slots.size(); ++k) {
          const Value *x = op.operands[first + k];
          int rx = rootOfValue(x);
          const Root &rr = plan_.roots[size_t(rx)];
          const ValueLoc &l = locOf(x);
          if (rr.kind == Root::Kind::Arena && rr.space == plan_.roots[size_t(slots[k])].space &&
              rr.bytes == plan_.roots[size_t(slots[k])].bytes && l.contiguous && l.offset == 0 &&
              rr.end == p && !taken.count(rx)) {
            taken.insert(rx);
            merge(rx, slots[k]);
          }
        }
        // The yielded value is computed into its slot when the slot's value
        // is not read after that point of the iteration.
        const Operation *y = stdlib::terminatorOf(*op.regions.back());
        std::set<int> seen;
        for (size_t k = 0; k < slots.size(); ++k) {
          const Value *v = y->operands[k];
          int rv = rootOfValue(v);
          bool isSlot = false;
          for (int s : slots)
            isSlot |= plan_.rep(s) == rv;
          if (!seen.insert(rv).second || isSlot || !movable(v, slots[k], p, e) ||
              usedBetween(slots[k], plan_.roots[size_t(rv)].start, e))
            continue;
          merge(rv, slots[k]);
        }
      }
      if (op.kind == OpKind::FusedConvolution)
        residualInPlace(op, p);
      if (op.kind == OpKind::If) {
        for (auto &branch : op.regions) {
          const Operation *y = stdlib::terminatorOf(*branch);
          std::set<int> seen;
          for (size_t k = 0; k < op.results.size(); ++k) {
            const Value *v = y->operands[k];
            int rv = rootOfValue(v);
            if (!seen.insert(rv).second)
              continue;
            int dest = plan_.locs.at(op.results[k].get()).root;
            if (movable(v, dest, p, e))
              merge(rv, dest);
          }
        }
      }
    }
  }

  /// A convolution whose epilogue adds a residual is computed in the
  /// residual's slot when it is the residual's last reader (the oneDNN
  /// primitive adds to what its output holds: ConvPrimitive.h), saving the
  /// copy of the residual into the output; not when another operand shares
  /// that slot, which the convolution would overwrite while reading it, and
  /// not with two residuals (both live until the convolution: one slot
  /// cannot hold them and the output).
  void residualInPlace(const Operation &op, int p) {
    auto steps = stdlib::parseEpilogue(op.stringAttr("epilogue"));
    if (!steps || op.results.size() != 1)
      return;
    const stdlib::EpilogueStep *residual = nullptr;
    for (const stdlib::EpilogueStep &s : *steps) {
      if (s.kind != stdlib::EpilogueKind::Residual)
        continue;
      if (residual)
        return;
      residual = &s;
    }
    if (!residual)
      return;
    size_t k = size_t(residual->operand + 2);
    if (k >= op.operands.size())
      return;
    const Value *r = op.operands[k];
    int rr = rootOfValue(r), ro = rootOfValue(op.results[0].get());
    const Root &R = plan_.roots[size_t(rr)], &O = plan_.roots[size_t(ro)];
    const ValueLoc &l = locOf(r);
    if (rr == ro || R.kind != Root::Kind::Arena || O.kind != Root::Kind::Arena ||
        R.space != O.space || R.bytes != O.bytes || !l.contiguous || l.offset != 0 ||
        R.end != p)
      return;
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (i != k && rootOfValue(op.operands[i]) == rr)
        return;
    merge(ro, rr);
  }

  void destinations() {
    destinationsIn(*f_.body);
    // Returned values are computed in the caller's result buffers.
    const Operation *ret = stdlib::terminatorOf(*f_.body);
    std::set<int> seen;
    for (size_t i = 0; ret && i < ret->operands.size(); ++i) {
      const Value *v = ret->operands[i];
      int rv = rootOfValue(v);
      Root &r = plan_.roots[size_t(rv)];
      const ValueLoc &l = locOf(v);
      int want = i < f_.resultDevices.size() ? f_.resultDevices[i] : -1;
      int sp = plan_.deviceSpace(want);
      if (r.kind != Root::Kind::Arena || r.space != sp || !l.contiguous || l.offset != 0 ||
          r.bytes != v->type.byteSize() || !seen.insert(rv).second)
        continue;
      r.kind = Root::Kind::Result;
      r.index = int(i);
    }
    // Yields that read another carried slot of their loop go through a
    // temporary, so that copying one slot cannot clobber another's source.
    for (const Operation *loop : loops_) {
      const std::vector<int> &slots = carried_[loop];
      const Operation *y = stdlib::terminatorOf(*loop->regions.back());
      std::vector<int> temps(slots.size(), -1);
      bool any = false;
      for (size_t k = 0; k < slots.size(); ++k) {
        int rv = rootOfValue(y->operands[k]);
        for (size_t j = 0; j < slots.size(); ++j)
          if (j != k && plan_.rep(slots[j]) == rv) {
            temps[k] = newRoot(Root::Kind::Arena, plan_.roots[size_t(slots[k])].space,
                               y->operands[k]);
            int at = pos_.at(y);
            define(temps[k], at);
            any = true;
            break;
          }
      }
      if (any)
        plan_.yieldTemps[y] = temps;
    }
  }

  // --- Placement -----------------------------------------------------------

  void place() {
    std::map<int, std::vector<size_t>> bySpace;
    for (size_t i = 0; i < plan_.roots.size(); ++i) {
      const Root &r = plan_.roots[i];
      if (plan_.rep(int(i)) != int(i) || r.kind != Root::Kind::Arena)
        continue;
      bySpace[r.space].push_back(i);
    }
    for (auto &[sp, ids] : bySpace) {
      std::vector<PlanInterval> items;
      for (size_t i : ids) {
        const Root &r = plan_.roots[i];
        PlanInterval it;
        it.bytes = r.bytes;
        it.start = r.start == INT_MAX ? 0 : r.start;
        it.end = std::max(r.end, it.start);
        items.push_back(it);
        plan_.unsharedBytes += (std::max<int64_t>(r.bytes, 1) + 63) / 64 * 64;
      }
      plan_.arenaBytes[sp] = assignOffsets(items);
      for (size_t k = 0; k < ids.size(); ++k)
        plan_.roots[ids[k]].offset = items[k].offset;
    }
  }

  const Module &m_;
  const Function &f_;
  const std::vector<bool> &hostMemory_;
  const std::vector<bool> &inline_;
  FunctionPlan plan_;
  std::unordered_map<const Operation *, int> pos_, end_;
  int next_ = 0;
  std::unordered_map<const Value *, const Value *> aliasOf_;
  std::unordered_map<const Operation *, std::vector<int>> carried_;
  std::vector<const Operation *> loops_; // in walk order
  std::vector<std::vector<int>> uses_;
};

} // namespace

FunctionPlan planBuffers(const Module &m, const Function &f, const std::vector<bool> &hostMemory,
                         const std::vector<bool> &inlineSegments) {
  return Planner(m, f, hostMemory, inlineSegments).run();
}

} // namespace mdl::backend::jit
