// canonicalize, the HLO operations (see Canonicalize.h): imported programs
// state reductions and matrix products in HLO's general forms; the JIT
// fuses core reductions and reads matrix products in place, so the forms
// that have a core equivalent are rewritten into it.
// 1. reduce(x, init) with reducer add, max or min over one input becomes
//    sum / max / min over the same axes (keepdims false). The kernel starts
//    from init and then takes the elements; max / min combine a non-neutral
//    init with `maximum` / `minimum` afterwards (exact, NaN propagating
//    either way); add applies only when init is +0, where starting from it
//    changes nothing (integers: wrapping addition of init is exact too).
//    Bool reductions stay (sum and max have no bool form).
// 2. dot_general of floats becomes
//      lhs' = reshape(transpose(lhs, batch + free + contract), [B..., M, K])
//      rhs' = reshape(transpose(rhs, batch + contract + free), [B..., K, N])
//      y    = reshape(dot_general(lhs', rhs') in matrix-product form, result)
//    Transposes are views and reshapes usually are; the JIT's matrix
//    product then reads operands as they are, transposed or strided. The
//    element type of the result (`dtype`, e.g. f32 from bf16 operands) is
//    kept.
#include "ir/passes/Canonicalize.h"
#include "ir/passes/CanonicalizeInternal.h"
#include "stdlib/DotDims.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace mdl::passes {

using namespace ir;

namespace {

using Ints = std::vector<int64_t>;

/// The value of a scalar constant as a double (integers converted), or
/// nullopt when `v` is not one.
std::optional<double> scalarConstant(const Value *v) {
  const Operation *def = v->def;
  if (!def || def->kind != OpKind::Constant || v->type.numElements() != 1)
    return std::nullopt;
  const Attribute *a = def->attr("value");
  if (!a || a->kind() != Attribute::Kind::Dense)
    return std::nullopt;
  const DenseData &d = a->asDense();
  if (d.bytes.size() < dtypeSize(d.type.dtype) || d.type.dtype == DType::Bool)
    return std::nullopt;
  return d.elementAsDouble(0);
}

bool rewritesReduce(const Operation &op) {
  if (op.operands.size() != 2 || op.results.size() != 1 || op.attr("to_apply"))
    return false;
  const std::string &r = op.stringAttr("reducer");
  DType t = op.operands[0]->type.dtype;
  if ((r != "add" && r != "max" && r != "min") || t == DType::Bool ||
      !op.operands[0]->type.isStatic() || op.intListAttr("dims").empty())
    return false;
  std::optional<double> init = scalarConstant(op.operands[1]);
  if (!init)
    return false;
  // add: only a +0 init (a -0 one would make an all -0 sum -0).
  return r != "add" || (*init == 0 && !std::signbit(*init));
}

bool rewritesDot(const Operation &op) {
  if (op.operands.size() != 2 || op.results.size() != 1)
    return false;
  const TensorType &a = op.operands[0]->type, &b = op.operands[1]->type;
  return isFloat(a.dtype) && a.dtype == b.dtype && isFloat(op.results[0]->type.dtype) &&
         a.isStatic() && b.isStatic() && op.results[0]->type.isStatic() && !isMatmulFormDot(op);
}

Value *expandReduce(Expander &ex) {
  const Operation &op = ex.original();
  const std::string &r = op.stringAttr("reducer");
  OpKind k = r == "add" ? OpKind::Sum : r == "max" ? OpKind::ReduceMax : OpKind::ReduceMin;
  Ints axes = op.intListAttr("dims");
  std::sort(axes.begin(), axes.end());
  Value *y = ex.emit(k, {op.operands[0]},
                     {{"axis", Attribute::intList(axes)}, {"keepdims", Attribute::boolean(false)}});
  if (r == "add")
    return y;
  double init = *scalarConstant(op.operands[1]);
  bool neutral =
      isFloat(op.operands[0]->type.dtype) && std::isinf(init) && (r == "max" ? init < 0 : init > 0);
  if (neutral)
    return y;
  return ex.emit(r == "max" ? OpKind::Maximum : OpKind::Minimum, {y, op.operands[1]});
}

Value *expandDot(Expander &ex) {
  const Operation &op = ex.original();
  Value *a = op.operands[0], *b = op.operands[1];
  Ints as = a->type.sizes(), bs = b->type.sizes();
  const Ints &lb = op.intListAttr("lhs_batch"), &rb = op.intListAttr("rhs_batch"),
             &lc = op.intListAttr("lhs_contract"), &rc = op.intListAttr("rhs_contract");
  stdlib::DotDims dd = stdlib::dotDims(as, bs, lb, rb, lc, rc);
  const Ints &batch = dd.batch;
  Ints aShape = batch, bShape = batch;
  aShape.insert(aShape.end(), {dd.M, dd.K});
  bShape.insert(bShape.end(), {dd.K, dd.N});
  Value *a2 = ex.reshape(ex.transpose(a, dd.lhsOrder), aShape);
  Value *b2 = ex.reshape(ex.transpose(b, dd.rhsOrder), bShape);
  int64_t nb = int64_t(batch.size());
  Ints batchAxes;
  for (int64_t i = 0; i < nb; ++i)
    batchAxes.push_back(i);
  std::vector<NamedAttr> attrs = {{"lhs_batch", Attribute::intList(batchAxes)},
                                  {"rhs_batch", Attribute::intList(batchAxes)},
                                  {"lhs_contract", Attribute::intList({nb + 1})},
                                  {"rhs_contract", Attribute::intList({nb})}};
  if (const Attribute *t = op.attr("dtype"))
    attrs.push_back({"dtype", *t});
  Value *y = ex.emit(OpKind::DotGeneral, {a2, b2}, std::move(attrs));
  return ex.reshape(y, op.results[0]->type.sizes());
}

} // namespace

bool isMatmulFormDot(const Operation &op) {
  if (op.kind != OpKind::DotGeneral || op.operands.size() != 2)
    return false;
  const TensorType &a = op.operands[0]->type, &b = op.operands[1]->type;
  if (a.rank() != b.rank() || a.rank() < 2)
    return false;
  int64_t nb = a.rank() - 2;
  Ints batch;
  for (int64_t i = 0; i < nb; ++i)
    batch.push_back(i);
  return op.intListAttr("lhs_batch") == batch && op.intListAttr("rhs_batch") == batch &&
         op.intListAttr("lhs_contract") == Ints{nb + 1} &&
         op.intListAttr("rhs_contract") == Ints{nb};
}

bool rewritesHlo(const Operation &op) {
  switch (op.kind) {
  case OpKind::Reduce:
    return rewritesReduce(op);
  case OpKind::DotGeneral:
    return rewritesDot(op);
  default:
    return false;
  }
}

Value *expandHlo(Expander &ex) {
  switch (ex.original().kind) {
  case OpKind::Reduce:
    return expandReduce(ex);
  case OpKind::DotGeneral:
    return expandDot(ex);
  default:
    return nullptr;
  }
}

} // namespace mdl::passes
