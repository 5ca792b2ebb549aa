// `mdl graph`: the partitioned program as a Graphviz picture.
#pragma once

#include "ir/IR.h"

#include <string>

namespace mdl::tools {

/// Renders the partitioned module `m` (entry `entry`, and the functions it
/// calls) to `path`: `.dot` is written directly, `.svg` and `.png` through
/// Graphviz's `dot`. Returns false with `error` set on failure.
bool writeGraph(const ir::Module &m, const std::string &entry, const std::string &path,
                std::string &error);

} // namespace mdl::tools
