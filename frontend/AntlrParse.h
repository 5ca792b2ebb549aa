// Private to the ANTLR half of the parser (AstBuilder.cpp, SyntaxErrors.cpp,
// AntlrDriver.cpp): the pieces these files share. Token locations
// (SourceText), a chunk of tokens parsed on its own (Chunk), the error
// strategy that words syntax errors (ErrorReporter) and the conversion of
// a parse tree into the AST (TreeBuilder). The file comment of
// AntlrDriver.cpp describes the whole token pass.
#pragma once

#include "frontend/AstBuilder.h"
#include "frontend/Parser.h"

#include "MdlBaseVisitor.h"
#include "MdlLexer.h"
#include "MdlParser.h"
#include "antlr4-runtime.h"

#include <optional>
#include <set>
#include <unordered_map>

namespace mdl::frontend::detail {

using antlr4::Token;
using P = grammar::MdlParser;
using ir::Location;


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

} // namespace mdl::frontend::detail
