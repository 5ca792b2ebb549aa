// sort and map.
//
// sort orders each row along `dimension` of every operand by a permutation
// computed on the keys: natively for order "asc" (NaNs last, -0 equal to +0)
// and "desc" (its mirror), else by calling the comparator function with
// (lhs_0, rhs_0, lhs_1, rhs_1, ...). The sort is a stable merge sort of our
// own, which stays in bounds even for a comparator that is not a strict
// weak order (std::sort's unguarded insertion would not).
//
// map applies a function to the elements of its inputs, one call per
// element.
#include "backend/cpu/HloKernels.h"

#include <functional>

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

// Stable bottom-up merge sort of `perm` by `less`.
void mergeSort(std::vector<int64_t> &perm, const std::function<bool(int64_t, int64_t)> &less) {
  size_t n = perm.size();
  std::vector<int64_t> tmp(n);
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        tmp[k++] = less(perm[j], perm[i]) ? perm[j++] : perm[i++];
      while (i < mid)
        tmp[k++] = perm[i++];
      while (j < hi)
        tmp[k++] = perm[j++];
    }
    perm.swap(tmp);
  }
}

Tensor scalarAt(const Tensor &t, int64_t i) {
  Tensor s = Tensor::empty(ir::TensorType::scalar(t.dtype()));
  size_t b = ir::dtypeSize(t.dtype());
  std::memcpy(s.raw(), static_cast<const char *>(t.raw()) + i * int64_t(b), b);
  return s;
}

Status sort(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out,
            const FunctionCaller *caller) {
  std::vector<int64_t> shape = shapeOf(in[0]);
  int64_t d = op.intAttr("dimension", 0);
  if (d < 0 || d >= int64_t(shape.size()))
    return std::string("sort dimension out of range");
  for (const Tensor &t : in)
    if (shapeOf(t) != shape)
      return std::string("sort operands have different shapes");
  std::string order = op.stringAttr("order"), fn = op.stringAttr("comparator");
  int64_t len = shape[size_t(d)], inner = product(shape, size_t(d) + 1),
          outer = product(shape, 0, size_t(d));
  Status err;
  std::vector<Tensor> args, results;
  std::vector<int64_t> perm(static_cast<size_t>(len), 0);
  for (int64_t o = 0; o < outer && !err; ++o)
    for (int64_t i = 0; i < inner && !err; ++i) {
      int64_t base = o * len * inner + i;
      for (int64_t k = 0; k < len; ++k)
        perm[size_t(k)] = base + k * inner;
      std::function<bool(int64_t, int64_t)> less;
      if (!order.empty()) {
        bool desc = order == "desc";
        const Tensor &key = in[0];
        less = [desc, &key](int64_t a, int64_t b) {
          return visitDType(key.dtype(), [&](auto tag) -> bool {
            using T = typename decltype(tag)::type;
            auto x = Elem<T>::load(key.data<T>()[desc ? b : a]);
            auto y = Elem<T>::load(key.data<T>()[desc ? a : b]);
            if constexpr (kIsFloat<T>)
              return x < y || (!std::isnan(x) && std::isnan(y));
            else
              return x < y;
          });
        };
      } else {
        less = [&](int64_t a, int64_t b) {
          if (err)
            return false;
          args.clear();
          for (const Tensor &t : in) {
            args.push_back(scalarAt(t, a));
            args.push_back(scalarAt(t, b));
          }
          if ((err = callScalarFunction(caller, fn, args, results)))
            return false;
          if (results.size() != 1 || results[0].dtype() != ir::DType::Bool) {
            err = "sort: @" + fn + " must return one bool";
            return false;
          }
          return *results[0].data<bool>();
        };
      }
      mergeSort(perm, less);
      if (err)
        break;
      for (size_t t = 0; t < in.size(); ++t)
        visitBits(ir::dtypeSize(in[t].dtype()), [&](auto tag) {
          using U = typename decltype(tag)::type;
          const U *src = in[t].data<U>();
          U *dst = out[t].data<U>();
          for (int64_t k = 0; k < len; ++k)
            dst[base + k * inner] = src[perm[size_t(k)]];
        });
    }
  return err;
}

Status map(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &y,
           const FunctionCaller *caller) {
  std::string fn = op.stringAttr("fn");
  int64_t n = y.numElements();
  for (const Tensor &t : in)
    if (t.numElements() != n)
      return std::string("map inputs differ in size");
  std::vector<Tensor> args, results;
  size_t b = ir::dtypeSize(y.dtype());
  for (int64_t i = 0; i < n; ++i) {
    args.clear();
    for (const Tensor &t : in)
      args.push_back(scalarAt(t, i));
    if (auto err = callScalarFunction(caller, fn, args, results))
      return err;
    if (results.size() != 1 || results[0].dtype() != y.dtype())
      return "map: @" + fn + " must return one " + ir::dtypeName(y.dtype());
    std::memcpy(static_cast<char *>(y.raw()) + i * int64_t(b), results[0].raw(), b);
  }
  return std::nullopt;
}

} // namespace

Status runHloSort(const ir::Operation &op, const std::vector<Tensor> &in,
                  std::vector<Tensor> &out, const FunctionCaller *caller) {
  return sort(op, in, out, caller);
}

Status runHloMap(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &out,
                 const FunctionCaller *caller) {
  return map(op, in, out, caller);
}

} // namespace mdl::backend::cpu
