// `cast` between any two element types, and filling a tensor with one
// converted value (`full`, `ones`, `pad`).
//
// The conversions of LANGUAGE.md, made total: float to integer truncates
// toward zero and saturates to the target's range (NaN gives 0), where C++
// and NumPy leave out-of-range values undefined or platform-specific;
// integer to narrower integer wraps (two's complement); to bool is x != 0
// (so NaN is true); from bool is 0 or 1; float to float rounds to nearest.
#include "backend/cpu/KernelSupport.h"
#include "stdlib/Registry.h"

#include <cstring>

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

template <typename T, typename U> U convert(T v) {
  using CT = ComputeT<T>;
  using CU = ComputeT<U>;
  if constexpr (std::is_same_v<U, bool>) {
    return Elem<T>::load(v) != CT(0);
  } else if constexpr (std::is_same_v<T, bool>) {
    return Elem<U>::store(CU(v ? 1 : 0));
  } else {
    CT x = Elem<T>::load(v);
    if constexpr (kIsInt<U> && std::is_floating_point_v<CT>)
      return saturateToInt<U>(x);
    else if constexpr (kIsInt<U>)
      return U(UnsignedT<U>(x)); // modular
    else
      return Elem<U>::store(CU(x));
  }
}

template <typename T> void fillWith(void *dst, int64_t n, T value) {
  T *p = static_cast<T *>(dst);
#pragma omp parallel for if (n >= kParallelCheap && !omp_in_parallel())
  for (int64_t i = 0; i < n; ++i)
    p[i] = value;
}

} // namespace

void fillValue(ir::DType t, void *dst, int64_t n, double v) {
  visitDType(t, [&](auto tag) {
    using U = typename decltype(tag)::type;
    fillWith<U>(dst, n, convert<double, U>(v));
  });
}

void fillInt(ir::DType t, void *dst, int64_t n, int64_t v) {
  visitDType(t, [&](auto tag) {
    using U = typename decltype(tag)::type;
    fillWith<U>(dst, n, convert<int64_t, U>(v));
  });
}

Status runCast(const ir::Operation &op, const std::vector<Tensor> &in,
               std::vector<Tensor> &out) {
  const Tensor &x = in[0];
  Tensor &y = out[0];
  int64_t n = y.numElements();
  if (x.numElements() != n)
    return "'cast' operand is " + x.type().str() + ", but the result is " +
           y.type().str();
  if (x.dtype() == y.dtype()) {
    if (x.raw() != y.raw())
      std::memcpy(y.raw(), x.raw(), y.byteSize());
    return std::nullopt;
  }
  visitDType(x.dtype(), [&](auto srcTag) {
    using T = typename decltype(srcTag)::type;
    visitDType(y.dtype(), [&](auto dstTag) {
      using U = typename decltype(dstTag)::type;
      const T *src = x.data<T>();
      U *dst = y.data<U>();
#pragma omp parallel for if (n >= kParallelCheap && !omp_in_parallel())
      for (int64_t i = 0; i < n; ++i)
        dst[i] = convert<T, U>(src[i]);
    });
  });
  return std::nullopt;
}

void registerCastKernels(KernelTable &t) {
  t.add(OpKind::Cast, MDL_KERNEL { return runCast(op, in, out); });
}

} // namespace mdl::backend::cpu
