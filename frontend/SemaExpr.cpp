// Semantic analysis of expressions: names, literals with weak element
// types, operators, calls (user functions with symbol binding, standard
// library operations with their signatures), indexing and control flow.
#include "frontend/SemaImpl.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mdl::frontend {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::TensorType;
using stdlib::ParamKind;

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

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
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
  auto r = stdlib::inferTypes(e.op == UnaryOp::Neg ? ir::OpKind::Neg : ir::OpKind::Not,
                              {e.operand->info.types[0]}, attrs);
  if (!r.ok()) {
    reportRule(*r.error, e.loc, {e.operand.get()});
    return false;
  }
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
  e.info.types = r.types;
  bool producesBool = r.types[0].dtype == DType::Bool;
  if (bothWeak && producesBool) {
    commitDefault(*e.lhs);
    commitDefault(*e.rhs);
  }
  e.info.weak = bothWeak && !producesBool;
  return true;
}

bool Sema::checkCall(CallExpr &e) {
  auto fn = out_->fnByName.find(e.callee.name);
  if (fn != out_->fnByName.end())
    return checkUserCall(e, *fn->second);
  if (const stdlib::OpInfo *info = stdlib::lookupCallable(e.callee.name))
    return checkBuiltinCall(e, *info);
  const std::string &n = e.callee.name;
  if (n == "load" || n == "fill") {
    diags_.error("E0104", e.callee.loc,
                 "'" + n + "' is only allowed as a param initializer: param w : f32[4] = " +
                     n + "(...)");
    return false;
  }
  std::vector<std::string> candidates = stdlib::callableNames();
  for (auto &kv : out_->fnByName)
    candidates.push_back(kv.first);
  auto &d = diags_.error("E0104", e.callee.loc, "unknown function '" + n + "'" +
                                                    didYouMean(n, candidates));
  (void)d;
  // Check the arguments anyway so their own errors are reported.
  for (Arg &a : e.args)
    if (a.value->kind != ExprKind::Type && a.value->kind != ExprKind::StringLit)
      checkExpr(*a.value);
  return false;
}

