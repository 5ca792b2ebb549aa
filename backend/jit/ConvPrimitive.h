// The JIT's convolutions: each fused_convolution call site of compiled code
// has a handle holding its oneDNN primitives, made when the program is
// loaded, and is called through mdl_rt_conv.
//
// The input and output keep the layouts the program gives them (the
// dimension labels become strides: NHWC, NCHW, ...). A kernel that is a
// global or a constant is reordered once into the layout oneDNN chooses
// (when the program is loaded, for a global); any other kernel is read as
// it is. The epilogue's leading add is the bias; its scalar and
// per-channel steps and its residual become post-operations (binary
// add/sub/mul, sum); relu and clip run after the primitive, over the
// output, so that NaN stays NaN as the reference has it (oneDNN's eltwise
// post-operations turn it into 0). bf16 runs on the CPU's bf16
// instructions (AMX where there are), accumulating in f32; f16, which
// oneDNN 2.6 does not convolve, is converted to f32 around an f32
// primitive. A call site oneDNN cannot take (f64, input dilation, batch
// groups, negative padding, an activation before another step, only a
// reference implementation on offer) runs the CPU kernel, the reference.
//
// Threads: the output is cut into one slab per worker-pool thread (images,
// rows or output features), each a primitive of its own run on one thread,
// so no OpenMP team spins beside the pool (docs/jit.md, *Convolutions*).
#pragma once

#include "backend/jit/Runtime.h"

#include <memory>
#include <string>
#include <vector>

namespace mdl::backend::jit {

class ConvPrimitive {
public:
  /// Call site `op` (a fused_convolution). `constantKernel`: the kernel is
  /// a global or a constant, whose bytes never change.
  static std::unique_ptr<ConvPrimitive> create(const ir::Operation &op, bool constantKernel);
  /// Makes the primitives of `convs` (oneDNN generates their code); before
  /// any of them runs. `kernels[i]`, when not null, is the data of conv i's
  /// constant kernel (a global's), reordered now rather than at the first
  /// call.
  static void prepare(const std::vector<ConvPrimitive *> &convs,
                      const std::vector<const void *> &kernels);
  ~ConvPrimitive();

  /// Runs the call site on contiguous host buffers (operands, result); 0,
  /// or 1 after reporting an error.
  int32_t run(RuntimeContext &ctx, void *const *ins, void *const *outs);

  /// The operation it runs.
  const ir::Operation &op() const;
  /// Whether oneDNN runs it (else the CPU kernel).
  bool onednn() const;
  /// oneDNN's implementation ("brgconv:avx512_core"), or why the CPU kernel
  /// runs it.
  const std::string &description() const;

  /// The call site's state (ConvPrimitive.cpp).
  struct Impl;

private:
  explicit ConvPrimitive(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace mdl::backend::jit

extern "C" {
/// Runs a fused_convolution call site (ConvPrimitive.h).
int32_t mdl_rt_conv(mdl::backend::jit::RuntimeContext *ctx, mdl::backend::jit::ConvPrimitive *conv,
                    void *const *ins, void *const *outs);
}
