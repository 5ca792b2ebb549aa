// Matrix multiplication with NumPy's matmul semantics: 1-D operands are
// promoted to a row (lhs) or a column (rhs) and the promoted dimension is
// dropped from the result; leading batch dimensions broadcast.
//
// f32 and f64 go through OpenBLAS: gemv when one side is a vector or a
// single row (OpenBLAS's one-row gemm is about 8x slower, see
// BENCHMARKING.md), gemm otherwise, and a batch whose rhs is shared is
// folded into one tall gemm. The halves are converted to f32 and take the
// same path; integers use plain wrapping loops.
#include "backend/cpu/KernelSupport.h"
#include "stdlib/Registry.h"

#include <cblas.h>

#include <cstring>

namespace mdl::backend::cpu {

using ir::OpKind;

// OpenBLAS's own entry points (not part of CBLAS). The thread server's
// shutdown exists only in the pthreads build, hence weak.
extern "C" void openblas_set_num_threads(int);
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

void keepBlasOnCallingThread() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_)
      blas_thread_shutdown_();
    return true;
  }();
  (void)once;
}

namespace {

// CBLAS takes int dimensions (OpenBLAS's blasint is int in the LP64 build
// Debian ships); sizes beyond 2^31 per matrix dimension are not supported.
int bi(int64_t v) { return int(v); }

/// Multiply-adds below which a product stays on one thread.
constexpr int64_t kGemmParallel = int64_t(1) << 18;

void blasGemv(bool trans, int64_t m, int64_t n, const float *A, int64_t lda,
              const float *x, int64_t incx, float *y, int64_t incy) {
  cblas_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, bi(m), bi(n),
              1.0f, A, bi(lda), x, bi(incx), 0.0f, y, bi(incy));
}
void blasGemv(bool trans, int64_t m, int64_t n, const double *A, int64_t lda,
              const double *x, int64_t incx, double *y, int64_t incy) {
  cblas_dgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, bi(m), bi(n),
              1.0, A, bi(lda), x, bi(incx), 0.0, y, bi(incy));
}
void blasGemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
              const float *B, int64_t ldb, float *C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bi(M), bi(N), bi(K),
              1.0f, A, bi(lda), B, bi(ldb), 0.0f, C, bi(ldc));
}
void blasGemm(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda,
              const double *B, int64_t ldb, double *C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bi(M), bi(N), bi(K),
              1.0, A, bi(lda), B, bi(ldb), 0.0, C, bi(ldc));
}

// One product on the calling thread.
template <typename F>
void gemmOne(int64_t M, int64_t N, int64_t K, const F *A, int64_t lda,
             const F *B, int64_t ldb, F *C, int64_t ldc) {
  if (M == 0 || N == 0)
    return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      std::memset(C + i * ldc, 0, size_t(N) * sizeof(F));
    return;
  }
  if (M == 1) // y[N] = B^T x
    blasGemv(true, K, N, B, ldb, A, 1, C, 1);
  else if (N == 1) // y[M] = A x, x strided by ldb
    blasGemv(false, M, K, A, lda, B, ldb, C, ldc);
  else
    blasGemm(M, N, K, A, lda, B, ldb, C, ldc);
}

// Threads come from OpenMP only: OpenBLAS is told to stay on the calling
// thread, and a large product is split among the OpenMP threads along its
// longer side. OpenBLAS's own pthreads would otherwise compete for the cores
// with OpenMP workers still spinning after the previous kernel (the trap in
// BENCHMARKING.md: a convolution ran 8x slower that way).
template <typename F>
void gemmParallel(int64_t M, int64_t N, int64_t K, const F *A, int64_t lda,
                  const F *B, int64_t ldb, F *C, int64_t ldc) {
  keepBlasOnCallingThread();
  int threads = omp_in_parallel() || M * N * K < kGemmParallel
                    ? 1
                    : omp_get_max_threads();
  if (threads <= 1) {
    gemmOne(M, N, K, A, lda, B, ldb, C, ldc);
    return;
  }
  bool byRows = M >= N;
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t len = byRows ? M : N, lo = len * t / nt, hi = len * (t + 1) / nt;
    if (byRows)
      gemmOne(hi - lo, N, K, A + lo * lda, lda, B, ldb, C + lo * ldc, ldc);
    else
      gemmOne(M, hi - lo, K, A, lda, B + lo, ldb, C + lo, ldc);
  }
}

} // namespace

