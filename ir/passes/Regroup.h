// regroup: opens a partitioned function up again for a rewrite that must
// see across segment boundaries (ConvEpilogue.h: a convolution in one
// segment, its batch-norm in the next after a read of a global, its relu
// in a function of its own, as JAX exports them).
//
// The segments of the devices `dissolvable` accepts are replaced by their
// operations, calls to small straight-line functions whose operations all
// are on such devices are replaced by copies of their bodies, and reads of
// globals move to the front of their region. partition(f) then cuts the
// function into segments again, now as large as the program allows.
#pragma once

#include "ir/IR.h"

#include <functional>
#include <set>
#include <string>

namespace mdl::passes {

/// Regroups `f`, a function of the partitioned module `m`, in place.
/// Returns the number of calls inlined; adds the callees' names to
/// `inlined`.
int regroup(const ir::Module &m, ir::Function &f,
            const std::function<bool(int device)> &dissolvable, std::set<std::string> &inlined);

} // namespace mdl::passes
