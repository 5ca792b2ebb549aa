// The parser driver: checks the bytes, runs the ANTLR parse on a thread with
// a deep stack, and turns everything that can go wrong into E0001
// diagnostics. Also holds the layout rules (which newlines end statements,
// how deep the input nests) and the error log, which need no ANTLR.
//
// Order of work in parseSource:
//   1. reject sources above kMaxSourceBytes;
//   2. validate UTF-8 (an invalid byte is reported where it is, and parsing
//      goes on: the lexer reads bytes, so it cannot fail on them);
//   3. lex, apply the layout rules, parse and build the AST (AntlrDriver.cpp)
//      on a thread with a 512 MiB stack, catching every exception;
//   4. deliver the errors, at most one per line, in source order.
#include "frontend/Parser.h"
#include "frontend/AstBuilder.h"

#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <new>

namespace mdl::frontend {
namespace detail {

// --- SyntaxErrorLog ----------------------------------------------------------

void SyntaxErrorLog::add(ErrorSource src, ir::Location loc, std::string message,
                         std::vector<ir::DiagNote> notes) {
  auto it = byLine_.find(loc.line);
  if (it != byLine_.end()) {
    Entry &old = it->second;
    if (src < old.src || (src == old.src && loc.col < old.diag.loc.col)) {
      old.src = src;
      old.diag.loc = loc;
      old.diag.message = std::move(message);
      old.diag.notes = std::move(notes);
    }
    return;
  }
  if (byLine_.size() >= static_cast<size_t>(kMaxSyntaxErrors)) {
    truncated_ = true;
    if (loc.line > byLine_.rbegin()->first)
      return;
    byLine_.erase(std::prev(byLine_.end()));
  }
  Entry e{src, {}};
  e.diag.code = "E0001";
  e.diag.loc = loc;
  e.diag.message = std::move(message);
  e.diag.notes = std::move(notes);
  byLine_.emplace(loc.line, std::move(e));
}

bool SyntaxErrorLog::full() const {
  return byLine_.size() >= static_cast<size_t>(kMaxSyntaxErrors);
}

void SyntaxErrorLog::emit(ir::DiagnosticEngine &diags) const {
  size_t i = 0;
  for (const auto &[line, e] : byLine_) {
    ir::Diagnostic &d = diags.error("E0001", e.diag.loc, e.diag.message);
    d.notes = e.diag.notes;
    if (truncated_ && ++i == byLine_.size())
      d.notes.push_back({{},
                         "too many syntax errors; stopping after " +
                             std::to_string(kMaxSyntaxErrors)});
  }
  diags.flush();
}

// --- Layout ------------------------------------------------------------------

// Deeper brackets are only counted: the input is rejected anyway.
constexpr size_t kLevelStackCap = 4 * kMaxNesting;

void Layout::reset() {
  levels_.clear();
  overflow_ = binary_ = unary_ = 0;
  prev_ = TokenRole::Newline;
}

bool Layout::isOperandEnd(TokenRole r) {
  return r == TokenRole::Operand || r == TokenRole::CloseParen ||
         r == TokenRole::CloseBracket || r == TokenRole::CloseBrace;
}

int Layout::depth() const {
  int base = levels_.empty() ? 0 : levels_.back().base;
  return base + overflow_ + binary_ + unary_;
}

bool Layout::newlineEndsStatement() const {
  if (overflow_ > 0)
    return false;
  if (!levels_.empty() && levels_.back().kind != TokenRole::OpenBrace)
    return false;
  switch (prev_) {
  case TokenRole::BinaryOp:
  case TokenRole::Minus:
  case TokenRole::Not:
  case TokenRole::On:
  case TokenRole::Continuation:
  case TokenRole::Semicolon:
  case TokenRole::Newline:
  case TokenRole::OpenBrace:
  case TokenRole::Else:
    return false;
  default:
    return true;
  }
}

void Layout::close(TokenRole closer) {
  if (overflow_ > 0) {
    --overflow_;
    binary_ = 0;
    return;
  }
  TokenRole want = closer == TokenRole::CloseParen     ? TokenRole::OpenParen
                   : closer == TokenRole::CloseBracket ? TokenRole::OpenBracket
                                                       : TokenRole::OpenBrace;
  // A `}` closes its `{` and every bracket left open inside it; a `)` or
  // `]` never reaches past an enclosing `{`. An unmatched closer changes
  // nothing (the parser reports it).
  for (size_t i = levels_.size(); i-- > 0;) {
    if (levels_[i].kind == want) {
      binary_ = levels_[i].savedBinary;
      levels_.resize(i);
      return;
    }
    if (levels_[i].kind == TokenRole::OpenBrace)
      return;
  }
}

int Layout::push(TokenRole role, int32_t index) {
  switch (role) {
  case TokenRole::OpenParen:
  case TokenRole::OpenBracket:
  case TokenRole::OpenBrace: {
    // `x[i][j]...` and `f(x)[i]` nest like a chain of operators.
    if (role == TokenRole::OpenBracket && isOperandEnd(prev_))
      ++binary_;
    int d = depth() + 1;
    if (levels_.size() < kLevelStackCap && overflow_ == 0)
      levels_.push_back({index, role, d, binary_});
    else
      ++overflow_;
    binary_ = unary_ = 0;
    prev_ = role;
    return d;
  }
  case TokenRole::CloseParen:
  case TokenRole::CloseBracket:
  case TokenRole::CloseBrace:
    close(role);
    unary_ = 0;
    break;
  case TokenRole::Minus:
  case TokenRole::On:
    if (isOperandEnd(prev_)) {
      ++binary_;
      unary_ = 0;
    } else if (role == TokenRole::Minus) {
      ++unary_;
    } else {
      binary_ = unary_ = 0; // `on DEV {` starts a statement
    }
    break;
  case TokenRole::Not:
    ++unary_;
    break;
  case TokenRole::BinaryOp:
    ++binary_;
    unary_ = 0;
    break;
  case TokenRole::Operand:
    unary_ = 0;
    break;
  case TokenRole::ClauseStart:
  case TokenRole::Continuation:
  case TokenRole::Semicolon:
  case TokenRole::Newline:
  case TokenRole::ItemKeyword:
    binary_ = unary_ = 0;
    break;
  case TokenRole::Else:
    ++binary_; // an `else if` chain nests one level per `else`
    break;
  case TokenRole::Other:
    break;
  }
  prev_ = role;
  return depth();
}

// --- Literals ----------------------------------------------------------------

constexpr uint64_t kInt64Max = 9223372036854775807ull;
constexpr const char *kInt64MaxText = "9223372036854775807";

std::optional<uint64_t> parseDigits(std::string_view s) {
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    return std::nullopt;
  return v;
}

bool parseFloat(std::string_view s, double &out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec == std::errc())
    return true;
  // Out of range: overflow or underflow? Find the decimal exponent of the
  // first significant digit.
  long exp10 = 0, firstDigit = 0;
  bool seen = false, afterPoint = false;
  long pos = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] != 'e' && s[i] != 'E'; ++i) {
    if (s[i] == '.') {
      afterPoint = true;
      continue;
    }
    if (!seen && s[i] != '0') {
      seen = true;
      firstDigit = afterPoint ? -(pos + 1) : 0;
    }
    if (seen && !afterPoint)
      ++firstDigit;
    if (afterPoint)
      ++pos;
  }
  if (i < s.size()) {
    std::string_view e = s.substr(i + 1);
    bool neg = !e.empty() && e[0] == '-';
    if (!e.empty() && (e[0] == '-' || e[0] == '+'))
      e.remove_prefix(1);
    long v = 0;
    for (char c : e)
      v = std::min(v * 10 + (c - '0'), 100000L);
    exp10 = neg ? -v : v;
  }
  out = 0;
  return !seen || firstDigit + exp10 <= 0;
}

