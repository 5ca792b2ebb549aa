// Internal to the dot_general and convolution kernels: copying a tensor into
// a contiguous buffer of its compute type with its dimensions permuted (and
// back), so that any dimension numbering reduces to row-major GEMMs.
#pragma once

#include "backend/cpu/KernelSupport.h"

namespace mdl::backend::cpu {

/// The type products accumulate in: float for the halves and f32, double
/// for f64, int64 for integers.
template <typename T>
using AccT = std::conditional_t<kIsFloat<T>, std::conditional_t<std::is_same_v<T, double>, double, float>,
                                int64_t>;

/// dst (contiguous, dimensions `order` of src in that order) = src.
template <typename T, typename C>
void packPermuted(const Tensor &src, const std::vector<int64_t> &order, C *dst) {
  std::vector<int64_t> shape = shapeOf(src), strides = rowMajorStrides(shape);
  std::vector<int64_t> dims, srcStr;
  for (int64_t d : order) {
    dims.push_back(shape[size_t(d)]);
    srcStr.push_back(strides[size_t(d)]);
  }
  StridedLoop<2> loop(dims, {rowMajorStrides(dims), srcStr});
  const T *s = src.data<T>();
  loop.run(kParallelCheap, [&](std::array<int64_t, 2> off, std::array<int64_t, 2> st, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      dst[off[0] + i * st[0]] = C(Elem<T>::load(s[off[1] + i * st[1]]));
  });
}

/// dst = src where src is contiguous with dst's dimensions `order` in that
/// order (the inverse of packPermuted), converting to dst's type.
template <typename T, typename C>
void unpackPermuted(const C *src, const std::vector<int64_t> &order, Tensor &dst) {
  std::vector<int64_t> shape = shapeOf(dst), strides = rowMajorStrides(shape);
  std::vector<int64_t> dims, dstStr;
  for (int64_t d : order) {
    dims.push_back(shape[size_t(d)]);
    dstStr.push_back(strides[size_t(d)]);
  }
  StridedLoop<2> loop(dims, {dstStr, rowMajorStrides(dims)});
  T *o = dst.data<T>();
  loop.run(kParallelCheap, [&](std::array<int64_t, 2> off, std::array<int64_t, 2> st, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      C v = src[off[1] + i * st[1]];
      if constexpr (kIsFloat<T>)
        o[off[0] + i * st[0]] = Elem<T>::store(ComputeT<T>(v));
      else if constexpr (std::is_same_v<T, bool>)
        o[off[0] + i * st[0]] = v != C(0);
      else if constexpr (std::is_floating_point_v<C>)
        o[off[0] + i * st[0]] = saturateToInt<T>(v);
      else
        o[off[0] + i * st[0]] = T(UnsignedT<T>(uint64_t(v)));
    }
  });
}

/// C[M,N] = A[M,K] @ B[K,N], row-major, contiguous.
inline void matmulAcc(int64_t M, int64_t N, int64_t K, const float *A, const float *B, float *C) {
  gemm(M, N, K, A, K, B, N, C, N);
}
inline void matmulAcc(int64_t M, int64_t N, int64_t K, const double *A, const double *B, double *C) {
  gemm(M, N, K, A, K, B, N, C, N);
}
inline void matmulAcc(int64_t M, int64_t N, int64_t K, const int64_t *A, const int64_t *B,
                      int64_t *C) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j)
      C[i * N + j] = 0;
    for (int64_t k = 0; k < K; ++k) {
      uint64_t a = uint64_t(A[i * K + k]);
      for (int64_t j = 0; j < N; ++j)
        C[i * N + j] = int64_t(uint64_t(C[i * N + j]) + a * uint64_t(B[k * N + j]));
    }
  }
}

} // namespace mdl::backend::cpu
