// AST-to-IR lowering of a checked program: a mechanical translation. Every
// fact it needs was resolved by Sema and travels in the checked program
// (device arguments, param initializers, operation kinds and attributes,
// index splits); lowering evaluates nothing and looks no name up beyond its
// own scopes of SSA values.
//
// 1. Devices, as Sema resolved them (the implicit host device included).
// 2. Globals: each param or const gets an initializer region.
// 3. Functions: arguments become the body's region arguments; statements
//    are lowered in order with an environment of scopes (shadowing is just
//    rebinding); `on DEV` pushes a placement that every new operation takes
//    (innermost wins), except reads of globals, which stay unplaced so the
//    affinity pass can replicate them.
#include "frontend/Lower.h"
#include "ir/Half.h"
#include "ir/Saturate.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <map>

#include <cassert>
#include <cstring>
#include <unordered_map>

namespace mdl::frontend {

using ir::Attribute;
using ir::DType;
using ir::OpKind;
using ir::Operation;
using ir::Region;
using ir::TensorType;
using ir::Value;

namespace {

void appendScalar(DType dt, double v, int64_t iv, bool isInt, std::vector<uint8_t> &b) {
  auto put = [&](const void *p, size_t n) {
    const uint8_t *c = static_cast<const uint8_t *>(p);
    b.insert(b.end(), c, c + n);
  };
  if (!isInt)
    iv = ir::saturateToInt64(v); // only integer and bool element types read it
  else
    v = double(iv);
  switch (dt) {
  case DType::Bool: { uint8_t x = iv != 0; put(&x, 1); break; }
  case DType::I8: { int8_t x = int8_t(iv); put(&x, 1); break; }
  case DType::U8: { uint8_t x = uint8_t(iv); put(&x, 1); break; }
  case DType::I32: { int32_t x = int32_t(iv); put(&x, 4); break; }
  case DType::I64: put(&iv, 8); break;
  case DType::F16: { uint16_t x = ir::floatToHalf(float(v)); put(&x, 2); break; }
  case DType::BF16: { uint16_t x = ir::floatToBf16(float(v)); put(&x, 2); break; }
  case DType::F32: { float x = float(v); put(&x, 4); break; }
  case DType::F64: put(&v, 8); break;
  }
}

// Collects the elements of a literal-only expression; false if it is not one.
bool literalElements(const Expr &e, DType dt, std::vector<uint8_t> &bytes) {
  switch (e.kind) {
  case ExprKind::IntLit:
    appendScalar(dt, 0, static_cast<const IntLit &>(e).value, true, bytes);
    return true;
  case ExprKind::FloatLit:
    appendScalar(dt, static_cast<const FloatLit &>(e).value, 0, false, bytes);
    return true;
  case ExprKind::BoolLit:
    appendScalar(dt, 0, static_cast<const BoolLit &>(e).value, true, bytes);
    return true;
  case ExprKind::Unary: {
    auto &u = static_cast<const UnaryExpr &>(e);
    if (u.op != UnaryOp::Neg)
      return false;
    if (u.operand->kind == ExprKind::IntLit) {
      appendScalar(dt, 0, int64_t(0ull - uint64_t(static_cast<const IntLit &>(*u.operand).value)),
                   true, bytes);
      return true;
    }
    if (u.operand->kind == ExprKind::FloatLit) {
      appendScalar(dt, -static_cast<const FloatLit &>(*u.operand).value, 0, false, bytes);
      return true;
    }
    return false;
  }
  case ExprKind::TensorLit:
    for (auto &el : static_cast<const TensorLit &>(e).elements)
      if (!literalElements(*el, dt, bytes))
        return false;
    return true;
  default:
    return false;
  }
}

class Lowerer {
public:
  Lowerer(const CheckedProgram &c, ir::Module &m) : c_(c), m_(m) {}

  void lowerDevices() { m_.devices = c_.irDevices; }

