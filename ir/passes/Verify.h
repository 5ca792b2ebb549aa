// The IR verifier: structural invariants (SSA visibility, terminators,
// region signatures of if/for/while/segment, calls against callees, devices)
// and, for every standard-library operation, that its result types are what
// its shape rule gives for its operands.
#pragma once

#include "ir/IR.h"

#include <string>
#include <vector>

namespace mdl::passes {

/// Verifies a module. Returns the problems found ("loc: message"), empty
/// when the module is well formed.
std::vector<std::string> verifyModule(const ir::Module &m);

} // namespace mdl::passes
