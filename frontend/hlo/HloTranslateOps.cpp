// Per-opcode translation, elementwise family: arithmetic, math, comparison,
// logic and bit operations, select, clamp, conversions; and the dispatch
// that hands every other opcode to its family or reports it unsupported.
//
// HLO's elementwise operations never broadcast implicitly (except select's
// and clamp's scalar operands), so they map one to one onto mdl operations
// where the semantics agree; where signedness matters for u32/u64 (stored
// signless), the operation carries it (`compare(..., order = "unsigned")`,
// `convert(..., from_unsigned = true)`), and HLO's integer division and
// remainder, which truncate, become `div_trunc` and `rem`.
#include "frontend/hlo/HloOpContext.h"
#include "stdlib/Registry.h"

#include <map>
#include <set>

namespace mdl::frontend::hlo {

using namespace ir;

namespace {

const std::map<std::string, OpKind> &unaryOps() {
  static const std::map<std::string, OpKind> m = {
      {"abs", OpKind::Abs},           {"negate", OpKind::Neg},
      {"exponential", OpKind::Exp},   {"log", OpKind::Log},
      {"sqrt", OpKind::Sqrt},         {"rsqrt", OpKind::Rsqrt},
      {"tanh", OpKind::Tanh},         {"sine", OpKind::Sin},
      {"cosine", OpKind::Cos},        {"floor", OpKind::Floor},
      {"ceil", OpKind::Ceil},         {"sign", OpKind::Sign},
      {"logistic", OpKind::Sigmoid},  {"exponential-minus-one", OpKind::Expm1},
      {"log-plus-one", OpKind::Log1p}, {"tan", OpKind::Tan},
      {"erf", OpKind::Erf},           {"cbrt", OpKind::Cbrt},
      {"acos", OpKind::Acos},         {"asin", OpKind::Asin},
      {"atan", OpKind::Atan},         {"acosh", OpKind::Acosh},
      {"asinh", OpKind::Asinh},       {"atanh", OpKind::Atanh},
      {"cosh", OpKind::Cosh},         {"sinh", OpKind::Sinh},
      {"round-nearest-even", OpKind::RoundEven},
      {"round-nearest-afz", OpKind::RoundAway},
      {"is-finite", OpKind::IsFinite}, {"popcnt", OpKind::Popcnt},
      {"count-leading-zeros", OpKind::Clz}, {"clz", OpKind::Clz}};
  return m;
}

/// Opcodes mdl does not implement, with the reason given to the user.
const std::map<std::string, std::string> &unsupportedOps() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> r;
    for (const char *op : {"all-reduce", "all-gather", "all-to-all", "collective-permute",
                           "collective-broadcast", "reduce-scatter", "all-reduce-start",
                           "all-reduce-done", "all-gather-start", "all-gather-done",
                           "collective-permute-start", "collective-permute-done",
                           "ragged-all-to-all"})
      r[op] = "collective communication between replicas or partitions (mdl places work on "
              "declared devices instead)";
    for (const char *op : {"partition-id", "replica-id"})
      r[op] = "SPMD partition and replica identities have no meaning in a single mdl program";
    for (const char *op : {"infeed", "outfeed", "send", "recv", "send-done", "recv-done",
                           "after-all"})
      r[op] = "host I/O and token ordering are not supported";
    for (const char *op : {"async-start", "async-update", "async-done", "copy-start", "copy-done"})
      r[op] = "asynchronous execution wrappers are not supported";
    for (const char *op : {"rng", "rng-bit-generator", "rng-get-and-update-state"})
      r[op] = "XLA's random number generators are not supported (use random_normal / "
              "random_uniform in mdl)";
    for (const char *op : {"complex", "real", "imag"})
      r[op] = "complex numbers are not supported";
    for (const char *op : {"get-dimension-size", "set-dimension-size", "dynamic-reshape"})
      r[op] = "dynamic shapes are not supported; mdl shapes are static";
    r["fft"] = "FFT is not implemented";
    r["cholesky"] = "Cholesky factorization is not implemented";
    r["triangular-solve"] = "triangular solve is not implemented";
    r["topk"] = "top-k is not implemented (sort and slice instead)";
    r["scan"] = "the scan operation is not implemented (use a while loop)";
    r["stochastic-convert"] = "stochastic rounding is not implemented";
    return r;
  }();
  return m;
}

