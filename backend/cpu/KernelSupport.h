// Internal to the CPU kernels: element types, dtype dispatch and the strided
// loop that every element-wise, copy and broadcast kernel is built on.
//
// Storage types are the C++ types of the elements (`bool`, `int8_t`, ...,
// `F16`/`BF16` wrappers for the 16-bit floats). Each has a compute type
// (`Elem<T>::C`): the halves compute in float, everything else in itself.
// Integer arithmetic wraps: the helpers compute in the unsigned type.
#pragma once

#include "backend/cpu/KernelTable.h"
#include "ir/Half.h"
#include "stdlib/OpKind.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace mdl::backend::cpu {

/// A kernel's outcome: nullopt, or the run-time error message.
using Status = std::optional<std::string>;

/// Work (in elements) below which a loop stays on one thread: spawning the
/// OpenMP team costs a few microseconds, about 10,000 cheap element-wise
/// operations on this class of machine.
constexpr int64_t kParallelCheap = 1 << 15;
/// The same for loops whose elements cost a transcendental function.
constexpr int64_t kParallelCostly = 1 << 12;

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <typename T> struct Elem {
  using C = T;
  static C load(T v) { return v; }
  static T store(C c) { return c; }
};
template <> struct Elem<F16> {
  using C = float;
  static float load(F16 v) { return ir::halfToFloat(v.bits); }
  static F16 store(float c) { return F16{ir::floatToHalf(c)}; }
};
template <> struct Elem<BF16> {
  using C = float;
  static float load(BF16 v) { return ir::bf16ToFloat(v.bits); }
  static BF16 store(float c) { return BF16{ir::floatToBf16(c)}; }
};

template <typename T> using ComputeT = typename Elem<T>::C;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<ComputeT<T>>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T> struct TypeTag { using type = T; };

/// Calls f(TypeTag<T>{}) with the storage type of `t`.
template <typename F> decltype(auto) visitDType(ir::DType t, F &&f) {
  using ir::DType;
  switch (t) {
  case DType::Bool:
    return f(TypeTag<bool>{});
  case DType::I8:
    return f(TypeTag<int8_t>{});
  case DType::U8:
    return f(TypeTag<uint8_t>{});
  case DType::I32:
    return f(TypeTag<int32_t>{});
  case DType::I64:
    return f(TypeTag<int64_t>{});
  case DType::F16:
    return f(TypeTag<F16>{});
  case DType::BF16:
    return f(TypeTag<BF16>{});
  case DType::F32:
    return f(TypeTag<float>{});
  case DType::F64:
    return f(TypeTag<double>{});
  }
  return f(TypeTag<float>{});
}

/// Calls f(TypeTag<U>{}) with an unsigned integer type of `bytes` bytes:
/// for kernels that only move elements around.
template <typename F> decltype(auto) visitBits(size_t bytes, F &&f) {
  switch (bytes) {
  case 1:
    return f(TypeTag<uint8_t>{});
  case 2:
    return f(TypeTag<uint16_t>{});
  case 4:
    return f(TypeTag<uint32_t>{});
  default:
    return f(TypeTag<uint64_t>{});
  }
}

// --- Wrapping integer arithmetic --------------------------------------------

template <typename T> using UnsignedT = std::make_unsigned_t<T>;

template <typename T> T wrapAdd(T a, T b) {
  return T(UnsignedT<T>(UnsignedT<T>(a) + UnsignedT<T>(b)));
}
template <typename T> T wrapSub(T a, T b) {
  return T(UnsignedT<T>(UnsignedT<T>(a) - UnsignedT<T>(b)));
}
template <typename T> T wrapMul(T a, T b) {
  // Promote narrow types to unsigned int first: uint16 * uint16 would
  // promote to (signed) int and could overflow.
  using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                               UnsignedT<T>>;
  return T(UnsignedT<T>(W(UnsignedT<T>(a)) * W(UnsignedT<T>(b))));
}
template <typename T> T wrapNeg(T a) { return wrapSub(T(0), a); }

