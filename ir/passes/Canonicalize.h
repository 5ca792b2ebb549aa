// canonicalize: rewrites composite operations inside segments into the
// primitives they are made of, so that fusion (Fuse.h) can put them in one
// loop nest with their neighbours, and HLO operations into the forms the
// JIT generates code for.
//
// softmax, log_softmax and layernorm along the last axis of a float tensor
// become reductions over that axis (keepdims) and element-wise operations
// (for bf16 and f16, in f32 between a cast of the input and a cast of the
// result, as the kernels compute them); an HLO `reduce` with a named add,
// max or min reducer becomes sum / max / min; a float `dot_general` becomes
// transposes and reshapes (views) around a dot_general in matrix-product
// form. Every other operation is left alone. The JIT runs this pass; the
// interpreter runs the original kernels, so it stays the reference.
#pragma once

#include "ir/IR.h"

namespace mdl::passes {

/// Decomposes composite operations in every segment of a partitioned
/// module, in place. Returns the number of operations rewritten.
int canonicalize(ir::Module &m);

/// Whether `op` is a dot_general in matrix-product form (what canonicalize
/// makes of every float dot_general): operands [B..., M, K] and
/// [B..., K, N] with their batch axes paired in order, result [B..., M, N].
bool isMatmulFormDot(const ir::Operation &op);

} // namespace mdl::passes
