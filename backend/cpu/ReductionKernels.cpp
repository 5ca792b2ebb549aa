// Reductions (sum, mean, max, min, prod over any set of axes, keepdims) and
// argmax / argmin.
//
// The input's dimensions are coalesced into alternating runs of kept and
// reduced dimensions. When the innermost run is reduced, each output
// element sums a contiguous stretch (split among threads when there are few
// outputs); when it is kept, a block of neighbouring outputs is accumulated
// together so the inner loop runs over contiguous memory. Float sums
// accumulate in double; integer sums and products wrap; max and min
// propagate NaN as NumPy does.
#include "backend/cpu/KernelSupport.h"
#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

// Sums and products accumulate in double for floats and in a wrapping
// 64-bit unsigned for integers (the low bits are the exact wrapped result).
template <typename T>
using SumAcc = std::conditional_t<kIsFloat<T>, double, uint64_t>;

template <typename T> SumAcc<T> widen(ComputeT<T> v) {
  if constexpr (kIsFloat<T>)
    return double(v);
  else
    return uint64_t(int64_t(v)); // sign-extend, then wrap
}

template <typename T> T narrow(SumAcc<T> a) {
  if constexpr (kIsFloat<T>)
    return Elem<T>::store(ComputeT<T>(a));
  else
    return T(UnsignedT<T>(a));
}

// max / min step with NaN propagation (a NaN, once seen, stays).
// Branch-free, so that the accumulator lanes vectorize: a NaN x is always
// taken, and nothing replaces a NaN accumulator (x > NaN is false).
template <typename T, bool IsMax>
ComputeT<T> extremum(ComputeT<T> a, ComputeT<T> x) {
  bool take = IsMax ? x > a : x < a;
  if constexpr (kIsFloat<T>)
    take |= x != x;
  return take ? x : a;
}

template <typename T, bool IsMax> ComputeT<T> extremumInit() {
  using C = ComputeT<T>;
  if constexpr (kIsFloat<T>)
    return IsMax ? -std::numeric_limits<C>::infinity()
                 : std::numeric_limits<C>::infinity();
  else
    return IsMax ? std::numeric_limits<C>::lowest()
                 : std::numeric_limits<C>::max();
}

// Coalesced description of a reduction over a row-major input.
struct ReducePlan {
  std::vector<int64_t> keptShape, keptStride; // output order
  std::vector<int64_t> redShape, redStride;
  bool innerReduced = false;
  int64_t kept = 1, reduced = 1;
};

ReducePlan planReduce(const std::vector<int64_t> &shape,
                      const std::vector<int64_t> &axes) {
  ReducePlan p;
  std::vector<int64_t> strides = rowMajorStrides(shape);
  int last = -1; // 0 kept, 1 reduced: the kind of the previous group
  for (size_t d = 0; d < shape.size(); ++d) {
    bool red = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
    (red ? p.reduced : p.kept) *= shape[d];
    if (shape[d] == 1)
      continue;
    auto &s = red ? p.redShape : p.keptShape;
    auto &st = red ? p.redStride : p.keptStride;
    if (last == int(red)) {
      // Adjacent dimensions of a row-major tensor merge: the group's stride
      // becomes the inner one.
      s.back() *= shape[d];
      st.back() = strides[d];
    } else {
      s.push_back(shape[d]);
      st.push_back(strides[d]);
    }
    last = int(red);
  }
  p.innerReduced = last == 1;
  return p;
}

int64_t offsetOf(int64_t flat, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &stride, size_t dims) {
  int64_t off = 0;
  for (size_t d = dims; d-- > 0;) {
    off += flat % shape[d] * stride[d];
    flat /= shape[d];
  }
  return off;
}

// A reduction with accumulator A: init() -> A, add(A, C) -> A,
// merge(A, A) -> A, finish(A) -> T.
template <typename T, typename A, typename Init, typename Add, typename Merge,
          typename Finish>
