// The readers behind the typed attribute accessors (OpAttrs.h): each
// attribute is read by its kind, with the table's default where absent.
#include "stdlib/OpAttrs.h"

namespace mdl::stdlib::attrs {

namespace {

using ir::Attribute;

const Attribute *find(const ir::Operation &op, const char *name) { return op.attr(name); }

std::vector<int64_t> ints(const Attribute *a, std::vector<int64_t> dflt) {
  if (a && a->kind() == Attribute::Kind::IntList)
    return a->asIntList();
  if (a && a->kind() == Attribute::Kind::Int)
    return {a->asInt()};
  return dflt;
}

IntT readInt(const ir::Operation &op, const char *n, IntT d) { return op.intAttr(n, d); }
AxesT readAxes(const ir::Operation &op, const char *n, AxesT d) { return ints(find(op, n), d); }
IntPairT readIntPair(const ir::Operation &op, const char *n, IntPairT d) {
  IntPairT v = ints(find(op, n), d);
  return v.size() == 1 ? IntPairT{v[0], v[0]} : v;
}
IntListT readIntList(const ir::Operation &op, const char *n, IntListT d) {
  return ints(find(op, n), d);
}
IntPairsT readIntPairs(const ir::Operation &op, const char *n, IntPairsT d) {
  return ints(find(op, n), d);
}
DimListT readDimList(const ir::Operation &op, const char *n, DimListT d) {
  const Attribute *a = find(op, n);
  return a && a->kind() == Attribute::Kind::DimList ? a->asDimList() : d;
}
DimValueT readDimValue(const ir::Operation &op, const char *n, DimValueT d) {
  const Attribute *a = find(op, n);
  if (a && a->kind() == Attribute::Kind::Int)
    return ir::Dim::of(a->asInt());
  if (a && a->kind() == Attribute::Kind::DimList && a->asDimList().size() == 1)
    return a->asDimList()[0];
  return d;
}
NumberT readNumber(const ir::Operation &op, const char *n, NumberT d) { return op.floatAttr(n, d); }
BoolT readBool(const ir::Operation &op, const char *n, BoolT d) { return op.boolAttr(n, d); }
DTypeT readDType(const ir::Operation &op, const char *n, DTypeT d) {
  const Attribute *a = find(op, n);
  return a && a->kind() == Attribute::Kind::DType ? a->asDType() : d;
}
TypeT readType(const ir::Operation &op, const char *n, TypeT d) {
  const Attribute *a = find(op, n);
  return a && a->kind() == Attribute::Kind::Type ? a->asType() : d;
}
StringT readText(const ir::Operation &op, const char *n, StringT d) {
  return find(op, n) ? op.stringAttr(n) : d;
}
DeviceT readDevice(const ir::Operation &op, const char *n, DeviceT d) { return readText(op, n, d); }
StringT readString(const ir::Operation &op, const char *n, StringT d) { return readText(op, n, d); }
FunctionT readFunction(const ir::Operation &op, const char *n, FunctionT d) {
  return readText(op, n, d);
}


} // namespace

#define IN(n)
#define LIST(n)
#define VARIADIC(n)
#define REQ(n, K) r.n = read##K(op, #n, K##T{});
#define OPT(n, K)                                                                             \
  if (op.attr(#n))                                                                            \
    r.n = read##K(op, #n, K##T{});
#define DFLT(n, K, v) r.n = read##K(op, #n, K##T(defaultOf##K(v)));
#define MDL_OP(E, N, CALL, CLS, D, TR, F, COST, RULE, ...)                                     \
  E E::of(const ir::Operation &op) {                                                          \
    E r;                                                                                      \
    (void)op;                                                                                 \
    __VA_ARGS__                                                                               \
    return r;                                                                                 \
  }
namespace {
BoolT defaultOfBool(bool v) { return v; }
IntT defaultOfInt(int64_t v) { return v; }
IntPairT defaultOfIntPair(int64_t v) { return {v, v}; }
NumberT defaultOfNumber(double v) { return v; }
StringT defaultOfString(const char *v) { return v; }
IntListT defaultOfIntList(IntListT v) { return v; }
} // namespace
#include "stdlib/Ops.def"
#undef MDL_OP
#undef DFLT
#undef OPT
#undef REQ
#undef VARIADIC
#undef LIST
#undef IN

} // namespace mdl::stdlib::attrs