std::string unescape(std::string_view quoted, size_t *badAt) {
  if (badAt)
    *badAt = std::string_view::npos;
  std::string out;
  if (quoted.size() < 2)
    return out;
  out.reserve(quoted.size() - 2);
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c != '\\' || i + 2 >= quoted.size()) {
      out += c;
      continue;
    }
    char n = quoted[++i];
    if (n == 'n')
      out += '\n';
    else if (n == '"' || n == '\\')
      out += n;
    else {
      if (badAt && *badAt == std::string_view::npos)
        *badAt = i - 1;
      out += '\\';
      out += n;
    }
  }
  return out;
}

ExprPtr numberLit(bool isInt, std::string_view text, ir::Location loc,
                  bool &ok) {
  if (isInt) {
    auto v = parseDigits(text);
    ok = v && *v <= kInt64Max;
    return std::make_unique<IntLit>(loc, ok ? static_cast<int64_t>(*v) : 0);
  }
  double d = 0;
  ok = parseFloat(text, d);
  return std::make_unique<FloatLit>(loc, d);
}

bool isMinInt64(std::string_view text) {
  auto v = parseDigits(text);
  return v && *v == kInt64Max + 1;
}

std::string intOverflowMessage(std::string_view text) {
  return "integer literal " + std::string(text) +
         " does not fit in i64 (the largest is " + kInt64MaxText + ")";
}

