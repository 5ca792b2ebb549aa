// The vendor BLAS libraries of the stand-in GPU driver (MockGpuDriver.h):
// rocBLAS, hipBLAS and cuBLAS's strided-batched products as the vendors
// document them (column-major, C = alpha op(A) op(B) + beta C), computed on
// the mock GPUs' host memory in double and stored in the operands' type.
// A product whose operands are not memory of the handle's stream's device,
// whose leading dimension is too small, or whose operation, data or compute
// type is unknown is refused with the library's "invalid value" status.
#include "ir/Half.h"
#include "tests/gpuruntime/MockGpuDriver.h"

using namespace mockgpu;

namespace {

// --- BLAS: column-major C = alpha op(A) op(B) + beta C, batched ---

// Elements as doubles, whatever the type: 0 f32, 1 f64, 2 f16, 3 bf16.
enum Type { F32, F64, F16, BF16 };
size_t sizeOf(Type t) { return t == F32 ? 4 : t == F64 ? 8 : 2; }
double load(Type t, uint64_t base, int64_t i) {
  switch (t) {
  case F32:
    return at<float>(base)[i];
  case F64:
    return at<double>(base)[i];
  case F16:
    return mdl::ir::halfToFloat(at<uint16_t>(base)[i]);
  case BF16:
    return mdl::ir::bf16ToFloat(at<uint16_t>(base)[i]);
  }
  return 0;
}
void store(Type t, uint64_t base, int64_t i, double v) {
  switch (t) {
  case F32:
    at<float>(base)[i] = float(v);
    return;
  case F64:
    at<double>(base)[i] = v;
    return;
  case F16:
    at<uint16_t>(base)[i] = mdl::ir::floatToHalf(float(v));
    return;
  case BF16:
    at<uint16_t>(base)[i] = mdl::ir::floatToBf16(float(v));
    return;
  }
}

// Whether op(X) (rows x cols, leading dimension ld) of every batch is
// memory of `device`.
bool operandInside(int device, Type t, bool trans, int64_t rows, int64_t cols, uint64_t x,
                   int64_t ld, int64_t stride, int64_t batch) {
  int64_t r = trans ? cols : rows,
          c = trans ? rows : cols; // as stored, column-major
  if (ld < (r > 1 ? r : 1))
    return false;
  if (r == 0 || c == 0)
    return true; // nothing is read
  uint64_t span = uint64_t((c - 1) * ld + r) * sizeOf(t);
  for (int64_t b = 0; b < batch; ++b)
    if (!inside(device, x + uint64_t(b * stride) * sizeOf(t), span))
      return false;
  return true;
}

// 0, or the library's "invalid value" status.
int gemm(BlasHandle *h, int invalid, bool ta, bool tb, int m, int n, int k, double alpha, Type t,
         uint64_t a, int lda, int64_t sa, uint64_t b, int ldb, int64_t sb, double beta, uint64_t c,
         int ldc, int64_t sc, int batch) {
  if (!state().handles.count(h) || !h->stream)
    return 1; // not initialized
  int device = h->stream->device;
  if (device != state().current || m < 0 || n < 0 || k < 0 || batch < 1 ||
      !operandInside(device, t, ta, m, k, a, lda, sa, batch) ||
      !operandInside(device, t, tb, k, n, b, ldb, sb, batch) ||
      !operandInside(device, t, false, m, n, c, ldc, sc, batch))
    return invalid;
  for (int64_t bi = 0; bi < batch; ++bi) {
    uint64_t A = a + uint64_t(bi * sa) * sizeOf(t), B = b + uint64_t(bi * sb) * sizeOf(t);
    uint64_t C = c + uint64_t(bi * sc) * sizeOf(t);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += load(t, A, ta ? p + i * lda : i + p * lda) *
                 load(t, B, tb ? j + p * ldb : p + j * ldb);
        double before = beta == 0 ? 0 : load(t, C, i + j * ldc);
        store(t, C, i + j * ldc, alpha * sum + beta * before);
      }
  }
  ++state().blasCalls;
  state().clockMs += 0.5;
  return 0;
}

int blasCreate(const char *library, BlasHandle **h) {
  *h = new BlasHandle{library};
  state().handles.insert(*h);
  return 0;
}

int blasDestroy(BlasHandle *h) {
  if (!state().handles.erase(h))
    return 1;
  delete h;
  return 0;
}

int blasSetStream(BlasHandle *h, Stream *s) {
  if (!state().handles.count(h) || !validStream(s))
    return 1;
  h->stream = s;
  return 0;
}

