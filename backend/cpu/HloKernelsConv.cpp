// convolution (and fused_convolution) with XLA's general semantics: dimension labels, window
// strides, low/high padding (negative too), input (lhs) dilation, kernel
// (rhs) dilation, feature groups and batch groups.
//
// 1. Pack the input as [N, C, spatial...] and the kernel as [O, I, k...] in
//    the compute type (dimension labels give the permutations).
// 2. For each output batch element and group: gather the input patches into
//    a column matrix [I * k..., out spatial...] (im2col; a tap that falls in
//    padding or between dilated input elements reads 0), and multiply the
//    group's kernel rows [O/g, I * k...] by it through BLAS.
// 3. fused_convolution: apply the epilogue's steps to the packed result in
//    the accumulation type (stdlib/ConvEpilogue.h).
// 4. Unpack [N', O, out spatial...] into the output labels' order.
// Feature groups split C and O; batch groups split N and O (output feature
// group j reads input batch group j).
#include "backend/cpu/HloKernels.h"
#include "stdlib/Registry.h"
#include "backend/cpu/HloPack.h"
#include "stdlib/ConvEpilogue.h"
#include "stdlib/ConvLabels.h"

namespace mdl::backend::cpu {

namespace {

using Ints = std::vector<int64_t>;

/// A fused convolution's epilogue: its steps and their operands.
struct Epilogue {
  std::vector<stdlib::EpilogueStep> steps;
  const Tensor *operands = nullptr; // the operation's operands after x and w
  double lo = 0, hi = 0;            // clip bounds
};

/// Applies `e` to py ([N', O, P] in the accumulation type C); `yOrder` is
/// the packing order of the result, for residual operands.
template <typename C>
void applyEpilogue(const Epilogue &e, C *py, int64_t N, int64_t O, int64_t P,
                   const Ints &yOrder, int feature, const ir::TensorType &result) {
  int64_t total = N * O * P;
  for (const stdlib::EpilogueStep &s : e.steps) {
    if (s.kind == stdlib::EpilogueKind::Relu || s.kind == stdlib::EpilogueKind::Clip) {
      bool relu = s.kind == stdlib::EpilogueKind::Relu;
      C lo = relu ? C(0) : C(e.lo), hi = C(e.hi);
      // Comparisons are false for NaN, which therefore stays.
      for (int64_t i = 0; i < total; ++i) {
        C v = py[i];
        py[i] = v < lo ? lo : (!relu && v > hi ? hi : v);
      }
      continue;
    }
    const Tensor &v = e.operands[s.operand];
    if (s.kind == stdlib::EpilogueKind::Residual) {
      std::vector<C> r(static_cast<size_t>(total));
      visitDType(v.dtype(), [&](auto tag) {
        using U = typename decltype(tag)::type;
        packPermuted<U, C>(v, yOrder, r.data());
      });
      for (int64_t i = 0; i < total; ++i)
        py[i] += r[size_t(i)];
      continue;
    }
    bool scalar = stdlib::classifyChannelOperand(v.type(), result, feature) ==
                  stdlib::ChannelOperand::Scalar;
    std::vector<C> c(static_cast<size_t>(O));
    for (int64_t o = 0; o < O; ++o)
      c[size_t(o)] = C(loadAsDouble(v, scalar ? 0 : o));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o) {
        C k = c[size_t(o)], *row = py + (n * O + o) * P;
        switch (s.kind) {
        case stdlib::EpilogueKind::Add:
          for (int64_t p = 0; p < P; ++p)
            row[p] += k;
          break;
        case stdlib::EpilogueKind::Sub:
          for (int64_t p = 0; p < P; ++p)
            row[p] -= k;
          break;
        default:
          for (int64_t p = 0; p < P; ++p)
            row[p] *= k;
          break;
        }
      }
  }
}

template <typename T>
Status convTyped(const ir::Operation &op, const Tensor &x, const Tensor &w, Tensor &y,
                 const stdlib::DimLabels &li, const stdlib::DimLabels &lk,
                 const stdlib::DimLabels &lo, const Epilogue *epilogue) {
  using C = AccT<T>;
  size_t s = li.spatial.size();
  const Ints &strides = op.intListAttr("strides"), &pad = op.intListAttr("padding"),
             &ldil = op.intListAttr("lhs_dilation"), &rdil = op.intListAttr("rhs_dilation");
  if (strides.size() != s || pad.size() != 2 * s || ldil.size() != s || rdil.size() != s)
    return std::string("convolution attributes do not match the spatial rank");
  int64_t G = op.intAttr("feature_groups", 1), BG = op.intAttr("batch_groups", 1);
  Ints xs = shapeOf(x), ws = shapeOf(w), ys = shapeOf(y);
  int64_t N = xs[size_t(li.a)], Cin = xs[size_t(li.b)];
  int64_t I = ws[size_t(lk.a)], O = ws[size_t(lk.b)];
  int64_t Nout = ys[size_t(lo.a)];
  Ints in(s), k(s), outS(s);
  for (size_t i = 0; i < s; ++i) {
    in[i] = xs[size_t(li.spatial[i])];
    k[i] = ws[size_t(lk.spatial[i])];
    outS[i] = ys[size_t(lo.spatial[i])];
  }
  if (G < 1 || BG < 1 || Cin != I * G || O % (G * BG) || N != Nout * BG ||
      ys[size_t(lo.b)] != O)
    return std::string("convolution shapes do not match its groups");
  int64_t inP = product(in), kP = product(k), outP = product(outS);
  int64_t groups = G * BG, Og = O / groups, rows = I * kP;
  Ints xOrder = {li.a, li.b}, wOrder = {lk.b, lk.a}, yOrder = {lo.a, lo.b};
  for (size_t i = 0; i < s; ++i) {
    xOrder.push_back(li.spatial[i]);
    wOrder.push_back(lk.spatial[i]);
    yOrder.push_back(lo.spatial[i]);
  }
  std::vector<C> px(size_t(N * Cin * inP)), pw(size_t(O * I * kP)), py(size_t(Nout * O * outP));
  packPermuted<T, C>(x, xOrder, px.data());
  packPermuted<T, C>(w, wOrder, pw.data());
  // For each (tap, output position): the input spatial offset, or -1.
  std::vector<int64_t> tapOffset(size_t(kP * outP));
  Ints kIdx(s), oIdx(s);
  for (int64_t t = 0; t < kP; ++t) {
    int64_t rem = t;
    for (size_t i = s; i-- > 0;) {
      kIdx[i] = rem % k[i];
      rem /= k[i];
    }
    for (int64_t o = 0; o < outP; ++o) {
      int64_t r2 = o, off = 0;
      bool inside = true;
      for (size_t i = s; i-- > 0;) {
        oIdx[i] = r2 % outS[i];
        r2 /= outS[i];
      }
      int64_t mul = 1;
      for (size_t i = s; i-- > 0;) {
        int64_t pos = oIdx[i] * strides[i] + kIdx[i] * rdil[i] - pad[2 * i];
        if (pos < 0 || pos % ldil[i] || pos / ldil[i] >= in[i]) {
          inside = false;
          break;
        }
        off += pos / ldil[i] * mul;
        mul *= in[i];
      }
      tapOffset[size_t(t * outP + o)] = inside ? off : -1;
    }
  }
  int64_t jobs = Nout * groups;
  bool par = jobs >= 2 * omp_get_max_threads() && !omp_in_parallel();
  int threads = par ? omp_get_max_threads() : 1;
  std::vector<std::vector<C>> cols(size_t(threads), std::vector<C>(size_t(rows * outP)));
#pragma omp parallel for if (par) schedule(dynamic)
  for (int64_t job = 0; job < jobs; ++job) {
    int64_t n = job / groups, g = job % groups;
    int64_t nIn = G > 1 ? n : g * Nout + n, c0 = G > 1 ? g * I : 0;
    std::vector<C> &col = cols[size_t(par ? omp_get_thread_num() : 0)];
    for (int64_t c = 0; c < I; ++c) {
      const C *src = px.data() + (nIn * Cin + c0 + c) * inP;
      for (int64_t t = 0; t < kP; ++t) {
        C *dst = col.data() + (c * kP + t) * outP;
        const int64_t *offs = tapOffset.data() + t * outP;
        for (int64_t o = 0; o < outP; ++o)
          dst[o] = offs[o] >= 0 ? src[offs[o]] : C(0);
      }
    }
    matmulAcc(Og, outP, rows, pw.data() + g * Og * rows, col.data(),
              py.data() + (n * O + g * Og) * outP);
  }
  if (epilogue)
    applyEpilogue(*epilogue, py.data(), Nout, O, outP, yOrder, int(lo.b), y.type());
  return visitDType(y.dtype(), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    unpackPermuted<U, C>(py.data(), yOrder, y);
    return std::nullopt;
  });
}

} // namespace

