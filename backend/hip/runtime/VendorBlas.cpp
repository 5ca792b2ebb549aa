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

Error blasError(const char *lib, const char *what, int status) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), std::string(lib) + " " + what +
                                                                     " failed with status " +
                                                                     std::to_string(status));
}

// A library bound once per process (never closed), or why it could not be.
template <typename Entry> struct Bound {
  const Entry *entry = nullptr;
  std::string file, problem;
};

template <typename Entry>
const Bound<Entry> &bindOnce(const char *env, const std::vector<const char *> &names) {
  static const Bound<Entry> bound = [&] {
    Bound<Entry> b;
    auto lib = DynamicLibrary::open(env, names);
    if (!lib) {
      b.problem = llvm::toString(lib.takeError());
      return b;
    }
    auto *e = new Entry{};
    if (Error err = e->bindAll(*lib)) {
      b.problem = llvm::toString(std::move(err));
      delete e;
      return b;
    }
    b.entry = e;
    b.file = lib->name();
    return b;
  }();
  return bound;
}

// --- cuBLAS
// -------------------------------------------------------------------

struct CublasEntry {
  using Handle = void *;
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
    for (auto [fn, name] : std::initializer_list<std::pair<void **, const char *>>{
             {reinterpret_cast<void **>(&create), "cublasCreate_v2"},
             {reinterpret_cast<void **>(&destroy), "cublasDestroy_v2"},
             {reinterpret_cast<void **>(&setStream), "cublasSetStream_v2"},
             {reinterpret_cast<void **>(&sgemm), "cublasSgemmStridedBatched"},
             {reinterpret_cast<void **>(&dgemm), "cublasDgemmStridedBatched"},
             {reinterpret_cast<void **>(&gemmEx), "cublasGemmStridedBatchedEx"}})
      if (Error e = lib.bind(*fn, name))
        return e;
    return Error::success();
  }
};

class Cublas : public VendorBlas {
public:
  Cublas(const CublasEntry &e, void *handle) : e_(e), handle_(handle) {}
  ~Cublas() override { e_.destroy(handle_); }
  const char *name() const override { return "cuBLAS"; }
  Expected<bool> gemm(const BlasGemm &g) override {
    ColumnMajorGemm c = columnMajor(g);
    if (!c.fitsInt)
      return false;
    constexpr int kOpN = 0, kOpT = 1;
    int ta = c.transFirst ? kOpT : kOpN, tb = c.transSecond ? kOpT : kOpN;
    int status = 0;
    if (g.dtype == MDL_F32) {
      float one = 1, zero = 0;
      status = e_.sgemm(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                        reinterpret_cast<const float *>(c.first), int(c.ldFirst), c.strideFirst,
                        reinterpret_cast<const float *>(c.second), int(c.ldSecond), c.strideSecond,
                        &zero, reinterpret_cast<float *>(c.c), int(c.ldc), c.strideC, int(c.batch));
    } else if (g.dtype == MDL_F64) {
      double one = 1, zero = 0;
      status =
          e_.dgemm(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                   reinterpret_cast<const double *>(c.first), int(c.ldFirst), c.strideFirst,
                   reinterpret_cast<const double *>(c.second), int(c.ldSecond), c.strideSecond,
                   &zero, reinterpret_cast<double *>(c.c), int(c.ldc), c.strideC, int(c.batch));
    } else if (g.dtype == MDL_F16 || g.dtype == MDL_BF16) {
      // Halves accumulate in f32, as mdl's own kernels do.
      constexpr int kR16F = 2, kR16BF = 14, kCompute32F = 68, kAlgoDefault = -1;
      int type = g.dtype == MDL_F16 ? kR16F : kR16BF;
      float one = 1, zero = 0;
      status = e_.gemmEx(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                         reinterpret_cast<const void *>(c.first), type, int(c.ldFirst),
                         c.strideFirst, reinterpret_cast<const void *>(c.second), type,
                         int(c.ldSecond), c.strideSecond, &zero, reinterpret_cast<void *>(c.c),
                         type, int(c.ldc), c.strideC, int(c.batch), kCompute32F, kAlgoDefault);
    } else {
      return false;
    }
    if (status != 0)
      return blasError("cuBLAS", "gemm", status);
    return true;
  }

private:
  const CublasEntry &e_;
  void *handle_;
};

