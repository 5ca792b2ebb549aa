// Element-wise kernels: arithmetic, comparison and logic with NumPy
// broadcasting, the unary math functions, clip and select.
//
// Integer semantics follow NumPy where it is defined and stay defined where
// it is not: `/` is floor division and `%` its remainder (sign of the
// divisor); a zero divisor gives 0 for both (NumPy also gives 0, with a
// warning); overflow wraps, including INT_MIN / -1; `pow` with a negative
// exponent gives 0 except for bases 1 and -1 (NumPy raises an error).
// Float `%` has the sign of the divisor; maximum/minimum propagate NaN.
#include "backend/cpu/KernelSupport.h"
#include "stdlib/OpAttrs.h"

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

Status unsupported(const ir::Operation &op, ir::DType t) {
  return std::string("the cpu kernel of '") + ir::opName(op.kind) +
         "' does not support " + ir::dtypeName(t);
}

// --- Scalar semantics -------------------------------------------------------

template <typename C> C floorDiv(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return a / b;
  } else {
    if (b == 0)
      return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1)
        return wrapNeg(a);
      C q = C(a / b);
      if (a % b != 0 && ((a < 0) != (b < 0)))
        --q;
      return q;
    } else {
      return C(a / b);
    }
  }
}

template <typename C> C floorMod(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    C r = std::fmod(a, b);
    if (r != 0) {
      if ((r < 0) != (b < 0))
        r += b;
    } else {
      r = std::copysign(C(0), b);
    }
    return r;
  } else {
    if (b == 0)
      return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1)
        return 0;
      C r = C(a % b);
      if (r != 0 && ((r < 0) != (b < 0)))
        r = C(r + b);
      return r;
    } else {
      return C(a % b);
    }
  }
}

template <typename C> C power(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::pow(a, b);
  } else {
    if constexpr (std::is_signed_v<C>) {
      if (b < 0)
        return a == 1 ? 1 : a == -1 ? ((b & 1) ? C(-1) : C(1)) : 0;
    }
    C r = 1;
    for (UnsignedT<C> e = UnsignedT<C>(b); e; e >>= 1) {
      if (e & 1)
        r = wrapMul(r, a);
      a = wrapMul(a, a);
    }
    return r;
  }
}

template <typename C> C maxNaN(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    return (a > b || std::isnan(a)) ? a : b;
  else
    return a > b ? a : b;
}

template <typename C> C minNaN(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    return (a < b || std::isnan(a)) ? a : b;
  else
    return a < b ? a : b;
}

// --- Broadcast loops --------------------------------------------------------

// out[i] = f(a[i], b[i]) with a and b broadcast to out's shape; f works on
// compute types and returns Out's compute type.
template <typename T, typename Out, typename F>
void binaryLoop(const Tensor &a, const Tensor &b, Tensor &out, int64_t par,
                F f) {
  std::vector<int64_t> os = shapeOf(out);
  StridedLoop<3> loop(os,
                      {rowMajorStrides(os), broadcastStrides(shapeOf(a), os),
                       broadcastStrides(shapeOf(b), os)});
  Out *o = out.data<Out>();
  const T *pa = a.data<T>(), *pb = b.data<T>();
  auto g = [&](T x, T y) {
    return Elem<Out>::store(f(Elem<T>::load(x), Elem<T>::load(y)));
  };
  loop.run(par, [&](std::array<int64_t, 3> off, std::array<int64_t, 3> st,
                    int64_t n) {
    Out *po = o + off[0];
    const T *xa = pa + off[1], *xb = pb + off[2];
    if (st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i)
        po[i] = g(xa[i], xb[i]);
    } else if (st[1] == 0 && st[2] == 1) {
      T x = xa[0];
      for (int64_t i = 0; i < n; ++i)
        po[i] = g(x, xb[i]);
    } else if (st[1] == 1 && st[2] == 0) {
      T y = xb[0];
      for (int64_t i = 0; i < n; ++i)
        po[i] = g(xa[i], y);
    } else {
      for (int64_t i = 0; i < n; ++i)
        po[i] = g(xa[i * st[1]], xb[i * st[2]]);
    }
  });
}

