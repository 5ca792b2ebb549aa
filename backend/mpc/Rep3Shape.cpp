// Shape operations and sums on secret tensors (Rep3Engine.h): each party
// applies the public-index operation of Layout.h to both of its shares.
// None communicates, except mean's truncation of the product by 1/n.
#include "backend/mpc/Rep3Internals.h"

#include "backend/mpc/Layout.h"

namespace mdl::backend::mpc {

namespace {

// Applies `op` to both share arrays of x.
template <typename Fn>
llvm::Expected<SharedTensor> onBothShares(const SharedTensor &x, Fn op) {
  SharedTensor out{{}, x.encoding, {}};
  for (int half = 0; half < 2; ++half) {
    auto r = op(RingArray{x.shape, half ? x.s.b : x.s.a});
    if (!r)
      return r.takeError();
    out.shape = r->shape;
    (half ? out.s.b : out.s.a) = std::move(r->data);
  }
  return out;
}

} // namespace

llvm::Expected<SharedTensor> Rep3Engine::reshape(const SharedTensor &x,
                                                 const Shape &shape) {
  OpScope scope(*this, "reshape");
  Shape target = shape;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1 && inferred < 0) {
      inferred = int64_t(i);
      continue;
    }
    if (target[i] < 0)
      return mpcError("reshape to " + shapeToString(shape) +
                      ": dimensions must be non-negative, with at most one -1");
    known *= target[i];
  }
  if (inferred >= 0) {
    if (known == 0 || x.size() % known != 0)
      return mpcError("cannot reshape " + shapeToString(x.shape) + " to " +
                      shapeToString(shape));
    target[inferred] = x.size() / known;
  }
  if (numElements(target) != x.size())
    return mpcError("cannot reshape " + shapeToString(x.shape) + " (" +
                    std::to_string(x.size()) + " elements) to " +
                    shapeToString(shape));
  SharedTensor out = x;
  out.shape = target;
  return out;
}

llvm::Expected<SharedTensor>
Rep3Engine::transpose(const SharedTensor &x, const std::vector<int64_t> &perm) {
  OpScope scope(*this, "transpose");
  return onBothShares(
      x, [&](const RingArray &a) { return mpc::transpose(a, perm); });
}

llvm::Expected<SharedTensor>
Rep3Engine::slice(const SharedTensor &x, const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &stops,
                  const std::vector<int64_t> &steps) {
  OpScope scope(*this, "slice");
  return onBothShares(x, [&](const RingArray &a) {
    return mpc::slice(a, starts, stops, steps);
  });
}

llvm::Expected<SharedTensor>
Rep3Engine::concat(const std::vector<const SharedTensor *> &parts,
                   int64_t axis) {
  OpScope scope(*this, "concat");
  if (parts.empty())
    return mpcError("concat needs at least one operand");
  // One encoding for all parts: fixed if any is.
  bool anyFixed = false;
  for (const SharedTensor *p : parts)
    anyFixed |= p->encoding == EncodingKind::Fixed;
  std::vector<SharedTensor> aligned;
  for (const SharedTensor *p : parts)
    aligned.push_back(anyFixed ? toFixed(*p, fracBits()) : *p);
  SharedTensor out{{}, aligned[0].encoding, {}};
  for (int half = 0; half < 2; ++half) {
    std::vector<RingArray> arrays;
    for (const SharedTensor &p : aligned)
      arrays.push_back(RingArray{p.shape, half ? p.s.b : p.s.a});
    std::vector<const RingArray *> ptrs;
    for (const RingArray &a : arrays)
      ptrs.push_back(&a);
    auto r = mpc::concat(ptrs, axis);
    if (!r)
      return r.takeError();
    out.shape = r->shape;
    (half ? out.s.b : out.s.a) = std::move(r->data);
  }
  return out;
}

llvm::Expected<SharedTensor>
Rep3Engine::gather(const SharedTensor &x, const std::vector<int64_t> &indices,
                   const Shape &indexShape, int64_t axis) {
  OpScope scope(*this, "gather");
  return onBothShares(x, [&](const RingArray &a) {
    return mpc::gather(a, indices, indexShape, axis);
  });
}

llvm::Expected<SharedTensor> Rep3Engine::broadcastTo(const SharedTensor &x,
                                                     const Shape &shape) {
  OpScope scope(*this, "broadcast");
  return broadcastShared(x, shape);
}

llvm::Expected<SharedTensor> Rep3Engine::sum(const SharedTensor &x,
                                             const std::vector<int64_t> &axes,
                                             bool keepDims) {
  OpScope scope(*this, "sum");
  return onBothShares(
      x, [&](const RingArray &a) { return reduceSum(a, axes, keepDims); });
}

llvm::Expected<SharedTensor> Rep3Engine::mean(const SharedTensor &x,
                                              const std::vector<int64_t> &axes,
                                              bool keepDims) {
  OpScope scope(*this, "mean");
  auto s = sum(x, axes, keepDims);
  if (!s)
    return s.takeError();
  int64_t count = s->size() ? x.size() / s->size() : 0;
  if (count <= 0)
    return mpcError("mean over an empty tensor of shape " +
                    shapeToString(x.shape));
  return mulScalar(*s, 1.0 / double(count));
}

} // namespace mdl::backend::mpc
