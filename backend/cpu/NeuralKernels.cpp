// Normalizations along one axis: softmax, log_softmax and layernorm.
//
// The input is viewed as [outer, n, inner] around the axis; each of the
// outer * inner lines of n elements is handled by one thread. softmax
// subtracts the line's maximum before exponentiating (no overflow);
// layernorm uses the biased variance (NumPy's var), computes its sums in
// double, then applies gamma and beta with broadcasting.
#include "backend/cpu/KernelSupport.h"
#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

struct Lines {
  int64_t outer, n, inner;
};

Lines linesOf(const Tensor &x, int64_t axis) {
  std::vector<int64_t> s = shapeOf(x);
  return {product(s, 0, axis), s[axis], product(s, axis + 1)};
}

template <typename T> void softmax(const T *x, T *y, Lines L, bool log) {
  using C = ComputeT<T>;
  int64_t lines = L.outer * L.inner;
  bool big = lines * L.n >= kParallelCostly && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t r = 0; r < lines; ++r) {
    int64_t o = r / L.inner, i = r % L.inner, s = L.inner;
    const T *xl = x + o * L.n * L.inner + i;
    T *yl = y + o * L.n * L.inner + i;
    C m = -std::numeric_limits<C>::infinity();
    for (int64_t k = 0; k < L.n; ++k) {
      C v = Elem<T>::load(xl[k * s]);
      m = (v > m || std::isnan(v)) ? v : m;
    }
    double sum = 0;
    if constexpr (std::is_same_v<T, C>) {
      if (!log) {
        // Keep the exponentials in the output and scale them afterwards.
        for (int64_t k = 0; k < L.n; ++k) {
          C e = std::exp(xl[k * s] - m);
          yl[k * s] = e;
          sum += e;
        }
        C inv = C(1 / sum);
        for (int64_t k = 0; k < L.n; ++k)
          yl[k * s] *= inv;
        continue;
      }
    }
    for (int64_t k = 0; k < L.n; ++k)
      sum += std::exp(Elem<T>::load(xl[k * s]) - m);
    if (log) {
      // (x - m) is exact for nearby values; adding m back would not be.
      C ls = C(std::log(sum));
      for (int64_t k = 0; k < L.n; ++k)
        yl[k * s] = Elem<T>::store((Elem<T>::load(xl[k * s]) - m) - ls);
    } else {
      C inv = C(1 / sum);
      for (int64_t k = 0; k < L.n; ++k)
        yl[k * s] =
            Elem<T>::store(std::exp(Elem<T>::load(xl[k * s]) - m) * inv);
    }
  }
}

template <typename T>
void layernorm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
               Tensor &y, int64_t axis, double eps) {
  using C = ComputeT<T>;
  Lines L = linesOf(x, axis);
  int64_t lines = L.outer * L.inner;
  std::vector<C> mean(static_cast<size_t>(lines)),
      rstd(static_cast<size_t>(lines));
  const T *px = x.data<T>();
  bool big = lines * L.n >= kParallelCheap && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t r = 0; r < lines; ++r) {
    int64_t o = r / L.inner, i = r % L.inner;
    const T *xl = px + o * L.n * L.inner + i;
    double s = 0;
    for (int64_t k = 0; k < L.n; ++k)
      s += double(Elem<T>::load(xl[k * L.inner]));
    double mu = L.n ? s / double(L.n) : 0, ss = 0;
    for (int64_t k = 0; k < L.n; ++k) {
      double d = double(Elem<T>::load(xl[k * L.inner])) - mu;
      ss += d * d;
    }
    double var = L.n ? ss / double(L.n) : 0;
    mean[r] = C(mu);
    rstd[r] = C(1 / std::sqrt(var + eps));
  }
  // y = (x - mean) * rstd * gamma + beta; the statistics are a tensor of
  // x's shape with the axis of size 1, broadcast like gamma and beta.
  std::vector<int64_t> xs = shapeOf(x), stat = xs;
  stat[axis] = 1;
  StridedLoop<4> loop(xs, {rowMajorStrides(xs), broadcastStrides(stat, xs),
                           broadcastStrides(shapeOf(gamma), xs),
                           broadcastStrides(shapeOf(beta), xs)});
  const T *pg = gamma.data<T>(), *pb = beta.data<T>();
  T *py = y.data<T>();
  loop.run(kParallelCheap, [&](std::array<int64_t, 4> off,
                               std::array<int64_t, 4> st, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t e = off[0] + j, r = off[1] + j * st[1];
      C v = (Elem<T>::load(px[e]) - mean[r]) * rstd[r];
      py[e] = Elem<T>::store(v * Elem<T>::load(pg[off[2] + j * st[2]]) +
                             Elem<T>::load(pb[off[3] + j * st[3]]));
    }
  });
}

} // namespace

Status runNormalization(const ir::Operation &op, const std::vector<Tensor> &in,
                        std::vector<Tensor> &out) {
  const Tensor &x = in[0];
  int64_t axis = op.intAttr("axis", x.rank() - 1);
  if (axis < 0 || axis >= x.rank())
    return "axis " + std::to_string(axis) + " is out of range for " +
           x.type().str();
  return visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return std::string("the cpu kernel of '") + ir::opName(op.kind) +
             "' does not support " + ir::dtypeName(x.dtype());
    } else {
      if (op.kind == OpKind::Layernorm)
        layernorm<T>(x, in[1], in[2], out[0], axis, op.floatAttr("eps", 1e-5));
      else
        softmax<T>(x.data<T>(), out[0].data<T>(), linesOf(x, axis),
                   op.kind == OpKind::LogSoftmax);
      return std::nullopt;
    }
  });
}

void registerNeuralKernels(KernelTable &t) {
  t.add({OpKind::Softmax, OpKind::LogSoftmax, OpKind::Layernorm},
        MDL_KERNEL { return runNormalization(op, in, out); });
}

} // namespace mdl::backend::cpu
