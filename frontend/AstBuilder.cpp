// The ANTLR half of the parser: lexing, the token pass, parsing, syntax
// error messages, and the conversion of the parse tree into the AST.
//
// This is the only hand-written file that sees ANTLR types. The token pass
// (Driver) sits between the generated lexer and parser:
//   1. it reads bytes (a custom CharStream, so columns count bytes and no
//      input can make the runtime throw on decoding);
//   2. it reports stray characters, unterminated strings, bad escapes and
//      out-of-range numbers, and drops the stray characters;
//   3. it applies the layout rules (Layout, in Parser.cpp): keeps only the
//      newlines that may end a statement, measures the nesting depth;
//   4. it folds large all-number tensor literals into one PACKED_TENSOR token
//      whose AST is built directly (LiteralPacker, in Parser.cpp);
//   5. it cuts the stream into chunks at item keywords that start a line,
//      and parses each chunk on its own: memory stays bounded by the largest
//      item, and a broken item cannot swallow the next one;
//   6. it cuts a very large function into pieces after statements of its
//      body, so that even one huge function is parsed in bounded memory.
// Each chunk is parsed with SLL prediction and a bail-out strategy first; on
// failure it is parsed again with full LL and ErrorReporter, which words the
// errors. TreeBuilder then converts the tree, quoting each grammar rule
// above its conversion.
#include "frontend/AstBuilder.h"
#include "frontend/Parser.h"

#include "MdlBaseVisitor.h"
#include "MdlLexer.h"
#include "MdlParser.h"
#include "antlr4-runtime.h"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace mdl::frontend::detail {
namespace {

using antlr4::Token;
using grammar::MdlLexer;
using P = grammar::MdlParser;
using ir::Location;

// --- Input -------------------------------------------------------------------

/// The source bytes as ANTLR characters, one per byte: token offsets are
/// byte offsets into SourceBuffer::text and columns count bytes.
class ByteStream : public antlr4::CharStream {
public:
  ByteStream(const std::string &text, std::string name)
      : data_(text), name_(std::move(name)) {}
  void consume() override {
    if (pos_ >= data_.size())
      throw antlr4::IllegalStateException("cannot consume EOF");
    ++pos_;
  }
  size_t LA(ssize_t i) override {
    if (i == 0)
      return 0;
    ssize_t at = static_cast<ssize_t>(pos_) + (i < 0 ? i : i - 1);
    if (at < 0 || static_cast<size_t>(at) >= data_.size())
      return antlr4::IntStream::EOF;
    return static_cast<unsigned char>(data_[static_cast<size_t>(at)]);
  }
  ssize_t mark() override { return -1; }
  void release(ssize_t) override {}
  size_t index() override { return pos_; }
  void seek(size_t index) override { pos_ = std::min(index, data_.size()); }
  size_t size() override { return data_.size(); }
  std::string getSourceName() const override { return name_; }
  std::string getText(const antlr4::misc::Interval &iv) override {
    if (iv.a < 0 || iv.b < iv.a || static_cast<size_t>(iv.a) >= data_.size())
      return {};
    size_t b = std::min(static_cast<size_t>(iv.b), data_.size() - 1);
    return data_.substr(static_cast<size_t>(iv.a), b - iv.a + 1);
  }
  std::string toString() const override { return data_; }

private:
  const std::string &data_;
  std::string name_;
  size_t pos_ = 0;
};

/// Locations and text of tokens, from the source buffer.
class SourceText {
public:
  explicit SourceText(const SourceBuffer &buf) : buf_(buf) {}

  std::string_view text(const Token *t) const {
    size_t s = t->getStartIndex(), e = t->getStopIndex();
    if (t->getType() == Token::EOF || e < s || e >= buf_.text.size())
      return {};
    return std::string_view(buf_.text).substr(s, e - s + 1);
  }
  Location at(size_t line, size_t col, size_t begin, size_t end) const {
    return rangeLocation(buf_, line, col, begin, end);
  }
  Location loc(const Token *t) const {
    return at(t->getLine(), t->getCharPositionInLine() + 1, t->getStartIndex(),
              t->getStopIndex() + 1);
  }
  Location span(const Token *a, const Token *b) const {
    if (!b || b->getStopIndex() < a->getStartIndex() ||
        b->getType() == Token::EOF)
      return loc(a);
    return at(a->getLine(), a->getCharPositionInLine() + 1, a->getStartIndex(),
              b->getStopIndex() + 1);
  }
  Location span(antlr4::ParserRuleContext *c) const {
    return span(c->getStart(), c->getStop());
  }
  uint32_t fileId() const { return buf_.fileId; }
  const SourceBuffer &buffer() const { return buf_; }

private:
  const SourceBuffer &buf_;
};

constexpr uint64_t kInt64Max = 9223372036854775807ull;

// --- Token roles -------------------------------------------------------------

TokenRole roleOf(size_t type) {
  switch (type) {
  case P::ID:
  case P::INT:
  case P::FLOAT:
  case P::STRING:
  case P::UNTERMINATED_STRING:
  case P::TRUE:
  case P::FALSE:
  case P::ELEMTYPE:
  case P::PACKED_TENSOR:
    return TokenRole::Operand;
  case P::LET:
  case P::RETURN:
  case P::YIELD:
  case P::CARRY:
  case P::IN:
  case P::COLON:
  case P::DOTDOT:
    return TokenRole::ClauseStart;
  case P::LPAREN:
    return TokenRole::OpenParen;
  case P::LBRACK:
    return TokenRole::OpenBracket;
  case P::LBRACE:
    return TokenRole::OpenBrace;
  case P::RPAREN:
    return TokenRole::CloseParen;
  case P::RBRACK:
    return TokenRole::CloseBracket;
  case P::RBRACE:
    return TokenRole::CloseBrace;
  case P::PLUS:
  case P::STAR:
  case P::SLASH:
  case P::PERCENT:
  case P::AT:
  case P::EQ:
  case P::NE:
  case P::LT:
  case P::LE:
  case P::GT:
  case P::GE:
  case P::ANDAND:
  case P::OROR:
    return TokenRole::BinaryOp;
  case P::MINUS:
    return TokenRole::Minus;
  case P::NOT:
    return TokenRole::Not;
  case P::ON:
    return TokenRole::On;
  case P::COMMA:
  case P::ASSIGN:
  case P::ARROW:
    return TokenRole::Continuation;
  case P::SEMI:
    return TokenRole::Semicolon;
  case P::NL:
    return TokenRole::Newline;
  case P::ELSE:
    return TokenRole::Else;
  case P::IMPORT:
  case P::DEVICE:
  case P::PARAM:
  case P::CONST:
  case P::FN:
    return TokenRole::ItemKeyword;
  default:
    return TokenRole::Other;
  }
}

bool isOperandEnd(TokenRole r) {
  return r == TokenRole::Operand || r == TokenRole::CloseParen ||
         r == TokenRole::CloseBracket || r == TokenRole::CloseBrace;
}

bool isReservedWord(size_t type) {
  return (type >= P::IMPORT && type <= P::FALSE) || type == P::ELEMTYPE;
}

// --- Chunks ------------------------------------------------------------------

/// One run of items, parsed on its own.
struct Chunk {
  std::vector<std::unique_ptr<Token>> tokens; // what the parser reads
  /// Per token, the index of the innermost open bracket before it (-1 if
  /// none); one more entry for the chunk's EOF.
  std::vector<int32_t> enclosing;
  /// The literal of each PACKED_TENSOR token, by its start offset.
  std::unordered_map<size_t, ExprPtr> packed;
  int32_t count = 0; // tokens seen, stored or not
  /// Why the chunk will not be parsed, if it will not; its tokens are then
  /// no longer kept.
  enum class Rejection { None, TooDeep, TooLarge } rejected = Rejection::None;
  int maxDepth = 0;
  Location rejectLoc;
  size_t stmtStart = 0; // index of the token after the last separator
  Location openNote;    // an open bracket when the chunk grew too large
  // The EOF the parser sees: the end of the file, or the next item.
  Location eofLoc;
  size_t eofOffset = 0;
  std::string eofWhat;
  /// In a later piece of a large function: where its body's `{` is.
  Location outerBrace;
  size_t firstType = 0; // of the chunk's first token

