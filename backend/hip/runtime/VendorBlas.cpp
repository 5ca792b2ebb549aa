// The vendor BLAS libraries (see VendorBlas.h). Each is declared here, as
// far as mdl uses it; the vendors' headers are not part of the build.
#include "backend/hip/runtime/VendorBlas.h"
#include "backend/hip/runtime/DynamicLibrary.h"
#include "backend/runtime/DeviceInterface.h"

#include <climits>

namespace mdl::backend::hip {

ColumnMajorGemm columnMajor(const BlasGemm &g) {
  // Row-major X (r x c, leading dimension ld) is column-major X^T with the
  // same ld; C = op(A) op(B) is C^T = op(B)^T op(A)^T, so B comes first.
  ColumnMajorGemm c;
  c.transFirst = g.transB;
  c.transSecond = g.transA;
  c.m = g.n;
  c.n = g.m;
  c.k = g.k;
  c.first = g.b;
  c.second = g.a;
  c.c = g.c;
  c.ldFirst = g.ldb;
  c.ldSecond = g.lda;
  c.ldc = g.ldc;
  c.strideFirst = g.strideB;
  c.strideSecond = g.strideA;
  c.strideC = g.strideC;
  c.batch = g.batch;
  for (int64_t v : {c.m, c.n, c.k, c.ldFirst, c.ldSecond, c.ldc, c.batch})
    if (v < 0 || v > INT_MAX)
      c.fitsInt = false;
  return c;
}

namespace {

using llvm::Error;
using llvm::Expected;

// A library bound once per process (never closed), or why it could not be.
template <typename Entry> struct Bound {
  const Entry *entry = nullptr;
  std::string file, problem;
};

template <typename Entry>
const Bound<Entry> &bindOnce(const char *env, const std::vector<const char *> &names) {
  static const Bound<Entry> bound = [&] {
    Bound<Entry> b;
    auto *e = new Entry{};
    auto lib = openAndBind(*e, env, names);
    if (!lib) {
      b.problem = llvm::toString(lib.takeError());
      delete e;
      return b;
    }
    b.entry = e;
    b.file = lib->name();
    return b;
  }();
  return bound;
}

// f32 and f64 products: every library's ?gemm_strided_batched takes the
// same arguments (its stride type aside), the column-major call's.
template <typename T, typename Fn>
int realGemm(Fn fn, void *handle, int transFirst, int transSecond, const ColumnMajorGemm &c) {
  T one = 1, zero = 0;
  return fn(handle, transFirst, transSecond, int(c.m), int(c.n), int(c.k), &one,
            reinterpret_cast<const T *>(c.first), int(c.ldFirst), c.strideFirst,
            reinterpret_cast<const T *>(c.second), int(c.ldSecond), c.strideSecond, &zero,
            reinterpret_cast<T *>(c.c), int(c.ldc), c.strideC, int(c.batch));
}

// --- cuBLAS -------------------------------------------------------------------

struct CublasEntry {
  using Handle = void *;
  static constexpr const char *kName = "cuBLAS";
  static constexpr int kOpN = 0, kOpT = 1; // CUBLAS_OP_N, CUBLAS_OP_T
  static constexpr bool kHalves = true;
  int (*create)(Handle *);
  int (*destroy)(Handle);
  int (*setStream)(Handle, void *);
  int (*sgemm)(Handle, int, int, int, int, int, const float *, const float *, int, long long,
               const float *, int, long long, const float *, float *, int, long long, int);
  int (*dgemm)(Handle, int, int, int, int, int, const double *, const double *, int, long long,
               const double *, int, long long, const double *, double *, int, long long, int);
  int (*gemmEx)(Handle, int, int, int, int, int, const void *, const void *, int, int, long long,
                const void *, int, int, long long, const void *, void *, int, int, long long, int,
                int, int);
  Error bindAll(const DynamicLibrary &lib) {
    return lib.bindAll({{create, "cublasCreate_v2"},
                        {destroy, "cublasDestroy_v2"},
                        {setStream, "cublasSetStream_v2"},
                        {sgemm, "cublasSgemmStridedBatched"},
                        {dgemm, "cublasDgemmStridedBatched"},
                        {gemmEx, "cublasGemmStridedBatchedEx"}});
  }