ir::Location rangeLocation(const SourceBuffer &buf, size_t line, size_t col,
                           size_t begin, size_t end) {
  size_t len = 1;
  if (end > begin && begin < buf.text.size()) {
    end = std::min(end, buf.text.size());
    const char *s = buf.text.data() + begin;
    const void *nl = std::memchr(s, '\n', end - begin);
    len = nl ? static_cast<const char *>(nl) - s : end - begin;
    if (nl && len > 0 && s[len - 1] == '\r')
      --len;
    len = std::max<size_t>(len, 1);
  }
  return {buf.fileId, static_cast<uint32_t>(line), static_cast<uint32_t>(col),
          static_cast<uint32_t>(len)};
}

// --- LiteralPacker -----------------------------------------------------------

void LiteralPacker::start(const PackToken &open) {
  records_.clear();
  stack_.clear();
  done_.reset();
  minus_ = -1;
  state_ = State::ExpectElement;
  add(open);
}

LiteralPacker::Step LiteralPacker::add(const PackToken &t) {
  using Kind = PackToken::Kind;
  if (t.kind == Kind::Newline) {
    newline_ = true;
    return Step::More;
  }
  newline_ = false;
  bool number = t.kind == Kind::Int || t.kind == Kind::Float;
  switch (state_) {
  case State::ExpectElement:
    if (t.kind == Kind::Open && stack_.size() < kMaxRank) {
      records_.push_back(t);
      stack_.push_back(
          {std::make_unique<TensorLit>(ir::Location()), records_.size() - 1});
      return Step::More;
    }
    if (t.kind == Kind::Close && !stack_.empty()) { // `[]` or `[1, 2,]`
      records_.push_back(t);
      return closeList();
    }
    if (t.kind == Kind::Minus) {
      records_.push_back(t);
      minus_ = static_cast<ptrdiff_t>(records_.size()) - 1;
      state_ = State::AfterMinus;
      return Step::More;
    }
    if (number) {
      records_.push_back(t);
      return addNumber();
    }
    break;
  case State::AfterMinus:
    if (number) {
      records_.push_back(t);
      return addNumber();
    }
    break;
  case State::AfterElement:
    if (t.kind == Kind::Comma) {
      records_.push_back(t);
      state_ = State::ExpectElement;
      return Step::More;
    }
    if (t.kind == Kind::Close) {
      records_.push_back(t);
      return closeList();
    }
    break;
  }
  return Step::GiveBackBefore;
}

