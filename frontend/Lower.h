// Lowering: the checked AST becomes IR.
//
// Functions stay generic (their symbols stay in their types); placement
// written in the source (`on DEV` blocks and suffixes, `param ... on DEV`)
// becomes explicit devices on operations; everything else is left for the
// affinity pass. Params and consts become globals whose initializer regions
// compute them at load time (a weight is a `load` of a file and key).
#pragma once

#include "frontend/Sema.h"
#include "ir/IR.h"

#include <memory>

namespace mdl::frontend {

/// Lowers a program that Sema accepted.
std::unique_ptr<ir::Module> lowerProgram(const CheckedProgram &checked);

} // namespace mdl::frontend
