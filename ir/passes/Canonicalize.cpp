// canonicalize:
// 1. Walk every region of every function; a device operation that is a
//    softmax, log_softmax or layernorm over the last axis of an f32/f64
//    tensor is replaced, at its position, by primitives:
//      softmax:     m = max(x, keepdims); e = exp(x - m); y = e / sum(e, keepdims)
//      log_softmax: t = x - max(x, keepdims); y = t - log(sum(exp(t), keepdims))
//      layernorm:   d = x - mean(x, keepdims); v = mean(d * d, keepdims);
//                   y = d * rsqrt(v + eps) * gamma + beta
//    (the same formulas, in the same order, as the CPU kernels; sums are
//    then computed by the fused loops rather than in double).
// 2. Every later use of the old result reads the new one.
// New operations keep the original's device, placement and location.
#include "ir/passes/Canonicalize.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

#include <cstring>

namespace mdl::passes {

using namespace ir;

namespace {

bool decomposable(const Operation &op) {
  if (op.device < 0 || op.results.size() != 1)
    return false;
  if (op.kind != OpKind::Softmax && op.kind != OpKind::LogSoftmax &&
      op.kind != OpKind::Layernorm)
    return false;
  const TensorType &t = op.operands[0]->type;
  if ((t.dtype != DType::F32 && t.dtype != DType::F64) || !t.isStatic() || t.rank() == 0)
    return false;
  return op.intAttr("axis", -1) == t.rank() - 1;
}

/// Builds the replacement of one operation.
class Expander {
public:
  explicit Expander(const Operation &orig) : orig_(orig) {}

  Value *emit(OpKind k, std::vector<Value *> operands, std::vector<NamedAttr> attrs = {}) {
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

  Value *reduce(OpKind k, Value *x) {
    int64_t axis = x->type.rank() - 1;
    return emit(k, {x}, {{"axis", Attribute::intList({axis})}, {"keepdims", Attribute::boolean(true)}});
  }

  Value *scalar(DType t, double v) {
    auto d = std::make_shared<DenseData>();
    d->type = TensorType::scalar(t);
    d->bytes.resize(dtypeSize(t));
    if (t == DType::F32) {
      float f = float(v);
      std::memcpy(d->bytes.data(), &f, sizeof f);
    } else {
      std::memcpy(d->bytes.data(), &v, sizeof v);
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

  /// The new operations; the last one's result replaces the original.
  Value *expand() {
    Value *x = orig_.operands[0];
    switch (orig_.kind) {
    case OpKind::Softmax: {
      Value *m = reduce(OpKind::ReduceMax, x);
      Value *e = emit(OpKind::Exp, {emit(OpKind::Sub, {x, m})});
      return emit(OpKind::Div, {e, reduce(OpKind::Sum, e)});
    }
    case OpKind::LogSoftmax: {
      Value *t = emit(OpKind::Sub, {x, reduce(OpKind::ReduceMax, x)});
      Value *s = reduce(OpKind::Sum, emit(OpKind::Exp, {t}));
      return emit(OpKind::Sub, {t, emit(OpKind::Log, {s})});
    }
    default: { // layernorm
      Value *d = emit(OpKind::Sub, {x, reduce(OpKind::Mean, x)});
      Value *var = reduce(OpKind::Mean, emit(OpKind::Mul, {d, d}));
      Value *eps = scalar(x->type.dtype, orig_.floatAttr("eps", 1e-5));
      Value *r = emit(OpKind::Rsqrt, {emit(OpKind::Add, {var, eps})});
      Value *n = emit(OpKind::Mul, {emit(OpKind::Mul, {d, r}), orig_.operands[1]});
      return emit(OpKind::Add, {n, orig_.operands[2]});
    }
    }
  }

  std::vector<std::unique_ptr<Operation>> ops;

private:
  const Operation &orig_;
};

void remap(Operation &op, const ValueMap &map) {
  for (Value *&v : op.operands)
    if (auto it = map.find(v); it != map.end())
      v = it->second;
  for (auto &r : op.regions)
    for (auto &inner : r->ops)
      remap(*inner, map);
}

int canonicalizeRegion(const Module &m, Region &r) {
  int rewritten = 0;
  ValueMap map;
  std::vector<std::unique_ptr<Operation>> out;
  out.reserve(r.ops.size());
  for (auto &op : r.ops) {
    if (!map.empty())
      remap(*op, map);
    // Segments of kinds that take them as written stay as they are.
    bool prepared = stdlib::jitPreparesSegments(m, op->device);
    for (auto &sub : op->regions)
      if (prepared)
        rewritten += canonicalizeRegion(m, *sub);
    if (!prepared || !decomposable(*op)) {
      out.push_back(std::move(op));
      continue;
    }
    Expander ex(*op);
    Value *result = ex.expand();
    if (result->type != op->results[0]->type) {
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
