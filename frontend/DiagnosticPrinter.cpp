// Text and JSON rendering of diagnostics.
#include "frontend/DiagnosticPrinter.h"

#include <algorithm>
#include <iomanip>

namespace mdl::frontend {

void TextDiagnosticPrinter::printSnippet(const ir::Location &loc) {
  const SourceBuffer *buf = sm_.get(loc.file);
  if (!buf || !loc.valid() || buf->lineStarts.empty())
    return;
  uint32_t line = std::min<uint32_t>(loc.line, uint32_t(buf->lineStarts.size()));
  std::string_view text = buf->line(line);
  // Long lines (generated sources) are cut so the caret stays readable.
  const size_t maxWidth = 160;
  size_t col = loc.line == line ? loc.col : text.size() + 1;
  size_t from = 0;
  if (text.size() > maxWidth && col > maxWidth / 2)
    from = std::min(col - maxWidth / 2, text.size());
  std::string_view shown = text.substr(from, maxWidth);
  std::string num = std::to_string(line);
  std::string pad(std::max<size_t>(num.size(), 4), ' ');
  os_ << std::setw(int(pad.size())) << num << " | " << shown << "\n";
  os_ << pad << " | ";
  size_t caretAt = col > from ? col - 1 - from : 0;
  for (size_t i = 0; i < caretAt && i < shown.size(); ++i)
    os_ << (shown[i] == '\t' ? '\t' : ' ');
  size_t len = std::max<uint32_t>(loc.len, 1);
  if (loc.line == line)
    len = std::min(len, std::max<size_t>(shown.size() - std::min(caretAt, shown.size()), 1));
  os_ << std::string(len, '^') << "\n";
}

void TextDiagnosticPrinter::handle(const ir::Diagnostic &d) {
  if (d.loc.valid())
    os_ << d.loc.str() << ": ";
  else if (d.loc.file)
    os_ << ir::fileName(d.loc.file) << ": ";
  os_ << ir::severityName(d.severity) << "[" << d.code << "]: " << d.message << "\n";
  printSnippet(d.loc);
  for (const ir::DiagNote &n : d.notes) {
    if (n.loc.valid()) {
      os_ << n.loc.str() << ": note: " << n.message << "\n";
      printSnippet(n.loc);
    } else {
      os_ << "note: " << n.message << "\n";
    }
  }
  os_.flush();
}

void JsonDiagnosticPrinter::handle(const ir::Diagnostic &d) {
  os_ << ir::diagnosticJson(d) << "\n";
  os_.flush();
}

} // namespace mdl::frontend
