// Matrix products on the GPU vendor's BLAS: rocBLAS (or hipBLAS) for HIP
// devices and cuBLAS for CUDA devices, each opened with dlopen when it is
// installed. A GpuProgram's Gemm step names a row-major product; these
// libraries are column-major, so the step is run as the transposed
// product C^T = B^T A^T, which reads the same bytes (columnMajor() below).
// Products a library does not take (integer types, sizes beyond its
// 32-bit arguments) are left to mdl's own kernel, the step's fallback.
#pragma once

#include "backend/hip/runtime/GpuApi.h"

#include <memory>

namespace mdl::backend::hip {

/// A BLAS library bound to one stream.
class VendorBlas {
public:
  virtual ~VendorBlas() = default;
  virtual const char *name() const = 0;
  /// Whether it takes the product (its type, sizes in its int arguments).
  virtual bool takes(const BlasGemm &g) const = 0;
  /// Enqueues the product; false (nothing enqueued) when it does not take it.
  virtual llvm::Expected<bool> gemm(const BlasGemm &g) = 0;
};

/// cuBLAS on a CUDA stream (CUstream), or null when absent or unusable.
std::unique_ptr<VendorBlas> openCublas(void *stream);
/// rocBLAS, else hipBLAS, on a HIP stream (hipStream_t), or null.
std::unique_ptr<VendorBlas> openRocblas(void *stream);

/// The file of cuBLAS / rocBLAS this process uses, with every entry point
/// mdl calls, or why there is none (for tests and messages).
llvm::Expected<std::string> cublasLibrary();
llvm::Expected<std::string> rocblasLibrary();

/// The column-major call computing a row-major product: the first operand
/// is B, the second A, and the call's m and n are the product's n and m.
struct ColumnMajorGemm {
  bool transFirst = false, transSecond = false;
  int64_t m = 0, n = 0, k = 0;
  uint64_t first = 0, second = 0, c = 0;
  int64_t ldFirst = 0, ldSecond = 0, ldc = 0;
  int64_t strideFirst = 0, strideSecond = 0, strideC = 0, batch = 1;
  /// Whether every size and leading dimension fits the libraries' int.
  bool fitsInt = true;
};
ColumnMajorGemm columnMajor(const BlasGemm &g);

} // namespace mdl::backend::hip
