// The character-level cursor under the HLO reader: whitespace and comment
// skipping with line counting, names, integers, and the balanced scanning
// that captures an attribute value as raw text.
//
// HLO text has no reserved tokens beyond punctuation, so the reader works on
// characters rather than a token stream: `f32[2]{1,0}`, `b01f_01io->b01f`,
// `%get-tuple-element.1` and `0_0x1_1` are each read by the rule that
// expects them. Every read is bounds-checked against the end of the mapped
// file; a malformed input raises HloSyntaxError (caught by the reader and
// reported as E0602), never a read past the end.
#pragma once

#include "frontend/hlo/HloModule.h"

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace mdl::frontend::hlo {

/// Malformed text at a position (E0602). Internal to the reader.
struct HloSyntaxError : std::exception {
  HloPos pos;
  std::string message;
  HloSyntaxError(HloPos p, std::string m) : pos(p), message(std::move(m)) {}
  const char *what() const noexcept override { return message.c_str(); }
};

/// Nesting deeper than this (tuples, braces, literals) is rejected: it bounds
/// the reader's recursion whatever the input.
constexpr int kMaxNesting = 256;

class Cursor {
public:
  Cursor(const char *begin, const char *end)
      : begin_(begin), p_(begin), end_(end), lineStart_(begin) {}

  /// Skips whitespace, `//` line comments and `/* */` block comments.
  void skipSpace();
  /// Skips spaces and tabs only (not newlines, not comments).
  void skipBlanks() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r'))
      ++p_;
  }
  bool atEnd() {
    skipSpace();
    return p_ >= end_;
  }
  /// The next character after skipSpace(), or 0 at the end.
  char peek() {
    skipSpace();
    return p_ < end_ ? *p_ : 0;
  }
  /// The character at the cursor without skipping anything, or 0.
  char here() const { return p_ < end_ ? *p_ : 0; }
  char at(size_t k) const { return p_ + k < end_ ? p_[k] : 0; }
  void advance(size_t n = 1) { p_ = p_ + n <= end_ ? p_ + n : end_; }
  bool accept(char c) {
    if (peek() != c)
      return false;
    ++p_;
    return true;
  }
  void expect(char c, const std::string &context);
  /// Consumes `->` after whitespace.
  bool acceptArrow();
  /// Reads a name: an optional `%`, then letters, digits, `_`, `.`, `-`.
  /// Returns an empty view when there is none.
  std::string_view name();
  /// A name without the `%` prefix.
  static std::string_view bare(std::string_view n) {
    return !n.empty() && n[0] == '%' ? n.substr(1) : n;
  }
  /// Reads a (possibly negative) decimal integer.
  int64_t integer(const char *context);
  /// Reads a double-quoted string (escapes kept as written).
  std::string_view quoted();
  /// Captures an attribute value as raw text: a balanced run of brackets,
  /// strings and plain characters up to a top-level `,`, whitespace or
  /// closing bracket (a value may continue after blanks with `{` or `[`).
  std::string_view rawValue();
  /// Skips a balanced `(...)`, `{...}` or `[...]` starting at the cursor.
  void skipBalanced();

  HloPos pos() const {
    return HloPos{line_, uint32_t(p_ - lineStart_) + 1};
  }
  [[noreturn]] void fail(const std::string &msg) const { throw HloSyntaxError(pos(), msg); }
  [[noreturn]] static void failAt(HloPos p, const std::string &msg) {
    throw HloSyntaxError(p, msg);
  }
  /// Describes the next character for messages: `'x'` or "end of file".
  std::string found();

  const char *ptr() const { return p_; }
  const char *end() const { return end_; }
  const char *begin() const { return begin_; }
  size_t offset() const { return size_t(p_ - begin_); }
  /// Moves to `q` (which must lie between the cursor and the end) when the
  /// skipped bytes hold no newline; the literal scanner uses it.
  void jumpTo(const char *q) { p_ = q; }
  /// Records a newline at `q` (for scanners that walk bytes themselves).
  void newlineAt(const char *q) {
    ++line_;
    lineStart_ = q + 1;
  }

private:
  void skipString(char quote);
  void skipBlockComment();

  const char *begin_;
  const char *p_;
  const char *end_;
  const char *lineStart_;
  uint32_t line_ = 1;
};

/// True for characters that may appear in an HLO name.
inline bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

} // namespace mdl::frontend::hlo