  /// Empties the chunk for the next one, keeping the vectors' storage.
  void reset() {
    tokens.clear();
    enclosing.clear();
    packed.clear();
    count = 0;
    rejected = Rejection::None;
    maxDepth = 0;
    stmtStart = 0;
    firstType = 0;
  }
};

/// Feeds a chunk's tokens to the parser, then an EOF where the chunk ends.
class ChunkTokenSource : public antlr4::TokenSource {
public:
  ChunkTokenSource(Chunk &chunk, ByteStream &stream)
      : chunk_(chunk), stream_(stream) {}
  std::unique_ptr<Token> nextToken() override {
    if (next_ < chunk_.tokens.size())
      return std::move(chunk_.tokens[next_++]);
    auto eof = std::make_unique<antlr4::CommonToken>(
        std::make_pair<antlr4::TokenSource *, antlr4::CharStream *>(this,
                                                                    &stream_),
        Token::EOF, Token::DEFAULT_CHANNEL, chunk_.eofOffset,
        chunk_.eofOffset - 1);
    eof->setLine(chunk_.eofLoc.line);
    eof->setCharPositionInLine(chunk_.eofLoc.col - 1);
    return eof;
  }
  size_t getLine() const override { return chunk_.eofLoc.line; }
  size_t getCharPositionInLine() override { return chunk_.eofLoc.col - 1; }
  antlr4::CharStream *getInputStream() override { return &stream_; }
  std::string getSourceName() override { return stream_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override {
    return antlr4::CommonTokenFactory::DEFAULT.get();
  }

private:
  Chunk &chunk_;
  ByteStream &stream_;
  size_t next_ = 0;
};

/// A token stream whose buffer is sized for the chunk up front (growing it
/// token by token costs more in the allocator than the parse itself).
class ChunkTokenStream : public antlr4::CommonTokenStream {
public:
  ChunkTokenStream(antlr4::TokenSource *source, size_t tokens)
      : CommonTokenStream(source) {
    _tokens.reserve(tokens + 1);
  }
};

// --- Syntax error messages ---------------------------------------------------

std::string joinPhrases(const std::vector<std::string> &words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0)
      out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

std::string clip(std::string_view s) {
  if (s.size() <= 32)
    return std::string(s);
  return std::string(s.substr(0, 29)) + "...";
}

/// Turns ANTLR's recovery points into E0001 diagnostics that say what was
/// expected, in words, and what was found.
class ErrorReporter : public antlr4::DefaultErrorStrategy {
public:
  ErrorReporter(const SourceText &src, const Chunk &chunk,
                antlr4::TokenStream &tokens,
                const antlr4::dfa::Vocabulary &vocab, SyntaxErrorLog &log)
      : src_(src), chunk_(chunk), tokens_(tokens), vocab_(vocab), log_(log) {}
  int errors = 0;

protected:
  void
  reportNoViableAlternative(antlr4::Parser *p,
                            const antlr4::NoViableAltException &e) override {
    Token *t = e.getOffendingToken();
    Token *start = e.getStartToken();
    antlr4::misc::IntervalSet expected;
    if (start && t && start->getTokenIndex() != t->getTokenIndex()) {
      // The decision failed past its first token: what the parser could
      // have accepted there is in the configurations it was left with.
      if (e.getDeadEndConfigs())
        expected = expectedAt(p, *e.getDeadEndConfigs());
    } else {
      expected = p->getExpectedTokens();
    }
    report(t, expected.isEmpty() ? nullptr : &expected);
  }
  void reportInputMismatch(antlr4::Parser *,
                           const antlr4::InputMismatchException &e) override {
    antlr4::misc::IntervalSet expected = e.getExpectedTokens();
    report(e.getOffendingToken(), &expected);
  }
  void
  reportFailedPredicate(antlr4::Parser *,
                        const antlr4::FailedPredicateException &e) override {
    report(e.getOffendingToken(), nullptr);
  }
  void reportUnwantedToken(antlr4::Parser *p) override { reportAtCurrent(p); }
  void reportMissingToken(antlr4::Parser *p) override { reportAtCurrent(p); }

  /// Skips to a token of `set` like the default strategy, but steps over
  /// whole bracketed groups: a `}` that closes a block opened inside the
  /// skipped text does not stop recovery (one error instead of a cascade).
  void consumeUntil(antlr4::Parser *p,
                    const antlr4::misc::IntervalSet &set) override {
    int depth = 0;
    for (size_t tt = p->getInputStream()->LA(1); tt != Token::EOF;
         tt = p->getInputStream()->LA(1)) {
      if (depth == 0 && set.contains(tt))
        return;
      if (tt == P::LPAREN || tt == P::LBRACK || tt == P::LBRACE)
        ++depth;
      else if ((tt == P::RPAREN || tt == P::RBRACK || tt == P::RBRACE) &&
               depth > 0)
        --depth;
      p->consume();
    }
  }

private:
  static antlr4::misc::IntervalSet
  expectedAt(antlr4::Parser *p, const antlr4::atn::ATNConfigSet &configs);
  using Visited = std::set<std::pair<const void *, const void *>>;
  static void
  addExpected(antlr4::Parser *p, antlr4::atn::ATNState *state,
              const std::shared_ptr<antlr4::atn::PredictionContext> &ctx,
              bool fullCtx, antlr4::misc::IntervalSet &out, Visited &visited);

  void reportAtCurrent(antlr4::Parser *p) {
    if (inErrorRecoveryMode(p))
      return;
    beginErrorCondition(p);
    antlr4::misc::IntervalSet expected = getExpectedTokens(p);
    report(p->getCurrentToken(), &expected);
  }

  void report(Token *t, const antlr4::misc::IntervalSet *expected);
  std::vector<std::string> describeExpected(antlr4::misc::IntervalSet set,
                                            Token *found,
                                            std::vector<ir::DiagNote> &notes);
  std::string describeFound(Token *t, bool nameExpected) const;
  Location locOf(Token *t) const {
    return t->getType() == Token::EOF ? chunk_.eofLoc : src_.loc(t);
  }