bool Sema::checkUserCall(CallExpr &e, const FnItem &fn) {
  if (!currentFn_) {
    diags_.error("E0104", e.callee.loc, "consts and params cannot call functions");
    return false;
  }
  calls_[currentFn_].push_back({&fn, e.callee.loc});
  // Map arguments to parameters.
  std::vector<Expr *> bound(fn.params.size(), nullptr);
  size_t pos = 0;
  bool ok = true;
  for (Arg &a : e.args) {
    size_t idx;
    if (a.keyword) {
      auto it = std::find_if(fn.params.begin(), fn.params.end(),
                             [&](const FnParam &p) { return p.name.name == a.keyword->name; });
      if (it == fn.params.end()) {
        diags_.error("E0204", a.keyword->loc, "'" + fn.name.name + "' has no argument '" +
                                                  a.keyword->name + "'");
        ok = false;
        continue;
      }
      idx = size_t(it - fn.params.begin());
    } else {
      idx = pos++;
      if (idx >= fn.params.size()) {
        diags_.error("E0204", a.value->loc, "'" + fn.name.name + "' takes " +
                                                plural(fn.params.size(), "argument") +
                                                ", got " + std::to_string(e.args.size()));
        ok = false;
        break;
      }
    }
    if (bound[idx]) {
      diags_.error("E0204", a.value->loc, "argument '" + fn.params[idx].name.name +
                                              "' given twice");
      ok = false;
      continue;
    }
    bound[idx] = a.value.get();
  }
  for (size_t i = 0; i < fn.params.size(); ++i)
    if (!bound[i] && ok) {
      auto &d = diags_.error("E0204", e.close.valid() ? e.close : e.loc,
                             "missing argument '" + fn.params[i].name.name + "' of '" +
                                 fn.name.name + "'");
      d.notes.push_back({fn.loc, "'" + fn.name.name + "' is defined here"});
      ok = false;
    }
  for (Expr *arg : bound)
    if (arg && (!checkExpr(*arg) || !requireTensor(*arg, "an argument")))
      ok = false;
  if (!ok)
    return false;
  // Bind symbols and check each argument against its declared type.
  std::map<std::string, std::pair<Dim, std::string>> binding; // sym -> (dim, arg)
  CallInfo ci;
  ci.userFunction = true;
  ci.fn = &fn;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    Expr &arg = *bound[i];
    const FnParam &p = fn.params[i];
    if (arg.info.weak && !adopt(arg, p.type.dtype))
      return false;
    const TensorType &got = arg.info.types[0];
    std::string argName = "argument '" + p.name.name + "' of '" + fn.name.name + "'";
    if (got.dtype != p.type.dtype) {
      auto &d = diags_.error("E0201", arg.loc, argName + " is " + got.str() + ", expected " +
                                                   ir::dtypeName(p.type.dtype) +
                                                   " (use cast(x, " +
                                                   ir::dtypeName(p.type.dtype) + "))");
      d.notes.push_back({p.name.loc, "declared here"});
      ok = false;
      continue;
    }
    if (got.rank() != int(p.type.dims.size())) {
      auto &d = diags_.error("E0202", arg.loc,
                             argName + " has rank " + std::to_string(got.rank()) +
                                 ", expected rank " + std::to_string(p.type.dims.size()));
      d.notes.push_back({p.type.loc, "declared here"});
      ok = false;
      continue;
    }
    for (size_t k = 0; k < p.type.dims.size(); ++k) {
      const DimNode &pd = p.type.dims[k];
      const Dim &ad = got.dims[k];
      if (pd.size) {
        if (ad.isStatic() && ad.size != *pd.size) {
          auto &d = diags_.error("E0202", arg.loc,
                                 argName + " has size " + ad.str() + " in dimension " +
                                     std::to_string(k) + ", expected " +
                                     std::to_string(*pd.size));
          d.notes.push_back({pd.loc, "declared here"});
          ok = false;
        }
        continue;
      }
      auto b = binding.find(pd.sym);
      if (b == binding.end()) {
        binding[pd.sym] = {ad, p.name.name};
        continue;
      }
      const Dim &prev = b->second.first;
      bool conflict = (prev.isStatic() && ad.isStatic() && prev.size != ad.size) ||
                      (prev.isSymbol() && ad.isSymbol() && prev.sym != ad.sym) ||
                      (prev.isStatic() != ad.isStatic() && !prev.isUnknown() &&
                       !ad.isUnknown());
      if (conflict) {
        auto &d = diags_.error("E0205", e.loc,
                               "symbol '" + pd.sym + "' of '" + fn.name.name +
                                   "' is bound to " + prev.str() + " by argument '" +
                                   b->second.second + "' and to " + ad.str() +
                                   " by argument '" + p.name.name + "'");
        d.notes.push_back({fn.loc, "'" + fn.name.name + "' is defined here"});
        ok = false;
      }
    }
    ci.operands.push_back(&arg);
  }
  if (!ok)
    return false;
  // Results: declared, or inferred from the callee's body.
  auto res = out_->fnResults.find(&fn);
  if (res == out_->fnResults.end() && !fn.hasResults) {
    // Check the callee now, saving our own context.
    auto savedScopes = std::move(scopes_);
    auto savedSymbols = std::move(currentSymbols_);
    const FnItem *savedFn = currentFn_;
    int savedDepth = exprDepth_;
    if (!bodyState_.count(&fn)) {
      bodyState_[&fn] = 1;
      checkBody(fn);
      bodyState_[&fn] = 2;
    }
    scopes_ = std::move(savedScopes);
    currentSymbols_ = std::move(savedSymbols);
    currentFn_ = savedFn;
    exprDepth_ = savedDepth;
    res = out_->fnResults.find(&fn);
  }
  if (res == out_->fnResults.end())
    return false; // the callee had errors or is recursive (reported elsewhere)
  for (const TensorType &t : res->second) {
    TensorType r = t;
    for (Dim &d : r.dims)
      if (d.isSymbol()) {
        auto b = binding.find(d.sym);
        d = b == binding.end() ? Dim::unknown() : b->second.first;
      }
    e.info.types.push_back(r);
  }
  out_->calls[&e] = std::move(ci);
  return true;
}

