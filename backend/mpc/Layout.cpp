// Data movement on ring arrays (Layout.h).
//
// Transpose, slice and broadcast are all one strided copy: walk the output
// in row-major order and read the input at offset + sum(index[d] *
// stride[d]), where a broadcast dimension has stride 0. The innermost
// dimension is a tight loop.
#include "backend/mpc/Layout.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace mdl::backend::mpc {

namespace {

std::string listToString(const std::vector<int64_t> &v) {
  return shapeToString(v);
}

// out[i] = in[offset + sum_d idx_d * strides[d]] over outShape.
void stridedCopy(const Shape &outShape, const std::vector<int64_t> &strides,
                 int64_t offset, const Ring *in, Ring *out) {
  int64_t total = numElements(outShape);
  if (total == 0)
    return;
  size_t rank = outShape.size();
  if (rank == 0) {
    out[0] = in[offset];
    return;
  }
  int64_t inner = outShape[rank - 1];
  int64_t innerStride = strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t base = offset;
  for (int64_t done = 0; done < total; done += inner) {
    const Ring *src = in + base;
    if (innerStride == 1)
      std::copy(src, src + inner, out);
    else
      for (int64_t j = 0; j < inner; ++j)
        out[j] = src[j * innerStride];
    out += inner;
    // Advance the outer index (odometer), keeping `base` in step.
    for (int d = int(rank) - 2; d >= 0; --d) {
      base += strides[d];
      if (++idx[d] < outShape[d])
        break;
      base -= strides[d] * outShape[d];
      idx[d] = 0;
    }
  }
}

} // namespace

llvm::Expected<int64_t> normalizeAxis(int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    return mpcError("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

llvm::Expected<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return mpcError("shapes " + shapeToString(a) + " and " + shapeToString(b) +
                  " are not broadcastable");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

llvm::Expected<RingArray> broadcastTo(const RingArray &x, const Shape &shape) {
  if (x.shape == shape)
    return x;
  if (x.shape.size() > shape.size())
    return mpcError("cannot broadcast " + shapeToString(x.shape) + " to " +
                shapeToString(shape));
  size_t lead = shape.size() - x.shape.size();
  std::vector<int64_t> inStrides = stridesOf(x.shape);
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t i = 0; i < x.shape.size(); ++i) {
    int64_t d = x.shape[i];
    if (d != shape[lead + i] && d != 1)
      return mpcError("cannot broadcast " + shapeToString(x.shape) + " to " +
                  shapeToString(shape));
    strides[lead + i] = d == 1 ? 0 : inStrides[i];
  }
  int64_t n = numElements(shape);
  if (n < 0)
    return mpcError("shape " + shapeToString(shape) + " is too large");
  RingArray out{shape, std::vector<Ring>(size_t(n))};
  stridedCopy(shape, strides, 0, x.data.data(), out.data.data());
  return out;
}

llvm::Expected<RingArray> transpose(const RingArray &x,
                                    const std::vector<int64_t> &perm) {
  size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (int64_t p : perm) {
    if (!ok || p < 0 || p >= int64_t(rank) || seen[p]) {
      ok = false;
      break;
    }
    seen[p] = true;
  }
  if (!ok)
    return mpcError("transpose permutation " + listToString(perm) +
                " is not a permutation of the axes of rank " +
                std::to_string(rank));
  std::vector<int64_t> inStrides = stridesOf(x.shape);
  Shape outShape(rank);
  std::vector<int64_t> strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    outShape[i] = x.shape[perm[i]];
    strides[i] = inStrides[perm[i]];
  }
  RingArray out{outShape, std::vector<Ring>(x.data.size())};
  stridedCopy(outShape, strides, 0, x.data.data(), out.data.data());
  return out;
}

llvm::Expected<RingArray> slice(const RingArray &x,
                                const std::vector<int64_t> &starts,
                                const std::vector<int64_t> &stops,
                                const std::vector<int64_t> &steps) {
  size_t rank = x.shape.size();
  if (starts.size() != rank || stops.size() != rank || steps.size() != rank)
    return mpcError("slice of rank " + std::to_string(rank) + " needs " +
                std::to_string(rank) + " starts, stops and steps, got " +
                std::to_string(starts.size()) + ", " +
                std::to_string(stops.size()) + " and " +
                std::to_string(steps.size()));
  std::vector<int64_t> inStrides = stridesOf(x.shape);
  Shape outShape(rank);
  std::vector<int64_t> strides(rank);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = x.shape[d];
    int64_t stop = std::min(stops[d], dim);
    if (steps[d] <= 0 || starts[d] < 0 || starts[d] > stop)
      return mpcError("slice of axis " + std::to_string(d) + " (size " +
                  std::to_string(dim) + ") has start " +
                  std::to_string(starts[d]) + ", stop " +
                  std::to_string(stops[d]) + ", step " +
                  std::to_string(steps[d]) +
                  "; expected 0 <= start <= stop and step > 0");
    outShape[d] = (stop - starts[d] + steps[d] - 1) / steps[d];
    strides[d] = inStrides[d] * steps[d];
    offset += starts[d] * inStrides[d];
  }
  RingArray out{outShape, std::vector<Ring>(size_t(numElements(outShape)))};
  if (!out.data.empty())
    stridedCopy(outShape, strides, offset, x.data.data(), out.data.data());
  return out;
}

