// canonicalize: rewrites composite operations inside segments into the
// primitives they are made of, so that fusion (Fuse.h) can put them in one
// loop nest with their neighbours.
//
// softmax, log_softmax and layernorm along the last axis of an f32/f64
// tensor become reductions over that axis (keepdims) and element-wise
// operations; every other operation is left alone. The JIT runs this pass;
// the interpreter runs the composite kernels, so it stays the reference.
#pragma once

#include "ir/IR.h"

namespace mdl::passes {

/// Decomposes composite operations in every segment of a partitioned
/// module, in place. Returns the number of operations rewritten.
int canonicalize(ir::Module &m);

} // namespace mdl::passes
