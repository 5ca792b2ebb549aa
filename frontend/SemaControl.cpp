// Semantic analysis of control flow: `if` (a bool scalar condition, the
// branches yield the same types), `for` and `while` (carried values keep
// their types from one iteration to the next) and the blocks they run.
#include "frontend/SemaImpl.h"

namespace mdl::frontend {


bool Sema::checkRegionBlock(const Block &b, std::vector<TensorType> &yielded,
                            std::vector<Expr *> &yieldExprs) {
  unsigned before = diags_.errorCount();
  pushScope();
  bool saw = false;
  checkStatements(b, false, &yielded, &yieldExprs, saw);
  popScope();
  return diags_.errorCount() == before;
}

namespace {
bool isBoolScalar(const Expr &e) {
  return e.info.types.size() == 1 && e.info.types[0].dtype == DType::Bool &&
         e.info.types[0].isScalar();
}
} // namespace

bool Sema::checkIf(IfExpr &e) {
  bool ok = checkExpr(*e.cond);
  if (ok && !isBoolScalar(*e.cond)) {
    diags_.error("E0207", e.cond->loc,
                 "condition must be a bool scalar, found " +
                     (e.cond->info.types.size() == 1 ? e.cond->info.types[0].str()
                                                     : plural(e.cond->info.types.size(), "value")) +
                     (e.cond->info.types.size() == 1 && !e.cond->info.types[0].isScalar()
                          ? " (reduce it first, e.g. sum(x) > 0.0, or use select)"
                          : ""));
    ok = false;
  }
  std::vector<TensorType> thenTypes, elseTypes;
  std::vector<Expr *> thenExprs, elseExprs;
  bool thenOk = checkRegionBlock(e.thenBlock, thenTypes, thenExprs);
  bool elseOk = !e.elseBlock || checkRegionBlock(*e.elseBlock, elseTypes, elseExprs);
  if (!ok || !thenOk || !elseOk)
    return false;
  if (!e.elseBlock) {
    if (!thenTypes.empty()) {
      diags_.error("E0206", e.loc, "an 'if' that yields a value needs an 'else' branch");
      return false;
    }
    return true;
  }
  if (thenTypes.size() != elseTypes.size()) {
    diags_.error("E0206", e.loc, "branches yield different numbers of values: " +
                                     std::to_string(thenTypes.size()) + " and " +
                                     std::to_string(elseTypes.size()));
    return false;
  }
  if (thenExprs.size() == thenTypes.size() && elseExprs.size() == elseTypes.size())
    for (size_t i = 0; i < thenExprs.size(); ++i) {
      if (!unifyWeak({thenExprs[i], elseExprs[i]}))
        return false;
      commitDefault(*thenExprs[i]);
      commitDefault(*elseExprs[i]);
      thenTypes[i] = thenExprs[i]->info.types[0];
      elseTypes[i] = elseExprs[i]->info.types[0];
    }
  for (size_t i = 0; i < thenTypes.size(); ++i)
    if (!ir::typesCompatible(thenTypes[i], elseTypes[i]) ||
        thenTypes[i].rank() != elseTypes[i].rank()) {
      auto &d = diags_.error("E0206", e.loc, "branches yield different types: " +
                                                 thenTypes[i].str() + " and " +
                                                 elseTypes[i].str());
      if (i < thenExprs.size() && i < elseExprs.size()) {
        d.notes.push_back({thenExprs[i]->loc, "then branch yields " + thenTypes[i].str()});
        d.notes.push_back({elseExprs[i]->loc, "else branch yields " + elseTypes[i].str()});
      }
      return false;
    }
  e.info.types = thenTypes;
  return true;
}

bool Sema::checkCarries(std::vector<Carry> &carries, std::vector<TensorType> &types) {
  bool ok = true;
  for (Carry &c : carries) {
    if (!checkExpr(*c.init) || !requireTensor(*c.init, "a carried value")) {
      ok = false;
      types.push_back(TensorType(DType::F32, {}));
      continue;
    }
    commitDefault(*c.init);
    types.push_back(c.init->info.types[0]);
  }
  return ok;
}

bool Sema::checkLoopBody(const Block &body, const std::vector<Carry> &carries,
                         const std::vector<TensorType> &carryTypes, const char *what) {
  std::vector<TensorType> yielded;
  std::vector<Expr *> yieldExprs;
  unsigned before = diags_.errorCount();
  bool saw = false;
  checkStatements(body, false, &yielded, &yieldExprs, saw);
  if (diags_.errorCount() != before)
    return false;
  if (!saw && !carries.empty()) {
    diags_.error("E0206", body.close.valid() ? body.close : body.open,
                 std::string("the ") + what + " body must end with 'yield' of its " +
                     plural(carries.size(), "carried value"));
    return false;
  }
  if (yielded.size() != carries.size()) {
    diags_.error("E0206", body.close.valid() ? body.close : body.open,
                 std::string("the ") + what + " body yields " +
                     plural(yielded.size(), "value") + " but carries " +
                     std::to_string(carries.size()));
    return false;
  }
  for (size_t i = 0; i < yielded.size(); ++i) {
    TensorType got = yielded[i];
    Expr *ye = yieldExprs.size() == yielded.size() ? yieldExprs[i] : nullptr;
    if (ye && ye->info.weak) {
      if (!adopt(*ye, carryTypes[i].dtype))
        return false;
      got = ye->info.types[0];
    }
    if (!ir::typesCompatible(got, carryTypes[i]) || got.rank() != carryTypes[i].rank()) {
      auto &d = diags_.error("E0206", ye ? ye->loc : body.close,
                             std::string("each iteration must yield the carried types: '") +
                                 carries[i].name.name + "' starts as " + carryTypes[i].str() +
                                 " but the body yields " + got.str());
      d.notes.push_back({carries[i].name.loc, "'" + carries[i].name.name + "' is carried here"});
      return false;
    }
  }
  return true;
}

bool Sema::checkFor(ForExpr &e) {
  bool ok = true;
  for (ExprPtr *b : {&e.lo, &e.hi}) {
    if (!checkExpr(**b) || !requireTensor(**b, "a loop bound")) {
      ok = false;
      continue;
    }
    commitDefault(**b);
    const TensorType &t = (*b)->info.types[0];
    if (!t.isScalar() || t.dtype != DType::I64) {
      diags_.error("E0201", (*b)->loc, "loop bounds must be i64 scalars, found " + t.str());
      ok = false;
    }
  }
  std::vector<TensorType> carryTypes;
  ok &= checkCarries(e.carries, carryTypes);
  if (!ok)
    return false;
  pushScope();
  bind(e.var, TensorType::scalar(DType::I64));
  for (size_t i = 0; i < e.carries.size(); ++i)
    bind(e.carries[i].name, carryTypes[i]);
  ok = checkLoopBody(e.body, e.carries, carryTypes, "for");
  popScope();
  if (ok)
    e.info.types = carryTypes;
  return ok;
}

bool Sema::checkWhile(WhileExpr &e) {
  std::vector<TensorType> carryTypes;
  if (!checkCarries(e.carries, carryTypes))
    return false;
  pushScope();
  for (size_t i = 0; i < e.carries.size(); ++i)
    bind(e.carries[i].name, carryTypes[i]);
  bool ok = checkExpr(*e.cond);
  if (ok && !isBoolScalar(*e.cond)) {
    diags_.error("E0207", e.cond->loc, "loop condition must be a bool scalar, found " +
                                           (e.cond->info.types.size() == 1
                                                ? e.cond->info.types[0].str()
                                                : plural(e.cond->info.types.size(), "value")));
    ok = false;
  }
  popScope();
  pushScope();
  for (size_t i = 0; i < e.carries.size(); ++i)
    bind(e.carries[i].name, carryTypes[i]);
  ok &= checkLoopBody(e.body, e.carries, carryTypes, "while");
  popScope();
  if (ok)
    e.info.types = carryTypes;
  return ok;
}

} // namespace mdl::frontend
