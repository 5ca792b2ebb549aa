// dot_general: both operands are packed as [batch, free, contracting] and
// [batch, contracting, free] in their compute type (f32 for the halves, f64,
// int64 with wrapping for integers), multiplied batch by batch through BLAS,
// and the [batch, lhs free, rhs free] result converted to the result type,
// which XLA lays out in exactly that order.
#include "backend/cpu/HloKernels.h"
#include "backend/cpu/HloPack.h"
#include "stdlib/DotDims.h"

namespace mdl::backend::cpu {

namespace {

using Ints = std::vector<int64_t>;

template <typename T>
Status dotTyped(const Tensor &a, const Tensor &b, const Ints &lb, const Ints &rb, const Ints &lc,
                const Ints &rc, Tensor &y) {
  using C = AccT<T>;
  Ints as = shapeOf(a), bs = shapeOf(b);
  stdlib::DotDims dd = stdlib::dotDims(as, bs, lb, rb, lc, rc);
  const int64_t B = dd.B, M = dd.M, N = dd.N, K = dd.K;
  std::vector<C> pa(size_t(B * M * K)), pb(size_t(B * K * N)), pc(size_t(B * M * N));
  packPermuted<T, C>(a, dd.lhsOrder, pa.data());
  packPermuted<T, C>(b, dd.rhsOrder, pb.data());
  bool perBatch = B >= 2 * omp_get_max_threads() && !omp_in_parallel();
#pragma omp parallel for if (perBatch) schedule(static)
  for (int64_t i = 0; i < B; ++i)
    matmulAcc(M, N, K, pa.data() + i * M * K, pb.data() + i * K * N, pc.data() + i * M * N);
  Ints order(y.rank());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = int64_t(i);
  return visitDType(y.dtype(), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    unpackPermuted<U, C>(pc.data(), order, y);
    return std::nullopt;
  });
}

} // namespace

Status runHloDot(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out) {
  const Tensor &a = in[0], &b = in[1];
  const Ints &lb = op.intListAttr("lhs_batch"), &rb = op.intListAttr("rhs_batch"),
             &lc = op.intListAttr("lhs_contract"), &rc = op.intListAttr("rhs_contract");
  if (a.dtype() != b.dtype() || lb.size() != rb.size() || lc.size() != rc.size())
    return std::string("dot_general operands or dimension numbers do not match");
  Ints as = shapeOf(a), bs = shapeOf(b);
  for (size_t i = 0; i < lb.size(); ++i)
    if (lb[i] < 0 || rb[i] < 0 || lb[i] >= int64_t(as.size()) || rb[i] >= int64_t(bs.size()) ||
        as[size_t(lb[i])] != bs[size_t(rb[i])])
      return std::string("dot_general batch dimensions do not match");
  for (size_t i = 0; i < lc.size(); ++i)
    if (lc[i] < 0 || rc[i] < 0 || lc[i] >= int64_t(as.size()) || rc[i] >= int64_t(bs.size()) ||
        as[size_t(lc[i])] != bs[size_t(rc[i])])
      return std::string("dot_general contracting dimensions do not match");
  return visitDType(a.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>)
      return std::string("dot_general of bool operands");
    else
      return dotTyped<T>(a, b, lb, rb, lc, rc, out[0]);
  });
}

} // namespace mdl::backend::cpu