LiteralPacker::Step LiteralPacker::addNumber() {
  const PackToken &n = records_.back();
  bool isInt = n.kind == PackToken::Kind::Int;
  bool ok = true;
  ExprPtr e;
  if (minus_ >= 0) {
    // The parser's tree for `-x`: a unary minus, or for the one integer
    // that only fits negated, the literal itself.
    ir::Location whole = span(records_[static_cast<size_t>(minus_)], n);
    if (isInt && isMinInt64(text(n))) {
      e = std::make_unique<IntLit>(whole, INT64_MIN);
    } else {
      ExprPtr lit = numberLit(isInt, text(n), span(n, n), ok);
      e = std::make_unique<UnaryExpr>(whole, UnaryOp::Neg, std::move(lit));
    }
    minus_ = -1;
  } else {
    e = numberLit(isInt, text(n), span(n, n), ok);
  }
  if (!ok)
    return Step::GiveBack; // the normal path reports it
  stack_.back().first->elements.push_back(std::move(e));
  state_ = State::AfterElement;
  return Step::More;
}

LiteralPacker::Step LiteralPacker::closeList() {
  auto [lit, open] = std::move(stack_.back());
  stack_.pop_back();
  lit->loc = span(records_[open], records_.back());
  state_ = State::AfterElement;
  if (!stack_.empty()) {
    stack_.back().first->elements.push_back(std::move(lit));
    return Step::More;
  }
  if (records_.size() < kMinTokens)
    return Step::GiveBack; // small: the normal path is as good
  done_ = std::move(lit);
  return Step::Packed;
}

ExprPtr LiteralPacker::takeLiteral() {
  records_.clear();
  return std::move(done_);
}

std::vector<PackToken> LiteralPacker::takeRecords() {
  stack_.clear();
  done_.reset();
  std::vector<PackToken> out;
  out.swap(records_);
  return out;
}

// --- Characters --------------------------------------------------------------

namespace {

/// Length of the valid UTF-8 sequence at `p`, or 0 if the byte there does
/// not start one.
size_t utf8SequenceLength(const unsigned char *p, const unsigned char *end) {
  unsigned char c = p[0];
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0; // overlong
    if (c == 0xED)
      hi = 0x9F; // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90; // overlong
    if (c == 0xF4)
      hi = 0x8F; // above U+10FFFF
  } else {
    return 0;
  }
  if (static_cast<size_t>(end - p) < n || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < n; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
  return n;
}

char hexDigit(unsigned v) { return "0123456789ABCDEF"[v & 15]; }

std::string hexByte(unsigned char c) {
  return std::string("0x") + hexDigit(c >> 4) + hexDigit(c);
}

/// Reports each invalid byte (the first of a bad sequence) where it is.
void validateUtf8(const SourceBuffer &buf, SyntaxErrorLog &log) {
  const auto *begin = reinterpret_cast<const unsigned char *>(buf.text.data());
  const auto *end = begin + buf.text.size();
  uint32_t line = 1;
  const unsigned char *lineStart = begin;
  for (const unsigned char *p = begin; p < end;) {
    unsigned char c = *p;
    if (c < 0x80) {
      if (c == '\n') {
        ++line;
        lineStart = p + 1;
      }
      ++p;
      continue;
    }
    size_t n = utf8SequenceLength(p, end);
    if (n == 0) {
      uint32_t col = static_cast<uint32_t>(p - lineStart) + 1;
      log.add(ErrorSource::Encoding, {buf.fileId, line, col, 1},
              "invalid UTF-8 byte " + hexByte(c));
      if (log.full())
        return;
      n = 1;
    }
    p += n;
  }
}

} // namespace