  // Halves (A, B and C of one type) accumulate in f32, as mdl's own
  // kernels do: cublasGemmStridedBatchedEx.
  int halfGemm(Handle handle, int ta, int tb, const ColumnMajorGemm &c, bool bf16) const {
    constexpr int kR16F = 2, kR16BF = 14, kCompute32F = 68, kAlgoDefault = -1;
    int type = bf16 ? kR16BF : kR16F;
    float one = 1, zero = 0;
    return gemmEx(handle, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                  reinterpret_cast<const void *>(c.first), type, int(c.ldFirst), c.strideFirst,
                  reinterpret_cast<const void *>(c.second), type, int(c.ldSecond), c.strideSecond,
                  &zero, reinterpret_cast<void *>(c.c), type, int(c.ldc), c.strideC, int(c.batch),
                  kCompute32F, kAlgoDefault);
  }
};

// --- rocBLAS ------------------------------------------------------------------

struct RocblasEntry {
  using Handle = void *;
  static constexpr const char *kName = "rocBLAS";
  static constexpr int kOpN = 111, kOpT = 112; // rocblas_operation_none, _transpose
  static constexpr bool kHalves = true;
  int (*create)(Handle *);
  int (*destroy)(Handle);
  int (*setStream)(Handle, void *);
  int (*sgemm)(Handle, int, int, int, int, int, const float *, const float *, int, int64_t,
               const float *, int, int64_t, const float *, float *, int, int64_t, int);
  int (*dgemm)(Handle, int, int, int, int, int, const double *, const double *, int, int64_t,
               const double *, int, int64_t, const double *, double *, int, int64_t, int);
  int (*gemmEx)(Handle, int, int, int, int, int, const void *, const void *, int, int, int64_t,
                const void *, int, int, int64_t, const void *, const void *, int, int, int64_t,
                void *, int, int, int64_t, int, int, int, int32_t, uint32_t);
  Error bindAll(const DynamicLibrary &lib) {
    return lib.bindAll({{create, "rocblas_create_handle"},
                        {destroy, "rocblas_destroy_handle"},
                        {setStream, "rocblas_set_stream"},
                        {sgemm, "rocblas_sgemm_strided_batched"},
                        {dgemm, "rocblas_dgemm_strided_batched"},
                        {gemmEx, "rocblas_gemm_strided_batched_ex"}});
  }

