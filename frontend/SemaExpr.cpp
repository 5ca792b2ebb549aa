// Semantic analysis of expressions: names, literals with weak element
// types, operators and indexing (calls are in SemaCall.cpp, control flow
// in SemaControl.cpp).
#include "frontend/SemaImpl.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mdl::frontend {

namespace {
constexpr int kMaxExprDepth = 200000;

ir::OpKind binaryKind(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or: return ir::OpKind::Or;
  case BinaryOp::And: return ir::OpKind::And;
  case BinaryOp::Eq: return ir::OpKind::Eq;
  case BinaryOp::Ne: return ir::OpKind::Ne;
  case BinaryOp::Lt: return ir::OpKind::Lt;
  case BinaryOp::Le: return ir::OpKind::Le;
  case BinaryOp::Gt: return ir::OpKind::Gt;
  case BinaryOp::Ge: return ir::OpKind::Ge;
  case BinaryOp::Add: return ir::OpKind::Add;
  case BinaryOp::Sub: return ir::OpKind::Sub;
  case BinaryOp::Mul: return ir::OpKind::Mul;
  case BinaryOp::Div: return ir::OpKind::Div;
  case BinaryOp::Mod: return ir::OpKind::Mod;
  case BinaryOp::MatMul: return ir::OpKind::Matmul;
  }
  return ir::OpKind::Add;
}

// Changes the tentative dtype of a weak subtree, keeping it weak.
void retagWeak(Expr &x, DType d) {
  if (!x.info.weak)
    return;
  x.info.types[0].dtype = d;
  if (x.kind == ExprKind::TensorLit)
    for (auto &el : static_cast<TensorLit &>(x).elements)
      retagWeak(*el, d);
  else if (x.kind == ExprKind::Unary)
    retagWeak(*static_cast<UnaryExpr &>(x).operand, d);
  else if (x.kind == ExprKind::Binary) {
    retagWeak(*static_cast<BinaryExpr &>(x).lhs, d);
    retagWeak(*static_cast<BinaryExpr &>(x).rhs, d);
  } else if (x.kind == ExprKind::On)
    retagWeak(*static_cast<OnExpr &>(x).expr, d);
}

} // namespace

const char *binaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or: return "||";
  case BinaryOp::And: return "&&";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Mod: return "%";
  case BinaryOp::MatMul: return "@";
  }
  return "?";
}

// --- weak literals ---------------------------------------------------------

bool Sema::adopt(Expr &e, DType d) {
  if (!e.info.weak)
    return true;
  DType cur = e.info.types[0].dtype;
  bool curFloat = ir::isFloat(cur);
  if (d == DType::Bool || (curFloat && !ir::isFloat(d))) {
    diags_.error("E0201", e.loc,
                 std::string(curFloat ? "a float literal" : "an integer literal") +
                     " cannot take element type " + ir::dtypeName(d) +
                     (curFloat ? " (use cast(x, f32) on the tensor, or write an integer)"
                               : " (use cast)"));
    return false;
  }
  switch (e.kind) {
  case ExprKind::TensorLit:
    for (auto &el : static_cast<TensorLit &>(e).elements)
      adopt(*el, d);
    break;
  case ExprKind::Unary:
    adopt(*static_cast<UnaryExpr &>(e).operand, d);
    break;
  case ExprKind::Binary: {
    auto &b = static_cast<BinaryExpr &>(e);
    adopt(*b.lhs, d);
    adopt(*b.rhs, d);
    break;
  }
  case ExprKind::On:
    adopt(*static_cast<OnExpr &>(e).expr, d);
    break;
  default:
    break;
  }
  e.info.types[0].dtype = d;
  e.info.weak = false;
  return true;
}

void Sema::commitDefault(Expr &e) {
  if (e.info.weak)
    adopt(e, e.info.types[0].dtype);
}

bool Sema::unifyWeak(const std::vector<Expr *> &ops) {
  const Expr *strong = nullptr;
  for (Expr *o : ops)
    if (!o->info.weak) {
      strong = o;
      break;
    }
  if (strong) {
    bool ok = true;
    for (Expr *o : ops)
      ok &= adopt(*o, strong->info.types[0].dtype);
    return ok;
  }
  // All weak: they stay weak but agree on float vs integer.
  bool anyFloat = false;
  for (Expr *o : ops)
    anyFloat |= ir::isFloat(o->info.types[0].dtype);
  if (anyFloat)
    for (Expr *o : ops)
      retagWeak(*o, DType::F32);
  return true;
}

