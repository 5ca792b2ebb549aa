// Partitioning: every region is cut into per-device segments.
//
// A maximal run of consecutive operations placed on one device becomes one
// `segment` operation on that device. Its region takes the values it reads
// as arguments and yields the values used after it, and sees nothing else,
// so each segment can be compiled and run on its own. What stays outside
// segments is the host program: control flow, calls, transfers, print.
// No segment or function ever contains weight data (weights are `load`s in
// global initializers), so no artifact grows with the model's size.
#pragma once

#include "ir/IR.h"

namespace mdl::passes {

/// Partitions a module produced by insertTransfers, in place.
void partition(ir::Module &m);
/// Partitions one function of it (again, after regroup: Regroup.h).
void partition(ir::Function &f);

} // namespace mdl::passes
