// Element-wise kernels of the HLO import operations, with XLA's semantics:
//   - div_trunc / rem truncate toward zero; x / 0 is -1 (all bits set) and
//     x % 0 is x; INT_MIN / -1 is INT_MIN and INT_MIN % -1 is 0; with
//     `unsigned`, the operands are read as unsigned of their width.
//   - shifts read the amount as unsigned; a shift by the width or more gives
//     0 (logical) or the sign fill (arithmetic).
//   - compare: "default" is IEEE for floats and two's complement for
//     integers, "unsigned" reads integers as unsigned, "total" orders floats
//     -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.
//   - convert: like cast, but reading and/or writing integers as unsigned of
//     their width (float to unsigned saturates to [0, 2^w - 1], NaN to 0).
//   - reduce_precision rounds to the nearest value with the given exponent
//     and mantissa widths (ties to even), as XLA does on the bits.
#include "backend/cpu/HloKernels.h"
#include "stdlib/Registry.h"


namespace mdl::backend::cpu {

using ir::DType;
using ir::OpKind;

namespace {

Status unsupported(const ir::Operation &op, DType t) {
  return std::string("the cpu kernel of '") + ir::opName(op.kind) + "' does not support " +
         ir::dtypeName(t);
}

// out[i] = f(a[i], b[i]) with NumPy broadcasting; f on storage types.
template <typename T, typename O, typename F>
void broadcast2(const Tensor &a, const Tensor &b, Tensor &out, F f) {
  std::vector<int64_t> os = shapeOf(out);
  StridedLoop<3> loop(os, {rowMajorStrides(os), broadcastStrides(shapeOf(a), os),
                           broadcastStrides(shapeOf(b), os)});
  O *po = out.data<O>();
  const T *pa = a.data<T>(), *pb = b.data<T>();
  loop.run(kParallelCheap, [&](std::array<int64_t, 3> off, std::array<int64_t, 3> st, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      po[off[0] + i] = f(pa[off[1] + i * st[1]], pb[off[2] + i * st[2]]);
  });
}

template <typename T, typename F> void map1(const Tensor &x, Tensor &out, F f) {
  const T *px = x.data<T>();
  T *po = out.data<T>();
  int64_t n = out.numElements();
#pragma omp parallel for if (n >= kParallelCostly && !omp_in_parallel())
  for (int64_t i = 0; i < n; ++i)
    po[i] = f(px[i]);
}

template <typename C> C roundAway(C x) { return std::round(x); }
template <typename C> C roundEven(C x) { return std::nearbyint(x); }

template <typename F> Status floatUnary(const ir::Operation &op, const Tensor &x, Tensor &y, F f) {
  return visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return unsupported(op, x.dtype());
    } else {
      map1<T>(x, y, [&](T v) { return Elem<T>::store(f(Elem<T>::load(v))); });
      return std::nullopt;
    }
  });
}

template <typename U> U reducePrecisionBits(U bits, int srcExp, int srcMant, int64_t e, int64_t m) {
  constexpr int nbits = int(sizeof(U) * 8);
  if (m < srcMant) {
    U lastBit = U(1) << (srcMant - m);
    U bias = (lastBit >> 1) - 1;
    U xLast = (bits & lastBit) >> (srcMant - m);
    bits = (bits + xLast + bias) & ~(lastBit - 1);
  }
  if (e < srcExp) {
    U sign = U(1) << (nbits - 1);
    U expMask = ((U(1) << srcExp) - 1) << srcMant;
    int64_t bias = (int64_t(1) << (srcExp - 1)) - 1;
    int64_t rbias = (int64_t(1) << (e - 1)) - 1;
    U maxExp = U(bias + rbias) << srcMant, minExp = U(bias - rbias) << srcMant;
    U x = bits & expMask;
    if (x > maxExp)
      bits = (bits & sign) | expMask;
    else if (x <= minExp)
      bits = bits & sign;
  }
  return bits;
}