  void lowerGlobals() {
    for (const Item *item : c_.globals) {
      ir::Global g;
      g.name = item->name.name;
      g.loc = item->loc;
      g.type = c_.globalTypes.at(g.name);
      g.init = std::make_unique<Region>();
      region_ = g.init.get();
      scopes_.assign(1, {});
      placement_.clear();
      Value *v;
      if (item->kind == ItemKind::Const) {
        v = lowerExpr(*static_cast<const ConstItem &>(*item).value)[0];
      } else {
        auto &p = static_cast<const ParamItem &>(*item);
        g.isParam = true;
        if (p.device)
          g.pinnedDevice = m_.findDevice(p.device->name);
        v = lowerParamInit(p, g.type);
      }
      emit(OpKind::Yield, {v}, {}, {}, item->loc);
      m_.globals.push_back(std::move(g));
    }
  }

  void lowerFunctions() {
    for (const FnItem *f : c_.functions) {
      auto fn = std::make_unique<ir::Function>();
      fn->name = f->name.name;
      fn->loc = f->loc;
      fn->resultTypes = c_.fnResults.at(f);
      region_ = fn->body.get();
      scopes_.assign(1, {});
      placement_.clear();
      for (const FnParam &p : f->params) {
        TensorType t = typeOf(p.type);
        for (const ir::Dim &d : t.dims)
          if (d.isSymbol() &&
              std::find(fn->symbols.begin(), fn->symbols.end(), d.sym) == fn->symbols.end())
            fn->symbols.push_back(d.sym);
        scopes_.back()[p.name.name] = region_->addArg(t);
        fn->argNames.push_back(p.name.name);
      }
      lowerStatements(f->body);
      // A function without results may end without `return` (Sema allows
      // it): the region still ends with one.
      if (region_->ops.empty() || region_->ops.back()->kind != OpKind::Return)
        emit(OpKind::Return, {}, {}, {}, f->body.close.valid() ? f->body.close : f->loc);
      m_.addFunction(std::move(fn));
    }
  }

private:
  static TensorType typeOf(const TypeNode &t) {
    TensorType out(t.dtype, {});
    for (const DimNode &d : t.dims)
      out.dims.push_back(d.size ? ir::Dim::of(*d.size) : ir::Dim::symbol(d.sym));
    return out;
  }

  Operation *emit(OpKind k, std::vector<Value *> operands,
                  std::vector<ir::NamedAttr> attrs, const std::vector<TensorType> &types,
                  ir::Location loc) {
    auto op = std::make_unique<Operation>(k, loc);
    op->operands = std::move(operands);
    op->attrs = std::move(attrs);
    for (const TensorType &t : types)
      op->addResult(t);
    if (!placement_.empty() && k != OpKind::Global && k != OpKind::Yield &&
        k != OpKind::Return) {
      op->device = placement_.back();
      op->placement = ir::PlacementKind::Explicit;
      for (auto &r : op->results)
        r->device = op->device;
    }
    return region_->push(std::move(op));
  }

  Value *lookup(const std::string &name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end())
        return f->second;
    }
    return nullptr;
  }

  Value *lowerParamInit(const ParamItem &p, const TensorType &t) {
    const ParamInit &init = c_.paramInits.at(&p);
    if (init.fromExpr)
      return lowerExpr(*p.init)[0];
    return emit(init.kind, {}, init.attrs, {t}, p.init->loc)->result();
  }

  // --- statements ---

  void lowerStatements(const Block &b) {
    for (const StmtPtr &s : b.stmts)
      lowerStmt(*s);
  }