  const SourceText &src_;
  const Chunk &chunk_;
  antlr4::TokenStream &tokens_;
  const antlr4::dfa::Vocabulary &vocab_;
  SyntaxErrorLog &log_;
};

antlr4::misc::IntervalSet
ErrorReporter::expectedAt(antlr4::Parser *p,
                          const antlr4::atn::ATNConfigSet &configs) {
  antlr4::misc::IntervalSet out;
  Visited visited;
  try {
    for (const auto &c : configs.configs)
      addExpected(p, c->state, c->context, configs.fullCtx, out, visited);
  } catch (const std::exception &) {
    return {}; // a plain "unexpected X" then
  }
  return out;
}

/// The tokens that can come next from `state` in prediction context `ctx`:
/// the state's own next tokens, and where the rule can end, those after
/// each return state on the stack. The bottom of the stack is the end of
/// the input (full-context prediction) or the rule being predicted.
void ErrorReporter::addExpected(
    antlr4::Parser *p, antlr4::atn::ATNState *state,
    const std::shared_ptr<antlr4::atn::PredictionContext> &ctx, bool fullCtx,
    antlr4::misc::IntervalSet &out, Visited &visited) {
  if (!visited.insert({state, ctx.get()}).second)
    return; // the stack is a graph: each (state, context) once
  const antlr4::atn::ATN &atn = p->getATN();
  antlr4::misc::IntervalSet next = atn.nextTokens(state);
  if (!next.contains(Token::EPSILON)) {
    out.addAll(next);
    return;
  }
  next.remove(Token::EPSILON);
  out.addAll(next);
  auto followOuter = [&] {
    if (fullCtx) {
      out.add(Token::EOF);
      return;
    }
    antlr4::ParserRuleContext *outer = p->getContext();
    if (!outer) {
      out.add(Token::EOF);
      return;
    }
    out.addAll(atn.getExpectedTokens(
        atn.ruleToStopState[outer->getRuleIndex()]->stateNumber, outer));
  };
  if (!ctx || ctx->isEmpty()) {
    followOuter();
    return;
  }
  for (size_t i = 0; i < ctx->size(); ++i) {
    size_t ret = ctx->getReturnState(i);
    if (ret == antlr4::atn::PredictionContext::EMPTY_RETURN_STATE)
      followOuter();
    else if (ret < atn.states.size())
      addExpected(p, atn.states[ret], ctx->getParent(i), fullCtx, out, visited);
  }
}

void ErrorReporter::report(Token *t,
                           const antlr4::misc::IntervalSet *expected) {
  ++errors;
  std::vector<ir::DiagNote> notes;
  std::vector<std::string> phrases;
  if (expected)
    phrases = describeExpected(*expected, t, notes);
  // "found 'in' (a reserved word)" only where a plain name was wanted.
  bool nameExpected =
      std::find(phrases.begin(), phrases.end(), "a name") != phrases.end();
  if (t->getType() == P::ASSIGN && expected &&
      expected->contains(size_t(P::NL)))
    notes.push_back({{}, "a name is bound with 'let NAME = VALUE'"});
  std::string found = describeFound(t, nameExpected);
  size_t tt = t->getType();
  if ((tt == P::RPAREN || tt == P::RBRACK || tt == P::RBRACE) &&
      t->getTokenIndex() < chunk_.enclosing.size() &&
      chunk_.enclosing[t->getTokenIndex()] < 0) {
    std::string_view closer = src_.text(t);
    std::string opener = tt == P::RPAREN ? "(" : tt == P::RBRACK ? "[" : "{";
    log_.add(ErrorSource::Parser, locOf(t),
             "unmatched '" + std::string(closer) + "': no '" + opener +
                 "' is open here");
    return;
  }
  std::string msg =
      phrases.empty() ? "unexpected " + found
                      : "expected " + joinPhrases(phrases) + ", found " + found;
  log_.add(ErrorSource::Parser, locOf(t), std::move(msg), std::move(notes));
}

std::string ErrorReporter::describeFound(Token *t, bool nameExpected) const {
  switch (t->getType()) {
  case Token::EOF:
    return chunk_.eofWhat;
  case P::NL:
    return "end of line";
  case P::STRING:
    return "string " + clip(src_.text(t));
  case P::PACKED_TENSOR:
    return "a tensor literal";
  default:
    break;
  }
  std::string s = "'" + clip(src_.text(t)) + "'";
  if (nameExpected && isReservedWord(t->getType()))
    s += " (a reserved word)";
  return s;
}

std::vector<std::string>
ErrorReporter::describeExpected(antlr4::misc::IntervalSet set, Token *found,
                                std::vector<ir::DiagNote> &notes) {
  static const size_t exprStart[] = {
      P::INT, P::FLOAT,    P::STRING, P::TRUE,   P::FALSE,
      P::ID,  P::ELEMTYPE, P::LPAREN, P::LBRACK, P::MINUS,
      P::NOT, P::IF,       P::FOR,    P::WHILE,  P::PACKED_TENSOR};
  static const size_t stmtStart[] = {P::LET, P::ON, P::RETURN, P::YIELD};
  static const size_t binaryOps[] = {
      P::PLUS, P::MINUS, P::STAR, P::SLASH, P::PERCENT, P::AT,   P::EQ, P::NE,
      P::LT,   P::LE,    P::GT,   P::GE,    P::ANDAND,  P::OROR, P::ON};
  static const size_t itemStart[] = {P::IMPORT, P::DEVICE, P::PARAM, P::CONST,
                                     P::FN};
  auto has = [&](size_t tt) { return set.contains(tt); };
  auto removeAll = [&](const size_t *b, const size_t *e) {
    for (; b != e; ++b)
      set.remove(*b);
  };
  int ops = 0;
  for (size_t op : binaryOps)
    ops += has(op) && op != P::MINUS;
  bool isStmt = has(P::LET) && has(P::RETURN);
  bool isExpr = has(P::INT) && has(P::ID) && has(P::LPAREN);
  bool isItem = has(P::FN) && has(P::PARAM);
  bool isOps = ops >= 3;
  bool newline = has(P::NL);
  bool eof = has(Token::EOF);
  if (isOps) {
    removeAll(std::begin(binaryOps), std::end(binaryOps));
    set.remove(static_cast<size_t>(P::LBRACK)); // indexing
  }
  if (isStmt || isExpr) {
    removeAll(std::begin(exprStart), std::end(exprStart));
    removeAll(std::begin(stmtStart), std::end(stmtStart));
  }
  if (isItem)
    removeAll(std::begin(itemStart), std::end(itemStart));
  set.remove(static_cast<size_t>(P::NL));
  set.remove(static_cast<size_t>(P::SEMI));
  set.remove(Token::EOF);

  // The innermost bracket open before the offending token, if it is
  // plausibly the one left unclosed.
  int32_t openIdx = -1;
  if (found->getType() == Token::EOF)
    openIdx = chunk_.enclosing.empty() ? -1 : chunk_.enclosing.back();
  else if (found->getTokenIndex() < chunk_.enclosing.size())
    openIdx = chunk_.enclosing[found->getTokenIndex()];
  std::optional<Location> openLoc;
  size_t openType = 0;
  if (openIdx >= 0) {
    Token *o = tokens_.get(static_cast<size_t>(openIdx));
    openLoc = src_.loc(o);
    openType = o->getType();
  } else if (openIdx == Layout::kOpenedEarlier && chunk_.outerBrace.valid()) {
    openLoc = chunk_.outerBrace;
    openType = P::LBRACE;
  }
  size_t closer = openType == P::LPAREN   ? P::RPAREN
                  : openType == P::LBRACK ? P::RBRACK
                                          : P::RBRACE;
  if (openLoc) {
    size_t ft = found->getType();
    bool foundCloser = ft == P::RPAREN || ft == P::RBRACK || ft == P::RBRACE;
    bool laterLine = openType != P::LBRACE && found->getLine() > openLoc->line;
    if (!set.contains(closer) ||
        !(ft == Token::EOF || (foundCloser && ft != closer) || laterLine))
      openLoc.reset();
  }

  std::vector<std::string> words;
  std::string closerWord; // said last: it is the likeliest fix
  std::vector<ssize_t> order = set.toList();
  // Closing brackets after other punctuation: "',' or ']'".
  std::stable_partition(order.begin(), order.end(), [](ssize_t tt) {
    return tt != P::RPAREN && tt != P::RBRACK && tt != P::RBRACE;
  });
  for (ssize_t tt : order) {
    size_t type = static_cast<size_t>(tt);
    std::string w;
    switch (type) {
    case P::ID:
      w = "a name";
      break;
    case P::INT:
      w = "an integer";
      break;
    case P::FLOAT:
      w = "a number";
      break;
    case P::STRING:
      w = "a string";
      break;
    case P::ELEMTYPE:
      w = "an element type such as f32";
      break;
    case P::PACKED_TENSOR:
      w = "a tensor literal";
      break;
    default:
      w = vocab_.getLiteralName(type);
      if (w.empty())
        w = vocab_.getSymbolicName(type);
      break;
    }
    if (openLoc && type == closer) {
      std::string open = openType == P::LPAREN   ? "("
                         : openType == P::LBRACK ? "["
                                                 : "{";
      closerWord = w + " to close '" + open + "' at " +
                   std::to_string(openLoc->line) + ":" +
                   std::to_string(openLoc->col);
      notes.push_back({*openLoc, "'" + open + "' opened here"});
      continue;
    }
    words.push_back(std::move(w));
  }
  if (isOps)
    words.push_back("an operator");
  if (isStmt)
    words.push_back("a statement");
  else if (isExpr)
    words.push_back("an expression");
  if (isItem)
    words.push_back("an item (fn, param, const, device or import)");
  if (newline)
    words.push_back("a new line");
  else if (eof)
    words.push_back("end of file");
  if (words.size() > 5) {
    words.resize(4);
    words.push_back("another token");
  }
  if (!closerWord.empty())
    words.push_back(std::move(closerWord));
  return words;
}

// --- Parse tree to AST -------------------------------------------------------

/// Converts one chunk's parse tree (free of syntax errors) into AST items.
/// Each conversion quotes the rule it reads.
class TreeBuilder : public grammar::MdlBaseVisitor {
public:
  TreeBuilder(const SourceText &src, Chunk &chunk, SyntaxErrorLog &log)
      : src_(src), chunk_(chunk), log_(log) {}

  // file : sep* (item (sep+ item)*)? sep* EOF ;
  void buildFile(P::FileContext *c, std::vector<std::unique_ptr<Item>> &out) {
    items(c, out);
  }

  // fnHead : fnHeader LBRACE sep* (stmt (sep+ stmt)* sep*)? EOF ;
  std::unique_ptr<FnItem> buildHead(P::FnHeadContext *c) {
    std::unique_ptr<FnItem> fn = fnHeader(child<P::FnHeaderContext>(c, 0));
    fn->loc = loc(c);
    fn->body.open = loc(tokenAt(c, 1));
    stmts(c, fn->body);
    return fn;
  }

  // fnMiddle : sep* (stmt (sep+ stmt)* sep*)? EOF ;
  void buildMiddle(P::FnMiddleContext *c, FnItem &fn) { stmts(c, fn.body); }

  // fnTail : sep* (stmt (sep+ stmt)* sep*)? RBRACE (sep+ item)* sep* EOF ;
  void buildTail(P::FnTailContext *c, FnItem &fn,
                 std::vector<std::unique_ptr<Item>> &out) {
    stmts(c, fn.body);
    fn.body.close = loc(c->RBRACE());
    items(c, out);
  }

private:
  template <typename T> T take(T &slot) {
    if (!slot)
      throw std::logic_error("parse tree shape not handled by the AST builder");
    T out = std::move(slot);
    slot = T();
    return out;
  }
  // The generated accessors scan every child with a dynamic_cast; in the
  // hot rules the children are read by position instead, which the grammar
  // fixes for an error-free tree.
  template <typename T = P::ExprContext>
  static T *child(antlr4::ParserRuleContext *c, size_t i) {
    return static_cast<T *>(c->children[i]);
  }
  static Token *tokenAt(antlr4::ParserRuleContext *c, size_t i) {
    return static_cast<antlr4::tree::TerminalNode *>(c->children[i])
        ->getSymbol();
  }
  Location loc(Token *t) const { return src_.loc(t); }
  Location loc(antlr4::tree::TerminalNode *n) const {
    return src_.loc(n->getSymbol());
  }
  Location loc(antlr4::ParserRuleContext *c) const { return src_.span(c); }
  std::string text(Token *t) const { return std::string(src_.text(t)); }
  std::string text(antlr4::tree::TerminalNode *n) const {
    return text(n->getSymbol());
  }
  Ident ident(antlr4::tree::TerminalNode *n) const { return {text(n), loc(n)}; }
  Ident ident(Token *t) const { return {text(t), loc(t)}; }