  // rocblas_gemm_strided_batched_ex, f32 compute type; its output D is C.
  int halfGemm(Handle handle, int ta, int tb, const ColumnMajorGemm &c, bool bf16) const {
    constexpr int kF16 = 150, kF32 = 151, kBF16 = 168, kAlgoStandard = 0;
    int type = bf16 ? kBF16 : kF16;
    float one = 1, zero = 0;
    void *cc = reinterpret_cast<void *>(c.c);
    return gemmEx(handle, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                  reinterpret_cast<const void *>(c.first), type, int(c.ldFirst), c.strideFirst,
                  reinterpret_cast<const void *>(c.second), type, int(c.ldSecond), c.strideSecond,
                  &zero, cc, type, int(c.ldc), c.strideC, cc, type, int(c.ldc), c.strideC,
                  int(c.batch), kF32, kAlgoStandard, 0, 0);
  }
};

// --- hipBLAS (where rocBLAS is not found under its own name) -----------------

struct HipblasEntry {
  using Handle = void *;
  static constexpr const char *kName = "hipBLAS";
  static constexpr int kOpN = 111, kOpT = 112; // HIPBLAS_OP_N, HIPBLAS_OP_T
  static constexpr bool kHalves = false;       // bound for f32 and f64 only
  int (*create)(Handle *);
  int (*destroy)(Handle);
  int (*setStream)(Handle, void *);
  int (*sgemm)(Handle, int, int, int, int, int, const float *, const float *, int, long long,
               const float *, int, long long, const float *, float *, int, long long, int);
  int (*dgemm)(Handle, int, int, int, int, int, const double *, const double *, int, long long,
               const double *, int, long long, const double *, double *, int, long long, int);
  Error bindAll(const DynamicLibrary &lib) {
    return lib.bindAll({{create, "hipblasCreate"},
                        {destroy, "hipblasDestroy"},
                        {setStream, "hipblasSetStream"},
                        {sgemm, "hipblasSgemmStridedBatched"},
                        {dgemm, "hipblasDgemmStridedBatched"}});
  }
};

// Library `Entry` with a handle bound to one stream: the strided-batched
// call of the product's type, or false for a product it does not take.
template <typename Entry> class Blas : public VendorBlas {
public:
  Blas(const Entry &e, void *handle) : e_(e), handle_(handle) {}
  ~Blas() override { e_.destroy(handle_); }
  const char *name() const override { return Entry::kName; }
  bool takes(const BlasGemm &g) const override {
    return takesType(g.dtype) && columnMajor(g).fitsInt;
  }
  Expected<bool> gemm(const BlasGemm &g) override {
    ColumnMajorGemm c = columnMajor(g);
    if (!takesType(g.dtype) || !c.fitsInt)
      return false;
    int ta = c.transFirst ? Entry::kOpT : Entry::kOpN;
    int tb = c.transSecond ? Entry::kOpT : Entry::kOpN;
    int status = 0;
    if (g.dtype == MDL_F32) {
      status = realGemm<float>(e_.sgemm, handle_, ta, tb, c);
    } else if (g.dtype == MDL_F64) {
      status = realGemm<double>(e_.dgemm, handle_, ta, tb, c);
    } else if constexpr (Entry::kHalves) { // f16 or bf16 (takesType)
      status = e_.halfGemm(handle_, ta, tb, c, g.dtype == MDL_BF16);
    }
    if (status != 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     std::string(Entry::kName) + " gemm failed with status " +
                                         std::to_string(status));
    return true;
  }

private:
  static bool takesType(int32_t dtype) {
    return dtype == MDL_F32 || dtype == MDL_F64 ||
           (Entry::kHalves && (dtype == MDL_F16 || dtype == MDL_BF16));
  }

  const Entry &e_;
  void *handle_;
};

// A handle of library `Entry` on `stream`; null when the library is absent
// or refuses (no GPU behind the stream).
template <typename Entry> std::unique_ptr<VendorBlas> bindTo(const Entry *e, void *stream) {
  if (!e)
    return nullptr;
  void *handle = nullptr;
  if (e->create(&handle) != 0 || !handle)
    return nullptr;
  if (e->setStream(handle, stream) != 0) {
    e->destroy(handle);
    return nullptr;
  }
  return std::make_unique<Blas<Entry>>(*e, handle);
}

const Bound<CublasEntry> &cublas() {
  return bindOnce<CublasEntry>("MDL_CUBLAS_LIBRARY", {"libcublas.so", "libcublas.so.13",
                                                      "libcublas.so.12", "libcublas.so.11"});
}
const Bound<RocblasEntry> &rocblas() {
  return bindOnce<RocblasEntry>("MDL_ROCBLAS_LIBRARY", {"librocblas.so", "librocblas.so.4",
                                                        "librocblas.so.3", "librocblas.so.0"});
}
const Bound<HipblasEntry> &hipblas() {
  return bindOnce<HipblasEntry>("MDL_HIPBLAS_LIBRARY", {"libhipblas.so", "libhipblas.so.2",
                                                        "libhipblas.so.1", "libhipblas.so.0"});
}

template <typename Entry> llvm::Expected<std::string> fileOf(const Bound<Entry> &b) {
  if (!b.entry)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), b.problem);
  return b.file;
}

} // namespace

std::unique_ptr<VendorBlas> openCublas(void *stream) { return bindTo(cublas().entry, stream); }

std::unique_ptr<VendorBlas> openRocblas(void *stream) {
  if (auto r = bindTo(rocblas().entry, stream))
    return r;
  return bindTo(hipblas().entry, stream);
}

llvm::Expected<std::string> cublasLibrary() { return fileOf(cublas()); }
llvm::Expected<std::string> rocblasLibrary() { return fileOf(rocblas()); }

} // namespace mdl::backend::hip
