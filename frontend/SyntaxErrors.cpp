// Syntax error messages: ErrorReporter turns ANTLR's recovery points into
// E0001 diagnostics that say, in words, what was expected and what was
// found (see AntlrParse.h for the class).
#include "frontend/AntlrParse.h"

#include <algorithm>

namespace mdl::frontend::detail {

namespace {

bool isReservedWord(size_t type) {
  return (type >= P::IMPORT && type <= P::FALSE) || type == P::ELEMTYPE;
}


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

} // namespace

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

} // namespace mdl::frontend::detail
