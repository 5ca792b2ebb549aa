// The conversion of a parse tree into the AST: TreeBuilder's visitors, each
// quoting the grammar rule it reads (the class is in AntlrParse.h; the
// token pass and the parse itself are in AntlrDriver.cpp).
#include "frontend/AntlrParse.h"

namespace mdl::frontend::detail {


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

static BinaryOp binaryOpOf(size_t type) {
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

} // namespace mdl::frontend::detail