const char *direction(const std::string &d) {
  static const char *const names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  for (const char *n : names)
    if (d == n)
      return n;
  return nullptr;
}

OpKind compareKind(const std::string &d) {
  return d == "EQ" ? OpKind::Eq : d == "NE" ? OpKind::Ne : d == "LT" ? OpKind::Lt
       : d == "LE" ? OpKind::Le : d == "GT" ? OpKind::Gt : OpKind::Ge;
}

struct Elementwise : OpCtx {
  bool unary(OpKind k) {
    if (!arity(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    if (!rt || !x)
      return poison();
    if (unsignedOperand(0) && (k == OpKind::Abs || k == OpKind::Floor || k == OpKind::Ceil))
      return done(x);
    if (unsignedOperand(0) && k == OpKind::Sign) {
      Value *nz = t.emit1(OpKind::Ne, {x, t.scalarConstant(x->type.dtype, 0)}, {},
                          TensorType(DType::Bool, x->type.dims));
      return done(t.emit1(OpKind::Cast, {nz}, {{"dtype", Attribute::dtype(rt->dtype)}}, *rt));
    }
    return done(t.emit1(k, {x}, {}, *rt));
  }

  bool compare(const std::string &dirText, Value *a, Value *b, const TensorType &rt,
               const std::string &typeText) {
    const char *dir = direction(dirText);
    if (!dir) {
      t.malformed("unknown comparison direction '" + dirText + "'", inst.attr("direction"));
      return poison();
    }
    bool total = typeText == "TOTALORDER" && isFloat(a->type.dtype);
    bool uns = (typeText == "UNSIGNED" || (typeText.empty() && unsignedOperand(0))) &&
               isInteger(a->type.dtype) && a->type.dtype != DType::U8;
    bool eqne = dirText == "EQ" || dirText == "NE";
    if (total || (uns && !eqne))
      return done(t.emit1(OpKind::Compare, {a, b},
                          {{"direction", Attribute::string(dir)},
                           {"order", Attribute::string(total ? "total" : "unsigned")}},
                          rt));
    return done(t.emit1(compareKind(dir), {a, b}, {}, rt));
  }

  // maximum/minimum of u32/u64: compare unsigned, then select.
  Value *unsignedExtremum(Value *a, Value *b, bool isMax, const TensorType &rt) {
    Value *c = t.emit1(OpKind::Compare, {a, b},
                       {{"direction", Attribute::string(isMax ? "GT" : "LT")},
                        {"order", Attribute::string("unsigned")}},
                       TensorType(DType::Bool, rt.dims));
    return t.emit1(OpKind::Select, {c, a, b}, {}, rt);
  }

  bool binary(const std::string &op) {
    static const std::set<std::string> names = {
        "add",     "subtract", "multiply", "divide", "remainder", "maximum",
        "minimum", "power",    "atan2",    "and",    "or",        "xor",
        "shift-left", "shift-right-logical", "shift-right-arithmetic", "compare"};
    if (!names.count(op))
      return false;
    if (!arity(2))
      return poison();
    auto rt = result();
    Value *a = arg(0), *b = arg(1);
    if (!rt || !a || !b)
      return poison();
    DType d = a->type.dtype;
    bool isBool = d == DType::Bool, isInt = isInteger(d), uns = unsignedOperand(0);
    auto flag = [&](bool v) { return std::vector<NamedAttr>{{"is_unsigned", Attribute::boolean(v)}}; };
    if (op == "add")
      return done(t.emit1(isBool ? OpKind::Or : OpKind::Add, {a, b}, {}, *rt));
    if (op == "subtract") {
      if (isBool)
        return done(t.emit1(OpKind::Ne, {a, b}, {}, *rt));
      return done(t.emit1(OpKind::Sub, {a, b}, {}, *rt));
    }
    if (op == "multiply")
      return done(t.emit1(isBool ? OpKind::And : OpKind::Mul, {a, b}, {}, *rt));
    if (op == "divide")
      return done(isInt ? t.emit1(OpKind::DivTrunc, {a, b}, flag(uns), *rt)
                        : t.emit1(OpKind::Div, {a, b}, {}, *rt));
    if (op == "remainder")
      return done(t.emit1(OpKind::Rem, {a, b}, flag(uns), *rt));
    if (op == "maximum" || op == "minimum") {
      bool isMax = op == "maximum";
      if (isBool)
        return done(t.emit1(isMax ? OpKind::Or : OpKind::And, {a, b}, {}, *rt));
      if (uns)
        return done(unsignedExtremum(a, b, isMax, *rt));
      return done(t.emit1(isMax ? OpKind::Maximum : OpKind::Minimum, {a, b}, {}, *rt));
    }
    if (op == "power") {
      if (uns) {
        t.unsupported("power", "power of unsigned 32/64-bit integers is not supported");
        return poison();
      }
      return done(t.emit1(OpKind::Pow, {a, b}, {}, *rt));
    }
    if (op == "atan2")
      return done(t.emit1(OpKind::Atan2, {a, b}, {}, *rt));
    if (op == "and" || op == "or" || op == "xor") {
      if (isBool)
        return done(t.emit1(op == "and" ? OpKind::And : op == "or" ? OpKind::Or : OpKind::Ne,
                            {a, b}, {}, *rt));
      return done(t.emit1(op == "and" ? OpKind::BitAnd : op == "or" ? OpKind::BitOr
                                                                     : OpKind::BitXor,
                          {a, b}, {}, *rt));
    }
    if (op == "shift-left")
      return done(t.emit1(OpKind::ShiftLeft, {a, b}, {}, *rt));
    if (op == "shift-right-logical")
      return done(t.emit1(OpKind::ShiftRightLogical, {a, b}, {}, *rt));
    if (op == "shift-right-arithmetic")
      return done(t.emit1(OpKind::ShiftRightArith, {a, b}, {}, *rt));
    if (op == "compare") {
      const HloAttr *dir = t.need("direction");
      if (!dir)
        return poison();
      const HloAttr *ty = inst.attr("type");
      return compare(dir->value, a, b, *rt, ty ? ty->value : "");
    }
    return false;
  }

  bool convert() {
    if (!arity(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    if (!rt || !x)
      return poison();
    bool fromU = unsignedOperand(0), toU = unsignedResult();
    if (x->type == *rt && fromU == toU)
      return done(x);
    if (fromU || toU)
      return done(t.emit1(OpKind::Convert, {x},
                          {{"dtype", Attribute::dtype(rt->dtype)},
                           {"from_unsigned", Attribute::boolean(fromU)},
                           {"to_unsigned", Attribute::boolean(toU)}},
                          *rt));
    return done(t.emit1(OpKind::Cast, {x}, {{"dtype", Attribute::dtype(rt->dtype)}}, *rt));
  }

  bool clamp() {
    if (!arity(3))
      return poison();
    auto rt = result();
    Value *lo = arg(0), *x = arg(1), *hi = arg(2);
    if (!rt || !lo || !x || !hi)
      return poison();
    if (unsignedOperand(1)) {
      TensorType b(DType::Bool, rt->dims);
      auto cmp = [&](Value *p, Value *q, const char *dir) {
        return t.emit1(OpKind::Compare, {p, q},
                       {{"direction", Attribute::string(dir)},
                        {"order", Attribute::string("unsigned")}},
                       b);
      };
      Value *up = t.emit1(OpKind::Select, {cmp(x, lo, "LT"), lo, x}, {}, *rt);
      return done(t.emit1(OpKind::Select, {cmp(up, hi, "GT"), hi, up}, {}, *rt));
    }
    return done(t.emit1(OpKind::Clip, {x, lo, hi}, {}, *rt));
  }
};

} // namespace

bool translateElementwise(Translator &t, const HloInstruction &inst,
                          const std::vector<const HVal *> &ops, HVal &out) {
  Elementwise e{{t, inst, ops, out}};
  const std::string &op = inst.opcode;
  auto u = unaryOps().find(op);
  if (u != unaryOps().end())
    return e.unary(u->second);
  if (op == "not") {
    if (!e.arity(1))
      return e.poison();
    Value *x = e.arg(0);
    auto rt = e.result();
    if (!x || !rt)
      return e.poison();
    return e.done(t.emit1(x->type.dtype == DType::Bool ? OpKind::Not : OpKind::BitNot, {x}, {}, *rt));
  }
  if (e.binary(op))
    return true;
  if (op == "select") {
    if (!e.arity(3))
      return e.poison();
    auto rt = e.result();
    Value *c = e.arg(0), *a = e.arg(1), *b = e.arg(2);
    if (!rt || !c || !a || !b)
      return e.poison();
    return e.done(t.emit1(OpKind::Select, {c, a, b}, {}, *rt));
  }
  if (op == "clamp")
    return e.clamp();
  if (op == "convert")
    return e.convert();
  if (op == "bitcast-convert") {
    if (!e.arity(1))
      return e.poison();
    auto rt = e.result();
    Value *x = e.arg(0);
    if (!rt || !x)
      return e.poison();
    if (dtypeSize(x->type.dtype) != dtypeSize(rt->dtype) || x->type.dims != rt->dims) {
      t.unsupported("bitcast-convert", "bitcast-convert between element types of different "
                                       "widths is not supported");
      return e.poison();
    }
    if (x->type == *rt)
      return e.done(x);
    return e.done(t.emit1(OpKind::BitcastConvert, {x}, {{"dtype", Attribute::dtype(rt->dtype)}}, *rt));
  }
  if (op == "reduce-precision") {
    if (!e.arity(1))
      return e.poison();
    auto rt = e.result();
    Value *x = e.arg(0);
    auto eb = e.integer("exponent_bits"), mb = e.integer("mantissa_bits");
    if (!rt || !x || !eb || !mb)
      return e.poison();
    return e.done(t.emit1(OpKind::ReducePrecision, {x},
                          {{"exponent_bits", Attribute::integer(*eb)},
                           {"mantissa_bits", Attribute::integer(*mb)}},
                          *rt));
  }
  return false;
}

std::optional<std::pair<std::string, std::string>> unsupportedConstruct(const HloInstruction &inst) {
  auto u = unsupportedOps().find(inst.opcode);
  if (u != unsupportedOps().end())
    return std::make_pair(inst.opcode, u->second);
  if (inst.opcode == "custom-call")
    if (const HloAttr *a = inst.attr("custom_call_target")) {
      std::string name = unquote(a->value);
      if (name != "Sharding" && name != "SPMDFullToShardShape" && name != "SPMDShardToFullShape")
        return std::make_pair("custom-call:" + name,
                              "custom-call target '" + name + "' is not implemented by mdl");
    }
  return std::nullopt;
}

HVal Translator::translateOp(const HloInstruction &inst, const std::vector<const HVal *> &ops) {
  HVal out;
  if (translateElementwise(*this, inst, ops, out) || translateDataMovement(*this, inst, ops, out) ||
      translateStructured(*this, inst, ops, out) || translateControlFlow(*this, inst, ops, out))
    return out;
  auto u = unsupportedOps().find(inst.opcode);
  if (u != unsupportedOps().end())
    unsupported(inst.opcode, u->second);
  else
    unsupported(inst.opcode, "unknown HLO opcode");
  out.poisoned = true;
  return out;
}

} // namespace mdl::frontend::hlo