// --- helpers ---------------------------------------------------------------

bool Sema::requireTensor(Expr &e, const char *what) {
  if (e.info.types.size() == 1)
    return true;
  if (e.info.types.empty())
    diags_.error("E0204", e.loc, std::string(what) + " has no value");
  else
    diags_.error("E0204", e.loc,
                 std::string(what) + " gives " + plural(e.info.types.size(), "value") +
                     "; bind them with let (a, b) = ... first");
  return false;
}

void Sema::reportRule(const stdlib::RuleError &err, const Location &loc,
                      const std::vector<Expr *> &operands) {
  auto &d = diags_.error(err.code, loc, err.message);
  if (operands.size() >= 2 && operands.size() <= 4)
    for (size_t i = 0; i < operands.size(); ++i)
      if (operands[i]->info.types.size() == 1)
        d.notes.push_back({operands[i]->loc, "operand " + std::to_string(i + 1) + " is " +
                                                 operands[i]->info.types[0].str()});
}

std::optional<int64_t> Sema::evalInt(const Expr &e) {
  switch (e.kind) {
  case ExprKind::IntLit:
    return static_cast<const IntLit &>(e).value;
  case ExprKind::Unary: {
    auto &u = static_cast<const UnaryExpr &>(e);
    if (u.op != UnaryOp::Neg)
      return std::nullopt;
    auto v = evalInt(*u.operand);
    if (v)
      return int64_t(0ull - uint64_t(*v));
    return std::nullopt;
  }
  case ExprKind::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    auto x = evalInt(*b.lhs), y = evalInt(*b.rhs);
    if (!x || !y)
      return std::nullopt;
    switch (b.op) {
    case BinaryOp::Add: return int64_t(uint64_t(*x) + uint64_t(*y));
    case BinaryOp::Sub: return int64_t(uint64_t(*x) - uint64_t(*y));
    case BinaryOp::Mul: return int64_t(uint64_t(*x) * uint64_t(*y));
    case BinaryOp::Div:
    case BinaryOp::Mod: {
      if (*y == 0 || (*x == INT64_MIN && *y == -1))
        return std::nullopt;
      int64_t q = *x / *y, r = *x % *y;
      if (r != 0 && ((r < 0) != (*y < 0))) {
        --q;
        r += *y;
      }
      return b.op == BinaryOp::Div ? q : r;
    }
    default: return std::nullopt;
    }
  }
  case ExprKind::Name: {
    auto it = items_.find(static_cast<const NameExpr &>(e).name);
    if (it == items_.end() || it->second->kind != ItemKind::Const ||
        lookupLocal(it->first))
      return std::nullopt;
    auto &st = constState_[it->first];
    if (st == ConstState::InProgress)
      return std::nullopt;
    ConstState saved = st;
    st = ConstState::InProgress;
    auto v = evalInt(*static_cast<const ConstItem &>(*it->second).value);
    constState_[it->first] = saved;
    return v;
  }
  case ExprKind::On:
    return evalInt(*static_cast<const OnExpr &>(e).expr);
  default:
    return std::nullopt;
  }
}

std::optional<double> Sema::evalNumber(const Expr &e) {
  switch (e.kind) {
  case ExprKind::FloatLit:
    return static_cast<const FloatLit &>(e).value;
  case ExprKind::IntLit:
    return double(static_cast<const IntLit &>(e).value);
  case ExprKind::Unary: {
    auto &u = static_cast<const UnaryExpr &>(e);
    if (u.op != UnaryOp::Neg)
      return std::nullopt;
    auto v = evalNumber(*u.operand);
    return v ? std::optional<double>(-*v) : std::nullopt;
  }
  case ExprKind::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    auto x = evalNumber(*b.lhs), y = evalNumber(*b.rhs);
    if (!x || !y)
      return std::nullopt;
    switch (b.op) {
    case BinaryOp::Add: return *x + *y;
    case BinaryOp::Sub: return *x - *y;
    case BinaryOp::Mul: return *x * *y;
    case BinaryOp::Div: return *x / *y;
    default: return std::nullopt;
    }
  }
  case ExprKind::Name: {
    auto it = items_.find(static_cast<const NameExpr &>(e).name);
    if (it == items_.end() || it->second->kind != ItemKind::Const ||
        lookupLocal(it->first))
      return std::nullopt;
    auto &st = constState_[it->first];
    if (st == ConstState::InProgress)
      return std::nullopt;
    ConstState saved = st;
    st = ConstState::InProgress;
    auto v = evalNumber(*static_cast<const ConstItem &>(*it->second).value);
    constState_[it->first] = saved;
    return v;
  }
  default:
    return std::nullopt;
  }
}