// out = f(x) over the whole tensor (same shape).
template <typename T, typename F>
void unaryLoop(const Tensor &x, Tensor &out, int64_t par, F f) {
  const T *px = x.data<T>();
  T *po = out.data<T>();
  int64_t n = out.numElements();
#pragma omp parallel for if (n >= par && !omp_in_parallel())
  for (int64_t i = 0; i < n; ++i)
    po[i] = Elem<T>::store(f(Elem<T>::load(px[i])));
}

// Arithmetic on every dtype but bool; f(C, C) -> C.
template <typename F>
Status arith(const ir::Operation &op, const std::vector<Tensor> &in,
             Tensor &out, int64_t par, F f) {
  return visitDType(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported(op, out.dtype());
    } else {
      binaryLoop<T, T>(in[0], in[1], out, par, f);
      return std::nullopt;
    }
  });
}

// Comparisons on every dtype; f(C, C) -> bool.
template <typename F>
Status compare(const std::vector<Tensor> &in, Tensor &out, F f) {
  return visitDType(in[0].dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    binaryLoop<T, bool>(in[0], in[1], out, kParallelCheap, f);
    return std::nullopt;
  });
}

// --- Unary ------------------------------------------------------------------

// Float-only math; f(C) -> C for C in {float, double}.
template <typename F>
Status floatMath(const ir::Operation &op, const Tensor &x, Tensor &out, F f) {
  return visitDType(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return unsupported(op, out.dtype());
    } else {
      unaryLoop<T>(x, out, kParallelCostly, f);
      return std::nullopt;
    }
  });
}

// Numeric (not bool); f(C) -> C for every numeric compute type.
template <typename F>
Status numeric(const ir::Operation &op, const Tensor &x, Tensor &out, F f) {
  return visitDType(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported(op, out.dtype());
    } else {
      unaryLoop<T>(x, out, kParallelCheap, f);
      return std::nullopt;
    }
  });
}

template <typename C> C gelu(C x, bool approximate) {
  if (approximate) {
    const C k = C(0.7978845608028654); // sqrt(2 / pi)
    return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
  }
  return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
}

template <typename C> C sigmoid(C x) {
  // Never exp of a large positive number: no overflow to inf / inf.
  if (x >= 0)
    return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

// --- Three operands ---------------------------------------------------------

// clip(x, lo, hi) = minimum(maximum(x, lo), hi), all three broadcast.
Status clip(const ir::Operation &op, const std::vector<Tensor> &in,
            Tensor &out) {
  return visitDType(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported(op, out.dtype());
    } else {
      std::vector<int64_t> os = shapeOf(out);
      StridedLoop<4> loop(os, {rowMajorStrides(os),
                               broadcastStrides(shapeOf(in[0]), os),
                               broadcastStrides(shapeOf(in[1]), os),
                               broadcastStrides(shapeOf(in[2]), os)});
      T *o = out.data<T>();
      const T *x = in[0].data<T>(), *lo = in[1].data<T>(),
              *hi = in[2].data<T>();
      loop.run(kParallelCheap, [&](std::array<int64_t, 4> off,
                                   std::array<int64_t, 4> st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          auto v = Elem<T>::load(x[off[1] + i * st[1]]);
          v = maxNaN(v, Elem<T>::load(lo[off[2] + i * st[2]]));
          v = minNaN(v, Elem<T>::load(hi[off[3] + i * st[3]]));
          o[off[0] + i] = Elem<T>::store(v);
        }
      });
      return std::nullopt;
    }
  });
}

// select(c, a, b): moves elements, so it works on raw bits of the size.
Status select(const std::vector<Tensor> &in, Tensor &out) {
  std::vector<int64_t> os = shapeOf(out);
  StridedLoop<4> loop(os, {rowMajorStrides(os),
                           broadcastStrides(shapeOf(in[0]), os),
                           broadcastStrides(shapeOf(in[1]), os),
                           broadcastStrides(shapeOf(in[2]), os)});
  return visitBits(ir::dtypeSize(out.dtype()), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    U *o = out.data<U>();
    const uint8_t *c = in[0].data<uint8_t>();
    const U *a = in[1].data<U>(), *b = in[2].data<U>();
    loop.run(kParallelCheap, [&](std::array<int64_t, 4> off,
                                 std::array<int64_t, 4> st, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        o[off[0] + i] = c[off[1] + i * st[1]] ? a[off[2] + i * st[2]]
                                              : b[off[3] + i * st[3]];
    });
    return std::nullopt;
  });
}