// cuBLAS's operations are 0, 1, 2 (N, T, C); rocBLAS's and hipBLAS's 111,
// 112, 113. Conjugates never come from mdl: refused, as an unknown value.
bool operation(int op, int n, bool &trans) {
  trans = op == n + 1;
  return op == n || op == n + 1;
}

} // namespace

// --- cuBLAS ---

namespace {
constexpr int kCublasInvalidValue = 7; // CUBLAS_STATUS_INVALID_VALUE
int cublasGemm(void *h, int ta, int tb, int m, int n, int k, double alpha, Type t, uint64_t a,
               int lda, long long sa, uint64_t b, int ldb, long long sb, double beta, uint64_t c,
               int ldc, long long sc, int batch) {
  bool transA = false, transB = false;
  if (!operation(ta, 0, transA) || !operation(tb, 0, transB))
    return kCublasInvalidValue;
  return gemm(static_cast<BlasHandle *>(h), kCublasInvalidValue, transA, transB, m, n, k, alpha, t,
              a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}
} // namespace

MOCK_API int cublasCreate_v2(void **h) {
  MOCK_FAIL_IF_TOLD("cublasCreate_v2");
  return blasCreate("cuBLAS", reinterpret_cast<BlasHandle **>(h));
}
MOCK_API int cublasDestroy_v2(void *h) { return blasDestroy(static_cast<BlasHandle *>(h)); }
MOCK_API int cublasSetStream_v2(void *h, Stream *s) {
  return blasSetStream(static_cast<BlasHandle *>(h), s);
}
MOCK_API int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k,
                                       const float *alpha, const float *a, int lda, long long sa,
                                       const float *b, int ldb, long long sb, const float *beta,
                                       float *c, int ldc, long long sc, int batch) {
  MOCK_FAIL_IF_TOLD("cublasSgemmStridedBatched");
  return cublasGemm(h, ta, tb, m, n, k, *alpha, F32, uintptr_t(a), lda, sa, uintptr_t(b), ldb, sb,
                    *beta, uintptr_t(c), ldc, sc, batch);
}
MOCK_API int cublasDgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k,
                                       const double *alpha, const double *a, int lda, long long sa,
                                       const double *b, int ldb, long long sb, const double *beta,
                                       double *c, int ldc, long long sc, int batch) {
  return cublasGemm(h, ta, tb, m, n, k, *alpha, F64, uintptr_t(a), lda, sa, uintptr_t(b), ldb, sb,
                    *beta, uintptr_t(c), ldc, sc, batch);
}
// Data types CUDA_R_16F = 2, CUDA_R_16BF = 14; CUBLAS_COMPUTE_32F = 68 (the
// only compute type for halves here, with f32 alpha and beta).
MOCK_API int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k,
                                        const void *alpha, const void *a, int aType, int lda,
                                        long long sa, const void *b, int bType, int ldb,
                                        long long sb, const void *beta, void *c, int cType, int ldc,
                                        long long sc, int batch, int compute, int algo) {
  MOCK_FAIL_IF_TOLD("cublasGemmStridedBatchedEx");
  if (aType != bType || aType != cType || (aType != 2 && aType != 14) || compute != 68 ||
      algo != -1)
    return kCublasInvalidValue;
  return cublasGemm(h, ta, tb, m, n, k, *static_cast<const float *>(alpha), aType == 2 ? F16 : BF16,
                    uintptr_t(a), lda, sa, uintptr_t(b), ldb, sb, *static_cast<const float *>(beta),
                    uintptr_t(c), ldc, sc, batch);
}

// --- rocBLAS and hipBLAS ---

namespace {
constexpr int kRocblasInvalidValue = 11; // rocblas_status_invalid_value
constexpr int kHipblasInvalidValue = 3;  // HIPBLAS_STATUS_INVALID_VALUE
int amdGemm(int invalid, void *h, int ta, int tb, int m, int n, int k, double alpha, Type t,
            uint64_t a, int lda, int64_t sa, uint64_t b, int ldb, int64_t sb, double beta,
            uint64_t c, int ldc, int64_t sc, int batch) {
  bool transA = false, transB = false;
  if (!operation(ta, 111, transA) || !operation(tb, 111, transB))
    return invalid;
  return gemm(static_cast<BlasHandle *>(h), invalid, transA, transB, m, n, k, alpha, t, a, lda, sa,
              b, ldb, sb, beta, c, ldc, sc, batch);
}
} // namespace

