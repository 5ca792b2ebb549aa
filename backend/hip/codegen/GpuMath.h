// Math without libm: GPU targets have no C math library, yet the
// per-element semantics that the JIT and the GPU generator share
// (backend/jit/ScalarCodegen.cpp) call expf, logf, sinf, cosf, powf, erff,
// tanhf and their double forms. This defines them in LLVM IR (range
// reduction and polynomials or series, written for mdl) in every GPU
// module, so that every target computes them the same way.
//
// The double functions are the implementations; each float function
// evaluates its double form and rounds once. Measured errors against
// glibc are in docs/gpu-codegen.md (tests/unit/GpuMathTest.cpp measures
// them on every run).
#pragma once

#include <llvm/IR/Module.h>

#include <string>
#include <vector>

namespace mdl::backend::hip {

/// The C math functions this library implements ("expf", "exp", ...).
const std::vector<std::string> &gpuMathFunctions();

/// Gives every declared C math function of `m` (calls the scalar code
/// generator made) a body in IR, renamed `mdl.math.NAME` so that no pass
/// mistakes it for the C library's; `linkage` is the definitions' linkage
/// (internal in GPU modules, external for the host test). False with
/// `error` naming a declared function that is neither one of them nor an
/// LLVM intrinsic.
bool defineGpuMath(llvm::Module &m, std::string &error,
                   llvm::GlobalValue::LinkageTypes linkage = llvm::GlobalValue::InternalLinkage);

} // namespace mdl::backend::hip
