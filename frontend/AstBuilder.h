// Private interface between the parser driver (Parser.cpp) and the ANTLR
// half of the parser (AstBuilder.cpp). Nothing here names an ANTLR type:
// the layout rules and the error log are plain C++ so that they can be read
// (and tested through parseSource) without the generated code.
#pragma once

#include "frontend/AST.h"
#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mdl::frontend::detail {

/// Which stage found a syntax error. When two errors fall on one line only
/// the one from the earliest stage is kept: a parse error after a stray
/// character is usually a consequence of it.
enum class ErrorSource : uint8_t { Encoding, Lexer, Parser };

/// The syntax errors of one file: at most one per line and at most
/// kMaxSyntaxErrors in all, emitted in source order as E0001.
class SyntaxErrorLog {
public:
  void add(ErrorSource src, ir::Location loc, std::string message,
           std::vector<ir::DiagNote> notes = {});
  /// True once the log holds the maximum: the caller may stop.
  bool full() const;
  bool empty() const { return byLine_.empty(); }
  /// Records that reading stopped early because the log was full.
  void markStopped() { truncated_ = true; }
  /// Delivers the errors to `diags`, first line first.
  void emit(ir::DiagnosticEngine &diags) const;

private:
  struct Entry {
    ErrorSource src;
    ir::Diagnostic diag;
  };
  std::map<uint32_t, Entry> byLine_;
  bool truncated_ = false;
};

/// What the layout rules need to know about a token.
enum class TokenRole : uint8_t {
  Other,       // if, for, while, else-less keywords, `...`
  Operand,     // a name, a literal, an element type
  ClauseStart, // let return yield carry in `:` `..`: an expression starts
  OpenParen,
  OpenBracket,
  OpenBrace,
  CloseParen,
  CloseBracket,
  CloseBrace,
  BinaryOp,     // + * / % @ == != < <= > >= && ||
  Minus,        // binary after an operand, else unary
  Not,          // unary
  On,           // postfix placement after an operand, else `on DEV {`
  Continuation, // , = ->
  Semicolon,
  Newline,
  Else,
  ItemKeyword, // import device param const fn
};

/// The layout rules of LANGUAGE.md, applied token by token:
///  - a newline ends a statement except inside `()` or `[]` (a `{}` nested
///    in parentheses starts a statement context again), after a binary
///    operator, `on`, `!`, a comma, `=`, `->` or `{`, and after another
///    newline or `;` (runs collapse). The caller drops a newline that is
///    followed by `else` or `{`.
///  - the nesting depth is the number of open brackets plus, at each level,
///    the unary operators and the binary operators, postfix indexings and
///    `else`s of the current chain: a bound on the depth of the tree the
///    parser will build.
class Layout {
public:
  /// Forgets open brackets and counters (a new top-level item starts).
  void reset();
  /// Whether a newline read now may end a statement.
  bool newlineEndsStatement() const;
  /// Accounts for a token passed to the parser at `index` of its chunk;
  /// returns the nesting depth after it.
  int push(TokenRole role, int32_t index);
  /// The chunk index of the innermost open bracket, or -1.
  int32_t innermostOpen() const {
    return levels_.empty() ? -1 : levels_.back().opener;
  }

private:
  struct Level {
    int32_t opener;
    TokenRole kind; // OpenParen, OpenBracket or OpenBrace
    int base;       // depth of the bracket itself
    int savedBinary;
  };
  int depth() const;
  void close(TokenRole closer);
  static bool isOperandEnd(TokenRole r);

  std::vector<Level> levels_;
  int overflow_ = 0; // brackets opened beyond the stack cap
  int binary_ = 0;   // binary operators in the current chain
  int unary_ = 0;    // unary operators before the next operand
  TokenRole prev_ = TokenRole::Newline;
};

/// Lexes and parses `buf` with the ANTLR grammar and builds the AST.
/// Reports syntax errors to `log`; the result is meaningful only if the log
/// stayed empty. May throw (the caller catches); needs a deep stack.
std::unique_ptr<SourceFile> parseWithAntlr(const SourceBuffer &buf,
                                           SyntaxErrorLog &log);

/// `'x'` for a printable character, else `U+XXXX`; decodes the UTF-8
/// sequence at `offset` of `text`.
std::string describeChar(const std::string &text, size_t offset);

} // namespace mdl::frontend::detail
