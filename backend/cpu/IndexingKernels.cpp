// Kernels that index with run-time values: dynamic_index (`x[i]` with an
// i64 scalar), gather and embedding.
//
// Indices are checked before anything is copied; one out of range is a
// run-time error naming the index, the axis and its size. Negative indices
// count from the end for dynamic_index and gather (as in NumPy); embedding
// ids must lie in [0, rows).
#include "backend/cpu/KernelSupport.h"
#include "stdlib/Registry.h"

#include <cstring>

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

std::string outOfRange(int64_t i, int64_t axis, int64_t size) {
  return "index " + std::to_string(i) + " is out of range for axis " +
         std::to_string(axis) + " with size " + std::to_string(size);
}

// Reads every index as int64 (any integer dtype).
std::vector<int64_t> readIndices(const Tensor &idx) {
  std::vector<int64_t> v(size_t(idx.numElements()));
  visitDType(idx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T>) {
      const T *p = idx.data<T>();
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = int64_t(p[i]);
    } else {
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = idx.getInt(int64_t(i));
    }
  });
  return v;
}

// y[o, j, :] = x[o, rows[j], :] for x viewed as [outer, n, inner].
void gatherRows(const Tensor &x, Tensor &y, int64_t outer, int64_t n,
                int64_t inner, const std::vector<int64_t> &rows) {
  size_t rowBytes = size_t(inner) * ir::dtypeSize(x.dtype());
  int64_t m = int64_t(rows.size());
  const char *src = static_cast<const char *>(x.raw());
  char *dst = static_cast<char *>(y.raw());
  bool big =
      outer * m * int64_t(rowBytes) >= (int64_t(1) << 20) && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t w = 0; w < outer * m; ++w) {
    int64_t o = w / m, j = w % m;
    std::memcpy(dst + size_t(w) * rowBytes,
                src + size_t(o * n + rows[j]) * rowBytes, rowBytes);
  }
}

Status gather(const ir::Operation &op, const Tensor &x, const Tensor &idx,
              Tensor &y, bool dynamicIndex) {
  std::vector<int64_t> xs = shapeOf(x);
  int64_t axis = op.intAttr("axis", 0);
  if (axis < 0 || axis >= int64_t(xs.size()))
    return "axis " + std::to_string(axis) + " is out of range for " +
           x.type().str();
  int64_t n = xs[axis];
  std::vector<int64_t> rows = readIndices(idx);
  if (dynamicIndex && rows.size() != 1)
    return "an index must be a scalar, found " + idx.type().str();
  for (int64_t &r : rows) {
    int64_t i = r < 0 ? r + n : r;
    if (i < 0 || i >= n)
      return outOfRange(r, axis, n);
    r = i;
  }
  gatherRows(x, y, product(xs, 0, axis), n, product(xs, axis + 1), rows);
  return std::nullopt;
}

Status embedding(const Tensor &table, const Tensor &ids, Tensor &y) {
  std::vector<int64_t> ts = shapeOf(table);
  if (ts.size() != 2)
    return "embedding table must be rank 2, found " + table.type().str();
  std::vector<int64_t> rows = readIndices(ids);
  for (int64_t r : rows)
    if (r < 0 || r >= ts[0])
      return "embedding id " + std::to_string(r) +
             " is out of range for a table of " + std::to_string(ts[0]) +
             " rows";
  gatherRows(table, y, 1, ts[0], ts[1], rows);
  return std::nullopt;
}

} // namespace

void registerIndexingKernels(KernelTable &t) {
  t.add(OpKind::DynamicIndex,
        MDL_KERNEL {
          return gather(op, in[0], in[1], out[0], true);
        });
  t.add(OpKind::Gather,
        MDL_KERNEL {
          return gather(op, in[0], in[1], out[0], false);
        });
  t.add(OpKind::Embedding,
        MDL_KERNEL {
          return embedding(in[0], in[1], out[0]);
        });
}

} // namespace mdl::backend::cpu