Status reducePrecision(const ir::Operation &op, const Tensor &x, Tensor &y) {
  int64_t e = op.intAttr("exponent_bits", 8), m = op.intAttr("mantissa_bits", 23);
  if (x.dtype() == DType::F64)
    return floatUnary(op, x, y, [&](auto v) {
      double d = double(v);
      if (std::isnan(d))
        return decltype(v)(m > 0 ? d : std::copysign(INFINITY, d));
      uint64_t b;
      std::memcpy(&b, &d, 8);
      b = reducePrecisionBits<uint64_t>(b, 11, 52, e, m);
      std::memcpy(&d, &b, 8);
      return decltype(v)(d);
    });
  return floatUnary(op, x, y, [&](auto v) {
    float f = float(v);
    if (std::isnan(f))
      return decltype(v)(m > 0 ? f : std::copysign(INFINITY, f));
    uint32_t b;
    std::memcpy(&b, &f, 4);
    b = reducePrecisionBits<uint32_t>(b, 8, 23, e, m);
    std::memcpy(&f, &b, 4);
    return decltype(v)(f);
  });
}

Status intUnary(const ir::Operation &op, const Tensor &x, Tensor &y) {
  // Integer unary operations.
  return visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      if (op.kind != OpKind::BitNot)
        return unsupported(op, x.dtype());
      map1<bool>(x, y, [](bool v) { return !v; });
      return std::nullopt;
    } else if constexpr (!kIsInt<T>) {
      return unsupported(op, x.dtype());
    } else {
      using U = UnsignedT<T>;
      if (op.kind == OpKind::BitNot)
        map1<T>(x, y, [](T v) { return T(U(~U(v))); });
      else if (op.kind == OpKind::Popcnt)
        map1<T>(x, y, [](T v) { return T(__builtin_popcountll(uint64_t(U(v)))); });
      else if (op.kind == OpKind::Clz)
        map1<T>(x, y, [](T v) {
          uint64_t u = uint64_t(U(v));
          return T(u == 0 ? int(sizeof(T) * 8) : __builtin_clzll(u) - int(64 - sizeof(T) * 8));
        });
      else
        return unsupported(op, x.dtype());
      return std::nullopt;
    }
  });
}

template <typename T> T shiftOp(OpKind k, T a, T b) {
  using U = UnsignedT<T>;
  constexpr U width = U(sizeof(T) * 8);
  U amount = U(b);
  if (k == OpKind::ShiftLeft)
    return amount >= width ? T(0) : T(U(U(a) << amount));
  if (k == OpKind::ShiftRightLogical)
    return amount >= width ? T(0) : T(U(U(a) >> amount));
  using S = std::make_signed_t<T>;
  S s = S(a);
  if (amount >= width)
    return T(s < 0 ? S(-1) : S(0));
  return T(S(s >> amount));
}

template <typename T> T divTrunc(T a, T b, bool uns) {
  using U = UnsignedT<T>;
  using S = std::make_signed_t<T>;
  if (uns || std::is_unsigned_v<T>)
    return U(b) == 0 ? T(U(~U(0))) : T(U(U(a) / U(b)));
  S x = S(a), y = S(b);
  if (y == 0)
    return T(S(-1));
  if (y == -1)
    return T(wrapNeg(x));
  return T(S(x / y));
}

template <typename T> T remTrunc(T a, T b, bool uns) {
  using U = UnsignedT<T>;
  using S = std::make_signed_t<T>;
  if (uns || std::is_unsigned_v<T>)
    return U(b) == 0 ? a : T(U(U(a) % U(b)));
  S x = S(a), y = S(b);
  if (y == 0)
    return a;
  if (y == -1)
    return T(0);
  return T(S(x % y));
}