// --- rocBLAS
// ------------------------------------------------------------------

struct RocblasEntry {
  using Handle = void *;
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
    for (auto [fn, name] : std::initializer_list<std::pair<void **, const char *>>{
             {reinterpret_cast<void **>(&create), "rocblas_create_handle"},
             {reinterpret_cast<void **>(&destroy), "rocblas_destroy_handle"},
             {reinterpret_cast<void **>(&setStream), "rocblas_set_stream"},
             {reinterpret_cast<void **>(&sgemm), "rocblas_sgemm_strided_batched"},
             {reinterpret_cast<void **>(&dgemm), "rocblas_dgemm_strided_batched"},
             {reinterpret_cast<void **>(&gemmEx), "rocblas_gemm_strided_batched_ex"}})
      if (Error e = lib.bind(*fn, name))
        return e;
    return Error::success();
  }
};

class Rocblas : public VendorBlas {
public:
  Rocblas(const RocblasEntry &e, void *handle) : e_(e), handle_(handle) {}
  ~Rocblas() override { e_.destroy(handle_); }
  const char *name() const override { return "rocBLAS"; }
  Expected<bool> gemm(const BlasGemm &g) override {
    ColumnMajorGemm c = columnMajor(g);
    if (!c.fitsInt)
      return false;
    constexpr int kOpN = 111, kOpT = 112;
    int ta = c.transFirst ? kOpT : kOpN, tb = c.transSecond ? kOpT : kOpN;
    int status = 0;
    if (g.dtype == MDL_F32) {
      float one = 1, zero = 0;
      status = e_.sgemm(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                        reinterpret_cast<const float *>(c.first), int(c.ldFirst), c.strideFirst,
                        reinterpret_cast<const float *>(c.second), int(c.ldSecond), c.strideSecond,
                        &zero, reinterpret_cast<float *>(c.c), int(c.ldc), c.strideC, int(c.batch));
    } else if (g.dtype == MDL_F64) {
      double one = 1, zero = 0;
      status =
          e_.dgemm(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                   reinterpret_cast<const double *>(c.first), int(c.ldFirst), c.strideFirst,
                   reinterpret_cast<const double *>(c.second), int(c.ldSecond), c.strideSecond,
                   &zero, reinterpret_cast<double *>(c.c), int(c.ldc), c.strideC, int(c.batch));
    } else if (g.dtype == MDL_F16 || g.dtype == MDL_BF16) {
      constexpr int kF16 = 150, kF32 = 151, kBF16 = 168, kAlgoStandard = 0;
      int type = g.dtype == MDL_F16 ? kF16 : kBF16;
      float one = 1, zero = 0;
      void *cc = reinterpret_cast<void *>(c.c);
      status = e_.gemmEx(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                         reinterpret_cast<const void *>(c.first), type, int(c.ldFirst),
                         c.strideFirst, reinterpret_cast<const void *>(c.second), type,
                         int(c.ldSecond), c.strideSecond, &zero, cc, type, int(c.ldc), c.strideC,
                         cc, type, int(c.ldc), c.strideC, int(c.batch), kF32, kAlgoStandard, 0, 0);
    } else {
      return false;
    }
    if (status != 0)
      return blasError("rocBLAS", "gemm", status);
    return true;
  }

private:
  const RocblasEntry &e_;
  void *handle_;
};

// --- hipBLAS (where rocBLAS is not found under its own name) -----------------