bool Sema::evalAttr(const Expr &e, const stdlib::ParamSpec &p, Attribute &out,
                    const std::string &callee) {
  auto bad = [&](const std::string &what) {
    diags_.error("E0204", e.loc, "'" + std::string(p.name) + "' of " + callee +
                                     " must be " + what);
    return false;
  };
  auto intList = [&](const Expr &x, std::vector<int64_t> &v) {
    if (x.kind != ExprKind::TensorLit)
      return false;
    for (auto &el : static_cast<const TensorLit &>(x).elements) {
      auto i = evalInt(*el);
      if (!i)
        return false;
      v.push_back(*i);
    }
    return true;
  };
  switch (p.kind) {
  case ParamKind::Int: {
    auto v = evalInt(e);
    if (!v)
      return bad("an integer constant");
    out = Attribute::integer(*v);
    return true;
  }
  case ParamKind::Axes:
  case ParamKind::IntPair: {
    std::vector<int64_t> v;
    if (intList(e, v)) {
      if (p.kind == ParamKind::IntPair && v.size() != 2)
        return bad("an integer or a pair [h, w]");
      out = Attribute::intList(v);
      return true;
    }
    auto i = evalInt(e);
    if (!i)
      return bad(p.kind == ParamKind::Axes ? "an integer or a list of integers"
                                           : "an integer or a pair [h, w]");
    out = Attribute::integer(*i);
    return true;
  }
  case ParamKind::IntList: {
    std::vector<int64_t> v;
    if (!intList(e, v))
      return bad("a list of integer constants");
    out = Attribute::intList(v);
    return true;
  }
  case ParamKind::IntPairs: {
    if (e.kind != ExprKind::TensorLit)
      return bad("a list of [lo, hi] pairs");
    std::vector<int64_t> flat;
    for (auto &el : static_cast<const TensorLit &>(e).elements) {
      std::vector<int64_t> pair;
      if (!intList(*el, pair) || pair.size() != 2)
        return bad("a list of [lo, hi] pairs");
      flat.insert(flat.end(), pair.begin(), pair.end());
    }
    out = Attribute::intList(flat);
    return true;
  }
  case ParamKind::DimList:
  case ParamKind::DimValue: {
    auto dimOf = [&](const Expr &x, Dim &d) {
      if (auto i = evalInt(x)) {
        d = Dim::of(*i);
        return true;
      }
      if (x.kind == ExprKind::Name) {
        const std::string &n = static_cast<const NameExpr &>(x).name;
        if (currentSymbols_.count(n) && !lookupLocal(n)) {
          d = Dim::symbol(n);
          return true;
        }
      }
      return false;
    };
    ir::Shape dims;
    if (p.kind == ParamKind::DimValue) {
      Dim d;
      if (!dimOf(e, d))
        return bad("an integer constant or a dimension symbol");
      dims.push_back(d);
    } else {
      if (e.kind != ExprKind::TensorLit)
        return bad("a shape such as [2, -1]");
      for (auto &el : static_cast<const TensorLit &>(e).elements) {
        Dim d;
        if (!dimOf(*el, d))
          return bad("a shape of integer constants, -1 or dimension symbols");
        dims.push_back(d);
      }
    }
    out = Attribute::dimList(dims);
    return true;
  }
  case ParamKind::Number: {
    if (auto i = evalInt(e)) {
      out = Attribute::integer(*i);
      return true;
    }
    auto v = evalNumber(e);
    if (!v)
      return bad("a number constant");
    out = Attribute::real(*v);
    return true;
  }
  case ParamKind::Bool:
    if (e.kind != ExprKind::BoolLit)
      return bad("true or false");
    out = Attribute::boolean(static_cast<const BoolLit &>(e).value);
    return true;
  case ParamKind::DType: {
    if (e.kind != ExprKind::Type || static_cast<const TypeExpr &>(e).type.hasShape)
      return bad("an element type such as f32");
    out = Attribute::dtype(static_cast<const TypeExpr &>(e).type.dtype);
    return true;
  }
  case ParamKind::Type: {
    if (e.kind != ExprKind::Type)
      return bad("a tensor type such as f32[3, 4]");
    TensorType t;
    if (!resolveType(static_cast<const TypeExpr &>(e).type, t, false))
      return false;
    out = Attribute::type(t);
    return true;
  }
  case ParamKind::Device: {
    if (e.kind != ExprKind::Name)
      return bad("a device name");
    auto &n = static_cast<const NameExpr &>(e);
    if (!deviceDeclared(Ident{n.name, n.loc}))
      return false;
    out = Attribute::symbol(n.name);
    return true;
  }
  case ParamKind::String:
    if (e.kind != ExprKind::StringLit)
      return bad("a string");
    out = Attribute::string(static_cast<const StringLit &>(e).value);
    return true;
  case ParamKind::Function: {
    if (e.kind != ExprKind::Name)
      return bad("the name of a function");
    const auto &n = static_cast<const NameExpr &>(e);
    if (!out_->fnByName.count(n.name)) {
      diags_.error("E0101", e.loc, "'" + n.name + "' is not a function of the program");
      return false;
    }
    out = Attribute::symbol(n.name);
    return true;
  }
  default:
    return bad("a constant");
  }
}

