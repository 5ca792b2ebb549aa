// The diagnostics engine: every user-facing problem, from the lexer to the
// runtime, is reported here as a Diagnostic with a stable code, a severity,
// a primary location and optional notes.
//
// The engine only collects and dispatches; how a diagnostic is shown
// (terminal text with carets, JSON lines, the REPL, a test verifier) is a
// pluggable DiagnosticHandler. The renderers that need source text live in
// the frontend; the engine sits here so that IR passes can report too.
#pragma once

#include "ir/Location.h"

#include <memory>
#include <string>
#include <vector>

namespace mdl::ir {

enum class Severity { Error, Warning, Note };

/// A secondary message attached to a diagnostic, optionally located.
struct DiagNote {
  Location loc;
  std::string message;
};

struct Diagnostic {
  std::string code; // E0101, W0701, N0801, ...
  Severity severity = Severity::Error;
  Location loc;
  std::string message;
  std::vector<DiagNote> notes;
};

/// The name of a severity: "error", "warning", "note".
const char *severityName(Severity s);
/// A diagnostic as one JSON object on one line, without the newline: what
/// --diagnostics=json prints (code, severity, message, file, line, column,
/// end_column, notes).
std::string diagnosticJson(const Diagnostic &d);
/// A diagnostic as text without source lines ("file:3:7: error[E0101]:
/// message", then its notes), for reports made where no source is at hand
/// (an internal error ending the process).
std::string diagnosticLine(const Diagnostic &d);

/// Receives every diagnostic as it is emitted.
class DiagnosticHandler {
public:
  virtual ~DiagnosticHandler() = default;
  virtual void handle(const Diagnostic &d) = 0;
};

/// Collects diagnostics and forwards them to the installed handlers.
class DiagnosticEngine {
public:
  /// Emits a diagnostic; returns it so callers can attach notes before it
  /// is flushed (flush happens on the next report() or flush()).
  Diagnostic &report(std::string code, Severity sev, Location loc,
                     std::string message);
  Diagnostic &error(std::string code, Location loc, std::string message) {
    return report(std::move(code), Severity::Error, loc, std::move(message));
  }
  Diagnostic &warning(std::string code, Location loc, std::string message) {
    return report(std::move(code), Severity::Warning, loc, std::move(message));
  }
  Diagnostic &note(std::string code, Location loc, std::string message) {
    return report(std::move(code), Severity::Note, loc, std::move(message));
  }
  /// Delivers the pending diagnostic to the handlers.
  void flush();

  void addHandler(DiagnosticHandler *h) { handlers_.push_back(h); }
  void removeHandler(DiagnosticHandler *h);
  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ != 0; }
  /// Every diagnostic delivered so far (tests and the REPL read these).
  const std::vector<Diagnostic> &all() const { return delivered_; }
  /// Forgets counts and history (the REPL checks one input at a time).
  void reset();

  ~DiagnosticEngine() { flush(); }

private:
  std::vector<DiagnosticHandler *> handlers_;
  std::unique_ptr<Diagnostic> pending_;
  std::vector<Diagnostic> delivered_;
  unsigned errors_ = 0;
};

} // namespace mdl::ir
