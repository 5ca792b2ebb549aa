// Reads the IR text form written by ir/text/Printer.h back into a Module;
// device kinds must be registered (stdlib/DeviceKinds.h).
#pragma once

#include "ir/IR.h"

#include <memory>
#include <string>
#include <string_view>

namespace mdl::ir {

/// Parses IR text. On failure returns null and sets `error` to
/// "LINE:COL: message".
std::unique_ptr<Module> parseModule(std::string_view text, std::string &error);

} // namespace mdl::ir
