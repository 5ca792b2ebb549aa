// Internal to the GPU generator: the kernel emitters and what they share.
//
// Values of a segment live in buffers named by GpuRef (an input, an output,
// the scratch area, the constant data); a View adds the element type, shape
// and element strides, so kernels read transposed, sliced and broadcast
// values in place. While a segment is lowered, a Scratch reference's
// `index` names a scratch slot (ScratchPlan.h), which planning later turns
// into an offset in the one scratch area.
//
// Each emitter builds one kernel with KernelBuilder (through the target's
// hooks only) and returns the launch: kernel, grid and arguments.
//   emitFusionKernel  a `fusion` operation: element-wise chains with
//                     broadcasting, and row reductions (one work-group per
//                     row, a tree in work-group memory; a few long rows in
//                     pieces over many work-groups, then their partials)
//                     (FusionKernels.cpp)
//   emitCopyKernel    a strided copy between two views (DataKernels.cpp)
//   emitFillKernel    a view filled with one value
//   emitGatherKernel  gather / embedding / dynamic_index along an axis
//   emitIndexCheckKernel  their indices checked, the first one out of
//                     range written to the program's error record
//   emitArgReduceKernel  argmax / argmin / prod over the trailing axes
//   emitGemmKernel    C = A @ B, tiled in work-group memory, optionally with
//                     a FusionEpilogue (bias, activation) (GemmKernel.cpp)
//   emitConvKernel, emitPoolKernel  conv2d and the pools, direct
//                     (ConvKernels.cpp)
#pragma once

#include "backend/hip/GpuProgram.h"
#include "backend/hip/codegen/KernelBuilder.h"
#include "ir/IR.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mdl::backend::hip {

/// A value in device memory: a buffer at a byte offset (that of the
/// element at index 0) and element strides (0 along broadcast axes).
struct View {
  GpuRef ref;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape, strides;

  int64_t numElements() const;
  /// Row-major and dense (a plain block of bytes).
  bool contiguous() const;
  /// A contiguous view of `type` at `ref`.
  static View dense(GpuRef ref, const ir::TensorType &type);
};

/// Ships bytes as constant data; returns their reference.
using ConstantSink = std::function<GpuRef(const std::string &bytes)>;
/// A scratch slot of `bytes` bytes for a kernel's own intermediates (live
/// over the launches that name it); returns its reference.
using ScratchSink = std::function<GpuRef(uint64_t bytes)>;

/// Offsets of several accesses at point `index` of `shape` (row-major
/// order): for access a, sum over axes of coordinate * strides[a][axis].
std::vector<llvm::Value *> pointOffsets(llvm::IRBuilder<> &b, llvm::Value *index,
                                        const std::vector<int64_t> &shape,
                                        const std::vector<std::vector<int64_t>> &strides);

/// The launches of a fusion, in order: one kernel, or two for the
/// reductions of a few long rows (partials in a scratch slot of `scratch`).
bool emitFusionKernel(GpuModule &gm, const ir::Operation &fusion, const std::vector<View> &inputs,
                      const std::vector<View> &outputs, const ConstantSink &constants,
                      const ScratchSink &scratch, std::vector<GpuLaunch> &launches,
                      std::string &error);

class FusionEmitter;

/// A fusion without reductions computed by another kernel at the points it
/// produces: the GEMM's epilogue (a bias, an activation), which then writes
/// the fusion's outputs instead of the product. standalone() makes the
/// fusion's own kernel, for a runtime whose vendor BLAS writes the product
/// (the same parameters and constant data).
class FusionEpilogue {
public:
  FusionEpilogue(GpuModule &gm, const ir::Operation &fusion, const std::vector<View> &inputs,
                 const std::vector<View> &outputs, const ConstantSink &constants);
  ~FusionEpilogue();
  /// False, with `error`, for a fusion that cannot be one (reductions).
  bool prepare(std::string &error);
  /// Its parameters, which the host kernel appends to its own, and their
  /// references.
  const std::vector<KernelParam> &params() const;
  const std::vector<GpuRef> &refs() const;
  /// Emits the fusion's outputs at point `index` (row-major over its
  /// domain) into `kb`, whose parameters from `first` on are params();
  /// region argument `replaced` is `value` (compute type), not a load.
  bool emitAt(KernelBuilder &kb, size_t first, llvm::Value *index, size_t replaced,
              llvm::Value *value, std::string &error);
  /// The fusion's own kernel.
  bool standalone(std::vector<GpuLaunch> &launches, std::string &error);

private:
  ScratchSink noScratch_;
  std::unique_ptr<FusionEmitter> impl_;
};

/// A launch of `kernel` on `groups` work-groups along x, with `args`.
GpuLaunch launchOf(uint32_t kernel, int64_t groups, std::vector<GpuRef> args);

GpuLaunch emitCopyKernel(GpuModule &gm, const View &dst, const View &src);
/// `value`: the bytes of one element of dst's type.
GpuLaunch emitFillKernel(GpuModule &gm, const View &dst, const std::string &value);
/// out[pre, idx..., post] = x[pre, idx[idx...], post] along `axis` of x;
/// with `fromEnd`, indices below zero count from the end; out-of-range ones
/// are clamped (emitIndexCheckKernel reports them).
GpuLaunch emitGatherKernel(GpuModule &gm, const View &out, const View &x, const View &idx, int axis,
                           bool fromEnd);
/// One work-group that finds the first index of `idx` (row-major order)
/// outside [0, n) (with `fromEnd`, outside [-n, n)) and writes it to the
/// error record `record` with step `step` (GpuErrorRecord), unless the
/// record holds an error already.
GpuLaunch emitIndexCheckKernel(GpuModule &gm, const View &idx, int64_t n, bool fromEnd,
                               GpuRef record, uint32_t step);
/// argmax / argmin (i64 results) or prod over the last `inner` axes of x.
GpuLaunch emitArgReduceKernel(GpuModule &gm, ir::OpKind kind, const View &out, const View &x,
                              int inner);
/// The fallback kernel of a Gemm step (`g` describes the product). With an
/// epilogue, each element of C (rounded to `dtype`) is the epilogue's
/// region argument `replaced`, and the epilogue's outputs are stored
/// instead of C; false (with `error`) when the epilogue cannot be emitted.
bool emitGemmKernel(GpuModule &gm, const GpuGemm &g, ir::DType dtype, GpuLaunch &launch,
                    std::string &error, FusionEpilogue *epilogue = nullptr, size_t replaced = 0);
/// conv2d of NCHW `x` by OIHW `w` (strides, zero padding) into dense `out`.
GpuLaunch emitConvKernel(GpuModule &gm, const View &out, const View &x, const View &w, int64_t sh,
                         int64_t sw, int64_t ph, int64_t pw);
/// max_pool2d / avg_pool2d of NCHW `x` into dense `out`.
GpuLaunch emitPoolKernel(GpuModule &gm, bool isMax, const View &out, const View &x, int64_t kh,
                         int64_t kw, int64_t sh, int64_t sw);

} // namespace mdl::backend::hip
