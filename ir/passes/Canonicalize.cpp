// canonicalize:
// 1. Walk every region of every function; a device operation that is a
//    softmax, log_softmax or layernorm over the last axis of a float
//    tensor is replaced, at its position, by primitives:
//      softmax:     m = max(x, keepdims); e = exp(x - m); y = e / sum(e, keepdims)
//      log_softmax: t = x - max(x, keepdims); y = t - log(sum(exp(t), keepdims))
//      layernorm:   d = x - mean(x, keepdims); v = mean(d * d, keepdims);
//                   y = d * rsqrt(v + eps) * gamma + beta
//    (the same formulas, in the same order, as the CPU kernels; sums are
//    then computed by the fused loops rather than in double). For bf16 and
//    f16 the formulas run in f32 between cast(x, f32) and a cast of y back:
//    the kernels' statistics and intermediates are f32 too, and a fused
//    loop widens on load and rounds on store anyway, so the casts cost
//    nothing there. HLO operations with a core equivalent are rewritten
//    too (CanonicalizeHlo.cpp). Before that, a region's segments of one
//    device are merged where only cheap constant globals separate them
//    (SegmentMerge.cpp); after it, a segment's views between element-wise
//    operations are simplified (ViewSimplify.cpp).
// 2. Every later use of the old result reads the new one.
// New operations keep the original's device, placement and location.
#include "ir/passes/Canonicalize.h"
#include "ir/Half.h"
#include "ir/passes/CanonicalizeInternal.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cstring>