MOCK_API int rocblas_create_handle(void **h) {
  MOCK_FAIL_IF_TOLD("rocblas_create_handle");
  return blasCreate("rocBLAS", reinterpret_cast<BlasHandle **>(h));
}
MOCK_API int rocblas_destroy_handle(void *h) { return blasDestroy(static_cast<BlasHandle *>(h)); }
MOCK_API int rocblas_set_stream(void *h, Stream *s) {
  return blasSetStream(static_cast<BlasHandle *>(h), s);
}
MOCK_API int rocblas_sgemm_strided_batched(void *h, int ta, int tb, int m, int n, int k,
                                           const float *alpha, const float *a, int lda, int64_t sa,
                                           const float *b, int ldb, int64_t sb, const float *beta,
                                           float *c, int ldc, int64_t sc, int batch) {
  MOCK_FAIL_IF_TOLD("rocblas_sgemm_strided_batched");
  return amdGemm(kRocblasInvalidValue, h, ta, tb, m, n, k, *alpha, F32, uintptr_t(a), lda, sa,
                 uintptr_t(b), ldb, sb, *beta, uintptr_t(c), ldc, sc, batch);
}
MOCK_API int rocblas_dgemm_strided_batched(void *h, int ta, int tb, int m, int n, int k,
                                           const double *alpha, const double *a, int lda,
                                           int64_t sa, const double *b, int ldb, int64_t sb,
                                           const double *beta, double *c, int ldc, int64_t sc,
                                           int batch) {
  return amdGemm(kRocblasInvalidValue, h, ta, tb, m, n, k, *alpha, F64, uintptr_t(a), lda, sa,
                 uintptr_t(b), ldb, sb, *beta, uintptr_t(c), ldc, sc, batch);
}
// rocblas_datatype_f16_r = 150, f32_r = 151, bf16_r = 168; D must be C
// here (mdl writes in place), with C's type, ldc and stride.
MOCK_API int rocblas_gemm_strided_batched_ex(void *h, int ta, int tb, int m, int n, int k,
                                             const void *alpha, const void *a, int aType, int lda,
                                             int64_t sa, const void *b, int bType, int ldb,
                                             int64_t sb, const void *beta, const void *c, int cType,
                                             int ldc, int64_t sc, void *d, int dType, int ldd,
                                             int64_t sd, int batch, int compute, int algo,
                                             int32_t solution, uint32_t flags) {
  MOCK_FAIL_IF_TOLD("rocblas_gemm_strided_batched_ex");
  if (aType != bType || aType != cType || aType != dType || (aType != 150 && aType != 168) ||
      compute != 151 || algo != 0 || solution != 0 || flags != 0 || d != c || ldd != ldc ||
      sd != sc)
    return kRocblasInvalidValue;
  return amdGemm(kRocblasInvalidValue, h, ta, tb, m, n, k, *static_cast<const float *>(alpha),
                 aType == 150 ? F16 : BF16, uintptr_t(a), lda, sa, uintptr_t(b), ldb, sb,
                 *static_cast<const float *>(beta), uintptr_t(d), ldd, sd, batch);
}

MOCK_API int hipblasCreate(void **h) {
  MOCK_FAIL_IF_TOLD("hipblasCreate");
  return blasCreate("hipBLAS", reinterpret_cast<BlasHandle **>(h));
}
MOCK_API int hipblasDestroy(void *h) { return blasDestroy(static_cast<BlasHandle *>(h)); }
MOCK_API int hipblasSetStream(void *h, Stream *s) {
  return blasSetStream(static_cast<BlasHandle *>(h), s);
}
MOCK_API int hipblasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k,
                                        const float *alpha, const float *a, int lda, long long sa,
                                        const float *b, int ldb, long long sb, const float *beta,
                                        float *c, int ldc, long long sc, int batch) {
  return amdGemm(kHipblasInvalidValue, h, ta, tb, m, n, k, *alpha, F32, uintptr_t(a), lda, sa,
                 uintptr_t(b), ldb, sb, *beta, uintptr_t(c), ldc, sc, batch);
}
MOCK_API int hipblasDgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k,
                                        const double *alpha, const double *a, int lda, long long sa,
                                        const double *b, int ldb, long long sb, const double *beta,
                                        double *c, int ldc, long long sc, int batch) {
  return amdGemm(kHipblasInvalidValue, h, ta, tb, m, n, k, *alpha, F64, uintptr_t(a), lda, sa,
                 uintptr_t(b), ldb, sb, *beta, uintptr_t(c), ldc, sc, batch);
}
