// The hip kind's GPU code generator: a segment becomes a GpuProgram for one
// target (see ../GpuProgram.h).
#pragma once

#include "ir/IR.h"

#include <string>

namespace mdl::backend::hip {

/// Compiles `segment` for `target` into the bytes of a GpuProgram; false
/// with `error` when it cannot.
bool compileSegment(const ir::Operation &segment, const std::string &target, std::string &program,
                    std::string &error);

} // namespace mdl::backend::hip
