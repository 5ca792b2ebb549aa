// Hand-built spir64 kernels for the GPU runtime's tests, independent of
// the generator (backend/hip/codegen): LLVM IR text in the form PoCL 3.1
// loads (OpenCL built-ins by their mangled names, kernel_arg_* metadata,
// work-group arrays named <kernel>.<var>), assembled to bitcode with LLVM.
// Every buffer is two parameters, the buffer and an i64 byte offset, as
// GpuProgram.h specifies for OpenCL.
//
//   add(a, b, c, n)      c[i] = a[i] + b[i] for i < n (one thread per element)
//   scale(x, k, y, n)    y[i] = x[i] * k[0]
//   matmul(a, b, c, m, n, k)   c = a @ b, row-major f32, one thread per
//                        element of c (grid x over columns, y over rows)
//   sum64(x, y)          y[g] = x[64g] + ... + x[64g + 63]: one work-group
//                        of 64 per sum, through work-group memory and a barrier
//   report(x, rec, step) x[0] (an i64) below zero: written to the error record
//                        `rec` (GpuErrorRecord) with `step`, unless it holds
//                        an error already (one thread)
#pragma once

#include <string>

namespace mdl::test {

/// The kernels above as spir64 LLVM bitcode (empty with `error` set when
/// LLVM refuses the text).
std::string gpuTestKernelsBitcode(std::string &error);

} // namespace mdl::test