  void lowerStmt(const Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let: {
      auto &let = static_cast<const LetStmt &>(s);
      std::vector<Value *> vals = lowerExpr(*let.value);
      for (size_t i = 0; i < let.names.size() && i < vals.size(); ++i)
        scopes_.back()[let.names[i].name] = vals[i];
      return;
    }
    case StmtKind::On: {
      auto &on = static_cast<const OnStmt &>(s);
      placement_.push_back(m_.findDevice(on.device.name));
      lowerStatements(on.body);
      placement_.pop_back();
      return;
    }
    case StmtKind::Return:
    case StmtKind::Yield: {
      auto &vs = static_cast<const ValuesStmt &>(s);
      std::vector<Value *> vals;
      for (const ExprPtr &e : vs.values)
        for (Value *v : lowerExpr(*e))
          vals.push_back(v);
      emit(s.kind == StmtKind::Return ? OpKind::Return : OpKind::Yield, vals, {}, {}, s.loc);
      return;
    }
    case StmtKind::Expr:
      lowerExpr(*static_cast<const ExprStmt &>(s).expr);
      return;
    }
  }

  // Lowers a block into `r` (whose arguments are already bound in a new
  // scope by the caller); appends an empty yield if the block has none.
  void lowerRegion(const Block &b, Region *r) {
    Region *saved = region_;
    region_ = r;
    lowerStatements(b);
    if (!stdlib::terminatorOf(*r))
      emit(OpKind::Yield, {}, {}, {}, b.close);
    region_ = saved;
  }

  // --- expressions ---

  std::vector<Value *> lowerExpr(const Expr &e) {
    const TensorType *t = e.info.types.empty() ? nullptr : &e.info.types[0];
    switch (e.kind) {
    case ExprKind::IntLit:
    case ExprKind::FloatLit:
    case ExprKind::BoolLit:
      return {constant(e)};
    case ExprKind::TensorLit: {
      if (Value *v = constant(e))
        return {v};
      std::vector<Value *> els;
      for (auto &el : static_cast<const TensorLit &>(e).elements)
        els.push_back(lowerExpr(*el)[0]);
      return {emit(OpKind::Stack, els, {{"axis", Attribute::integer(0)}}, {*t}, e.loc)
                  ->result()};
    }
    case ExprKind::Name: {
      const std::string &n = static_cast<const NameExpr &>(e).name;
      if (Value *v = lookup(n))
        return {v};
      return {emit(OpKind::Global, {}, {{"name", Attribute::symbol(n)}}, {*t}, e.loc)
                  ->result()};
    }
    case ExprKind::Unary: {
      auto &u = static_cast<const UnaryExpr &>(e);
      if (Value *v = constant(e))
        return {v};
      Value *x = lowerExpr(*u.operand)[0];
      return {emit(*e.info.op, {x}, {}, {*t}, e.loc)->result()};
    }
    case ExprKind::Binary: {
      auto &b = static_cast<const BinaryExpr &>(e);
      Value *x = lowerExpr(*b.lhs)[0];
      Value *y = lowerExpr(*b.rhs)[0];
      return {emit(*e.info.op, {x, y}, {}, {*t}, e.loc)->result()};
    }
    case ExprKind::Call: return lowerCall(static_cast<const CallExpr &>(e));
    case ExprKind::Index: return lowerIndex(static_cast<const IndexExpr &>(e));
    case ExprKind::If: return lowerIf(static_cast<const IfExpr &>(e));
    case ExprKind::For: return lowerFor(static_cast<const ForExpr &>(e));
    case ExprKind::While: return lowerWhile(static_cast<const WhileExpr &>(e));
    case ExprKind::On: {
      auto &on = static_cast<const OnExpr &>(e);
      placement_.push_back(m_.findDevice(on.device.name));
      std::vector<Value *> v = lowerExpr(*on.expr);
      placement_.pop_back();
      return v;
    }
    default:
      assert(false && "lowering an expression Sema rejects");
      return {};
    }
  }

  // A constant op for a literal-only expression, or null.
  Value *constant(const Expr &e) {
    if (e.info.types.size() != 1)
      return nullptr;
    const TensorType &t = e.info.types[0];
    auto d = std::make_shared<ir::DenseData>();
    d->type = t;
    if (!t.isStatic() || !literalElements(e, t.dtype, d->bytes))
      return nullptr;
    return emit(OpKind::Constant, {}, {{"value", Attribute::dense(std::move(d))}}, {t}, e.loc)
        ->result();
  }

  std::vector<Value *> lowerCall(const CallExpr &e) {
    const CallInfo &ci = c_.calls.at(&e);
    std::vector<Value *> operands;
    for (const Expr *o : ci.operands)
      operands.push_back(lowerExpr(*o)[0]);
    Operation *op;
    if (ci.userFunction)
      op = emit(OpKind::Call, operands, {{"callee", Attribute::symbol(ci.fn->name.name)}},
                e.info.types, e.loc);
    else
      op = emit(ci.kind, operands, ci.attrs, e.info.types, e.loc);
    std::vector<Value *> out;
    for (auto &r : op->results)
      out.push_back(r.get());
    return out;
  }

  std::vector<Value *> lowerIndex(const IndexExpr &e) {
    const IndexInfo &info = c_.indexes.at(&e);
    Value *v = lowerExpr(*e.base)[0];
    if (info.needsSlice) {
      std::vector<ir::NamedAttr> attrs = {{"start", Attribute::intList(info.start)},
                                          {"stop", Attribute::intList(info.stop)},
                                          {"step", Attribute::intList(info.step)},
                                          {"drop", Attribute::intList(info.drop)}};
      TensorType t = v->type;
      auto r = stdlib::inferTypes(OpKind::Slice, {t}, attrs);
      v = emit(OpKind::Slice, {v}, attrs, r.types, e.loc)->result();
    }
    for (const IndexInfo::Dynamic &d : info.dynamic) {
      Value *idx = lowerExpr(*d.index)[0];
      TensorType t = v->type;
      t.dims.erase(t.dims.begin() + d.axis);
      v = emit(OpKind::DynamicIndex, {v, idx}, {{"axis", Attribute::integer(d.axis)}}, {t},
               e.loc)
              ->result();
    }
    return {v};
  }

  std::vector<Value *> results(Operation *op) {
    std::vector<Value *> out;
    for (auto &r : op->results)
      out.push_back(r.get());
    return out;
  }

  std::vector<Value *> lowerIf(const IfExpr &e) {
    Value *cond = lowerExpr(*e.cond)[0];
    Operation *op = emit(OpKind::If, {cond}, {}, e.info.types, e.loc);
    Region *thenR = op->addRegion();
    Region *elseR = op->addRegion();
    scopes_.emplace_back();
    lowerRegion(e.thenBlock, thenR);
    scopes_.back().clear();
    if (e.elseBlock)
      lowerRegion(*e.elseBlock, elseR);
    else
      lowerRegion(Block{{}, e.loc, e.loc}, elseR);
    scopes_.pop_back();
    return results(op);
  }

  std::vector<Value *> lowerFor(const ForExpr &e) {
    std::vector<Value *> operands = {lowerExpr(*e.lo)[0], lowerExpr(*e.hi)[0]};
    for (const Carry &c : e.carries)
      operands.push_back(lowerExpr(*c.init)[0]);
    Operation *op = emit(OpKind::For, operands, {}, e.info.types, e.loc);
    Region *body = op->addRegion();
    scopes_.emplace_back();
    scopes_.back()[e.var.name] = body->addArg(TensorType::scalar(DType::I64));
    for (size_t i = 0; i < e.carries.size(); ++i)
      scopes_.back()[e.carries[i].name.name] = body->addArg(e.info.types[i]);
    lowerRegion(e.body, body);
    scopes_.pop_back();
    return results(op);
  }

  std::vector<Value *> lowerWhile(const WhileExpr &e) {
    std::vector<Value *> operands;
    for (const Carry &c : e.carries)
      operands.push_back(lowerExpr(*c.init)[0]);
    Operation *op = emit(OpKind::While, operands, {}, e.info.types, e.loc);
    Region *condR = op->addRegion();
    Region *body = op->addRegion();
    scopes_.emplace_back();
    for (size_t i = 0; i < e.carries.size(); ++i)
      scopes_.back()[e.carries[i].name.name] = condR->addArg(e.info.types[i]);
    Region *saved = region_;
    region_ = condR;
    Value *c = lowerExpr(*e.cond)[0];
    emit(OpKind::Yield, {c}, {}, {}, e.cond->loc);
    region_ = saved;
    scopes_.back().clear();
    for (size_t i = 0; i < e.carries.size(); ++i)
      scopes_.back()[e.carries[i].name.name] = body->addArg(e.info.types[i]);
    lowerRegion(e.body, body);
    scopes_.pop_back();
    return results(op);
  }

  const CheckedProgram &c_;
  ir::Module &m_;
  Region *region_ = nullptr;
  std::vector<std::unordered_map<std::string, Value *>> scopes_;
  std::vector<int> placement_;
};

} // namespace

std::unique_ptr<ir::Module> lowerProgram(const CheckedProgram &checked) {
  auto m = std::make_unique<ir::Module>();
  Lowerer l(checked, *m);
  l.lowerDevices();
  l.lowerGlobals();
  l.lowerFunctions();
  return m;
}

} // namespace mdl::frontend