std::string describeChar(const std::string &text, size_t offset) {
  const auto *p = reinterpret_cast<const unsigned char *>(text.data()) + offset;
  const auto *end =
      reinterpret_cast<const unsigned char *>(text.data()) + text.size();
  if (p >= end)
    return "end of file";
  if (*p >= 0x21 && *p <= 0x7E)
    return std::string("'") + static_cast<char>(*p) + "'";
  size_t n = utf8SequenceLength(p, end);
  if (n == 0)
    return "byte " + hexByte(*p);
  uint32_t cp = n == 1   ? p[0]
                : n == 2 ? (p[0] & 0x1Fu)
                : n == 3 ? (p[0] & 0x0Fu)
                         : (p[0] & 0x07u);
  for (size_t i = 1; i < n; ++i)
    cp = (cp << 6) | (p[i] & 0x3Fu);
  char hex[16];
  std::snprintf(hex, sizeof hex, "U+%04X", cp);
  if (n == 1) // a control character or a space
    return hex;
  return "'" + text.substr(offset, n) + "' (" + hex + ")";
}

} // namespace detail

// --- parseSource -------------------------------------------------------------

namespace {

/// 512 MiB: the generated parser recurses a few frames per nesting level,
/// and the stack is only committed as it is touched.
constexpr size_t kParseStackBytes = size_t(512) << 20;

struct ParseJob {
  const SourceBuffer *buf;
  bool statements = false;
  detail::SyntaxErrorLog log;
  std::unique_ptr<SourceFile> result;
};

void runJob(ParseJob &job) noexcept {
  ir::Location start{job.buf->fileId, 1, 1, 1};
  try {
    job.result = detail::parseWithAntlr(*job.buf, job.log, job.statements);
  } catch (const std::bad_alloc &) {
    job.log.add(detail::ErrorSource::Encoding, start,
                "out of memory while parsing this file");
  } catch (const std::exception &e) {
    job.log.add(detail::ErrorSource::Encoding, start,
                std::string("internal parser error: ") + e.what());
  } catch (...) {
    job.log.add(detail::ErrorSource::Encoding, start, "internal parser error");
  }
  // A partial or rejected tree may be deep: free it on this stack.
  if (!job.log.empty())
    job.result.reset();
}

void *runJobThunk(void *arg) {
  runJob(*static_cast<ParseJob *>(arg));
  return nullptr;
}

/// Runs the job on a thread with a deep stack, or here if none can start.
void runWithDeepStack(ParseJob &job) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) == 0) {
    pthread_t thread;
    bool started = pthread_attr_setstacksize(&attr, kParseStackBytes) == 0 &&
                   pthread_create(&thread, &attr, runJobThunk, &job) == 0;
    pthread_attr_destroy(&attr);
    if (started) {
      pthread_join(thread, nullptr);
      return;
    }
  }
  runJob(job);
}

} // namespace

namespace {
std::unique_ptr<SourceFile> parse(const SourceBuffer &buf, ir::DiagnosticEngine &diags,
                                  bool statements) {
  if (buf.text.size() > kMaxSourceBytes) {
    diags.error("E0001", {buf.fileId, 1, 1, 1},
                "source file too large (" + std::to_string(buf.text.size()) +
                    " bytes; the limit is " + std::to_string(kMaxSourceBytes) +
                    ")");
    diags.flush();
    return nullptr;
  }
  ParseJob job;
  job.buf = &buf;
  job.statements = statements;
  detail::validateUtf8(buf, job.log);
  runWithDeepStack(job);
  job.log.emit(diags);
  if (!job.log.empty())
    return nullptr;
  return std::move(job.result);
}
} // namespace

std::unique_ptr<SourceFile> parseSource(const SourceBuffer &buf,
                                        ir::DiagnosticEngine &diags) {
  return parse(buf, diags, false);
}

std::unique_ptr<FnItem> parseStatements(const SourceBuffer &buf,
                                        ir::DiagnosticEngine &diags) {
  std::unique_ptr<SourceFile> file = parse(buf, diags, true);
  if (!file || file->items.size() != 1 || file->items[0]->kind != ItemKind::Fn)
    return nullptr;
  return std::unique_ptr<FnItem>(static_cast<FnItem *>(file->items[0].release()));
}

} // namespace mdl::frontend