// --- expressions -------------------------------------------------------------

bool Sema::checkExpr(Expr &e) {
  if (++exprDepth_ > kMaxExprDepth) {
    diags_.error("E0001", e.loc, "expression nested too deeply (more than " +
                                     std::to_string(kMaxExprDepth) + " levels)");
    --exprDepth_;
    return false;
  }
  e.info.types.clear();
  e.info.weak = false;
  bool ok = false;
  switch (e.kind) {
  case ExprKind::IntLit:
    e.info.types = {TensorType::scalar(DType::I64)};
    e.info.weak = true;
    ok = true;
    break;
  case ExprKind::FloatLit:
    e.info.types = {TensorType::scalar(DType::F32)};
    e.info.weak = true;
    ok = true;
    break;
  case ExprKind::BoolLit:
    e.info.types = {TensorType::scalar(DType::Bool)};
    ok = true;
    break;
  case ExprKind::StringLit:
    diags_.error("E0204", e.loc, "a string is not a tensor value");
    break;
  case ExprKind::Type:
    diags_.error("E0204", e.loc,
                 "a type is not a value here (types are arguments of zeros, ones, "
                 "full, cast, random_normal and random_uniform)");
    break;
  case ExprKind::Name: ok = checkName(static_cast<NameExpr &>(e)); break;
  case ExprKind::TensorLit: ok = checkTensorLit(static_cast<TensorLit &>(e)); break;
  case ExprKind::Unary: ok = checkUnary(static_cast<UnaryExpr &>(e)); break;
  case ExprKind::Binary: ok = checkBinary(static_cast<BinaryExpr &>(e)); break;
  case ExprKind::Call: ok = checkCall(static_cast<CallExpr &>(e)); break;
  case ExprKind::Index: ok = checkIndex(static_cast<IndexExpr &>(e)); break;
  case ExprKind::If: ok = checkIf(static_cast<IfExpr &>(e)); break;
  case ExprKind::For: ok = checkFor(static_cast<ForExpr &>(e)); break;
  case ExprKind::While: ok = checkWhile(static_cast<WhileExpr &>(e)); break;
  case ExprKind::On: {
    auto &on = static_cast<OnExpr &>(e);
    bool devOk = deviceDeclared(on.device);
    ok = checkExpr(*on.expr) && devOk;
    if (ok) {
      e.info.types = on.expr->info.types;
      e.info.weak = on.expr->info.weak;
    }
    break;
  }
  }
  --exprDepth_;
  e.info.checked = ok;
  return ok;
}

bool Sema::checkName(NameExpr &e) {
  if (LocalVar *v = lookupLocal(e.name)) {
    if (v->poisoned)
      return false;
    e.info.types = {v->type};
    return true;
  }
  auto it = items_.find(e.name);
  if (it != items_.end()) {
    if (it->second->kind == ItemKind::Const)
      checkConst(static_cast<const ConstItem &>(*it->second));
    auto t = out_->globalTypes.find(e.name);
    if (t == out_->globalTypes.end())
      return false; // its definition had an error
    e.info.types = {t->second};
    return true;
  }
  if (out_->fnByName.count(e.name)) {
    diags_.error("E0101", e.loc, "'" + e.name + "' is a function; call it: " + e.name + "(...)");
    return false;
  }
  if (out_->deviceByName.count(e.name)) {
    diags_.error("E0101", e.loc, "'" + e.name + "' is a device, not a value");
    return false;
  }
  if (currentSymbols_.count(e.name)) {
    diags_.error("E0101", e.loc, "'" + e.name + "' is a dimension symbol, not a value");
    return false;
  }
  diags_.error("E0101", e.loc,
               "undefined name '" + e.name + "'" + didYouMean(e.name, visibleNames()));
  return false;
}

