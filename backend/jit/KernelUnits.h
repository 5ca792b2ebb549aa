// Internal to the JIT: large fused loops compiled once per distinct kernel,
// in compile units of their own.
//
// A fusion's loop nest is a function of its region (operations, types,
// attributes, constants) and of the strides its inputs are read with, and of
// nothing else. Fusions with the same description share one compiled
// kernel, named after the description's hash (`mdl.k.HASH`): ResNet-50's 128
// fusions are 41 kernels, and the layers of a transformer repeat theirs.
// The kernels are grouped into kernel units, modules of a few kernels each,
// cached by their kernels' hashes (a program that shares a kernel with
// another may find it compiled) and compiled on all cores beside the
// functions that call them, whose own modules are then only host code.
// Small fusions stay in their function's module, where LLVM inlines them
// into the loop that calls them (a loop updating one element per step).
#pragma once

#include "backend/jit/BufferPlan.h"
#include "ir/IR.h"

#include <llvm/IR/Module.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mdl::backend::jit {

/// Fusions with at least this many points (the largest operand or result)
/// get a shared kernel; smaller ones stay in their function's module.
constexpr int64_t kSharedKernelPoints = 64;

/// One distinct kernel: a fusion that describes it, the strides it reads
/// its inputs with, its description's hash and its symbol.
struct KernelSpec {
  const ir::Operation *fusion = nullptr;
  std::vector<std::vector<int64_t>> strides;
  uint64_t hash = 0;
  std::string symbol;
  int cost = 0; // operations in its region: how long it takes to compile, roughly
};

/// A module of kernels compiled together; `key` is its cache key.
struct KernelUnit {
  std::vector<size_t> kernels; // into KernelTable::kernels
  uint64_t key = 0;
  int cost = 0;
};

struct KernelTable {
  std::vector<KernelSpec> kernels; // distinct, in order of first use
  std::vector<KernelUnit> units;
  /// Per function instance: the symbol of each fusion that calls a shared
  /// kernel (the others are compiled in the function's own module).
  std::vector<std::unordered_map<const ir::Operation *, std::string>> shared;
  int sharedFusions = 0; // fusions calling shared kernels
};

/// The element strides each operand of `fusion` is read with, as planned.
std::vector<std::vector<int64_t>> fusionStrides(const ir::Operation &fusion,
                                                const FunctionPlan &plan);

/// The shared kernels of the functions of `m` (planned as `plans`), in
/// units of at most `perUnit` kernels; `salt` (the code generator's version
/// and the target) goes into every unit's key.
KernelTable planKernels(const ir::Module &m, const std::vector<FunctionPlan> &plans,
                        const std::string &salt, size_t perUnit = 4);

/// Emits the kernels of unit `u` into `mod`, each an external function
/// named after its hash. False with `error` set on failure.
bool emitKernelUnit(llvm::Module &mod, const KernelTable &table, const KernelUnit &u,
                    std::string &error);

} // namespace mdl::backend::jit