void reduce(const ReducePlan &p, const T *x, T *y, Init init, Add add,
            Merge merge, Finish finish) {
  StridedLoop<1> red(p.redShape, {p.redStride});
  const int64_t R = red.total;
  bool big = p.kept * R >= kParallelCheap && !omp_in_parallel();
  if (p.innerReduced) {
    auto sumRange = [&](int64_t base, int64_t b, int64_t e) {
      A acc = init();
      red.runRange(b, e,
                   [&](std::array<int64_t, 1> off, std::array<int64_t, 1> st,
                       int64_t n) {
                     const T *row = x + base + off[0];
                     if (st[0] == 1) {
                       // Eight independent accumulators: no serial dependency
                       // between consecutive additions, so the loop pipelines
                       // and vectorizes.
                       constexpr int kLanes = 8;
                       A lanes[kLanes];
                       for (int l = 0; l < kLanes; ++l)
                         lanes[l] = init();
                       int64_t j = 0;
                       for (; j + kLanes <= n; j += kLanes)
                         for (int l = 0; l < kLanes; ++l)
                           lanes[l] = add(lanes[l], Elem<T>::load(row[j + l]));
                       for (; j < n; ++j)
                         lanes[0] = add(lanes[0], Elem<T>::load(row[j]));
                       for (int l = 0; l < kLanes; ++l)
                         acc = merge(acc, lanes[l]);
                     } else {
                       for (int64_t j = 0; j < n; ++j)
                         acc = add(acc, Elem<T>::load(row[j * st[0]]));
                     }
                   });
      return acc;
    };
    int threads = omp_get_max_threads();
    if (big && p.kept < threads) {
      // Few outputs, long reductions: split each one among the threads.
      for (int64_t o = 0; o < p.kept; ++o) {
        int64_t base =
            offsetOf(o, p.keptShape, p.keptStride, p.keptShape.size());
        std::vector<A> part(threads, init());
#pragma omp parallel num_threads(threads)
        {
          int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
          part[t] = sumRange(base, R * t / nt, R * (t + 1) / nt);
        }
        A acc = part[0];
        for (int t = 1; t < threads; ++t)
          acc = merge(acc, part[t]);
        y[o] = finish(acc);
      }
      return;
    }
#pragma omp parallel for if (big) schedule(static)
    for (int64_t o = 0; o < p.kept; ++o)
      y[o] = finish(sumRange(
          offsetOf(o, p.keptShape, p.keptStride, p.keptShape.size()), 0, R));
    return;
  }
  // The innermost kept run (length L, contiguous) is accumulated in blocks.
  constexpr int64_t kBlock = 256;
  int64_t L = p.keptShape.empty() ? 1 : p.keptShape.back();
  size_t outerDims = p.keptShape.empty() ? 0 : p.keptShape.size() - 1;
  int64_t groups = L ? p.kept / L : 0, blocks = (L + kBlock - 1) / kBlock;
#pragma omp parallel for if (big) schedule(static)
  for (int64_t w = 0; w < groups * blocks; ++w) {
    int64_t g = w / blocks, j0 = w % blocks * kBlock,
            len = std::min(kBlock, L - j0);
    int64_t base = offsetOf(g, p.keptShape, p.keptStride, outerDims) + j0;
    A acc[kBlock];
    for (int64_t j = 0; j < len; ++j)
      acc[j] = init();
    red.runRange(
        0, R,
        [&](std::array<int64_t, 1> off, std::array<int64_t, 1> st, int64_t n) {
          for (int64_t c = 0; c < n; ++c) {
            const T *row = x + base + off[0] + c * st[0];
            for (int64_t j = 0; j < len; ++j)
              acc[j] = add(acc[j], Elem<T>::load(row[j]));
          }
        });
    T *dst = y + g * L + j0;
    for (int64_t j = 0; j < len; ++j)
      dst[j] = finish(acc[j]);
  }
}

