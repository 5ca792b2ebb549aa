// CPU kernels: one implementation per operation that has a run-time kernel
// (the operation table's NoKernel trait says which do not), for every
// element type the operation's shape rule accepts; KernelTable.h holds them
// by kind.
//
// Kernels run on static shapes (after specialization). Outputs arrive
// allocated with the operation's result types; a kernel only fills them.
// Element-wise kernels broadcast as NumPy does and use OpenMP above a size
// threshold; matmul goes through BLAS for f32/f64.
#pragma once

#include "backend/runtime/Tensor.h"
#include "ir/IR.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mdl::backend::cpu {

/// Calls a function of the module by name on tensors (a reducer or a
/// comparator that an operation references through a symbol attribute such
/// as `to_apply = @add`). Returns an error message, nullopt on success.
using FunctionCaller = std::function<std::optional<std::string>(
    const std::string &fn, const std::vector<Tensor> &args, std::vector<Tensor> &results)>;

/// Runs the kernel of `op` (its kind, attributes and result types) on
/// `inputs`, filling `outputs`. Returns an error message for run-time
/// failures (an index out of range, memory exhausted), nullopt on success.
/// `caller` serves operations that apply a function of the module.
std::optional<std::string> runKernel(const ir::Operation &op,
                                     const std::vector<Tensor> &inputs,
                                     std::vector<Tensor> &outputs,
                                     const FunctionCaller *caller = nullptr);

/// Makes OpenBLAS compute on the calling thread only and stops the server
/// threads it started when it was loaded. mdl never uses them (products are
/// split among OpenMP or the JIT's workers), yet each one spins on
/// sched_yield for about 2^28 cycles (0.1 s) after the process starts,
/// taking the core a worker needs: small kernels of such a process ran 13x
/// slower until it gave up (docs/jit.md, *Threads*). Called once, from the
/// cpu kind's registration.
void keepBlasOnCallingThread();
/// For a reduce_window with a named reducer whose windows span whole rows
/// of its last dimension (pooling of NHWC images): the number of rows of
/// its output; 0 for any other reduce_window. A caller with threads of its
/// own (the JIT's worker pool) computes ranges of rows on them with
/// reduceWindowRowRange, on one thread each.
int64_t reduceWindowRows(const ir::Operation &op, const std::vector<Tensor> &inputs,
                         const std::vector<Tensor> &outputs);
std::optional<std::string> reduceWindowRowRange(const ir::Operation &op,
                                                const std::vector<Tensor> &inputs,
                                                std::vector<Tensor> &outputs, int64_t begin,
                                                int64_t end);

/// The counter-based generator behind random_normal / random_uniform, so
/// every backend and device produces the same numbers for a seed:
///   u(seed, i) = (splitmix64(seed * 0x9E3779B97F4A7C15 + i) >> 11) * 2^-53
/// uniform element i  = lo + (hi - lo) * u(seed, i)
/// normal element i   = mean + std * sqrt(-2 ln(1 - u(seed, 2i))) *
///                      cos(2 pi u(seed, 2i + 1))
/// All arithmetic is on uint64 (wrapping); the seed is the i64 attribute
/// reinterpreted as uint64; values are computed in double and rounded once
/// to the result dtype. randomUnit(1, 0) = 0.43152799704850997.
double randomUnit(uint64_t seed, uint64_t i);

/// SplitMix64's output function applied to one state, increment included:
///   x += 0x9E3779B97F4A7C15
///   x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
///   x = (x ^ (x >> 27)) * 0x94D049BB133111EB
///   return x ^ (x >> 31)
/// (splitmix64(0) = 0xE220A8397B1DCDAF, the first output of SplitMix64
/// seeded with 0.)
uint64_t splitmix64(uint64_t x);

} // namespace mdl::backend::cpu