  ExprPtr expr(P::ExprContext *c) {
    if (!c)
      throw std::logic_error("missing expression in the parse tree");
    c->accept(this);
    return take(expr_);
  }
  // exprList : expr (COMMA expr)* ;
  std::vector<ExprPtr> exprs(P::ExprListContext *c) {
    std::vector<ExprPtr> out;
    if (c)
      for (size_t i = 0; i < c->children.size(); i += 2)
        out.push_back(expr(child(c, i)));
    return out;
  }
  StmtPtr stmt(P::StmtContext *c) {
    c->accept(this);
    return take(stmt_);
  }
  void items(antlr4::ParserRuleContext *c,
             std::vector<std::unique_ptr<Item>> &out) {
    for (auto *child : c->children)
      if (auto *item = dynamic_cast<P::ItemContext *>(child)) {
        item->accept(this);
        out.push_back(std::move(take(item_)));
      }
  }
  std::unique_ptr<FnItem> fnHeader(P::FnHeaderContext *c);
  void stmts(antlr4::ParserRuleContext *c, Block &into);
  TypeNode type(Token *elemType, P::ShapeContext *shape);
  TypeNode type(P::TypeContext *c) {
    return type(c->ELEMTYPE()->getSymbol(), c->shape());
  }
  Block block(P::BlockContext *c);
  std::vector<Arg> args(P::ArgListContext *c);
  std::vector<Carry> carries(P::CarryListContext *c);
  ExprPtr ifExpr(P::IfExprContext *c);
  void binary(P::ExprContext *c, Token *op, P::ExprContext *a,
              P::ExprContext *b);

  // -- items --
  antlrcpp::Any visitImportItem(P::ImportItemContext *c) override;
  antlrcpp::Any visitDeviceItem(P::DeviceItemContext *c) override;
  antlrcpp::Any visitConstItem(P::ConstItemContext *c) override;
  antlrcpp::Any visitParamItem(P::ParamItemContext *c) override;
  antlrcpp::Any visitFnItem(P::FnItemContext *c) override;
  // -- statements --
  antlrcpp::Any visitLetStmt(P::LetStmtContext *c) override;
  antlrcpp::Any visitOnStmt(P::OnStmtContext *c) override;
  antlrcpp::Any visitReturnStmt(P::ReturnStmtContext *c) override;
  antlrcpp::Any visitYieldStmt(P::YieldStmtContext *c) override;
  antlrcpp::Any visitExprStmt(P::ExprStmtContext *c) override;
  // -- expressions --
  antlrcpp::Any visitPrimaryExpr(P::PrimaryExprContext *c) override;
  antlrcpp::Any visitIndexExpr(P::IndexExprContext *c) override;
  antlrcpp::Any visitUnaryExpr(P::UnaryExprContext *c) override;
  antlrcpp::Any visitBinaryExpr(P::BinaryExprContext *c) override;
  antlrcpp::Any visitCompareExpr(P::CompareExprContext *c) override;
  antlrcpp::Any visitOnExpr(P::OnExprContext *c) override;
  antlrcpp::Any visitIntLit(P::IntLitContext *c) override;
  antlrcpp::Any visitFloatLit(P::FloatLitContext *c) override;
  antlrcpp::Any visitStringLit(P::StringLitContext *c) override;
  antlrcpp::Any visitBoolLit(P::BoolLitContext *c) override;
  antlrcpp::Any visitCallExpr(P::CallExprContext *c) override;
  antlrcpp::Any visitNameExpr(P::NameExprContext *c) override;
  antlrcpp::Any visitTypeExpr(P::TypeExprContext *c) override;
  antlrcpp::Any visitTensorLit(P::TensorLitContext *c) override;
  antlrcpp::Any visitPackedTensorLit(P::PackedTensorLitContext *c) override;
  antlrcpp::Any visitParenExpr(P::ParenExprContext *c) override;
  antlrcpp::Any visitIfPrimary(P::IfPrimaryContext *c) override;
  antlrcpp::Any visitForExpr(P::ForExprContext *c) override;
  antlrcpp::Any visitWhileExpr(P::WhileExprContext *c) override;
  // -- index items --
  antlrcpp::Any visitEllipsisIndex(P::EllipsisIndexContext *c) override;
  antlrcpp::Any visitExprIndex(P::ExprIndexContext *c) override;
  antlrcpp::Any visitOpenSliceIndex(P::OpenSliceIndexContext *c) override;
  void sliceTail(P::SliceTailContext *c, IndexItem &item);

