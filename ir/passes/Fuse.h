// fuse: groups the element-wise operations and reductions of each segment
// into `fusion` operations, each of which the JIT compiles into one loop
// nest (vectorized, and split among threads when large).
//
//   %5 = fusion %1, %2 : f32[64, 1024] on @host {
//     ^(%6: f32[64, 1024] on @host, %7: f32[1024] on @host):
//     %8 = add %6, %7 : f32[64, 1024] on @host
//     %9 = relu %8 : f32[64, 1024] on @host
//     yield %9
//   }
//
// A fusion region is isolated like a segment: its arguments are the values
// it reads, it yields the values read after it. Scalar and small constants,
// zeros/ones/full and arange are copied into each cluster that reads them.
// Which operations may share a cluster is FusionDomain.h's rule.
#pragma once

#include "ir/IR.h"

namespace mdl::passes {

/// Fuses the segments of a partitioned module in place; returns the number
/// of fusion operations made.
int fuse(ir::Module &m);

/// The operations of a `fusion` region spliced back in place of the fusion
/// (for devices that run segments operation by operation).
void unfuse(ir::Region &r);

} // namespace mdl::passes