/// Float to integer: truncation toward zero, saturated to I's range, NaN to
/// 0 (C++'s own conversion is undefined out of range).
template <typename I, typename F> I saturateToInt(F v) {
  if (std::isnan(v))
    return 0;
  constexpr double lo = double(std::numeric_limits<I>::min());
  constexpr double hiExcl = double(std::numeric_limits<I>::max()) + 1.0;
  double d = double(v);
  if (d <= lo)
    return std::numeric_limits<I>::min();
  if (d >= hiExcl)
    return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

// --- Shapes and strides -----------------------------------------------------

std::vector<int64_t> shapeOf(const Tensor &t);
std::vector<int64_t> shapeOf(const ir::TensorType &t);
/// Row-major strides (in elements) of a shape.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);
/// Strides (in elements) of row-major `in` read as the broadcast `out`
/// shape: right-aligned, 0 along broadcast (size-1 or missing) dimensions.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out);
int64_t product(const std::vector<int64_t> &v, size_t from = 0,
                size_t to = size_t(-1));

/// A loop nest over a shape in row-major order, in which operand k starts at
/// element offset base[k] and advances by strides[d][k] along dimension d.
/// Dimensions of size 1 are dropped and dimensions that every operand
/// traverses contiguously are merged, so the innermost loop is as long as
/// possible.
template <size_t N> struct StridedLoop {
  std::vector<int64_t> shape;
  std::vector<std::array<int64_t, N>> strides;
  std::array<int64_t, N> base{};
  int64_t total = 0;

  StridedLoop(const std::vector<int64_t> &dims,
              const std::array<std::vector<int64_t>, N> &operandStrides,
              std::array<int64_t, N> start = {})
      : base(start) {
    total = 1;
    for (int64_t d : dims)
      total *= d;
    for (int d = int(dims.size()) - 1; d >= 0; --d) {
      if (dims[d] == 1)
        continue;
      std::array<int64_t, N> s;
      for (size_t k = 0; k < N; ++k)
        s[k] = operandStrides[k][d];
      if (!shape.empty()) {
        bool merge = true;
        for (size_t k = 0; k < N; ++k)
          merge &= s[k] == strides.back()[k] * shape.back();
        if (merge) {
          shape.back() *= dims[d];
          continue;
        }
      }
      shape.push_back(dims[d]);
      strides.push_back(s);
    }
    std::reverse(shape.begin(), shape.end());
    std::reverse(strides.begin(), strides.end());
  }

  /// Calls row(offsets, steps, count) for runs along the innermost
  /// dimension: element j of the run is at offsets[k] + j * steps[k] of
  /// operand k. Above `minParallel` elements the runs are split among the
  /// OpenMP threads, each taking a contiguous share of the iteration space.
  template <typename Row> void run(int64_t minParallel, Row &&row) const {
    if (total <= 0)
      return;
    if (total >= minParallel && omp_get_max_threads() > 1 &&
        !omp_in_parallel()) {
#pragma omp parallel
      {
        int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        runRange(total / nt * t + std::min(t, total % nt),
                 total / nt * (t + 1) + std::min(t + 1, total % nt), row);
      }
    } else {
      runRange(0, total, row);
    }
  }

  /// The same on the flat iteration range [begin, end), on this thread.
  template <typename Row>
  void runRange(int64_t begin, int64_t end, Row &&row) const {
    if (begin >= end)
      return;
    if (shape.empty()) {
      row(base, std::array<int64_t, N>{}, int64_t(1));
      return;
    }
    int rank = int(shape.size());
    // Coalesced loop nests are shallow; the fallback allocation is for
    // pathological ranks only.
    int64_t small[16];
    std::vector<int64_t> large(rank > 16 ? rank : 0);
    int64_t *idx = rank > 16 ? large.data() : small;
    std::array<int64_t, N> off = base;
    int64_t rem = begin;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
      for (size_t k = 0; k < N; ++k)
        off[k] += idx[d] * strides[d][k];
    }
    const std::array<int64_t, N> &step = strides[rank - 1];
    int64_t inner = shape[rank - 1];
    for (int64_t pos = begin;;) {
      int64_t cnt = std::min(end - pos, inner - idx[rank - 1]);
      row(off, step, cnt);
      pos += cnt;
      if (pos >= end)
        return;
      idx[rank - 1] += cnt;
      for (size_t k = 0; k < N; ++k)
        off[k] += cnt * step[k];
      for (int d = rank - 1; d > 0 && idx[d] == shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (size_t k = 0; k < N; ++k)
          off[k] += strides[d - 1][k] - shape[d] * strides[d][k];
      }
    }
  }
};

/// Copies the elements (of `bytes` bytes) of a `dims`-shaped index space:
/// element i of the space is read at src[srcBase + i . srcStrides] and
/// written at dst[dstBase + i . dstStrides].
void stridedCopy(size_t bytes, const std::vector<int64_t> &dims, void *dst,
                 const std::vector<int64_t> &dstStrides, int64_t dstBase,
                 const void *src, const std::vector<int64_t> &srcStrides,
                 int64_t srcBase);
/// memcpy, split among threads when large.
void copyBytes(void *dst, const void *src, size_t bytes);

/// Fills `n` elements of dtype `t` at `dst` with `v`, converted as `cast`
/// converts an f64 (fillValue) or an i64 (fillInt).
void fillValue(ir::DType t, void *dst, int64_t n, double v);
void fillInt(ir::DType t, void *dst, int64_t n, int64_t v);

/// C = A[M,K] @ B[K,N] for row-major f32/f64 through BLAS (gemv when M or N
/// is 1). lda/ldb/ldc are row strides.
void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
          const float *B, int64_t ldb, float *C, int64_t ldc);
void gemm(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda,
          const double *B, int64_t ldb, double *C, int64_t ldc);

} // namespace mdl::backend::cpu