namespace mdl::passes {

using namespace ir;

Value *Expander::emit(OpKind k, std::vector<Value *> operands, std::vector<NamedAttr> attrs) {
  std::vector<TensorType> types;
  for (Value *v : operands)
    types.push_back(v->type);
  stdlib::InferResult r = stdlib::inferTypes(k, types, attrs);
  auto op = std::make_unique<Operation>(k, orig_.loc);
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->device = orig_.device;
  op->placement = orig_.placement;
  Value *v = op->addResult(r.ok() ? r.types[0] : orig_.results[0]->type);
  v->device = orig_.device;
  ops.push_back(std::move(op));
  return v;
}

Value *Expander::reduce(OpKind k, Value *x) {
  int64_t axis = x->type.rank() - 1;
  return emit(k, {x},
              {{"axis", Attribute::intList({axis})}, {"keepdims", Attribute::boolean(true)}});
}

Value *Expander::scalar(DType t, double v) {
  auto d = std::make_shared<DenseData>();
  d->type = TensorType::scalar(t);
  d->bytes.resize(dtypeSize(t));
  if (t == DType::F64) {
    std::memcpy(d->bytes.data(), &v, sizeof v);
  } else if (t == DType::BF16 || t == DType::F16) {
    uint16_t h = t == DType::BF16 ? floatToBf16(float(v)) : floatToHalf(float(v));
    std::memcpy(d->bytes.data(), &h, sizeof h);
  } else { // f32 (the only other float type)
    float f = float(v);
    std::memcpy(d->bytes.data(), &f, std::min(sizeof f, d->bytes.size()));
  }
  auto op = std::make_unique<Operation>(OpKind::Constant, orig_.loc);
  op->setAttr("value", Attribute::dense(d));
  op->device = orig_.device;
  op->placement = PlacementKind::Replicated;
  Value *r = op->addResult(d->type);
  r->device = orig_.device;
  ops.push_back(std::move(op));
  return r;
}

Value *Expander::cast(Value *x, DType t) {
  return x->type.dtype == t ? x : emit(OpKind::Cast, {x}, {{"dtype", Attribute::dtype(t)}});
}

Value *Expander::transpose(Value *x, const std::vector<int64_t> &perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == int64_t(i);
  return identity ? x : emit(OpKind::Transpose, {x}, {{"perm", Attribute::intList(perm)}});
}

Value *Expander::reshape(Value *x, const std::vector<int64_t> &sizes) {
  if (x->type.sizes() == sizes)
    return x;
  Shape s;
  for (int64_t n : sizes)
    s.push_back(Dim::of(n));
  return emit(OpKind::Reshape, {x}, {{"shape", Attribute::dimList(s)}});
}

namespace {

bool isNormalization(OpKind k) {
  return k == OpKind::Softmax || k == OpKind::LogSoftmax || k == OpKind::Layernorm;
}

bool decomposable(const Operation &op) {
  if (op.device < 0 || op.results.size() != 1)
    return false;
  if (!isNormalization(op.kind))
    return rewritesHlo(op);
  const TensorType &t = op.operands[0]->type;
  if (!isFloat(t.dtype) || !t.isStatic() || t.rank() == 0)
    return false;
  for (Value *v : op.operands)
    if (v->type.dtype != t.dtype)
      return false;
  return op.intAttr("axis", -1) == t.rank() - 1;
}

/// The primitives of a softmax, log_softmax or layernorm; the last one's
/// result replaces the original.
Value *expandNormalization(Expander &ex) {
  const Operation &orig = ex.original();
  DType t = orig.operands[0]->type.dtype;
  // Halves compute in f32, as their kernels do.
  DType c = t == DType::F64 ? DType::F64 : DType::F32;
  Value *x = ex.cast(orig.operands[0], c);
  Value *y;
  switch (orig.kind) {
  case OpKind::Softmax: {
    Value *m = ex.reduce(OpKind::ReduceMax, x);
    Value *e = ex.emit(OpKind::Exp, {ex.emit(OpKind::Sub, {x, m})});
    y = ex.emit(OpKind::Div, {e, ex.reduce(OpKind::Sum, e)});
    break;
  }
  case OpKind::LogSoftmax: {
    Value *d = ex.emit(OpKind::Sub, {x, ex.reduce(OpKind::ReduceMax, x)});
    Value *s = ex.reduce(OpKind::Sum, ex.emit(OpKind::Exp, {d}));
    y = ex.emit(OpKind::Sub, {d, ex.emit(OpKind::Log, {s})});
    break;
  }
  default: { // layernorm
    Value *d = ex.emit(OpKind::Sub, {x, ex.reduce(OpKind::Mean, x)});
    Value *var = ex.reduce(OpKind::Mean, ex.emit(OpKind::Mul, {d, d}));
    Value *eps = ex.scalar(c, orig.floatAttr("eps", 1e-5));
    Value *r = ex.emit(OpKind::Rsqrt, {ex.emit(OpKind::Add, {var, eps})});
    Value *n = ex.emit(OpKind::Mul, {ex.emit(OpKind::Mul, {d, r}), ex.cast(orig.operands[1], c)});
    y = ex.emit(OpKind::Add, {n, ex.cast(orig.operands[2], c)});
    break;
  }
  }
  return ex.cast(y, t);
}

Value *expand(Expander &ex) {
  return isNormalization(ex.original().kind) ? expandNormalization(ex) : expandHlo(ex);
}

int canonicalizeRegion(const Module &m, Region &r) {
  int rewritten = mergeSegments(m, r);
  ValueMap map;
  std::vector<std::unique_ptr<Operation>> out;
  out.reserve(r.ops.size());
  for (auto &op : r.ops) {
    if (!map.empty())
      remapOperands(*op, map);
    // Segments of kinds that take them as written stay as they are.
    bool prepared = stdlib::jitPreparesSegments(m, op->device);
    for (auto &sub : op->regions)
      if (prepared)
        rewritten += canonicalizeRegion(m, *sub);
    if (prepared && op->kind == OpKind::Segment)
      rewritten += simplifyViews(*op->regions[0]);
    if (!prepared || !decomposable(*op)) {
      out.push_back(std::move(op));
      continue;
    }
    Expander ex(*op);
    Value *result = expand(ex);
    if (!result || result->type != op->results[0]->type) {
      out.push_back(std::move(op)); // a shape rule disagreed: keep the original
      continue;
    }
    map[op->results[0].get()] = result;
    for (auto &n : ex.ops)
      out.push_back(std::move(n));
    ++rewritten;
  }
  r.ops.clear();
  for (auto &op : out)
    r.push(std::move(op));
  return rewritten;
}

} // namespace

int canonicalize(Module &m) {
  int n = 0;
  for (auto &f : m.functions)
    n += canonicalizeRegion(m, *f->body);
  return n;
}

} // namespace mdl::passes
