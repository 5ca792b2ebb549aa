// The CPU kernels as a table indexed by operation kind. Each kernel family
// (one file each: Elementwise, Cast, Reduction, Linalg, Shape, Indexing,
// Neural, Conv, Creation, and the HLO import families) registers the
// kernels it implements; the table is built once, and checked then for
// completeness against the operation table: every kind that has a run-time
// kernel (stdlib::hasKernel) has exactly one.
#pragma once

#include "backend/cpu/Kernels.h"
#include "stdlib/Registry.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mdl::backend::cpu {

/// nullopt when done, else an error message (a run-time failure).
using Status = std::optional<std::string>;

/// A kernel: reads `in`, fills `out` (allocated with the result types);
/// `caller` serves operations that apply a function of the module.
using KernelFn = std::function<Status(const ir::Operation &op, const std::vector<Tensor> &in,
                                      std::vector<Tensor> &out, const FunctionCaller *caller)>;

/// The parameter list of a kernel written in place:
///   t.add(OpKind::Transpose, MDL_KERNEL { return transpose(op, in[0], out[0]); });
#define MDL_KERNEL                                                                                \
  [](const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out,            \
     const FunctionCaller *caller) -> Status

class KernelTable {
public:
  KernelTable();
  /// Registers the kernel of `kind` (once per kind).
  void add(ir::OpKind kind, KernelFn fn);
  /// The same kernel for several kinds (it reads op.kind).
  void add(std::initializer_list<ir::OpKind> kinds, const KernelFn &fn);
  /// The kernel of `kind`, or null.
  const KernelFn *find(ir::OpKind kind) const;
  /// Kinds the operation table gives a kernel that have none here, and
  /// kinds registered twice ("" when complete).
  std::string problems() const;

private:
  std::vector<KernelFn> fns_;
  std::vector<std::string> twice_;
};

/// The table of every CPU kernel (built on first use).
const KernelTable &kernelTable();

// The families' registrations (one per file).
void registerElementwiseKernels(KernelTable &t);
void registerCastKernels(KernelTable &t);
void registerReductionKernels(KernelTable &t);
void registerLinalgKernels(KernelTable &t);
void registerShapeKernels(KernelTable &t);
void registerIndexingKernels(KernelTable &t);
void registerNeuralKernels(KernelTable &t);
void registerConvKernels(KernelTable &t);
void registerCreationKernels(KernelTable &t);
void registerHloKernels(KernelTable &t);

} // namespace mdl::backend::cpu