bool Sema::checkTensorLit(TensorLit &e) {
  if (e.elements.empty()) {
    diags_.error("E0204", e.loc, "an empty tensor literal has no element type "
                                 "(use zeros(f32[0]))");
    return false;
  }
  bool ok = true;
  std::vector<Expr *> els;
  for (auto &el : e.elements) {
    if (!checkExpr(*el) || !requireTensor(*el, "a tensor literal element")) {
      ok = false;
      continue;
    }
    els.push_back(el.get());
  }
  if (!ok)
    return false;
  const TensorType &first = els[0]->info.types[0];
  for (Expr *el : els)
    if (el->info.types[0].dims != first.dims) {
      diags_.error("E0202", el->loc, "tensor literal elements have different shapes: " +
                                         first.str() + " and " + el->info.types[0].str());
      return false;
    }
  if (!unifyWeak(els))
    return false;
  for (Expr *el : els)
    if (el->info.types[0].dtype != els[0]->info.types[0].dtype) {
      diags_.error("E0201", el->loc, "tensor literal elements have different element types: " +
                                         els[0]->info.types[0].str() + " and " +
                                         el->info.types[0].str());
      return false;
    }
  ir::Shape dims{Dim::of(int64_t(els.size()))};
  dims.insert(dims.end(), first.dims.begin(), first.dims.end());
  e.info.types = {TensorType(els[0]->info.types[0].dtype, dims)};
  e.info.weak = els[0]->info.weak;
  if (e.info.types[0].byteSize() > 1024) {
    // Warn once, at the outermost literal.
    bool inner = false;
    for (Expr *el : els)
      inner |= el->kind == ExprKind::TensorLit && el->info.types[0].byteSize() > 1024;
    if (!inner)
      diags_.warning("W0701", e.loc,
                     "large constant (" + std::to_string(e.info.types[0].byteSize()) +
                         " bytes) written inline; move it to a weight file and load() it");
  }
  return true;
}

bool Sema::checkUnary(UnaryExpr &e) {
  if (!checkExpr(*e.operand) || !requireTensor(*e.operand, "the operand"))
    return false;
  std::vector<ir::NamedAttr> attrs;
  ir::OpKind k = e.op == UnaryOp::Neg ? ir::OpKind::Neg : ir::OpKind::Not;
  auto r = stdlib::inferTypes(k, {e.operand->info.types[0]}, attrs);
  if (!r.ok()) {
    reportRule(*r.error, e.loc, {e.operand.get()});
    return false;
  }
  e.info.op = k;
  e.info.types = r.types;
  e.info.weak = e.operand->info.weak;
  return true;
}

bool Sema::checkBinary(BinaryExpr &e) {
  bool okL = checkExpr(*e.lhs) && requireTensor(*e.lhs, "the left operand");
  bool okR = checkExpr(*e.rhs) && requireTensor(*e.rhs, "the right operand");
  if (!okL || !okR)
    return false;
  bool bothWeak = e.lhs->info.weak && e.rhs->info.weak;
  if (!unifyWeak({e.lhs.get(), e.rhs.get()}))
    return false;
  ir::OpKind k = binaryKind(e.op);
  std::vector<ir::NamedAttr> attrs;
  auto r = stdlib::inferTypes(k, {e.lhs->info.types[0], e.rhs->info.types[0]}, attrs);
  if (!r.ok()) {
    reportRule(*r.error, e.loc, {e.lhs.get(), e.rhs.get()});
    return false;
  }
  e.info.op = k;
  e.info.types = r.types;
  bool producesBool = r.types[0].dtype == DType::Bool;
  if (bothWeak && producesBool) {
    commitDefault(*e.lhs);
    commitDefault(*e.rhs);
  }
  e.info.weak = bothWeak && !producesBool;
  return true;
}

