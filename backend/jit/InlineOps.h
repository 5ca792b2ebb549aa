// Internal to the JIT: the operations the host program computes itself
// instead of calling their CPU kernel (IndexCodegen.cpp generates them):
// dynamic_slice, dynamic_update_slice, dynamic_index (indexing with an index
// known at run time) and element scatters (every update one element, with a
// named combiner: what JAX's x.at[i].set(v) and .add(v) export). Each is a
// few instructions for the one-element reads and writes of a loop, where a
// kernel call wraps tensors and dispatches.
//
// The buffer plan asks this table which operands such an operation reads
// as contiguous buffers and whether it keeps a handle; the host code
// generator asks it for the code.
#pragma once

#include "ir/IR.h"

namespace mdl::backend::jit {

/// How the host program computes an operation itself.
struct InlineOpInfo {
  /// Bit i: operand i is read as a contiguous buffer (the plan copies a
  /// view that is not); the others are read where they are.
  unsigned contiguous = 0;
  /// Whether it keeps a handle: its CPU kernel, called when the index is
  /// out of range, reports the run-time error exactly as elsewhere.
  bool handle = false;
};

/// How `op` is computed inline, or null when its CPU kernel runs it.
const InlineOpInfo *inlineOp(const ir::Operation &op);

} // namespace mdl::backend::jit
