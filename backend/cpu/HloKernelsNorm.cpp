// Batch normalization with XLA's semantics, per feature c over all other
// dimensions (n elements), computed in double:
//   training:  mean = sum(x) / n, var = sum((x - mean)^2) / n (biased),
//              y = (x - mean) / sqrt(var + eps) * scale + offset
//   inference: y from the given mean and variance
//   grad:      xhat = (x - mean) / sqrt(var + eps),
//              grad_scale = sum(dy * xhat), grad_offset = sum(dy),
//              dx = scale / sqrt(var + eps) * (dy - grad_offset / n
//                                              - xhat * grad_scale / n)
#include "backend/cpu/HloKernels.h"
#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

template <typename T>
Status batchNorm(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out) {
  const Tensor &x = in[0];
  std::vector<int64_t> shape = shapeOf(x);
  int64_t f = op.intAttr("feature_index", 0);
  if (f < 0 || f >= int64_t(shape.size()))
    return std::string("batch normalization feature_index out of range");
  double eps = op.floatAttr("epsilon", 0);
  int64_t C = shape[size_t(f)], inner = product(shape, size_t(f) + 1),
          outer = product(shape, 0, size_t(f)), n = outer * inner;
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].numElements() != (in[i].rank() == 1 ? C : x.numElements()))
      return std::string("batch normalization operands do not match the feature count");
  auto ld = [](const Tensor &t, int64_t i) { return double(Elem<T>::load(t.data<T>()[i])); };
  auto st = [](Tensor &t, int64_t i, double v) { t.data<T>()[i] = Elem<T>::store(ComputeT<T>(v)); };
  auto each = [&](int64_t c, auto fn) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        fn((o * C + c) * inner + i);
  };
  bool par = x.numElements() >= kParallelCheap && C >= 2 && !omp_in_parallel();
  Status err;
#pragma omp parallel for if (par) schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    if (op.kind == OpKind::BatchNormTraining) {
      double sum = 0, sq = 0;
      each(c, [&](int64_t k) { sum += ld(x, k); });
      double mean = n ? sum / double(n) : 0;
      each(c, [&](int64_t k) { sq += (ld(x, k) - mean) * (ld(x, k) - mean); });
      double var = n ? sq / double(n) : 0, inv = 1.0 / std::sqrt(var + eps);
      double scale = ld(in[1], c), offset = ld(in[2], c);
      each(c, [&](int64_t k) { st(out[0], k, (ld(x, k) - mean) * inv * scale + offset); });
      st(out[1], c, mean);
      st(out[2], c, var);
    } else if (op.kind == OpKind::BatchNormInference) {
      double scale = ld(in[1], c), offset = ld(in[2], c), mean = ld(in[3], c),
             inv = 1.0 / std::sqrt(ld(in[4], c) + eps);
      each(c, [&](int64_t k) { st(out[0], k, (ld(x, k) - mean) * inv * scale + offset); });
    } else {
      double scale = ld(in[1], c), mean = ld(in[2], c), inv = 1.0 / std::sqrt(ld(in[3], c) + eps);
      const Tensor &dy = in[4];
      double gs = 0, go = 0;
      each(c, [&](int64_t k) {
        double g = ld(dy, k);
        gs += g * (ld(x, k) - mean) * inv;
        go += g;
      });
      double dn = n ? double(n) : 1;
      each(c, [&](int64_t k) {
        double xhat = (ld(x, k) - mean) * inv;
        st(out[0], k, scale * inv * (ld(dy, k) - go / dn - xhat * gs / dn));
      });
      st(out[1], c, gs);
      st(out[2], c, go);
    }
  }
  return err;
}

} // namespace

Status runHloBatchNorm(const ir::Operation &op, const std::vector<Tensor> &in,
                       std::vector<Tensor> &out) {
  size_t want = op.kind == OpKind::BatchNormInference ? 1 : 3;
  if (out.size() != want)
    return std::string("batch normalization result count does not match");
  return visitDType(in[0].dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return std::string("batch normalization expects floating-point operands");
    } else {
      for (const Tensor &t : in)
        if (t.dtype() != in[0].dtype())
          return std::string("batch normalization operands differ in element type");
      return batchNorm<T>(op, in, out);
    }
  });
}

} // namespace mdl::backend::cpu