// An orderable integer key for the total order of a float's bits.
template <typename U> typename std::make_signed<U>::type totalKey(U bits) {
  using S = std::make_signed_t<U>;
  S s = S(bits);
  return s < 0 ? S(U(bits) ^ (U(~U(0)) >> 1)) : s;
}

int dirCode(const std::string &d) {
  return d == "EQ" ? 0 : d == "NE" ? 1 : d == "LT" ? 2 : d == "LE" ? 3 : d == "GT" ? 4 : 5;
}

template <typename V> bool cmp(int dir, V a, V b) {
  switch (dir) {
  case 0: return a == b;
  case 1: return a != b;
  case 2: return a < b;
  case 3: return a <= b;
  case 4: return a > b;
  default: return a >= b;
  }
}

Status compare(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &out) {
  int dir = dirCode(op.stringAttr("direction"));
  std::string order = op.stringAttr("order");
  return visitDType(in[0].dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      if (order == "total") {
        using Bits = std::conditional_t<sizeof(T) == 2, uint16_t,
                                        std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
        broadcast2<T, bool>(in[0], in[1], out, [&](T a, T b) {
          Bits x, y;
          std::memcpy(&x, &a, sizeof(T));
          std::memcpy(&y, &b, sizeof(T));
          return cmp(dir, totalKey(x), totalKey(y));
        });
      } else {
        broadcast2<T, bool>(in[0], in[1], out,
                            [&](T a, T b) { return cmp(dir, Elem<T>::load(a), Elem<T>::load(b)); });
      }
    } else if constexpr (kIsInt<T>) {
      if (order == "unsigned")
        broadcast2<T, bool>(in[0], in[1], out, [&](T a, T b) {
          return cmp(dir, UnsignedT<T>(a), UnsignedT<T>(b));
        });
      else
        broadcast2<T, bool>(in[0], in[1], out, [&](T a, T b) { return cmp(dir, a, b); });
    } else {
      broadcast2<T, bool>(in[0], in[1], out, [&](T a, T b) { return cmp(dir, int(a), int(b)); });
    }
    return std::nullopt;
  });
}

Status binary(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &out) {
  bool uns = op.boolAttr("is_unsigned", false);
  OpKind k = op.kind;
  return visitDType(in[0].dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      if (k == OpKind::BitAnd)
        broadcast2<T, T>(in[0], in[1], out, [](bool a, bool b) { return a && b; });
      else if (k == OpKind::BitOr)
        broadcast2<T, T>(in[0], in[1], out, [](bool a, bool b) { return a || b; });
      else if (k == OpKind::BitXor)
        broadcast2<T, T>(in[0], in[1], out, [](bool a, bool b) { return a != b; });
      else
        return unsupported(op, in[0].dtype());
      return std::nullopt;
    } else if constexpr (kIsFloat<T>) {
      if (k == OpKind::Rem)
        broadcast2<T, T>(in[0], in[1], out, [](T a, T b) {
          return Elem<T>::store(std::fmod(Elem<T>::load(a), Elem<T>::load(b)));
        });
      else if (k == OpKind::Atan2)
        broadcast2<T, T>(in[0], in[1], out, [](T a, T b) {
          return Elem<T>::store(std::atan2(Elem<T>::load(a), Elem<T>::load(b)));
        });
      else
        return unsupported(op, in[0].dtype());
      return std::nullopt;
    } else {
      using U = UnsignedT<T>;
      switch (k) {
      case OpKind::BitAnd:
        broadcast2<T, T>(in[0], in[1], out, [](T a, T b) { return T(U(a) & U(b)); });
        break;
      case OpKind::BitOr:
        broadcast2<T, T>(in[0], in[1], out, [](T a, T b) { return T(U(a) | U(b)); });
        break;
      case OpKind::BitXor:
        broadcast2<T, T>(in[0], in[1], out, [](T a, T b) { return T(U(a) ^ U(b)); });
        break;
      case OpKind::ShiftLeft: case OpKind::ShiftRightLogical: case OpKind::ShiftRightArith:
        broadcast2<T, T>(in[0], in[1], out, [k](T a, T b) { return shiftOp(k, a, b); });
        break;
      case OpKind::DivTrunc:
        broadcast2<T, T>(in[0], in[1], out, [uns](T a, T b) { return divTrunc(a, b, uns); });
        break;
      case OpKind::Rem:
        broadcast2<T, T>(in[0], in[1], out, [uns](T a, T b) { return remTrunc(a, b, uns); });
        break;
      default:
        return unsupported(op, in[0].dtype());
      }
      return std::nullopt;
    }
  });
}