llvm::Expected<RingArray> concat(const std::vector<const RingArray *> &parts,
                                 int64_t axis) {
  if (parts.empty())
    return mpcError("concat needs at least one operand");
  const Shape &first = parts[0]->shape;
  auto ax = normalizeAxis(axis, first.size());
  if (!ax)
    return ax.takeError();
  Shape outShape = first;
  outShape[*ax] = 0;
  for (const RingArray *p : parts) {
    bool same = p->shape.size() == first.size();
    for (size_t d = 0; same && d < first.size(); ++d)
      same = int64_t(d) == *ax || p->shape[d] == first[d];
    if (!same)
      return mpcError("concat along axis " + std::to_string(*ax) + ": shape " +
                  shapeToString(p->shape) + " does not match " +
                  shapeToString(first));
    outShape[*ax] += p->shape[*ax];
  }
  // Each part contributes a contiguous block of `inner` elements per outer
  // index.
  int64_t outer = 1, innerUnit = 1;
  for (int64_t d = 0; d < *ax; ++d)
    outer *= first[d];
  for (size_t d = *ax + 1; d < first.size(); ++d)
    innerUnit *= first[d];
  RingArray out{outShape, std::vector<Ring>(size_t(numElements(outShape)))};
  Ring *dst = out.data.data();
  for (int64_t o = 0; o < outer; ++o)
    for (const RingArray *p : parts) {
      int64_t block = p->shape[*ax] * innerUnit;
      std::copy(p->data.begin() + o * block, p->data.begin() + (o + 1) * block,
                dst);
      dst += block;
    }
  return out;
}

llvm::Expected<RingArray> gather(const RingArray &x,
                                 const std::vector<int64_t> &indices,
                                 const Shape &indexShape, int64_t axis) {
  auto ax = normalizeAxis(axis, x.shape.size());
  if (!ax)
    return ax.takeError();
  if (numElements(indexShape) != int64_t(indices.size()))
    return mpcError("gather: index shape " + shapeToString(indexShape) + " holds " +
                std::to_string(numElements(indexShape)) + " indices, got " +
                std::to_string(indices.size()));
  int64_t dim = x.shape[*ax];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < *ax; ++d)
    outer *= x.shape[d];
  for (size_t d = *ax + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  std::vector<int64_t> rows(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t k = indices[i];
    if (k < -dim || k >= dim)
      return mpcError("gather: index " + std::to_string(k) +
                  " is out of range for axis " + std::to_string(*ax) +
                  " of size " + std::to_string(dim));
    rows[i] = k < 0 ? k + dim : k;
  }
  Shape outShape(x.shape.begin(), x.shape.begin() + *ax);
  outShape.insert(outShape.end(), indexShape.begin(), indexShape.end());
  outShape.insert(outShape.end(), x.shape.begin() + *ax + 1, x.shape.end());
  RingArray out{outShape,
                std::vector<Ring>(size_t(outer * rows.size() * inner))};
  Ring *dst = out.data.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r : rows) {
      const Ring *src = x.data.data() + (o * dim + r) * inner;
      std::copy(src, src + inner, dst);
      dst += inner;
    }
  return out;
}

llvm::Expected<RingArray>
reduceSum(const RingArray &x, const std::vector<int64_t> &axes, bool keepDims) {
  size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    auto ax = normalizeAxis(a, rank);
    if (!ax)
      return ax.takeError();
    if (reduced[*ax])
      return mpcError("axis " + std::to_string(a) + " is reduced twice");
    reduced[*ax] = true;
  }
  Shape keptShape(rank); // the result with size-1 reduced dimensions
  for (size_t d = 0; d < rank; ++d)
    keptShape[d] = reduced[d] ? 1 : x.shape[d];
  std::vector<int64_t> outStrides = stridesOf(keptShape);
  std::vector<Ring> out(size_t(numElements(keptShape)), 0);
  // Walk the input once, adding each element to its output slot.
  std::vector<int64_t> idx(rank, 0);
  int64_t outOffset = 0;
  for (size_t i = 0; i < x.data.size(); ++i) {
    out[outOffset] += x.data[i];
    for (int d = int(rank) - 1; d >= 0; --d) {
      if (!reduced[d])
        outOffset += outStrides[d];
      if (++idx[d] < x.shape[d])
        break;
      if (!reduced[d])
        outOffset -= outStrides[d] * x.shape[d];
      idx[d] = 0;
    }
  }
  Shape outShape;
  for (size_t d = 0; d < rank; ++d)
    if (!reduced[d])
      outShape.push_back(x.shape[d]);
    else if (keepDims)
      outShape.push_back(1);
  return RingArray{outShape, std::move(out)};
}

} // namespace mdl::backend::mpc