Status runHloConvolution(const ir::Operation &op, const std::vector<Tensor> &in,
                         std::vector<Tensor> &out) {
  std::string labels = op.stringAttr("dim_labels");
  std::optional<stdlib::ConvDimLabels> l = stdlib::parseConvDimLabels(labels);
  if (!l || in.size() < 2 || l->input.rank() != in[0].rank() ||
      l->kernel.rank() != in[1].rank() || l->output.rank() != out[0].rank() ||
      in[0].dtype() != in[1].dtype())
    return "convolution dim_labels '" + labels + "' do not match its operands";
  Epilogue epilogue;
  bool fused = op.kind == ir::OpKind::FusedConvolution;
  if (fused) {
    std::optional<std::vector<stdlib::EpilogueStep>> steps =
        stdlib::parseEpilogue(op.stringAttr("epilogue"));
    size_t operands = 0;
    for (const stdlib::EpilogueStep &s : steps ? *steps : std::vector<stdlib::EpilogueStep>{})
      operands += s.operand >= 0 ? 1 : 0;
    if (!steps || operands != in.size() - 2)
      return "fused_convolution epilogue '" + op.stringAttr("epilogue") +
             "' does not match its operands";
    epilogue.steps = *steps;
    epilogue.operands = in.data() + 2;
    epilogue.lo = op.floatAttr("clip_lo", 0);
    epilogue.hi = op.floatAttr("clip_hi", 6);
  }
  return visitDType(in[0].dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>)
      return std::string("convolution expects floating-point operands");
    else
      return convTyped<T>(op, in[0], in[1], out[0], l->input, l->kernel, l->output,
                          fused ? &epilogue : nullptr);
  });
}

} // namespace mdl::backend::cpu