Status argReduce(const ir::Operation &op, const Tensor &x, Tensor &out) {
  std::vector<int64_t> shape = shapeOf(x);
  int64_t outer = 1, n = x.numElements(), inner = 1;
  if (const ir::Attribute *a = op.attr("axis");
      a && a->kind() == ir::Attribute::Kind::Int) {
    int64_t axis = a->asInt();
    outer = product(shape, 0, axis);
    n = shape[axis];
    inner = product(shape, axis + 1);
  }
  if (n == 0 && outer * inner > 0)
    return std::string("attempt to get ") + ir::opName(op.kind) +
           " of an empty sequence";
  bool isMax = op.kind == OpKind::Argmax;
  return visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeT<T>;
    const T *px = x.data<T>();
    int64_t *py = out.data<int64_t>();
    // First occurrence wins; a NaN beats every number (NumPy's rule).
    auto better = [isMax](C v, C best) {
      bool b = isMax ? v > best : v < best;
      if constexpr (kIsFloat<T>)
        b = b || (std::isnan(v) && !std::isnan(best));
      return b;
    };
    constexpr int64_t kBlock = 256;
    int64_t blocks = (inner + kBlock - 1) / kBlock;
    bool big = outer * inner * n >= kParallelCheap && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
    for (int64_t w = 0; w < outer * blocks; ++w) {
      int64_t o = w / blocks, i0 = w % blocks * kBlock,
              len = std::min(kBlock, inner - i0);
      const T *base = px + o * n * inner + i0;
      C best[kBlock];
      int64_t at[kBlock];
      for (int64_t j = 0; j < len; ++j) {
        best[j] = Elem<T>::load(base[j]);
        at[j] = 0;
      }
      for (int64_t k = 1; k < n; ++k)
        for (int64_t j = 0; j < len; ++j) {
          C v = Elem<T>::load(base[k * inner + j]);
          if (better(v, best[j])) {
            best[j] = v;
            at[j] = k;
          }
        }
      for (int64_t j = 0; j < len; ++j)
        py[o * inner + i0 + j] = at[j];
    }
    return std::nullopt;
  });
}

} // namespace

Status runReduction(const ir::Operation &op, const std::vector<Tensor> &in,
                    std::vector<Tensor> &out) {
  const Tensor &x = in[0];
  ReducePlan plan = planReduce(shapeOf(x), op.intListAttr("axis"));
  int64_t count = plan.reduced;
  return visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return std::string("the cpu kernel of '") + ir::opName(op.kind) +
             "' does not support bool";
    } else {
      using C = ComputeT<T>;
      using A = SumAcc<T>;
      const T *px = x.data<T>();
      T *py = out[0].data<T>();
      auto plus = [](A a, A b) { return A(a + b); };
      auto times = [](A a, A b) { return A(a * b); };
      switch (op.kind) {
      case OpKind::Sum:
        reduce<T, A>(
            plan, px, py, [] { return A(0); },
            [](A a, C v) { return A(a + widen<T>(v)); }, plus,
            [](A a) { return narrow<T>(a); });
        break;
      case OpKind::Mean:
        reduce<T, A>(
            plan, px, py, [] { return A(0); },
            [](A a, C v) { return A(a + widen<T>(v)); }, plus,
            [count](A a) { return narrow<T>(A(a / A(count))); });
        break;
      case OpKind::Prod:
        reduce<T, A>(
            plan, px, py, [] { return A(1); },
            [](A a, C v) { return A(a * widen<T>(v)); }, times,
            [](A a) { return narrow<T>(a); });
        break;
      case OpKind::ReduceMax:
        reduce<T, C>(
            plan, px, py, [] { return extremumInit<T, true>(); },
            [](C a, C v) { return extremum<T, true>(a, v); },
            [](C a, C v) { return extremum<T, true>(a, v); },
            [](C a) { return Elem<T>::store(a); });
        break;
      default:
        reduce<T, C>(
            plan, px, py, [] { return extremumInit<T, false>(); },
            [](C a, C v) { return extremum<T, false>(a, v); },
            [](C a, C v) { return extremum<T, false>(a, v); },
            [](C a) { return Elem<T>::store(a); });
        break;
      }
      return std::nullopt;
    }
  });
}

Status runArgReduction(const ir::Operation &op, const std::vector<Tensor> &in,
                       std::vector<Tensor> &out) {
  return argReduce(op, in[0], out[0]);
}

void registerReductionKernels(KernelTable &t) {
  t.add({OpKind::Sum, OpKind::Mean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::Prod},
        MDL_KERNEL { return runReduction(op, in, out); });
  t.add({OpKind::Argmax, OpKind::Argmin},
        MDL_KERNEL { return runArgReduction(op, in, out); });
}

} // namespace mdl::backend::cpu