  const SourceText &src_;
  Chunk &chunk_;
  SyntaxErrorLog &log_;
  // Results of the visit methods.
  std::unique_ptr<Item> item_;
  StmtPtr stmt_;
  ExprPtr expr_;
  std::optional<IndexItem> index_;
};

// --- Items -------------------------------------------------------------------

// item : IMPORT STRING  # importItem
antlrcpp::Any TreeBuilder::visitImportItem(P::ImportItemContext *c) {
  auto item = std::make_unique<ImportItem>(loc(c));
  item->path = unescape(src_.text(c->STRING()->getSymbol()));
  item->pathLoc = loc(c->STRING());
  item_ = std::move(item);
  return {};
}

// | DEVICE name=ID ASSIGN kind=ID LPAREN argList? RPAREN  # deviceItem
antlrcpp::Any TreeBuilder::visitDeviceItem(P::DeviceItemContext *c) {
  auto item = std::make_unique<DeviceItem>(loc(c));
  item->name = ident(c->name);
  item->deviceKind = ident(c->kind);
  item->args = args(c->argList());
  item_ = std::move(item);
  return {};
}

// | CONST ID ASSIGN expr  # constItem
antlrcpp::Any TreeBuilder::visitConstItem(P::ConstItemContext *c) {
  auto item = std::make_unique<ConstItem>(loc(c));
  item->name = ident(c->ID());
  item->value = expr(c->expr());
  item_ = std::move(item);
  return {};
}

// | PARAM name=ID COLON type (ON device=ID)? ASSIGN expr  # paramItem
antlrcpp::Any TreeBuilder::visitParamItem(P::ParamItemContext *c) {
  auto item = std::make_unique<ParamItem>(loc(c));
  item->name = ident(c->name);
  item->type = type(c->type());
  if (c->device)
    item->device = ident(c->device);
  item->init = expr(c->expr());
  item_ = std::move(item);
  return {};
}

// | fnHeader block  # fnItem
antlrcpp::Any TreeBuilder::visitFnItem(P::FnItemContext *c) {
  std::unique_ptr<FnItem> item = fnHeader(child<P::FnHeaderContext>(c, 0));
  item->loc = loc(c);
  item->body = block(child<P::BlockContext>(c, 1));
  item_ = std::move(item);
  return {};
}

// fnHeader : FN ID LPAREN (fnParam (COMMA fnParam)* COMMA?)? RPAREN
//            (ARROW results)? ;
// fnParam : ID COLON type ;
// results : type # singleResult | LPAREN type (COMMA type)* COMMA? RPAREN #
// tupleResult ;
std::unique_ptr<FnItem> TreeBuilder::fnHeader(P::FnHeaderContext *c) {
  auto item = std::make_unique<FnItem>(loc(c));
  item->name = ident(c->ID());
  for (auto *p : c->fnParam())
    item->params.push_back({ident(p->ID()), type(p->type())});
  if (auto *r = c->results()) {
    item->hasResults = true;
    if (auto *single = dynamic_cast<P::SingleResultContext *>(r))
      item->results.push_back(type(single->type()));
    else if (auto *tuple = dynamic_cast<P::TupleResultContext *>(r))
      for (auto *t : tuple->type())
        item->results.push_back(type(t));
  }
  return item;
}

// type : ELEMTYPE shape? ;
// shape : LBRACK (dim (COMMA dim)* COMMA?)? RBRACK ;
// dim : INT | ID ;
TypeNode TreeBuilder::type(Token *elemType, P::ShapeContext *shape) {
  TypeNode t;
  t.loc = src_.span(elemType, shape ? shape->getStop() : elemType);
  auto dtype = ir::parseDType(src_.text(elemType));
  if (!dtype)
    throw std::logic_error("element type token with an unknown name");
  t.dtype = *dtype;
  if (!shape)
    return t;
  t.hasShape = true;
  for (auto *d : shape->dim()) {
    DimNode dim;
    dim.loc = loc(d);
    if (auto *i = d->INT()) {
      std::string digits = text(i);
      auto v = parseDigits(digits);
      if (!v || *v > kInt64Max)
        log_.add(ErrorSource::Parser, dim.loc, intOverflowMessage(digits));
      dim.size = v && *v <= kInt64Max ? static_cast<int64_t>(*v) : 0;
    } else {
      dim.sym = text(d->ID());
    }
    t.dims.push_back(std::move(dim));
  }
  return t;
}

// --- Statements --------------------------------------------------------------

// block : LBRACE sep* (stmt (sep+ stmt)* sep*)? RBRACE ;
Block TreeBuilder::block(P::BlockContext *c) {
  Block b;
  b.open = loc(tokenAt(c, 0));
  b.close = loc(tokenAt(c, c->children.size() - 1));
  // Between the braces every child is a `sep` or a `stmt` context.
  for (size_t i = 1; i + 1 < c->children.size(); ++i) {
    auto *s = child<antlr4::ParserRuleContext>(c, i);
    if (s->getRuleIndex() == P::RuleStmt)
      b.stmts.push_back(stmt(static_cast<P::StmtContext *>(s)));
  }
  return b;
}

/// Appends the statements among the children of a piece of a function.
void TreeBuilder::stmts(antlr4::ParserRuleContext *c, Block &into) {
  for (auto *ch : c->children)
    if (auto *s = dynamic_cast<P::StmtContext *>(ch))
      into.stmts.push_back(stmt(s));
}

// stmt : LET (ID (COLON type)? | LPAREN ID (COMMA ID)* COMMA? RPAREN)
//        ASSIGN expr  # letStmt
antlrcpp::Any TreeBuilder::visitLetStmt(P::LetStmtContext *c) {
  auto s = std::make_unique<LetStmt>(loc(c));
  s->destructure = c->LPAREN() != nullptr;
  for (auto *id : c->ID())
    s->names.push_back(ident(id));
  if (c->type())
    s->annotation = type(c->type());
  s->value = expr(child(c, c->children.size() - 1));
  stmt_ = std::move(s);
  return {};
}

// | ON ID block  # onStmt
antlrcpp::Any TreeBuilder::visitOnStmt(P::OnStmtContext *c) {
  auto s = std::make_unique<OnStmt>(loc(c));
  s->device = ident(c->ID());
  s->body = block(c->block());
  stmt_ = std::move(s);
  return {};
}

// | RETURN exprList?  # returnStmt
antlrcpp::Any TreeBuilder::visitReturnStmt(P::ReturnStmtContext *c) {
  auto s = std::make_unique<ValuesStmt>(StmtKind::Return, loc(c));
  s->values = exprs(c->exprList());
  stmt_ = std::move(s);
  return {};
}

// | YIELD exprList?  # yieldStmt
antlrcpp::Any TreeBuilder::visitYieldStmt(P::YieldStmtContext *c) {
  auto s = std::make_unique<ValuesStmt>(StmtKind::Yield, loc(c));
  s->values = exprs(c->exprList());
  stmt_ = std::move(s);
  return {};
}

// | expr  # exprStmt
antlrcpp::Any TreeBuilder::visitExprStmt(P::ExprStmtContext *c) {
  ExprPtr e = expr(child(c, 0));
  stmt_ = std::make_unique<ExprStmt>(loc(c), std::move(e));
  return {};
}

// --- Expressions -------------------------------------------------------------

// expr : primary  # primaryExpr
antlrcpp::Any TreeBuilder::visitPrimaryExpr(P::PrimaryExprContext *c) {
  c->children[0]->accept(this);
  return {};
}

// | expr LBRACK indexItem (COMMA indexItem)* COMMA? RBRACK  # indexExpr
antlrcpp::Any TreeBuilder::visitIndexExpr(P::IndexExprContext *c) {
  auto e = std::make_unique<IndexExpr>(loc(c));
  e->base = expr(child(c, 0));
  for (size_t i = 2; i + 1 < c->children.size(); i += 2) {
    c->children[i]->accept(this);
    e->items.push_back(std::move(*take(index_)));
  }
  expr_ = std::move(e);
  return {};
}

// | op=(MINUS | NOT) expr  # unaryExpr
antlrcpp::Any TreeBuilder::visitUnaryExpr(P::UnaryExprContext *c) {
  bool neg = c->op->getType() == P::MINUS;
  // -9223372036854775808 is the one literal whose digits alone overflow.
  if (neg)
    if (auto *p = dynamic_cast<P::PrimaryExprContext *>(child(c, 1)))
      if (auto *lit = dynamic_cast<P::IntLitContext *>(p->children[0]))
        if (isMinInt64(src_.text(lit->getStart()))) {
          expr_ = std::make_unique<IntLit>(loc(c), INT64_MIN);
          return {};
        }
  ExprPtr operand = expr(child(c, 1));
  expr_ = std::make_unique<UnaryExpr>(loc(c), neg ? UnaryOp::Neg : UnaryOp::Not,
                                      std::move(operand));
  return {};
}

BinaryOp binaryOpOf(size_t type) {
  switch (type) {
  case P::STAR:
    return BinaryOp::Mul;
  case P::SLASH:
    return BinaryOp::Div;
  case P::PERCENT:
    return BinaryOp::Mod;
  case P::AT:
    return BinaryOp::MatMul;
  case P::PLUS:
    return BinaryOp::Add;
  case P::MINUS:
    return BinaryOp::Sub;
  case P::EQ:
    return BinaryOp::Eq;
  case P::NE:
    return BinaryOp::Ne;
  case P::LT:
    return BinaryOp::Lt;
  case P::LE:
    return BinaryOp::Le;
  case P::GT:
    return BinaryOp::Gt;
  case P::GE:
    return BinaryOp::Ge;
  case P::ANDAND:
    return BinaryOp::And;
  case P::OROR:
    return BinaryOp::Or;
  default:
    throw std::logic_error("token is not a binary operator");
  }
}

// | expr op=(STAR | SLASH | PERCENT | AT) expr  # binaryExpr
// | expr op=(PLUS | MINUS) expr  # binaryExpr
// | expr op=ANDAND expr  # binaryExpr
// | expr op=OROR expr  # binaryExpr
antlrcpp::Any TreeBuilder::visitBinaryExpr(P::BinaryExprContext *c) {
  binary(c, c->op, child(c, 0), child(c, 2));
  return {};
}

void TreeBuilder::binary(P::ExprContext *c, Token *op, P::ExprContext *a,
                         P::ExprContext *b) {
  ExprPtr lhs = expr(a);
  ExprPtr rhs = expr(b);
  expr_ = std::make_unique<BinaryExpr>(loc(c), binaryOpOf(op->getType()),
                                       loc(op), std::move(lhs), std::move(rhs));
}

// | expr op=(EQ | NE | LT | LE | GT | GE) expr  # compareExpr
// The rule is left-associative; `a < b < c` is rejected here, while
// `(a < b) < c` (a primary on the left) is allowed.
antlrcpp::Any TreeBuilder::visitCompareExpr(P::CompareExprContext *c) {
  if (auto *inner = dynamic_cast<P::CompareExprContext *>(child(c, 0)))
    log_.add(ErrorSource::Parser, loc(c->op),
             "comparisons do not chain: '" + text(c->op) +
                 "' follows another comparison; write 'a < b && b < c'",
             {{loc(inner->op), "the first comparison is here"}});
  binary(c, c->op, child(c, 0), child(c, 2));
  return {};
}

// | expr ON ID  # onExpr
antlrcpp::Any TreeBuilder::visitOnExpr(P::OnExprContext *c) {
  ExprPtr e = expr(child(c, 0));
  expr_ = std::make_unique<OnExpr>(loc(c), std::move(e), ident(tokenAt(c, 2)));
  return {};
}

// primary : INT  # intLit
antlrcpp::Any TreeBuilder::visitIntLit(P::IntLitContext *c) {
  Token *t = c->getStart();
  bool ok = true;
  expr_ = numberLit(true, src_.text(t), loc(t), ok);
  if (!ok)
    log_.add(ErrorSource::Parser, loc(t), intOverflowMessage(src_.text(t)));
  return {};
}

// | FLOAT  # floatLit
antlrcpp::Any TreeBuilder::visitFloatLit(P::FloatLitContext *c) {
  Token *t = c->getStart();
  bool ok = true;
  expr_ = numberLit(false, src_.text(t), loc(t), ok);
  if (!ok)
    log_.add(ErrorSource::Parser, loc(t),
             "float literal " + text(t) + " is out of range for f64");
  return {};
}

// | STRING  # stringLit
antlrcpp::Any TreeBuilder::visitStringLit(P::StringLitContext *c) {
  expr_ =
      std::make_unique<StringLit>(loc(c), unescape(src_.text(c->getStart())));
  return {};
}

// | (TRUE | FALSE)  # boolLit
antlrcpp::Any TreeBuilder::visitBoolLit(P::BoolLitContext *c) {
  expr_ = std::make_unique<BoolLit>(loc(c), c->TRUE() != nullptr);
  return {};
}

// | ID LPAREN argList? RPAREN  # callExpr
antlrcpp::Any TreeBuilder::visitCallExpr(P::CallExprContext *c) {
  auto e = std::make_unique<CallExpr>(loc(c));
  e->callee = ident(c->getStart());
  if (c->children.size() == 4)
    e->args = args(child<P::ArgListContext>(c, 2));
  e->close = loc(tokenAt(c, c->children.size() - 1));
  expr_ = std::move(e);
  return {};
}

// argList : arg (COMMA arg)* COMMA? ;
// arg : (ID ASSIGN)? expr ;
std::vector<Arg> TreeBuilder::args(P::ArgListContext *c) {
  std::vector<Arg> out;
  if (!c)
    return out;
  for (size_t i = 0; i < c->children.size(); i += 2) {
    auto *a = child<P::ArgContext>(c, i);
    Arg arg;
    if (a->children.size() == 3)
      arg.keyword = ident(tokenAt(a, 0));
    arg.value = expr(child(a, a->children.size() - 1));
    out.push_back(std::move(arg));
  }
  return out;
}

// | ID  # nameExpr
antlrcpp::Any TreeBuilder::visitNameExpr(P::NameExprContext *c) {
  expr_ = std::make_unique<NameExpr>(loc(c), text(c->getStart()));
  return {};
}

// | ELEMTYPE shape?  # typeExpr
antlrcpp::Any TreeBuilder::visitTypeExpr(P::TypeExprContext *c) {
  TypeNode t = type(c->ELEMTYPE()->getSymbol(), c->shape());
  Location l = t.loc;
  expr_ = std::make_unique<TypeExpr>(l, std::move(t));
  return {};
}

// | LBRACK (expr (COMMA expr)* COMMA?)? RBRACK  # tensorLit
antlrcpp::Any TreeBuilder::visitTensorLit(P::TensorLitContext *c) {
  auto e = std::make_unique<TensorLit>(loc(c));
  // Children alternate `[ e , e , ... ]`; reading them by position avoids
  // the generated accessors' scan over every child.
  for (size_t i = 1; i + 1 < c->children.size(); i += 2)
    e->elements.push_back(expr(dynamic_cast<P::ExprContext *>(c->children[i])));
  expr_ = std::move(e);
  return {};
}

// | PACKED_TENSOR  # packedTensorLit
antlrcpp::Any TreeBuilder::visitPackedTensorLit(P::PackedTensorLitContext *c) {
  auto it =
      chunk_.packed.find(c->PACKED_TENSOR()->getSymbol()->getStartIndex());
  if (it == chunk_.packed.end() || !it->second)
    throw std::logic_error("packed tensor literal without its AST");
  expr_ = std::move(it->second);
  chunk_.packed.erase(it);
  return {};
}

// | LPAREN expr RPAREN  # parenExpr
antlrcpp::Any TreeBuilder::visitParenExpr(P::ParenExprContext *c) {
  expr_ = expr(child(c, 1));
  return {};
}

// | ifExpr  # ifPrimary
antlrcpp::Any TreeBuilder::visitIfPrimary(P::IfPrimaryContext *c) {
  expr_ = ifExpr(c->ifExpr());
  return {};
}

// ifExpr : IF expr block (ELSE (block | ifExpr))? ;
// `else if` becomes an else block whose one statement yields the nested if;
// that block's braces are the nested if's first and last tokens.
ExprPtr TreeBuilder::ifExpr(P::IfExprContext *c) {
  auto e = std::make_unique<IfExpr>(loc(c));
  e->cond = expr(c->expr());
  e->thenBlock = block(c->block(0));
  if (auto *nested = c->ifExpr()) {
    Block b;
    b.open = loc(nested->IF());
    b.close = loc(nested->getStop());
    auto yield = std::make_unique<ValuesStmt>(StmtKind::Yield, loc(nested));
    yield->values.push_back(ifExpr(nested));
    b.stmts.push_back(std::move(yield));
    e->elseBlock = std::move(b);
  } else if (auto *elseBlock = c->block(1)) {
    e->elseBlock = block(elseBlock);
  }
  return e;
}

// | FOR ID IN lo=expr DOTDOT hi=expr carryList? block  # forExpr
antlrcpp::Any TreeBuilder::visitForExpr(P::ForExprContext *c) {
  auto e = std::make_unique<ForExpr>(loc(c));
  e->var = ident(c->ID());
  e->lo = expr(c->lo);
  e->hi = expr(c->hi);
  e->carries = carries(c->carryList());
  e->body = block(c->block());
  expr_ = std::move(e);
  return {};
}

// | WHILE expr carryList? block  # whileExpr
antlrcpp::Any TreeBuilder::visitWhileExpr(P::WhileExprContext *c) {
  auto e = std::make_unique<WhileExpr>(loc(c));
  e->cond = expr(c->expr());
  e->carries = carries(c->carryList());
  e->body = block(c->block());
  expr_ = std::move(e);
  return {};
}

// carryList : CARRY LPAREN carry (COMMA carry)* COMMA? RPAREN ;
// carry : ID ASSIGN expr ;
std::vector<Carry> TreeBuilder::carries(P::CarryListContext *c) {
  std::vector<Carry> out;
  if (!c)
    return out;
  for (auto *k : c->carry())
    out.push_back({ident(k->ID()), expr(k->expr())});
  return out;
}

// indexItem : ELLIPSIS  # ellipsisIndex
antlrcpp::Any TreeBuilder::visitEllipsisIndex(P::EllipsisIndexContext *c) {
  IndexItem item;
  item.kind = IndexItem::Kind::Ellipsis;
  item.loc = loc(c);
  index_ = std::move(item);
  return {};
}

// | expr sliceTail?  # exprIndex
antlrcpp::Any TreeBuilder::visitExprIndex(P::ExprIndexContext *c) {
  IndexItem item;
  item.loc = loc(c);
  ExprPtr e = expr(c->expr());
  if (auto *tail = c->sliceTail()) {
    item.kind = IndexItem::Kind::Slice;
    item.start = std::move(e);
    sliceTail(tail, item);
  } else {
    item.kind = IndexItem::Kind::Single;
    item.index = std::move(e);
  }
  index_ = std::move(item);
  return {};
}

// | sliceTail  # openSliceIndex
antlrcpp::Any TreeBuilder::visitOpenSliceIndex(P::OpenSliceIndexContext *c) {
  IndexItem item;
  item.kind = IndexItem::Kind::Slice;
  item.loc = loc(c);
  sliceTail(c->sliceTail(), item);
  index_ = std::move(item);
  return {};
}

// sliceTail : COLON upper=expr? (COLON step=expr?)? ;
void TreeBuilder::sliceTail(P::SliceTailContext *c, IndexItem &item) {
  if (c->upper)
    item.stop = expr(c->upper);
  if (c->step)
    item.step = expr(c->step);
}

// --- The driver --------------------------------------------------------------

/// Receives lexer errors; with the catch-all ERROR_CHAR rule there should be
/// none, but nothing may reach the console.
class LexerErrors : public antlr4::BaseErrorListener {
public:
  LexerErrors(SyntaxErrorLog &log, uint32_t fileId)
      : log_(log), fileId_(fileId) {}
  void syntaxError(antlr4::Recognizer *, Token *, size_t line, size_t col,
                   const std::string &, std::exception_ptr) override {
    log_.add(ErrorSource::Lexer,
             {fileId_, static_cast<uint32_t>(line),
              static_cast<uint32_t>(col + 1), 1},
             "unexpected input");
  }

private:
  SyntaxErrorLog &log_;
  uint32_t fileId_;
};

/// The first, fast parse: gives up at the first error without a word (the
/// rules call reportError before recover, so it must be silenced too).
class SilentBail : public antlr4::BailErrorStrategy {
public:
  void reportError(antlr4::Parser *,
                   const antlr4::RecognitionException &) override {}
};

/// Runs the token pass and parses chunk after chunk (see the file comment).
class Driver {
public:
  Driver(const SourceBuffer &buf, SyntaxErrorLog &log)
      : buf_(buf), src_(buf), log_(log), lexerErrors_(log, buf.fileId),
        stream_(buf.text, buf.path), lexer_(&stream_), parser_(nullptr),
        packer_(buf) {
    lexer_.removeErrorListeners();
    lexer_.addErrorListener(&lexerErrors_);
    parser_.removeErrorListeners();
    parser_.addErrorListener(&lexerErrors_); // unused: ErrorReporter reports
    file_ = std::make_unique<SourceFile>();
    file_->path = buf.path;
    file_->fileId = buf.fileId;
    lastEnd_ = {buf.fileId, 1, 1, 1};
  }