void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
          const float *B, int64_t ldb, float *C, int64_t ldc) {
  gemmParallel(M, N, K, A, lda, B, ldb, C, ldc);
}

void gemm(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda,
          const double *B, int64_t ldb, double *C, int64_t ldc) {
  gemmParallel(M, N, K, A, lda, B, ldb, C, ldc);
}

namespace {

// C[M,N] = A[M,K] @ B[K,N] for integers, wrapping.
template <typename T>
void intGemm(int64_t M, int64_t N, int64_t K, const T *A, const T *B, T *C) {
  bool big = M * N * K >= kParallelCheap && !omp_in_parallel();
  // One accumulator row per thread, allocated outside the parallel region
  // (an exception must not escape an OpenMP region).
  std::vector<uint64_t> rows(size_t(N) *
                             size_t(big ? omp_get_max_threads() : 1));
#pragma omp parallel for if (big) schedule(static)
  for (int64_t i = 0; i < M; ++i) {
    uint64_t *acc = rows.data() + size_t(N) * size_t(omp_get_thread_num());
    std::fill(acc, acc + N, uint64_t(0));
    for (int64_t k = 0; k < K; ++k) {
      uint64_t a = uint64_t(int64_t(A[i * K + k]));
      const T *brow = B + k * N;
      for (int64_t j = 0; j < N; ++j)
        acc[j] += a * uint64_t(int64_t(brow[j]));
    }
    for (int64_t j = 0; j < N; ++j)
      C[i * N + j] = T(UnsignedT<T>(acc[j]));
  }
}

struct MatmulShape {
  int64_t M, N, K;
  std::vector<int64_t> batch;                // result batch dims
  std::vector<int64_t> aBatchStr, bBatchStr; // element strides per batch dim
  int64_t batches;
};

MatmulShape planMatmul(const Tensor &a, const Tensor &b, const Tensor &y) {
  std::vector<int64_t> as = shapeOf(a), bs = shapeOf(b);
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  MatmulShape s;
  s.M = as[as.size() - 2];
  s.K = as.back();
  s.N = bs.back();
  size_t batchRank = std::max(as.size(), bs.size()) - 2;
  std::vector<int64_t> ys = shapeOf(y);
  s.batch.assign(ys.begin(), ys.begin() + batchRank);
  std::vector<int64_t> aBatch(as.begin(), as.end() - 2),
      bBatch(bs.begin(), bs.end() - 2);
  s.aBatchStr = broadcastStrides(aBatch, s.batch);
  s.bBatchStr = broadcastStrides(bBatch, s.batch);
  for (int64_t &v : s.aBatchStr)
    v *= s.M * s.K;
  for (int64_t &v : s.bBatchStr)
    v *= s.K * s.N;
  s.batches = product(s.batch);
  return s;
}

// Calls f(aOffset, bOffset, yOffset) for each batch, in order.
template <typename F> void forEachBatch(const MatmulShape &s, F f) {
  StridedLoop<2> loop(s.batch, {s.aBatchStr, s.bBatchStr});
  int64_t y = 0, mn = s.M * s.N;
  loop.runRange(
      0, loop.total,
      [&](std::array<int64_t, 2> off, std::array<int64_t, 2> st, int64_t n) {
        for (int64_t i = 0; i < n; ++i, y += mn)
          f(off[0] + i * st[0], off[1] + i * st[1], y);
      });
}

template <typename T>
void blasMatmul(const MatmulShape &s, const T *a, const T *b, T *y) {
  bool bShared = true, aFull = s.batches > 0;
  for (size_t d = 0; d < s.batch.size(); ++d) {
    bShared &= s.bBatchStr[d] == 0 || s.batch[d] == 1;
    aFull &= s.aBatchStr[d] != 0 || s.batch[d] == 1;
  }
  if (bShared && aFull && s.batches > 1) {
    // A stack of lhs matrices times one rhs: one gemm with batches * M rows.
    gemm(s.batches * s.M, s.N, s.K, a, s.K, b, s.N, y, s.N);
    return;
  }
  std::vector<std::array<int64_t, 3>> at;
  forEachBatch(s, [&](int64_t ao, int64_t bo, int64_t yo) {
    at.push_back({ao, bo, yo});
  });
  // Many products: one per thread at a time (each runs single-threaded
  // inside the parallel region); few: each product is split instead.
  bool perBatch = int64_t(at.size()) >= 2 * omp_get_max_threads() &&
                  s.batches * s.M * s.N * s.K >= kParallelCheap;
#pragma omp parallel for if (perBatch && !omp_in_parallel()) schedule(static)
  for (size_t i = 0; i < at.size(); ++i)
    gemm(s.M, s.N, s.K, a + at[i][0], s.K, b + at[i][1], s.N, y + at[i][2],
         s.N);
}

std::vector<float> toFloat(const Tensor &t) {
  std::vector<float> v(size_t(t.numElements()));
  bool bf = t.dtype() == ir::DType::BF16;
  const uint16_t *p = t.data<uint16_t>();
  int64_t n = t.numElements();
#pragma omp parallel for if (n >= kParallelCheap && !omp_in_parallel())
  for (int64_t i = 0; i < n; ++i)
    v[i] = bf ? ir::bf16ToFloat(p[i]) : ir::halfToFloat(p[i]);
  return v;
}

} // namespace

