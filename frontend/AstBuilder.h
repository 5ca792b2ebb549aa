// Private interface between the parser driver (Parser.cpp) and the ANTLR
// half of the parser (AntlrDriver.cpp and its neighbours). Nothing here names an ANTLR type:
// the error log, the layout rules, literal values and the literal packer are
// plain C++, defined in Parser.cpp, so that they can be read without the
// generated code.
#pragma once

#include "frontend/AST.h"
#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  bool hasErrorOn(uint32_t line) const { return byLine_.count(line) != 0; }
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
  Other,       // if, for, while, `...`
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
///    newline or `;` (runs collapse). The caller also drops a newline that
///    is followed by `else`, `{`, `carry` or `->`, which never start a
///    statement.
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
  /// The chunk index of the innermost open bracket, -1 if none, or
  /// kOpenedEarlier.
  int32_t innermostOpen() const {
    return levels_.empty() ? -1 : levels_.back().opener;
  }
  /// Marks the open brackets as belonging to an earlier piece of the input
  /// (a large function is parsed in pieces; see AntlrDriver.cpp).
  void detachOpeners() {
    for (Level &l : levels_)
      l.opener = kOpenedEarlier;
  }
  static constexpr int32_t kOpenedEarlier = -2;
  /// Whether exactly one bracket is open and it is a `{`.
  bool insideOneBrace() const {
    return overflow_ == 0 && levels_.size() == 1 &&
           levels_[0].kind == TokenRole::OpenBrace;
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

// --- Literals (Parser.cpp) ---------------------------------------------------

/// Decimal digits to a value; nullopt above 2^64 - 1.
std::optional<uint64_t> parseDigits(std::string_view s);
/// A float literal's value; false if it is too large for f64 (a literal too
/// small for it becomes 0).
bool parseFloat(std::string_view s, double &out);
/// The value of a string literal written with its quotes; `badAt` receives
/// the offset of the first unknown escape in `quoted`, or npos.
std::string unescape(std::string_view quoted, size_t *badAt = nullptr);
/// An IntLit or FloatLit; `ok` is false if the value does not fit.
ExprPtr numberLit(bool isInt, std::string_view text, ir::Location loc,
                  bool &ok);
/// Whether `text` is 9223372036854775808, which only fits negated.
bool isMinInt64(std::string_view text);
std::string intOverflowMessage(std::string_view text);
/// The location at `line`/`col` of bytes [begin, end) of `buf`, its length
/// clipped to the first line (and at least 1).
ir::Location rangeLocation(const SourceBuffer &buf, size_t line, size_t col,
                           size_t begin, size_t end);

// --- Large literals (Parser.cpp) ---------------------------------------------

/// A token as LiteralPacker sees it.
struct PackToken {
  enum class Kind : uint8_t {
    Open,
    Close,
    Comma,
    Minus,
    Int,
    Float,
    Newline,
    Other
  };
  Kind kind;
  size_t start; // byte offset
  uint32_t len, line, col;
};

/// Folds a tensor literal made only of numbers (optionally negated), at
/// least kMinTokens tokens long, into one token whose AST it builds on the
/// way: a million-element constant then costs no parse-tree nodes. The AST
/// is the one the parser would give. Anything else inside the brackets (a
/// name, an operator, deep nesting, a number that does not fit) makes the
/// packer give its tokens back to the normal path.
class LiteralPacker {
public:
  static constexpr size_t kMinTokens = 256;
  static constexpr size_t kMaxRank = 32;
  enum class Step {
    More,          // the token belongs to the literal
    Packed,        // the literal is complete: takeLiteral()
    GiveBack,      // replay takeRecords(); the token is among them
    GiveBackBefore // replay takeRecords(), then handle the token
  };

  explicit LiteralPacker(const SourceBuffer &buf) : buf_(buf) {}
  bool active() const { return !records_.empty(); }
  /// Whether a newline came after the last recorded token.
  bool endedWithNewline() const { return newline_; }
  /// Starts at a `[` in operand position.
  void start(const PackToken &open);
  Step add(const PackToken &t);
  ExprPtr takeLiteral();
  std::vector<PackToken> takeRecords();
  const PackToken &first() const { return records_.front(); }
  const PackToken &last() const { return records_.back(); }

private:
  enum class State { ExpectElement, AfterMinus, AfterElement };
  ir::Location span(const PackToken &a, const PackToken &b) const {
    return rangeLocation(buf_, a.line, a.col, a.start, b.start + b.len);
  }
  std::string_view text(const PackToken &t) const {
    return std::string_view(buf_.text).substr(t.start, t.len);
  }
  Step addNumber();
  Step closeList();

  const SourceBuffer &buf_;
  std::vector<PackToken> records_;
  std::vector<std::pair<std::unique_ptr<TensorLit>, size_t>> stack_;
  ExprPtr done_;
  ptrdiff_t minus_ = -1; // record of a pending unary minus
  State state_ = State::ExpectElement;
  bool newline_ = false;
};

/// Lexes and parses `buf` with the ANTLR grammar and builds the AST.
/// Reports syntax errors to `log`; the result is meaningful only if the log
/// stayed empty. May throw (the caller catches); needs a deep stack.
/// `statements`: the buffer is a run of statements (see parseStatements).
std::unique_ptr<SourceFile> parseWithAntlr(const SourceBuffer &buf,
                                           SyntaxErrorLog &log, bool statements = false);

/// `'x'` for a printable character, else `U+XXXX`; decodes the UTF-8
/// sequence at `offset` of `text`.
std::string describeChar(const std::string &text, size_t offset);

} // namespace mdl::frontend::detail