struct HipblasEntry {
  using Handle = void *;
  int (*create)(Handle *);
  int (*destroy)(Handle);
  int (*setStream)(Handle, void *);
  int (*sgemm)(Handle, int, int, int, int, int, const float *, const float *, int, long long,
               const float *, int, long long, const float *, float *, int, long long, int);
  int (*dgemm)(Handle, int, int, int, int, int, const double *, const double *, int, long long,
               const double *, int, long long, const double *, double *, int, long long, int);
  Error bindAll(const DynamicLibrary &lib) {
    for (auto [fn, name] : std::initializer_list<std::pair<void **, const char *>>{
             {reinterpret_cast<void **>(&create), "hipblasCreate"},
             {reinterpret_cast<void **>(&destroy), "hipblasDestroy"},
             {reinterpret_cast<void **>(&setStream), "hipblasSetStream"},
             {reinterpret_cast<void **>(&sgemm), "hipblasSgemmStridedBatched"},
             {reinterpret_cast<void **>(&dgemm), "hipblasDgemmStridedBatched"}})
      if (Error e = lib.bind(*fn, name))
        return e;
    return Error::success();
  }
};

class Hipblas : public VendorBlas {
public:
  Hipblas(const HipblasEntry &e, void *handle) : e_(e), handle_(handle) {}
  ~Hipblas() override { e_.destroy(handle_); }
  const char *name() const override { return "hipBLAS"; }
  Expected<bool> gemm(const BlasGemm &g) override {
    ColumnMajorGemm c = columnMajor(g);
    if (!c.fitsInt)
      return false;
    constexpr int kOpN = 111, kOpT = 112;
    int ta = c.transFirst ? kOpT : kOpN, tb = c.transSecond ? kOpT : kOpN;
    int status = 0;
    if (g.dtype == MDL_F32) {
      float one = 1, zero = 0;
      status = e_.sgemm(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                        reinterpret_cast<const float *>(c.first), int(c.ldFirst), c.strideFirst,
                        reinterpret_cast<const float *>(c.second), int(c.ldSecond), c.strideSecond,
                        &zero, reinterpret_cast<float *>(c.c), int(c.ldc), c.strideC, int(c.batch));
    } else if (g.dtype == MDL_F64) {
      double one = 1, zero = 0;
      status =
          e_.dgemm(handle_, ta, tb, int(c.m), int(c.n), int(c.k), &one,
                   reinterpret_cast<const double *>(c.first), int(c.ldFirst), c.strideFirst,
                   reinterpret_cast<const double *>(c.second), int(c.ldSecond), c.strideSecond,
                   &zero, reinterpret_cast<double *>(c.c), int(c.ldc), c.strideC, int(c.batch));
    } else {
      return false;
    }
    if (status != 0)
      return blasError("hipBLAS", "gemm", status);
    return true;
  }

private:
  const HipblasEntry &e_;
  void *handle_;
};

// A handle of library `Entry` on `stream`, as `Lib`; null when the library
// is absent or refuses (no GPU behind the stream).
template <typename Lib, typename Entry>
std::unique_ptr<VendorBlas> bindTo(const Entry *e, void *stream) {
  if (!e)
    return nullptr;
  void *handle = nullptr;
  if (e->create(&handle) != 0 || !handle)
    return nullptr;
  if (e->setStream(handle, stream) != 0) {
    e->destroy(handle);
    return nullptr;
  }
  return std::make_unique<Lib>(*e, handle);
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

std::unique_ptr<VendorBlas> openCublas(void *stream) {
  return bindTo<Cublas>(cublas().entry, stream);
}

std::unique_ptr<VendorBlas> openRocblas(void *stream) {
  if (auto r = bindTo<Rocblas>(rocblas().entry, stream))
    return r;
  return bindTo<Hipblas>(hipblas().entry, stream);
}

llvm::Expected<std::string> cublasLibrary() { return fileOf(cublas()); }
llvm::Expected<std::string> rocblasLibrary() { return fileOf(rocblas()); }

} // namespace mdl::backend::hip
