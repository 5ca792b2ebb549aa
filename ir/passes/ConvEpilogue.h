// epilogues: each convolution, with the per-channel arithmetic, residual
// addition and activation that follow it, becomes one fused_convolution
// (stdlib/Ops.def), which the JIT runs as one oneDNN primitive with
// post-operations (backend/jit/ConvPrimitive.h).
//
//   %c = convolution %x, %w {...}          %y = fused_convolution %x, %w, %s, %t, %r
//   %a = add %c, broadcast_to(%bias)  ==>         {..., epilogue = "mul,add,residual,relu"}
//   %m = mul %a, broadcast_to(%s)
//   ...  %y = relu(%a2 + %r)
//
// It runs for the JIT after partition, on the devices whose memory is the
// host's and whose kind implements fused_convolution; the interpreter runs
// the program as partitioned, so it stays the reference.
#pragma once

#include "ir/IR.h"

namespace mdl::passes {

/// Rewrites the convolutions (conv2d and convolution) of a partitioned
/// module in place; returns how many became fused_convolution operations.
int fuseConvolutionEpilogues(ir::Module &m);

} // namespace mdl::passes
