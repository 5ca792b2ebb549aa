// Collection and dispatch of diagnostics.
#include "ir/Diagnostics.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace mdl::ir {

const char *severityName(Severity s) {
  switch (s) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "error";
}

std::string diagnosticJson(const Diagnostic &d) {
  nlohmann::json j;
  j["code"] = d.code;
  j["severity"] = severityName(d.severity);
  j["message"] = d.message;
  j["file"] = fileName(d.loc.file);
  j["line"] = d.loc.line;
  j["column"] = d.loc.col;
  j["end_column"] = d.loc.col + std::max<uint32_t>(d.loc.len, 1);
  nlohmann::json notes = nlohmann::json::array();
  for (const DiagNote &n : d.notes) {
    nlohmann::json jn;
    jn["message"] = n.message;
    if (n.loc.valid()) {
      jn["file"] = fileName(n.loc.file);
      jn["line"] = n.loc.line;
      jn["column"] = n.loc.col;
    }
    notes.push_back(std::move(jn));
  }
  j["notes"] = std::move(notes);
  // Invalid UTF-8 (from a file name or the program's text) is replaced,
  // never an exception.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string diagnosticLine(const Diagnostic &d) {
  std::string out;
  if (d.loc.valid())
    out += d.loc.str() + ": ";
  else if (d.loc.file)
    out += fileName(d.loc.file) + ": ";
  out += std::string(severityName(d.severity)) + "[" + d.code + "]: " + d.message + "\n";
  for (const DiagNote &n : d.notes)
    out += (n.loc.valid() ? n.loc.str() + ": " : std::string()) + "note: " + n.message + "\n";
  return out;
}

Diagnostic &DiagnosticEngine::report(std::string code, Severity sev,
                                     Location loc, std::string message) {
  flush();
  pending_ = std::make_unique<Diagnostic>();
  pending_->code = std::move(code);
  pending_->severity = sev;
  pending_->loc = loc;
  pending_->message = std::move(message);
  if (sev == Severity::Error)
    ++errors_;
  return *pending_;
}

void DiagnosticEngine::flush() {
  if (!pending_)
    return;
  std::unique_ptr<Diagnostic> d = std::move(pending_);
  for (DiagnosticHandler *h : handlers_)
    h->handle(*d);
  delivered_.push_back(std::move(*d));
}

void DiagnosticEngine::removeHandler(DiagnosticHandler *h) {
  flush();
  handlers_.erase(std::remove(handlers_.begin(), handlers_.end(), h),
                  handlers_.end());
}

void DiagnosticEngine::reset() {
  flush();
  delivered_.clear();
  errors_ = 0;
}

} // namespace mdl::ir