bool Sema::checkIndex(IndexExpr &e) {
  if (!checkExpr(*e.base) || !requireTensor(*e.base, "the indexed value"))
    return false;
  commitDefault(*e.base);
  const TensorType &bt = e.base->info.types[0];
  int rank = bt.rank();
  int given = 0, ellipses = 0;
  for (const IndexItem &it : e.items) {
    if (it.kind == IndexItem::Kind::Ellipsis)
      ++ellipses;
    else
      ++given;
  }
  if (ellipses > 1) {
    diags_.error("E0204", e.loc, "an index can have only one '...'");
    return false;
  }
  if (given > rank) {
    diags_.error("E0210", e.loc, "too many indices: " + bt.str() + " has rank " +
                                     std::to_string(rank) + " but " +
                                     std::to_string(given) + " indices are given");
    return false;
  }
  IndexInfo info;
  info.start.assign(rank, 0);
  info.stop.assign(rank, INT64_MAX);
  info.step.assign(rank, 1);
  int d = 0;
  bool ok = true;
  for (IndexItem &it : e.items) {
    if (it.kind == IndexItem::Kind::Ellipsis) {
      d += rank - given;
      continue;
    }
    if (it.kind == IndexItem::Kind::Single) {
      if (auto v = evalInt(*it.index)) {
        const Dim &dim = bt.dims[d];
        if (dim.isStatic() && (*v < -dim.size || *v >= dim.size)) {
          diags_.error("E0210", it.index->loc,
                       "index " + std::to_string(*v) + " is out of range for axis " +
                           std::to_string(d) + " with size " + std::to_string(dim.size));
          ok = false;
        }
        info.start[d] = *v;
        info.stop[d] = *v + 1;
        info.drop.push_back(d);
        info.needsSlice = true;
      } else {
        if (!checkExpr(*it.index) || !requireTensor(*it.index, "an index")) {
          ok = false;
        } else {
          commitDefault(*it.index);
          const TensorType &t = it.index->info.types[0];
          if (!t.isScalar() || !ir::isInteger(t.dtype)) {
            diags_.error("E0201", it.index->loc, "an index must be an integer scalar, found " +
                                                     t.str());
            ok = false;
          }
        }
        info.dynamic.push_back({d, it.index.get()});
      }
      ++d;
      continue;
    }
    // A slice: constant bounds.
    auto bound = [&](ExprPtr &x, int64_t dflt, int64_t &out) {
      if (!x) {
        out = dflt;
        return true;
      }
      auto v = evalInt(*x);
      if (!v) {
        diags_.error("E0204", x->loc, "slice bounds must be integer constants "
                                      "(use gather or dynamic indexing for run-time positions)");
        return false;
      }
      out = *v;
      return true;
    };
    int64_t step = 1;
    ok &= bound(it.step, 1, step);
    if (step == 0) {
      diags_.error("E0204", it.step->loc, "slice step cannot be zero");
      ok = false;
    }
    info.step[d] = step;
    ok &= bound(it.start, INT64_MAX, info.start[d]);
    ok &= bound(it.stop, INT64_MAX, info.stop[d]);
    if (info.start[d] == INT64_MAX && step > 0)
      info.start[d] = 0;
    info.needsSlice = true;
    ++d;
  }
  if (!ok)
    return false;
  // Omitted bounds on static dimensions become explicit.
  for (int i = 0; i < rank; ++i) {
    if (!bt.dims[i].isStatic())
      continue;
    int64_t n = bt.dims[i].size;
    if (info.step[i] > 0) {
      if (info.stop[i] == INT64_MAX)
        info.stop[i] = n;
    } else {
      if (info.start[i] == INT64_MAX)
        info.start[i] = n - 1;
      if (info.stop[i] == INT64_MAX)
        info.stop[i] = -n - 1;
    }
  }
  TensorType t = bt;
  if (info.needsSlice) {
    std::vector<ir::NamedAttr> attrs = {{"start", Attribute::intList(info.start)},
                                        {"stop", Attribute::intList(info.stop)},
                                        {"step", Attribute::intList(info.step)},
                                        {"drop", Attribute::intList(info.drop)}};
    auto r = stdlib::inferTypes(ir::OpKind::Slice, {t}, attrs);
    if (!r.ok()) {
      diags_.error(r.error->code, e.loc, r.error->message);
      return false;
    }
    t = r.types[0];
  }
  // Dynamic picks: axis after the static drops, applied highest first.
  for (auto &dyn : info.dynamic) {
    int64_t before = 0;
    for (int64_t dd : info.drop)
      before += dd < dyn.axis;
    dyn.axis -= before;
  }
  std::sort(info.dynamic.begin(), info.dynamic.end(),
            [](const IndexInfo::Dynamic &a, const IndexInfo::Dynamic &b) {
              return a.axis > b.axis;
            });
  for (auto &dyn : info.dynamic)
    t.dims.erase(t.dims.begin() + dyn.axis);
  e.info.types = {t};
  out_->indexes[&e] = std::move(info);
  return true;
}

} // namespace mdl::frontend
