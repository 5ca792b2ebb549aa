// Shape and element-type rules of the HLO import operations (the XLA shape
// inference for dot_general, convolution, reduce, reduce_window, gather,
// scatter, ...), in the registry's style: attributes are checked and
// canonicalized in place (omitted strides become ones, omitted padding
// zeros), and a rule run again on its own canonical attributes gives the
// same answer, so the specializer and the verifier can re-run it.
//
// Operations written with symbolic shapes are checked as far as the known
// sizes allow; the specializer re-runs every rule on static shapes.
#include "stdlib/ShapeRulesHloSupport.h"

namespace mdl::stdlib {

namespace hlorules {

// --- Elementwise -------------------------------------------------------------

InferResult needFloat(const Ops &ops, Attrs &) {
  if (!ir::isFloat(ops[0].dtype))
    return fail("E0201", "expected a floating-point operand, found " + dt(ops[0].dtype), 0);
  return ok({ops[0]});
}

InferResult isFinite(const Ops &ops, Attrs &attrs) {
  InferResult r = needFloat(ops, attrs);
  if (r.ok())
    r.types[0].dtype = DType::Bool;
  return r;
}

InferResult reducePrecision(const Ops &ops, Attrs &attrs) {
  int64_t e = intOf(attrs, "exponent_bits", -1), m = intOf(attrs, "mantissa_bits", -1);
  if (e < 1 || e > 11 || m < 0 || m > 52)
    return bad("reduce_precision needs 1 <= exponent_bits <= 11 and 0 <= mantissa_bits <= 52");
  return needFloat(ops, attrs);
}

InferResult bitUnary(const Ops &ops, Attrs &) {
  if (ir::isFloat(ops[0].dtype))
    return fail("E0201", "bit operations expect integer or bool operands, found " +
                             dt(ops[0].dtype), 0);
  return ok({ops[0]});
}

InferResult intUnary(const Ops &ops, Attrs &) {
  if (!ir::isInteger(ops[0].dtype))
    return fail("E0201", "expected an integer operand, found " + dt(ops[0].dtype), 0);
  return ok({ops[0]});
}

// Same dtype, NumPy broadcasting; `allow` says which dtypes are accepted.
InferResult binaryWith(const Ops &ops, bool (*allow)(DType), const char *what, DType *out = nullptr) {
  if (ops[0].dtype != ops[1].dtype)
    return fail("E0201", std::string(what) + " operands have different element types: " +
                             dt(ops[0].dtype) + " and " + dt(ops[1].dtype), 1);
  if (!allow(ops[0].dtype))
    return fail("E0201", std::string(what) + " does not accept " + dt(ops[0].dtype) + " operands", 0);
  Shape s;
  int badAxis;
  if (!broadcastShapes(ops[0].dims, ops[1].dims, s, badAxis))
    return fail("E0202", "shapes " + ops[0].str() + " and " + ops[1].str() +
                             " are not broadcastable", 1);
  return ok({TensorType(out ? *out : ops[0].dtype, s)});
}

bool notFloat(DType t) { return !ir::isFloat(t); }
bool intOnly(DType t) { return ir::isInteger(t); }
bool floatOnly(DType t) { return ir::isFloat(t); }
bool numeric(DType t) { return t != DType::Bool; }
bool anyType(DType) { return true; }

InferResult bitBinary(const Ops &ops, Attrs &) { return binaryWith(ops, notFloat, "bit operation"); }
InferResult shift(const Ops &ops, Attrs &) { return binaryWith(ops, intOnly, "shift"); }
InferResult atan2Rule(const Ops &ops, Attrs &) { return binaryWith(ops, floatOnly, "atan2"); }
InferResult divTrunc(const Ops &ops, Attrs &attrs) {
  boolOf(attrs, "is_unsigned");
  return binaryWith(ops, intOnly, "div_trunc");
}
InferResult rem(const Ops &ops, Attrs &attrs) {
  boolOf(attrs, "is_unsigned");
  return binaryWith(ops, numeric, "rem");
}

InferResult compare(const Ops &ops, Attrs &attrs) {
  static const std::set<std::string> dirs = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  static const std::set<std::string> orders = {"default", "total", "unsigned"};
  if (!dirs.count(strOf(attrs, "direction")))
    return bad("compare direction must be one of EQ, NE, LT, LE, GT, GE");
  std::string order = strOf(attrs, "order", "default");
  if (!orders.count(order))
    return bad("compare order must be \"default\", \"total\" or \"unsigned\"");
  DType b = DType::Bool;
  return binaryWith(ops, anyType, "compare", &b);
}

InferResult convert(const Ops &ops, Attrs &attrs) {
  Attribute *t = findAttr(attrs, "dtype");
  if (!t || t->kind() != Attribute::Kind::DType)
    return bad("convert needs an element type: convert(x, i32)");
  boolOf(attrs, "from_unsigned");
  boolOf(attrs, "to_unsigned");
  return ok({TensorType(t->asDType(), ops[0].dims)});
}

InferResult bitcastConvert(const Ops &ops, Attrs &attrs) {
  Attribute *t = findAttr(attrs, "dtype");
  if (!t || t->kind() != Attribute::Kind::DType)
    return bad("bitcast_convert needs an element type");
  if (ir::dtypeSize(t->asDType()) != ir::dtypeSize(ops[0].dtype))
    return fail("E0201", "bitcast_convert from " + dt(ops[0].dtype) + " to " +
                             dt(t->asDType()) + " changes the element width", 0);
  return ok({TensorType(t->asDType(), ops[0].dims)});
}

// --- Creation and data movement ---------------------------------------------

InferResult iota(const Ops &, Attrs &attrs) {
  Attribute *t = findAttr(attrs, "type");
  if (!t || t->kind() != Attribute::Kind::Type)
    return bad("iota needs a tensor type such as i32[4, 3]");
  const TensorType &ty = t->asType();
  int64_t d = intOf(attrs, "dimension", -1);
  if (ty.rank() == 0 || d < 0 || d >= ty.rank())
    return bad("iota dimension " + std::to_string(d) + " is out of range for " + ty.str());
  if (ty.dtype == DType::Bool)
    return fail("E0201", "iota of bool");
  for (const Dim &x : ty.dims)
    if (x.isStatic() && x.size < 0)
      return bad("negative dimension in " + ty.str());
  return ok({ty});
}

bool scalarIndices(const Ops &ops, size_t from, InferResult &err) {
  for (size_t i = from; i < ops.size(); ++i)
    if (!ir::isInteger(ops[i].dtype) || !ops[i].isScalar()) {
      err = fail("E0201", "start indices must be integer scalars, found " + ops[i].str(), int(i));
      return false;
    }
  return true;
}

InferResult dynamicSlice(const Ops &ops, Attrs &attrs) {
  const TensorType &x = ops[0];
  InferResult err;
  if (int(ops.size()) != 1 + x.rank())
    return bad("dynamic_slice of a rank-" + std::to_string(x.rank()) + " tensor needs " +
               std::to_string(x.rank()) + " start indices");
  if (!scalarIndices(ops, 1, err))
    return err;
  Ints sizes;
  if (!intList(attrs, "sizes", {}, sizes) || int(sizes.size()) != x.rank())
    return bad("dynamic_slice sizes must have one entry per dimension");
  Shape s;
  for (int i = 0; i < x.rank(); ++i) {
    if (sizes[i] < 0 || (x.dims[i].isStatic() && sizes[i] > x.dims[i].size))
      return fail("E0210", "slice size " + std::to_string(sizes[i]) + " does not fit dimension " +
                               std::to_string(i) + " of " + x.str(), 0);
    s.push_back(Dim::of(sizes[i]));
  }
  return ok({TensorType(x.dtype, s)});
}

InferResult dynamicUpdateSlice(const Ops &ops, Attrs &) {
  const TensorType &x = ops[0], &u = ops[1];
  InferResult err;
  if (int(ops.size()) != 2 + x.rank())
    return bad("dynamic_update_slice of a rank-" + std::to_string(x.rank()) + " tensor needs " +
               std::to_string(x.rank()) + " start indices");
  if (!scalarIndices(ops, 2, err))
    return err;
  if (u.dtype != x.dtype || u.rank() != x.rank())
    return fail("E0201", "update " + u.str() + " does not match " + x.str(), 1);
  for (int i = 0; i < x.rank(); ++i)
    if (x.dims[i].isStatic() && u.dims[i].isStatic() && u.dims[i].size > x.dims[i].size)
      return fail("E0202", "update " + u.str() + " is larger than " + x.str(), 1);
  return ok({x});
}

InferResult padGeneral(const Ops &ops, Attrs &attrs) {
  const TensorType &x = ops[0], &v = ops[1];
  if (v.dtype != x.dtype || !v.isScalar())
    return fail("E0201", "pad value must be a " + dt(x.dtype) + " scalar, found " + v.str(), 1);
  Ints lo, hi, in;
  Ints zeros(size_t(x.rank()), 0);
  if (!intList(attrs, "low", zeros, lo) || !intList(attrs, "high", zeros, hi) ||
      !intList(attrs, "interior", zeros, in) || int(lo.size()) != x.rank() ||
      int(hi.size()) != x.rank() || int(in.size()) != x.rank())
    return bad("pad_general needs low, high and interior with one entry per dimension");
  Shape s;
  for (int i = 0; i < x.rank(); ++i) {
    if (in[i] < 0)
      return bad("interior padding must not be negative");
    const Dim &d = x.dims[i];
    if (!d.isStatic()) {
      s.push_back(Dim::unknown());
      continue;
    }
    int64_t n = d.size + lo[i] + hi[i] + std::max<int64_t>(d.size - 1, 0) * in[i];
    if (n < 0)
      return fail("E0202", "padding makes dimension " + std::to_string(i) + " negative", 0);
    s.push_back(Dim::of(n));
  }
  return ok({TensorType(x.dtype, s)});
}

} // namespace hlorules

} // namespace mdl::stdlib
