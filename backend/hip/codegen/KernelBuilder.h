// The kernel builder: one GPU kernel over LLVM IR, target-neutral. It
// declares the kernel's parameters (buffers, i64 scalars) in the target's
// convention, gives the kernel thread and work-group ids, barriers,
// work-group arrays and loops, and records the kernel (name, block size,
// work-group bytes) for the program. Every kernel emitter (fused loops,
// GEMM, data movement) is written against this class and GpuTarget.h's
// hooks only.
//
// GpuModule is the LLVM module all kernels of one segment go into; finish()
// defines the math library in it, verifies it and emits the target's code.
#pragma once

#include "backend/hip/GpuProgram.h"
#include "backend/hip/codegen/GpuTarget.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mdl::backend::hip {

/// The module of one segment's kernels.
class GpuModule {
public:
  explicit GpuModule(const GpuTarget &target);
  ~GpuModule();

  llvm::LLVMContext &context() { return *context_; }
  llvm::Module &module() { return *module_; }
  const GpuTarget &target() const { return target_; }
  std::vector<GpuKernel> &kernels() { return kernels_; }

  /// A kernel name not used yet, from `what` ("fusion" -> "mdl_k3_fusion").
  std::string kernelName(const std::string &what);

  /// Defines the math library, verifies, optimizes (per target) and emits
  /// the code; false with `error`.
  bool finish(std::string &code, std::string &error);

private:
  const GpuTarget &target_;
  std::unique_ptr<llvm::LLVMContext> context_;
  std::unique_ptr<llvm::Module> module_;
  std::vector<GpuKernel> kernels_;
};

/// A parameter: a global buffer (element bytes addressed by the kernel) or
/// an i64 scalar.
using KernelParam = KernelParamInfo;

/// Builds one kernel; finish() adds it to the module's list.
class KernelBuilder {
public:
  KernelBuilder(GpuModule &m, const std::string &name, unsigned blockX,
                std::vector<KernelParam> params);

  llvm::IRBuilder<> &b() { return b_; }
  llvm::LLVMContext &context() { return m_.context(); }

  /// Parameter `i`: a buffer's address (global memory, its byte offset
  /// already added), or an i64.
  llvm::Value *param(size_t i) const { return values_.at(i); }
  /// The thread's index in the work-group, and the work-group's index
  /// along `dim` (i64, read once at entry).
  llvm::Value *localId() const { return localId_; }
  llvm::Value *groupId(int dim = 0);
  void barrier();
  /// A private variable of type `t` (an alloca at the kernel's entry).
  llvm::Value *variable(llvm::Type *t);
  /// A work-group array of `n` elements of `elt`, named `var`.
  llvm::Value *localArray(llvm::Type *elt, uint64_t n, const std::string &var);

  /// for (i = begin; i < end; i += step) body(i), over i64 values; `body`
  /// may open blocks of its own.
  void loop(llvm::Value *begin, llvm::Value *end, llvm::Value *step,
            const std::function<void(llvm::Value *)> &body);
  /// Runs `body(i)` for every i < total, spread over `groups` work-groups
  /// of this kernel's block (a grid-stride loop).
  void forEachPoint(int64_t total, int64_t groups, const std::function<void(llvm::Value *)> &body);
  /// Runs `body(row)` for every row < rows, one work-group per row at a
  /// time (`groups` work-groups).
  void forEachRow(int64_t rows, int64_t groups, const std::function<void(llvm::Value *)> &body);
  /// if (cond) body().
  void ifThen(llvm::Value *cond, const std::function<void()> &body);

  /// The address of element `index` (i64) of type `elt` at `base`.
  llvm::Value *element(llvm::Value *base, llvm::Type *elt, llvm::Value *index);

  /// Ends the kernel; returns its index in the module's kernel list.
  uint32_t finish();

private:
  GpuModule &m_;
  std::string name_;
  unsigned blockX_;
  std::vector<KernelParam> params_;
  llvm::IRBuilder<> b_;
  llvm::Function *fn_ = nullptr;
  std::vector<llvm::Value *> values_;
  llvm::Value *localId_ = nullptr;
  llvm::Value *groupIds_[3] = {nullptr, nullptr, nullptr};
  llvm::BasicBlock *entry_ = nullptr;
  uint64_t sharedBytes_ = 0;
};

/// Threads per work-group of the element-wise and row kernels.
inline constexpr unsigned kBlock = 256;
/// The most work-groups a kernel launches: up to this many, one thread per
/// point (or one work-group per row); beyond, grid-stride loops cover the
/// rest.
inline constexpr int64_t kMaxGroups = int64_t(1) << 20;

/// Work-groups for `total` points of `block` threads each.
int64_t groupsFor(int64_t total, unsigned block = kBlock);

} // namespace mdl::backend::hip