// A source element read for conversion: a float value, or integer bits
// read as signed or unsigned.
struct Wide {
  bool isFloat;
  double f;
  int64_t s;
  uint64_t u;
  bool uns;
};

template <typename T> Wide readWide(T v, bool uns) {
  Wide w{};
  if constexpr (kIsFloat<T>) {
    w.isFloat = true;
    w.f = double(Elem<T>::load(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    w.s = v ? 1 : 0;
    w.u = uint64_t(w.s);
  } else {
    w.uns = uns || std::is_unsigned_v<T>;
    w.u = uint64_t(UnsignedT<T>(v));
    w.s = int64_t(v);
  }
  return w;
}

template <typename U> U writeWide(const Wide &w, bool toUns) {
  if constexpr (std::is_same_v<U, bool>) {
    return w.isFloat ? w.f != 0 : w.u != 0;
  } else if constexpr (kIsFloat<U>) {
    using C = ComputeT<U>;
    return Elem<U>::store(w.isFloat ? C(w.f) : w.uns ? C(w.u) : C(w.s));
  } else {
    using UU = UnsignedT<U>;
    if (w.isFloat) {
      if (!toUns)
        return saturateToInt<U>(w.f);
      if (std::isnan(w.f) || w.f <= 0)
        return U(0);
      double hi = std::ldexp(1.0, int(sizeof(U) * 8));
      return w.f >= hi ? U(UU(~UU(0))) : U(UU(w.f));
    }
    return U(UU(w.uns ? w.u : uint64_t(w.s)));
  }
}

Status convert(const ir::Operation &op, const Tensor &x, Tensor &y) {
  bool fromU = op.boolAttr("from_unsigned", false), toU = op.boolAttr("to_unsigned", false);
  int64_t n = y.numElements();
  return visitDType(x.dtype(), [&](auto st) -> Status {
    using T = typename decltype(st)::type;
    return visitDType(y.dtype(), [&](auto dtag) -> Status {
      using U = typename decltype(dtag)::type;
      const T *src = x.data<T>();
      U *dst = y.data<U>();
      for (int64_t i = 0; i < n; ++i)
        dst[i] = writeWide<U>(readWide<T>(src[i], fromU), toU);
      return std::nullopt;
    });
  });
}

Status iota(const ir::Operation &op, Tensor &y) {
  std::vector<int64_t> s = shapeOf(y);
  int64_t d = op.intAttr("dimension", 0);
  if (d < 0 || d >= int64_t(s.size()))
    return std::string("iota dimension out of range");
  int64_t inner = product(s, size_t(d) + 1), dim = s[size_t(d)], n = y.numElements();
  return visitDType(y.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T *p = y.data<T>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = Elem<T>::store(ComputeT<T>((i / inner) % dim));
    return std::nullopt;
  });
}

// A unary kernel whose operand and result have the same number of elements.
KernelFn sized(KernelFn f) {
  return [f](const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out,
             const FunctionCaller *caller) -> Status {
    if (in[0].numElements() != out[0].numElements())
      return std::string("'") + ir::opName(op.kind) + "' operand and result differ in size";
    return f(op, in, out, caller);
  };
}

// A binary kernel whose operands broadcast to the result.
KernelFn broadcasting(KernelFn f) {
  return [f](const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out,
             const FunctionCaller *caller) -> Status {
    std::vector<int64_t> os = shapeOf(out[0]);
    for (const Tensor &t : in) {
      std::vector<int64_t> s = shapeOf(t);
      bool fits = s.size() <= os.size();
      for (size_t d = 0; fits && d < s.size(); ++d)
        fits = s[d] == 1 || s[d] == os[os.size() - s.size() + d];
      if (!fits || in[0].dtype() != in[1].dtype())
        return std::string("'") + ir::opName(op.kind) + "' operands do not broadcast to " +
               out[0].type().str();
    }
    return f(op, in, out, caller);
  };
}

} // namespace