  std::unique_ptr<SourceFile> run() {
    while (!log_.full()) {
      std::unique_ptr<Token> t = lexer_.nextToken();
      if (t->getType() == Token::EOF)
        break;
      if (packer_.active()) {
        feedPacker(std::move(t));
        continue;
      }
      if (t->getType() == P::LBRACK &&
          chunk_.rejected == Chunk::Rejection::None &&
          (pendingNewline_ || !isOperandEnd(prevRole_))) {
        packer_.start(packToken(*t));
        continue;
      }
      onToken(std::move(t));
    }
    if (log_.full()) {
      log_.markStopped();
    } else {
      if (packer_.active())
        giveBack();
      finishChunk(nullptr);
    }
    if (!log_.empty())
      return nullptr;
    return std::move(file_);
  }

private:
  void feedPacker(std::unique_ptr<Token> t) {
    switch (packer_.add(packToken(*t))) {
    case LiteralPacker::Step::More:
      return;
    case LiteralPacker::Step::Packed: {
      auto tok = makeToken(P::PACKED_TENSOR, packer_.first().start,
                           packer_.last().start + packer_.last().len,
                           packer_.first().line, packer_.first().col);
      chunk_.packed[packer_.first().start] = packer_.takeLiteral();
      onToken(std::move(tok));
      return;
    }
    case LiteralPacker::Step::GiveBack:
      giveBack();
      return;
    case LiteralPacker::Step::GiveBackBefore:
      giveBack();
      onToken(std::move(t));
      return;
    }
  }