bool Sema::checkBuiltinCall(CallExpr &e, const stdlib::OpInfo &info) {
  const std::string callee = std::string(info.callName) + "()";
  const auto &params = info.params;
  std::vector<Expr *> bound(params.size(), nullptr);
  std::vector<Expr *> variadic;
  size_t pos = 0;
  bool ok = true;
  auto paramList = [&] {
    std::string s;
    for (auto &p : params)
      s += (s.empty() ? "" : ", ") + std::string(p.name);
    return s;
  };
  for (Arg &a : e.args) {
    if (a.keyword) {
      auto it = std::find_if(params.begin(), params.end(), [&](const stdlib::ParamSpec &p) {
        return a.keyword->name == p.name && p.kind != ParamKind::Variadic;
      });
      if (it == params.end()) {
        diags_.error("E0204", a.keyword->loc, "unknown keyword '" + a.keyword->name +
                                                  "' for " + callee + " (expected: " +
                                                  paramList() + ")");
        ok = false;
        continue;
      }
      size_t idx = size_t(it - params.begin());
      if (bound[idx]) {
        diags_.error("E0204", a.keyword->loc, "argument '" + a.keyword->name + "' given twice");
        ok = false;
        continue;
      }
      bound[idx] = a.value.get();
      continue;
    }
    if (pos < params.size() && params[pos].kind == ParamKind::Variadic) {
      variadic.push_back(a.value.get());
      continue;
    }
    if (pos >= params.size()) {
      diags_.error("E0204", a.value->loc, callee + " takes " +
                                              plural(params.size(), "argument") + " (" +
                                              paramList() + "), got " +
                                              std::to_string(e.args.size()));
      ok = false;
      break;
    }
    bound[pos++] = a.value.get();
  }
  for (size_t i = 0; i < params.size() && ok; ++i)
    if (!bound[i] && params[i].required && params[i].kind != ParamKind::Variadic) {
      diags_.error("E0204", e.close.valid() ? e.close : e.loc,
                   callee + " is missing argument '" + params[i].name + "' (" +
                       paramList() + ")");
      ok = false;
    }
  CallInfo ci;
  ci.kind = info.kind;
  std::vector<Expr *> operands;
  for (size_t i = 0; i < params.size(); ++i) {
    const stdlib::ParamSpec &p = params[i];
    if (p.kind == ParamKind::Tensor) {
      if (bound[i]) {
        if (!checkExpr(*bound[i]) || !requireTensor(*bound[i], "an argument"))
          ok = false;
        operands.push_back(bound[i]);
      }
    } else if (p.kind == ParamKind::TensorList) {
      if (!bound[i])
        continue;
      if (bound[i]->kind != ExprKind::TensorLit) {
        diags_.error("E0204", bound[i]->loc, callee + " expects a list of tensors: " +
                                                 info.callName + "([a, b])");
        ok = false;
        continue;
      }
      for (auto &el : static_cast<TensorLit &>(*bound[i]).elements) {
        if (!checkExpr(*el) || !requireTensor(*el, "a list element"))
          ok = false;
        operands.push_back(el.get());
      }
    } else if (p.kind == ParamKind::Variadic) {
      for (Expr *v : variadic) {
        if (!checkExpr(*v) || !requireTensor(*v, "an argument"))
          ok = false;
        operands.push_back(v);
      }
    } else if (bound[i]) {
      Attribute a;
      if (evalAttr(*bound[i], p, a, callee))
        ci.attrs.push_back({p.name, std::move(a)});
      else
        ok = false;
    } else if (p.dflt) {
      ci.attrs.push_back({p.name, *p.dflt});
    }
  }
  if (!ok)
    return false;
  // Weak literals take the element type of their strong partners.
  using stdlib::OpClass;
  switch (info.cls) {
  case OpClass::ElementwiseBinary:
  case OpClass::Comparison:
  case OpClass::LinearAlgebra:
    ok = unifyWeak(operands);
    break;
  case OpClass::ElementwiseOther:
    if (info.kind == ir::OpKind::Select)
      ok = unifyWeak({operands[1], operands[2]});
    else if (info.kind == ir::OpKind::Clip)
      ok = unifyWeak(operands);
    break;
  case OpClass::Neural:
    if (info.kind == ir::OpKind::Layernorm)
      ok = unifyWeak(operands);
    break;
  case OpClass::Shape:
    if (info.kind == ir::OpKind::Concat || info.kind == ir::OpKind::Stack)
      ok = unifyWeak(operands);
    break;
  default:
    break;
  }
  if (!ok)
    return false;
  bool allWeak = !operands.empty();
  for (Expr *o : operands)
    allWeak &= o->info.weak;
  bool keepWeak = allWeak && (info.cls == OpClass::ElementwiseBinary ||
                              info.kind == ir::OpKind::Neg ||
                              info.kind == ir::OpKind::Abs);
  if (!keepWeak)
    for (Expr *o : operands)
      commitDefault(*o);
  std::vector<TensorType> types;
  for (Expr *o : operands)
    types.push_back(o->info.types[0]);
  auto r = stdlib::inferTypes(info.kind, types, ci.attrs);
  if (!r.ok()) {
    reportRule(*r.error, e.loc, operands);
    return false;
  }
  e.info.types = r.types;
  e.info.weak = keepWeak;
  ci.operands.assign(operands.begin(), operands.end());
  out_->calls[&e] = std::move(ci);
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