// The loops index operands by broadcasting them to the output's shape; an
// operand that does not broadcast would be read out of bounds.
Status checkOperands(const ir::Operation &op, const std::vector<Tensor> &in,
                     const Tensor &out) {
  std::vector<int64_t> os = shapeOf(out);
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<int64_t> s = shapeOf(in[i]);
    bool fits = s.size() <= os.size() &&
                (in.size() > 1 || in[i].numElements() == out.numElements());
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = s[d] == 1 || s[d] == os[os.size() - s.size() + d];
    if (!fits)
      return std::string("'") + ir::opName(op.kind) + "' operand " +
             std::to_string(i) + " is " + in[i].type().str() +
             ", which does not broadcast to " + out.type().str();
  }
  return std::nullopt;
}

// A kernel over the first output, for operands that broadcast to it.
template <typename F> KernelFn elementwise(F f) {
  return [f](const ir::Operation &op, const std::vector<Tensor> &in,
             std::vector<Tensor> &out, const FunctionCaller *) -> Status {
    if (Status bad = checkOperands(op, in, out[0]))
      return bad;
    return f(op, in, out[0]);
  };
}

#define KERNEL                                                                 \
  [](const ir::Operation &op, const std::vector<Tensor> &in,                   \
     Tensor &out) -> Status

// --- Registration
// -------------------------------------------------------------

} // namespace

