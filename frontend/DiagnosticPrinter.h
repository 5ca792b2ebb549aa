// Renderers for diagnostics: terminal text with source lines and carets,
// and JSON lines (one object per diagnostic) for tools.
#pragma once

#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"

#include <ostream>

namespace mdl::frontend {

/// `file:line:col: error[E0102]: message`, the source line, a caret line
/// under the range, then the notes.
class TextDiagnosticPrinter : public ir::DiagnosticHandler {
public:
  TextDiagnosticPrinter(std::ostream &os, const SourceManager &sm)
      : os_(os), sm_(sm) {}
  void handle(const ir::Diagnostic &d) override;

private:
  void printSnippet(const ir::Location &loc);
  std::ostream &os_;
  const SourceManager &sm_;
};

/// One JSON object per line with code, severity, message, file, line,
/// column, end_column and notes.
class JsonDiagnosticPrinter : public ir::DiagnosticHandler {
public:
  explicit JsonDiagnosticPrinter(std::ostream &os) : os_(os) {}
  void handle(const ir::Diagnostic &d) override;

private:
  std::ostream &os_;
};


} // namespace mdl::frontend