  void giveBack() {
    bool newline = packer_.endedWithNewline();
    for (const PackToken &r : packer_.takeRecords())
      onToken(makeToken(tokenType(r.kind), r.start, r.start + r.len, r.line,
                        r.col));
    if (newline)
      atLineStart_ = true;
  }

  static PackToken packToken(const Token &t) {
    using Kind = PackToken::Kind;
    Kind kind;
    switch (t.getType()) {
    case P::LBRACK:
      kind = Kind::Open;
      break;
    case P::RBRACK:
      kind = Kind::Close;
      break;
    case P::COMMA:
      kind = Kind::Comma;
      break;
    case P::MINUS:
      kind = Kind::Minus;
      break;
    case P::INT:
      kind = Kind::Int;
      break;
    case P::FLOAT:
      kind = Kind::Float;
      break;
    case P::NL:
      kind = Kind::Newline;
      break;
    default:
      kind = Kind::Other;
      break;
    }
    return {kind, t.getStartIndex(),
            static_cast<uint32_t>(t.getStopIndex() + 1 - t.getStartIndex()),
            static_cast<uint32_t>(t.getLine()),
            static_cast<uint32_t>(t.getCharPositionInLine() + 1)};
  }
  static size_t tokenType(PackToken::Kind kind) {
    switch (kind) {
    case PackToken::Kind::Open:
      return P::LBRACK;
    case PackToken::Kind::Close:
      return P::RBRACK;
    case PackToken::Kind::Comma:
      return P::COMMA;
    case PackToken::Kind::Minus:
      return P::MINUS;
    case PackToken::Kind::Int:
      return P::INT;
    case PackToken::Kind::Float:
      return P::FLOAT;
    default:
      return P::NL; // never recorded
    }
  }

  std::unique_ptr<Token> makeToken(size_t type, size_t begin, size_t end,
                                   uint32_t line, uint32_t col) {
    auto t = std::make_unique<antlr4::CommonToken>(
        std::make_pair<antlr4::TokenSource *, antlr4::CharStream *>(&lexer_,
                                                                    &stream_),
        type, Token::DEFAULT_CHANNEL, begin, end - 1);
    t->setLine(line);
    t->setCharPositionInLine(col - 1);
    return t;
  }

  /// One token after the packer: reports lexical problems, applies the
  /// layout rules and appends what the parser must see to the chunk.
  void onToken(std::unique_ptr<Token> t) {
    size_t type = t->getType();
    if (type == P::NL) {
      atLineStart_ = true;
      if (!pendingNewline_ && layout_.newlineEndsStatement())
        pendingNewline_ = std::move(t);
      return;
    }
    if (type == P::ERROR_CHAR) {
      // Only the first stray character of a line is reported; checking
      // first keeps a file of garbage bytes fast.
      if (!log_.hasErrorOn(static_cast<uint32_t>(t->getLine())))
        log_.add(ErrorSource::Lexer, src_.loc(t.get()),
                 strayCharMessage(t->getStartIndex()));
      atLineStart_ = false;
      return;
    }
    TokenRole role = roleOf(type);
    if (role == TokenRole::ItemKeyword && atLineStart_ && chunk_.count > 0)
      finishChunk(t.get());
    atLineStart_ = false;
    if (pendingNewline_) {
      std::unique_ptr<Token> nl = std::move(pendingNewline_);
      // A newline before a token that only continues a construct (`else`,
      // `{`, `carry`, `->`) cannot end a statement.
      if (type != P::ELSE && type != P::LBRACE && type != P::CARRY &&
          type != P::ARROW)
        emit(std::move(nl), TokenRole::Newline);
    }
    checkToken(*t);
    Location l = src_.loc(t.get());
    lastEnd_ = {l.file, l.line, l.col + l.len, 1};
    emit(std::move(t), role);
  }

  std::string strayCharMessage(size_t offset) const {
    const std::string &text = buf_.text;
    std::string msg = "unexpected character ";
    char c = text[offset];
    char next = offset + 1 < text.size() ? text[offset + 1] : '\0';
    if (c == '\'')
      return msg + "\"'\" (strings are written with double quotes)";
    msg += describeChar(text, offset);
    if (c == '.' && next >= '0' && next <= '9')
      msg += " (write a digit before the point: 0.5)";
    return msg;
  }

  /// Reports what is wrong inside a single token.
  void checkToken(Token &t) {
    size_t type = t.getType();
    std::string_view text = src_.text(&t);
    if (type == P::UNTERMINATED_STRING) {
      log_.add(ErrorSource::Lexer, src_.loc(&t),
               "unterminated string (the closing '\"' is missing)");
      static_cast<antlr4::CommonToken &>(t).setType(P::STRING);
    } else if (type == P::STRING) {
      size_t bad;
      unescape(text, &bad);
      if (bad != std::string_view::npos) {
        Location l = src_.loc(&t);
        l.col += static_cast<uint32_t>(bad);
        l.len = 2;
        log_.add(ErrorSource::Lexer, l,
                 "unknown escape sequence '" +
                     std::string(text.substr(bad, 2)) +
                     "' in string (the escapes are \\\", \\\\ and \\n)");
      }
    } else if (type == P::INT) {
      auto v = parseDigits(text);
      bool negatedMin = v && *v == kInt64Max + 1 &&
                        prevRole_ == TokenRole::Minus &&
                        !isOperandEnd(prevPrevRole_);
      if ((!v || *v > kInt64Max) && !negatedMin)
        log_.add(ErrorSource::Lexer, src_.loc(&t), intOverflowMessage(text));
    } else if (type == P::FLOAT) {
      double d;
      if (!parseFloat(text, d))
        log_.add(ErrorSource::Lexer, src_.loc(&t),
                 "float literal " + std::string(text) +
                     " is out of range for f64");
    }
  }

  void emit(std::unique_ptr<Token> t, TokenRole role) {
    int32_t index = chunk_.count++;
    if (index == 0)
      chunk_.firstType = t->getType();
    if (prevRole_ == TokenRole::Newline || prevRole_ == TokenRole::Semicolon ||
        prevRole_ == TokenRole::OpenBrace)
      chunk_.stmtStart = static_cast<size_t>(index);
    int32_t open = layout_.innermostOpen();
    int depth = layout_.push(role, index);
    prevPrevRole_ = prevRole_;
    prevRole_ = role;
    chunk_.maxDepth = std::max(chunk_.maxDepth, depth);
    if (chunk_.rejected == Chunk::Rejection::None) {
      if (depth > kMaxNesting)
        reject(Chunk::Rejection::TooDeep, src_.loc(t.get()), *t);
      else if (chunk_.tokens.size() >= kMaxChunkTokens)
        reject(Chunk::Rejection::TooLarge,
               src_.loc(chunk_.stmtStart < chunk_.tokens.size()
                            ? chunk_.tokens[chunk_.stmtStart].get()
                            : t.get()),
               *t);
    }
    if (chunk_.rejected != Chunk::Rejection::None)
      return;
    Location nl = role == TokenRole::Newline ? src_.loc(t.get()) : Location();
    chunk_.tokens.push_back(std::move(t));
    chunk_.enclosing.push_back(open);
    if (role == TokenRole::Newline)
      maybeCutFunction(nl);
  }