void registerElementwiseKernels(KernelTable &t) {
  // Binary arithmetic, comparison and logic.
  t.add(OpKind::Add, elementwise(KERNEL {
          return arith(op, in, out, kParallelCheap, [](auto a, auto b) {
            if constexpr (std::is_integral_v<decltype(a)>)
              return wrapAdd(a, b);
            else
              return a + b;
          });
        }));
  t.add(OpKind::Sub, elementwise(KERNEL {
          return arith(op, in, out, kParallelCheap, [](auto a, auto b) {
            if constexpr (std::is_integral_v<decltype(a)>)
              return wrapSub(a, b);
            else
              return a - b;
          });
        }));
  t.add(OpKind::Mul, elementwise(KERNEL {
          return arith(op, in, out, kParallelCheap, [](auto a, auto b) {
            if constexpr (std::is_integral_v<decltype(a)>)
              return wrapMul(a, b);
            else
              return a * b;
          });
        }));
  t.add(OpKind::Div, elementwise(KERNEL {
          return arith(op, in, out, kParallelCheap,
                       [](auto a, auto b) { return floorDiv(a, b); });
        }));
  t.add(OpKind::Mod, elementwise(KERNEL {
          return arith(op, in, out, kParallelCostly,
                       [](auto a, auto b) { return floorMod(a, b); });
        }));
  t.add(OpKind::Pow, elementwise(KERNEL {
          return arith(op, in, out, kParallelCostly,
                       [](auto a, auto b) { return power(a, b); });
        }));
  t.add(OpKind::Maximum, elementwise(KERNEL {
          return arith(op, in, out, kParallelCheap,
                       [](auto a, auto b) { return maxNaN(a, b); });
        }));
  t.add(OpKind::Minimum, elementwise(KERNEL {
          return arith(op, in, out, kParallelCheap,
                       [](auto a, auto b) { return minNaN(a, b); });
        }));
  t.add(OpKind::Eq, elementwise(KERNEL {
          return compare(in, out, [](auto a, auto b) { return a == b; });
        }));
  t.add(OpKind::Ne, elementwise(KERNEL {
          return compare(in, out, [](auto a, auto b) { return a != b; });
        }));
  t.add(OpKind::Lt, elementwise(KERNEL {
          return compare(in, out, [](auto a, auto b) { return a < b; });
        }));
  t.add(OpKind::Le, elementwise(KERNEL {
          return compare(in, out, [](auto a, auto b) { return a <= b; });
        }));
  t.add(OpKind::Gt, elementwise(KERNEL {
          return compare(in, out, [](auto a, auto b) { return a > b; });
        }));
  t.add(OpKind::Ge, elementwise(KERNEL {
          return compare(in, out, [](auto a, auto b) { return a >= b; });
        }));
  t.add(OpKind::And, elementwise(KERNEL {
          binaryLoop<bool, bool>(in[0], in[1], out, kParallelCheap,
                                 [](bool a, bool b) { return a && b; });
          return std::nullopt;
        }));
  t.add(OpKind::Or, elementwise(KERNEL {
          binaryLoop<bool, bool>(in[0], in[1], out, kParallelCheap,
                                 [](bool a, bool b) { return a || b; });
          return std::nullopt;
        }));
  // Unary.
  t.add(OpKind::Neg, elementwise(KERNEL {
          const Tensor &x = in[0];
          return numeric(op, x, out, [](auto a) {
            if constexpr (std::is_integral_v<decltype(a)>)
              return wrapNeg(a);
            else
              return -a;
          });
        }));
  t.add(OpKind::Abs, elementwise(KERNEL {
          const Tensor &x = in[0];
          return numeric(op, x, out, [](auto a) {
            using C = decltype(a);
            if constexpr (std::is_floating_point_v<C>)
              return std::fabs(a);
            else if constexpr (std::is_signed_v<C>)
              return a < 0 ? wrapNeg(a) : a;
            else
              return a;
          });
        }));
  t.add(OpKind::Relu, elementwise(KERNEL {
          const Tensor &x = in[0];
          // `a < 0 ? 0 : a` keeps NaN (NumPy's maximum(x, 0) does too).
          return numeric(op, x, out, [](auto a) {
            if constexpr (std::is_unsigned_v<decltype(a)>)
              return a;
            else
              return a < 0 ? decltype(a)(0) : a;
          });
        }));
  t.add(OpKind::Floor, elementwise(KERNEL {
          const Tensor &x = in[0];
          return numeric(op, x, out, [](auto a) {
            if constexpr (std::is_floating_point_v<decltype(a)>)
              return std::floor(a);
            else
              return a;
          });
        }));
  t.add(OpKind::Ceil, elementwise(KERNEL {
          const Tensor &x = in[0];
          return numeric(op, x, out, [](auto a) {
            if constexpr (std::is_floating_point_v<decltype(a)>)
              return std::ceil(a);
            else
              return a;
          });
        }));
  t.add(OpKind::Sign, elementwise(KERNEL {
          const Tensor &x = in[0];
          return numeric(op, x, out, [](auto a) {
            using C = decltype(a);
            if constexpr (std::is_unsigned_v<C>) {
              return C(a > 0);
            } else {
              if constexpr (std::is_floating_point_v<C>)
                if (std::isnan(a))
                  return a;
              return C(C(a > 0) - C(a < 0));
            }
          });
        }));
  t.add(OpKind::Not, elementwise(KERNEL {
          const Tensor &x = in[0];
          unaryLoop<bool>(x, out, kParallelCheap, [](bool a) { return !a; });
          return std::nullopt;
        }));
  t.add(OpKind::Exp, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(op, x, out, [](auto a) { return std::exp(a); });
        }));
  t.add(OpKind::Log, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(op, x, out, [](auto a) { return std::log(a); });
        }));
  t.add(OpKind::Sqrt, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(op, x, out, [](auto a) { return std::sqrt(a); });
        }));
  t.add(OpKind::Rsqrt, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(
              op, x, out, [](auto a) { return decltype(a)(1) / std::sqrt(a); });
        }));
  t.add(OpKind::Tanh, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(op, x, out, [](auto a) { return std::tanh(a); });
        }));
  t.add(OpKind::Sigmoid, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(op, x, out, [](auto a) { return sigmoid(a); });
        }));
  t.add(OpKind::Sin, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(op, x, out, [](auto a) { return std::sin(a); });
        }));
  t.add(OpKind::Cos, elementwise(KERNEL {
          const Tensor &x = in[0];
          return floatMath(op, x, out, [](auto a) { return std::cos(a); });
        }));
  t.add(OpKind::Gelu, elementwise(KERNEL {
          const Tensor &x = in[0];
          bool approx = stdlib::attrs::Gelu::of(op).approximate;
          return floatMath(op, x, out,
                           [approx](auto a) { return gelu(a, approx); });
        }));
  t.add(OpKind::Clip, elementwise(KERNEL { return clip(op, in, out); }));
  t.add(OpKind::Select, elementwise(KERNEL { return select(in, out); }));
}

} // namespace mdl::backend::cpu
