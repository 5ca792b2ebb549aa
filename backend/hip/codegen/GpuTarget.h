// The per-target hooks of the GPU kernel generator: everything that differs
// between AMDGPU (gfx90a, gfx942), NVPTX (sm_80, sm_90) and spir64 (OpenCL
// through PoCL) is here, behind one small interface; the kernel builder
// (KernelBuilder.h) and every kernel emitter above it are target-neutral.
//
// A target says how a kernel reads its thread and work-group ids, how it
// waits at a barrier, which address spaces global and work-group memory
// are, how buffer arguments arrive (one pointer, or on OpenCL a buffer and
// a byte offset), how a kernel is marked (calling convention, annotations,
// OpenCL's kernel_arg_* metadata), how work-group arrays are named, and how
// the finished module becomes code (an AMDGPU code object linked by lld,
// PTX text, or spir64 bitcode that PoCL's LLVM 15 reads).
#pragma once

#include "backend/hip/GpuProgram.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <vector>

namespace llvm {
class TargetMachine;
}
#include <string>

namespace mdl::backend::hip {

/// A kernel parameter as OpenCL's metadata describes it.
struct KernelParamInfo {
  bool buffer = true; // a global buffer (false: an i64 scalar)
  std::string name;   // for kernel_arg_name
};

class GpuTarget {
public:
  virtual ~GpuTarget() = default;

  /// The target's name ("gfx90a", "sm_90", "spir64").
  const std::string &name() const { return name_; }
  GpuCodeFormat format() const { return format_; }

  /// Sets the module's triple and data layout.
  virtual void prepareModule(llvm::Module &m) const = 0;
  /// Address spaces of global and work-group memory.
  virtual unsigned globalSpace() const { return 1; }
  virtual unsigned localSpace() const { return 3; }
  /// Whether a buffer parameter is followed by its i64 byte offset (OpenCL).
  virtual bool buffersHaveOffsets() const { return false; }

  /// The thread's index in its work-group along x, as an i64.
  virtual llvm::Value *localId(llvm::IRBuilder<> &b) const = 0;
  /// The work-group's index in the grid along `dim` (0: x, 2: z), as an i64.
  virtual llvm::Value *groupId(llvm::IRBuilder<> &b, int dim) const = 0;
  /// Every thread of the work-group waits here; work-group memory written
  /// before it is visible after it.
  virtual void barrier(llvm::IRBuilder<> &b) const = 0;

  /// Marks `f` as a kernel of `blockX` threads (calling convention,
  /// attributes, annotations, OpenCL metadata).
  virtual void markKernel(llvm::Function &f, unsigned blockX,
                          const std::vector<KernelParamInfo> &params) const = 0;
  /// The name of a work-group array `var` of `kernel` (PoCL treats an array
  /// as work-group memory only when named `<kernel>.<var>`).
  virtual std::string localArrayName(const std::string &kernel, const std::string &var) const {
    return kernel + "." + var;
  }

  /// Optimizes (or not) and emits the finished, verified module as the
  /// target's code; false with `error`.
  virtual bool emit(llvm::Module &m, std::string &code, std::string &error) const = 0;

protected:
  GpuTarget(std::string name, GpuCodeFormat format) : name_(std::move(name)), format_(format) {}

private:
  std::string name_;
  GpuCodeFormat format_;
};

/// The hooks of `target` ("gfx90a", "gfx942", "sm_80", "sm_90", "spir64");
/// null with `error` for a target mdl does not compile for, or whose LLVM
/// back end is missing.
std::unique_ptr<GpuTarget> makeGpuTarget(const std::string &target, std::string &error);

// The three families (AmdgpuTarget.cpp, NvptxTarget.cpp, Spir64Target.cpp).
std::unique_ptr<GpuTarget> makeAmdgpuTarget(const std::string &arch, std::string &error);
std::unique_ptr<GpuTarget> makeNvptxTarget(const std::string &arch, std::string &error);
std::unique_ptr<GpuTarget> makeSpir64Target();

/// Runs LLVM's O2 pipeline on `m` for the target machine of `tm` (AMDGPU
/// and NVPTX; spir64 is left unoptimized for PoCL).
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm);
/// A target machine for `triple`, `cpu`, `features`; null with `error`.
std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const std::string &triple,
                                                       const std::string &cpu,
                                                       const std::string &features,
                                                       std::string &error);
/// Emits `m` through `tm` as an object file or assembly text.
bool emitWithTargetMachine(llvm::Module &m, llvm::TargetMachine &tm, bool assembly,
                           std::string &out, std::string &error);

} // namespace mdl::backend::hip