void registerHloElementwiseKernels(KernelTable &t) {
  t.add(OpKind::Expm1, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::expm1(v); });
  }));
  t.add(OpKind::Log1p, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::log1p(v); });
  }));
  t.add(OpKind::Tan, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::tan(v); });
  }));
  t.add(OpKind::Erf, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::erf(v); });
  }));
  t.add(OpKind::Cbrt, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::cbrt(v); });
  }));
  t.add(OpKind::Acos, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::acos(v); });
  }));
  t.add(OpKind::Asin, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::asin(v); });
  }));
  t.add(OpKind::Atan, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::atan(v); });
  }));
  t.add(OpKind::Acosh, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::acosh(v); });
  }));
  t.add(OpKind::Asinh, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::asinh(v); });
  }));
  t.add(OpKind::Atanh, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::atanh(v); });
  }));
  t.add(OpKind::Cosh, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::cosh(v); });
  }));
  t.add(OpKind::Sinh, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return std::sinh(v); });
  }));
  t.add(OpKind::RoundEven, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return roundEven(v); });
  }));
  t.add(OpKind::RoundAway, sized(MDL_KERNEL {
    return floatUnary(op, in[0], out[0], [](auto v) { return roundAway(v); });
  }));
  t.add(OpKind::ReducePrecision, sized(MDL_KERNEL { return reducePrecision(op, in[0], out[0]); }));
  t.add(OpKind::IsFinite, sized(MDL_KERNEL {
    const Tensor &x = in[0];
    Tensor &y = out[0];
    return visitDType(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsFloat<T>) {
        return unsupported(op, x.dtype());
      } else {
        const T *px = x.data<T>();
        bool *po = y.data<bool>();
        int64_t n = y.numElements();
        for (int64_t i = 0; i < n; ++i)
          po[i] = std::isfinite(Elem<T>::load(px[i]));
        return std::nullopt;
      }
    });
  }));
  t.add({OpKind::BitNot, OpKind::Popcnt, OpKind::Clz},
        sized(MDL_KERNEL { return intUnary(op, in[0], out[0]); }));
  t.add(OpKind::Iota, MDL_KERNEL { return iota(op, out[0]); });
  t.add(OpKind::Convert, MDL_KERNEL {
    if (in[0].numElements() != out[0].numElements())
      return std::string("'convert' operand and result differ in size");
    return convert(op, in[0], out[0]);
  });
  t.add(OpKind::BitcastConvert, MDL_KERNEL {
    if (in[0].byteSize() != out[0].byteSize())
      return std::string("'bitcast_convert' operand and result differ in size");
    copyBytes(out[0].raw(), in[0].raw(), out[0].byteSize());
    return std::nullopt;
  });
  t.add(OpKind::Compare, broadcasting(MDL_KERNEL { return compare(op, in, out[0]); }));
  t.add({OpKind::BitAnd, OpKind::BitOr, OpKind::BitXor, OpKind::ShiftLeft, OpKind::ShiftRightLogical,
         OpKind::ShiftRightArith, OpKind::DivTrunc, OpKind::Rem, OpKind::Atan2},
        broadcasting(MDL_KERNEL { return binary(op, in, out[0]); }));
}

} // namespace mdl::backend::cpu
