// Collection and dispatch of diagnostics.
#include "ir/Diagnostics.h"

#include <algorithm>

namespace mdl::ir {

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
