// Loading a program: the main file and, transitively, every file it
// imports (each once; paths relative to the importing file; a cycle or a
// missing file is E0105).
#pragma once

#include "frontend/Sema.h"
#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"

#include <memory>
#include <string>

namespace mdl::frontend {

/// Parses `path` and its imports. Returns null if any file could not be
/// read or parsed (the diagnostics say why).
std::unique_ptr<Program> loadProgram(const std::string &path, SourceManager &sm,
                                     ir::DiagnosticEngine &diags);

/// Same, for text already registered in the source manager (REPL, tests).
std::unique_ptr<Program> loadProgramFromBuffer(const SourceBuffer &buf,
                                               SourceManager &sm,
                                               ir::DiagnosticEngine &diags);

} // namespace mdl::frontend