Status runMatmul(const ir::Operation &op, const std::vector<Tensor> &in,
                 std::vector<Tensor> &out) {
  const Tensor &a = in[0], &b = in[1];
  Tensor &y = out[0];
  MatmulShape s = planMatmul(a, b, y);
  switch (y.dtype()) {
  case ir::DType::F32:
    blasMatmul(s, a.data<float>(), b.data<float>(), y.data<float>());
    return std::nullopt;
  case ir::DType::F64:
    blasMatmul(s, a.data<double>(), b.data<double>(), y.data<double>());
    return std::nullopt;
  case ir::DType::F16:
  case ir::DType::BF16: {
    // Accumulate in f32 (as the halves' compute type is), round once.
    std::vector<float> fa = toFloat(a), fb = toFloat(b);
    std::vector<float> fy(size_t(y.numElements()));
    blasMatmul(s, fa.data(), fb.data(), fy.data());
    bool bf = y.dtype() == ir::DType::BF16;
    uint16_t *py = y.data<uint16_t>();
    for (size_t i = 0; i < fy.size(); ++i)
      py[i] = bf ? ir::floatToBf16(fy[i]) : ir::floatToHalf(fy[i]);
    return std::nullopt;
  }
  default:
    return visitDType(y.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsInt<T>) {
        return std::string("the cpu kernel of 'matmul' does not support ") +
               ir::dtypeName(y.dtype());
      } else {
        const T *pa = a.data<T>(), *pb = b.data<T>();
        T *py = y.data<T>();
        forEachBatch(s, [&](int64_t ao, int64_t bo, int64_t yo) {
          intGemm(s.M, s.N, s.K, pa + ao, pb + bo, py + yo);
        });
        return std::nullopt;
      }
    });
  }
}

void registerLinalgKernels(KernelTable &t) {
  t.add(OpKind::Matmul, MDL_KERNEL { return runMatmul(op, in, out); });
}

} // namespace mdl::backend::cpu