  /// Gives up on parsing the chunk: stops keeping its tokens, and reports
  /// why when it ends.
  /// `current` is the token being added, not yet in the chunk.
  void reject(Chunk::Rejection why, Location where, const Token &current) {
    chunk_.rejected = why;
    chunk_.rejectLoc = where;
    // A statement usually grows without end because a bracket was left
    // open: say which.
    int32_t open = layout_.innermostOpen();
    chunk_.openNote = Location();
    if (open >= 0) {
      const Token *t = static_cast<size_t>(open) < chunk_.tokens.size()
                           ? chunk_.tokens[static_cast<size_t>(open)].get()
                           : &current;
      if (t->getType() != P::LBRACE)
        chunk_.openNote = src_.loc(t);
    }
    std::vector<std::unique_ptr<Token>>().swap(chunk_.tokens);
    std::vector<int32_t>().swap(chunk_.enclosing);
    chunk_.packed.clear();
  }

  /// Parses a large function in pieces: once the chunk holds kPieceTokens
  /// tokens and a newline has just ended a statement directly in the body
  /// of the function the chunk starts with, the statements so far are
  /// parsed and converted, and the chunk starts again from there. The
  /// memory for tokens and parse tree is then bounded by the piece, not by
  /// the function (the generated code of an imported model can be one
  /// function of a hundred megabytes).
  void maybeCutFunction(Location newline) {
    if (chunk_.rejected != Chunk::Rejection::None ||
        chunk_.tokens.size() < kPieceTokens || !layout_.insideOneBrace() ||
        (!inPieces_ && chunk_.firstType != P::FN))
      return;
    if (!inPieces_) {
      int32_t brace = layout_.innermostOpen();
      outerBrace_ = src_.loc(chunk_.tokens[static_cast<size_t>(brace)].get());
    }
    chunk_.enclosing.push_back(layout_.innermostOpen());
    chunk_.eofLoc = {newline.file, newline.line, newline.col + 1, 1};
    chunk_.eofOffset = chunk_.tokens.back()->getStopIndex() + 1;
    chunk_.eofWhat = "end of line";
    parseChunk(inPieces_ ? Piece::Middle : Piece::Head);
    inPieces_ = true;
    chunk_.reset();
    chunk_.outerBrace = outerBrace_;
    layout_.detachOpeners();
  }

  /// Parses the chunk read so far; `next` is the item keyword that starts
  /// the next one, or null at the end of the file.
  void finishChunk(const Token *next) {
    chunk_.enclosing.push_back(layout_.innermostOpen());
    if (next) {
      chunk_.eofLoc = src_.loc(next);
      chunk_.eofOffset = next->getStartIndex();
      chunk_.eofWhat = "'" + std::string(src_.text(next)) + "'";
    } else {
      chunk_.eofLoc = lastEnd_;
      chunk_.eofOffset = buf_.text.size();
      chunk_.eofWhat = "end of file";
    }
    pendingNewline_.reset();
    switch (chunk_.rejected) {
    case Chunk::Rejection::TooDeep:
      log_.add(ErrorSource::Lexer, chunk_.rejectLoc,
               "nesting too deep (" + std::to_string(chunk_.maxDepth) +
                   " levels; the limit is " + std::to_string(kMaxNesting) + ")",
               {{{},
                 "each bracket, block, unary operator and operator of a "
                 "chain counts as a level; split the expression with "
                 "'let'"}});
      break;
    case Chunk::Rejection::TooLarge:
      if (chunk_.openNote.valid())
        log_.add(ErrorSource::Lexer, chunk_.rejectLoc,
                 "statement too large to parse (more than " +
                     std::to_string(kMaxChunkTokens) + " tokens)",
                 {{chunk_.openNote, "this bracket is still open there; is a "
                                    "closing bracket missing?"}});
      else
        log_.add(ErrorSource::Lexer, chunk_.rejectLoc,
                 "statement too large to parse (more than " +
                     std::to_string(kMaxChunkTokens) + " tokens)",
                 {{{},
                   "split it into several statements; a large constant "
                   "belongs in a weight file"}});
      break;
    case Chunk::Rejection::None:
      parseChunk(inPieces_ ? Piece::Tail : Piece::Whole);
      break;
    }
    pendingFn_.reset();
    inPieces_ = false;
    chunk_.reset();
    chunk_.outerBrace = Location();
    layout_.reset();
    prevRole_ = prevPrevRole_ = TokenRole::Newline;
  }

  /// What a chunk holds: whole items, or a piece of a large function.
  enum class Piece { Whole, Head, Middle, Tail };

  antlr4::ParserRuleContext *parse(Piece piece) {
    switch (piece) {
    case Piece::Whole:
      return parser_.file();
    case Piece::Head:
      return parser_.fnHead();
    case Piece::Middle:
      return parser_.fnMiddle();
    case Piece::Tail:
      return parser_.fnTail();
    }
    return nullptr;
  }

  void parseChunk(Piece piece) {
    ChunkTokenSource source(chunk_, stream_);
    ChunkTokenStream tokens(&source, chunk_.tokens.size());
    auto reporter = std::make_shared<ErrorReporter>(
        src_, chunk_, tokens, parser_.getVocabulary(), log_);
    parser_.setTokenStream(&tokens);
    auto *sim = parser_.getInterpreter<antlr4::atn::ParserATNSimulator>();
    // Fast SLL prediction first; only a chunk that fails it (almost always
    // a real syntax error) is parsed again with full LL and error reporting.
    sim->setPredictionMode(antlr4::atn::PredictionMode::SLL);
    parser_.setErrorHandler(bail_);
    antlr4::ParserRuleContext *tree = nullptr;
    try {
      tree = parse(piece);
    } catch (const antlr4::ParseCancellationException &) {
      tokens.seek(0);
      parser_.reset();
      sim->setPredictionMode(antlr4::atn::PredictionMode::LL);
      parser_.setErrorHandler(reporter);
      tree = parse(piece);
    }
    if (tree && reporter->errors == 0)
      build(piece, tree);
    else
      pendingFn_.reset(); // a broken piece: the function is not built
    if (!log_.empty()) {
      file_->items.clear(); // the file is rejected: free memory early
      pendingFn_.reset();
    }
    parser_.setTokenStream(nullptr); // frees the parse tree
    parser_.setErrorHandler(bail_);
  }

  void build(Piece piece, antlr4::ParserRuleContext *tree) {
    TreeBuilder builder(src_, chunk_, log_);
    std::vector<std::unique_ptr<Item>> items;
    switch (piece) {
    case Piece::Whole:
      builder.buildFile(static_cast<P::FileContext *>(tree), items);
      break;
    case Piece::Head:
      pendingFn_ = builder.buildHead(static_cast<P::FnHeadContext *>(tree));
      return;
    case Piece::Middle:
      if (pendingFn_)
        builder.buildMiddle(static_cast<P::FnMiddleContext *>(tree),
                            *pendingFn_);
      return;
    case Piece::Tail:
      if (!pendingFn_)
        return;
      builder.buildTail(static_cast<P::FnTailContext *>(tree), *pendingFn_,
                        items);
      items.insert(items.begin(), std::move(pendingFn_));
      break;
    }
    if (log_.empty())
      for (auto &item : items)
        file_->items.push_back(std::move(item));
  }

  /// Tokens in a piece of a large function: about 400 KB of source and
  /// 40 MB of tokens and parse tree.
  static constexpr size_t kPieceTokens = size_t(1) << 17;
  /// Tokens in a chunk that cannot be cut (one huge statement or item):
  /// about 1 GB of tokens and parse tree.
  static constexpr size_t kMaxChunkTokens = size_t(1) << 22;

  const SourceBuffer &buf_;
  SourceText src_;
  SyntaxErrorLog &log_;
  LexerErrors lexerErrors_;
  ByteStream stream_;
  MdlLexer lexer_;
  P parser_;
  std::shared_ptr<SilentBail> bail_ = std::make_shared<SilentBail>();
  Layout layout_;
  LiteralPacker packer_;
  Chunk chunk_;
  std::unique_ptr<Token> pendingNewline_;
  bool atLineStart_ = true;
  TokenRole prevRole_ = TokenRole::Newline;
  TokenRole prevPrevRole_ = TokenRole::Newline;
  Location lastEnd_;
  std::unique_ptr<SourceFile> file_;
  // A large function parsed in pieces.
  bool inPieces_ = false;
  std::unique_ptr<FnItem> pendingFn_;
  Location outerBrace_;
};

} // namespace

std::unique_ptr<SourceFile> parseWithAntlr(const SourceBuffer &buf,
                                           SyntaxErrorLog &log) {
  return Driver(buf, log).run();
}

} // namespace mdl::frontend::detail
