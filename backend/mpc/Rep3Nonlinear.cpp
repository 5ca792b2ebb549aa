// Nonlinear functions on secret fixed-point tensors, by approximations made
// of products, truncations and comparisons (Rep3Engine.h). Costs count the
// rounds of the building blocks: fixed product 2, truncation 1, MSB batch 9,
// bit-times-value product 1. docs/mpc.md has the errors measured over
// stated input ranges.
//
// exp(x): x clipped to [-16, 10] (one batch of two comparisons + one round
// of corrections, 10 rounds); t = x / 16 (truncation, 1); t^2..t^6 in
// three rounds of products (6); p(t) = sum c_k t^k, a degree-6 fit of e^t
// on [-1, 0.625] (relative error 1.5e-6), with one truncation for the whole
// sum (1); then p^16 by four squarings (8). 26 rounds. The squarings
// multiply p's relative error by 16, which bounds the accuracy near x = 0.
//
// Power-of-two normalization (reciprocal, rsqrt): for k in [kLo, kHi] the
// bits c_k = [x >= 2^k] come from ONE batch of MSB extractions (9 rounds,
// kHi - kLo + 1 comparisons per element); the one-hot of x's binade is
// c_k - c_{k+1}, so any public function of k, a scale S = sum_k
// (coef_k - coef_{k-1}) c_k, is local. Scales carry G = 2 extra fractional
// bits (products with them are truncated by f + G).
//
// reciprocal(x): x' = x S in [0.5, 1) with S = 2^-(k+1) (2 rounds); y0 =
// 2.9142 - 2 x' (relative error 0.086); three Newton steps y = y (2 - x' y)
// (4 rounds each); 1/x = y S (2). 25 rounds; the sign is handled by a second
// set of thresholds on -x in the same batch (signed scale). Domain:
// 2^-f <= |x| < 2^(f+G); values below give 0.
//
// rsqrt(x): x' = x 4^-j in [0.25, 1) with j = ceil((k+1)/2); y0 = 2.13 -
// 1.215 x' (1 round, relative error 0.087); three steps y = y (3 - x'
// y^2) / 2 (6 rounds each, the halving folded into the truncation);
// rsqrt(x) = y 2^-j (2). 32 rounds. sqrt(x) = (x' y) 2^j (34 rounds),
// which keeps rsqrt(x')'s relative error.
//
// sigmoid(x): one MSB batch gives [x < 0], [x > 16], [x < -16] (9); v =
// -|x| (1), clipped at -16 (1); e = exp(v) without its own clip (16); r =
// 1 / (1 + e) on [1, 2] by y0 = 24/17 - 8/17 d (1) and three Newton steps
// (12); sigmoid = r or 1 - r by the sign (1). 41 rounds.
// tanh(x) = 2 sigmoid(2x) - 1.
//
// gelu(x) = x sigmoid(u(x)) with u an odd polynomial of x clipped to
// [-8, 8]: u = 1.5950200 x + 0.0740117 x^3 - 0.000703669 x^5 (fitted to
// the exact erf form, max error 2.6e-5 in doubles), or for the tanh form
// u = 2 sqrt(2/pi) (x + 0.044715 x^3). Powers of w = x / 8 keep products
// small. 61 rounds (57 for the tanh form).
//
// softmax along an axis: max by the comparison tree, d = x - max <= 0,
// clipped at -16 (10), exp without its clip (16), sum (local), ONE
// reciprocal per row on [2^-1, 2^ceil(log2 n)] (25), one product (2).
//
// layernorm: mean (1), d = x - mean, sum of d^2 along the axis with one
// truncation per row (2), times 1/n (1), + eps, rsqrt's normalized parts
// (30), (d 2^-j) rsqrt(x') (4), then gamma (2) and beta (0).
#include "backend/mpc/Rep3Internals.h"

#include "backend/mpc/Layout.h"
#include "backend/mpc/ShareKernels.h"

#include <cmath>

namespace mdl::backend::mpc {

namespace {

using SharesOrErr = llvm::Expected<Shares>;

struct Term {
  double coef;
  const Shares *x;
};

// sum coef_i x_i + constant (public reals), with one truncation. 1 round.
SharesOrErr linearCombination(Rep3Internals &in, const std::vector<Term> &terms,
                              double constant, size_t n) {
  int f = in.fracBits();
  Shares acc(n);
  for (const Term &t : terms)
    acc = addShares(acc, scaleShares(*t.x, encodeFixed(t.coef, f)));
  acc = addPublicRing(acc, std::vector<Ring>(n, encodeFixed(constant, 2 * f)),
                      in.party());
  return in.truncate(acc, f);
}

// x + c for a public integer c (ring units), locally.
Shares plusPublicInteger(const Shares &x, int64_t c, int party) {
  return addPublicRing(x, std::vector<Ring>(x.size(), Ring(c)), party);
}

// c - x for a public real c, locally.
Shares publicMinus(Rep3Internals &in, double c, const Shares &x) {
  return addPublicRing(
      scaleShares(x, Ring(-1)),
      std::vector<Ring>(x.size(), encodeFixed(c, in.fracBits())), in.party());
}

// x + c for a public real c, locally.
Shares plusPublic(Rep3Internals &in, const Shares &x, double c) {
  return addPublicRing(
      x, std::vector<Ring>(x.size(), encodeFixed(c, in.fracBits())),
      in.party());
}

// x - 2^k for each k in ks, all side by side (k-major).
Shares minusPowers(Rep3Internals &in, const Shares &x,
                   const std::vector<int> &ks) {
  Shares all;
  for (int k : ks)
    all = joinShares(all, plusPublic(in, x, -std::ldexp(1.0, k)));
  return all;
}

// exp on inputs already in [kExpMin, kExpMax]. 16 rounds.
SharesOrErr expCore(Rep3Internals &in, const Shares &x) {
  // Degree-6 fit of e^t on [-1, 0.625], relative error 1.5e-6 (fit by
  // iteratively reweighted least squares on a dense grid).
  static const double c[7] = {1.00000031982254,    0.9999965841474541,
                              0.49998179387965724, 0.1666962201894259,
                              0.04180976529957153, 0.008342142167713172,
                              0.001123077759374195};
  int f = in.fracBits();
  size_t n = x.size();
  auto t = in.truncate(x, approx::kExpSquarings); // x / 16
  if (!t)
    return t.takeError();
  auto t2 = in.mul(*t, *t, f);
  if (!t2)
    return t2.takeError();
  auto t34 = in.mulMany({&*t2, &*t2}, {&*t, &*t2}, f);
  if (!t34)
    return t34.takeError();
  const Shares &t4 = (*t34)[1];
  auto t56 = in.mulMany({&t4, &t4}, {&*t, &*t2}, f);
  if (!t56)
    return t56.takeError();
  auto p = linearCombination(in,
                             {{c[1], &*t},
                              {c[2], &*t2},
                              {c[3], &(*t34)[0]},
                              {c[4], &t4},
                              {c[5], &(*t56)[0]},
                              {c[6], &(*t56)[1]}},
                             c[0], n);
  if (!p)
    return p.takeError();
  Shares y = std::move(*p);
  for (int i = 0; i < approx::kExpSquarings; ++i) {
    auto sq = in.mul(y, y, f);
    if (!sq)
      return sq.takeError();
    y = std::move(*sq);
  }
  return y;
}

// x clipped from below at lo: x + [x < lo] (lo - x). 10 rounds.
SharesOrErr clipBelow(Rep3Internals &in, const Shares &x, double lo) {
  auto below = in.msb(plusPublic(in, x, -lo));
  if (!below)
    return below.takeError();
  auto fix = in.mul(*below, publicMinus(in, lo, x), 0);
  if (!fix)
    return fix.takeError();
  return addShares(x, *fix);
}

// Newton-Raphson for 1 / d from y0: y = y (2 - d y). 4 rounds per step.
SharesOrErr recipNewton(Rep3Internals &in, const Shares &d, Shares y) {
  int f = in.fracBits();
  for (int i = 0; i < approx::kNewtonIterations; ++i) {
    auto dy = in.mul(d, y, f);
    if (!dy)
      return dy.takeError();
    auto next = in.mul(y, publicMinus(in, 2.0, *dy), f);
    if (!next)
      return next.takeError();
    y = std::move(*next);
  }
  return y;
}

// The bits c_k = [s x >= 2^k] for k in [kLo, kHi] and s in {+1} or
// {+1, -1}, then for each coefficient table the scale sum_k coef(k) onehot_k
// (negated for s = -1). 9 rounds.
llvm::Expected<std::vector<Shares>>
binadeScales(Rep3Internals &in, const Shares &x, int kLo, int kHi,
             bool withSign,
             const std::vector<std::function<Ring(int)>> &coefs) {
  size_t n = x.size();
  std::vector<int> ks;
  for (int k = kLo; k <= kHi; ++k)
    ks.push_back(k);
  Shares batch = minusPowers(in, x, ks);
  if (withSign)
    batch = joinShares(batch, minusPowers(in, scaleShares(x, Ring(-1)), ks));
  auto below = in.msb(batch); // [s x < 2^k]
  if (!below)
    return below.takeError();
  std::vector<Shares> scales;
  for (const auto &coef : coefs) {
    Shares s(n);
    for (int sign = 0; sign < (withSign ? 2 : 1); ++sign)
      for (size_t i = 0; i < ks.size(); ++i) {
        // onehot_k = c_k - c_{k+1}, so sum_k coef_k onehot_k =
        // sum_k (coef_k - coef_{k-1}) c_k, and c_k = 1 - below_k.
        int k = ks[i];
        Ring delta = coef(k) - (k > kLo ? coef(k - 1) : Ring(0));
        if (sign)
          delta = Ring(0) - delta;
        Shares ck = oneMinusBits(
            sliceShares(*below, (sign * ks.size() + i) * n, n), in.party());
        s = addShares(s, scaleShares(ck, delta));
      }
    scales.push_back(std::move(s));
  }
  return scales;
}

// The parts of 1 / x for 2^kLo <= |x| < 2^(kHi + 1) (signed or positive
// only): 1 / x = y S with y = 1 / x' in (1, 2] and S = +-2^-(k+1) carrying
// f + G fractional bits.
struct ReciprocalParts {
  Shares y;
  Shares scale;
};

llvm::Expected<ReciprocalParts> reciprocalParts(Rep3Internals &in,
                                                const Shares &x, int kLo,
                                                int kHi, bool withSign) {
  int f = in.fracBits(), g = approx::kScaleExtraBits;
  auto scales =
      binadeScales(in, x, kLo, kHi, withSign,
                   {[&](int k) { return Ring(1) << (f + g - (k + 1)); }});
  if (!scales)
    return scales.takeError();
  Shares &s = (*scales)[0];
  auto xp = in.mul(x, s, f + g); // x' = |x| 2^-(k+1) in [0.5, 1)
  if (!xp)
    return xp.takeError();
  Shares y0 = plusPublic(in, scaleShares(*xp, Ring(-2)), 2.9142);
  auto y = recipNewton(in, *xp, std::move(y0));
  if (!y)
    return y.takeError();
  return ReciprocalParts{std::move(*y), std::move(s)};
}

// 1 / x from its parts.
SharesOrErr reciprocalRaw(Rep3Internals &in, const Shares &x, int kLo, int kHi,
                          bool withSign) {
  auto parts = reciprocalParts(in, x, kLo, kHi, withSign);
  if (!parts)
    return parts.takeError();
  return in.mul(parts->y, parts->scale,
                in.fracBits() + approx::kScaleExtraBits);
}

// rsqrt of the normalized x' = x 4^-j in [0.25, 1), with the scales that
// undo the normalization, for 2^kLo <= x < 2^(kHi + 1).
struct RsqrtParts {
  Shares xp;   // x' = x 4^-j
  Shares y;    // rsqrt(x'), in (1, 2]
  Shares down; // 2^-j with f + G fractional bits: rsqrt(x) = y 2^-j
  Shares up;   // 2^j with f + G fractional bits: sqrt(x) = x' y 2^j
};

llvm::Expected<RsqrtParts> rsqrtParts(Rep3Internals &in, const Shares &x,
                                      int kLo, int kHi) {
  int f = in.fracBits(), g = approx::kScaleExtraBits;
  auto half = [](int k) {
    return int(std::floor((k + 2) / 2.0));
  }; // ceil((k+1)/2)
  auto scales = binadeScales(
      in, x, kLo, kHi, false,
      {[&](int k) { return Ring(1) << (f + g - 2 * half(k)); }, // 4^-j
       [&](int k) { return Ring(1) << (f + g - half(k)); },     // 2^-j
       [&](int k) { return Ring(1) << (f + g + half(k)); }});   // 2^j
  if (!scales)
    return scales.takeError();
  auto xp = in.mul(x, (*scales)[0], f + g); // in [0.25, 1)
  if (!xp)
    return xp.takeError();
  auto y = linearCombination(in, {{-1.215, &*xp}}, 2.13, x.size());
  if (!y)
    return y.takeError();
  Shares yv = std::move(*y);
  for (int i = 0; i < approx::kNewtonIterations; ++i) {
    auto y2 = in.mul(yv, yv, f);
    if (!y2)
      return y2.takeError();
    auto q = in.mul(*xp, *y2, f);
    if (!q)
      return q.takeError();
    auto next = in.mul(yv, publicMinus(in, 3.0, *q), f + 1); // halved
    if (!next)
      return next.takeError();
    yv = std::move(*next);
  }
  return RsqrtParts{std::move(*xp), std::move(yv), std::move((*scales)[1]),
                    std::move((*scales)[2])};
}

SharesOrErr sigmoidRaw(Rep3Internals &in, const Shares &x) {
  size_t n = x.size();
  const double clipAt = approx::kSigmoidClip;
  // [x < 0], [x > clip], [x < -clip] in one batch.
  Shares batch = joinShares(joinShares(x, publicMinus(in, clipAt, x)),
                            plusPublic(in, x, clipAt));
  auto bits = in.msb(batch);
  if (!bits)
    return bits.takeError();
  Shares neg = sliceShares(*bits, 0, n);
  Shares over =
      addShares(sliceShares(*bits, n, n), sliceShares(*bits, 2 * n, n));
  // v = -|x| = x (2 neg - 1), then clipped at -clip.
  Shares sign = plusPublicInteger(scaleShares(neg, Ring(2)), -1, in.party());
  auto v = in.mul(x, sign, 0);
  if (!v)
    return v.takeError();
  auto fix = in.mul(over, publicMinus(in, -clipAt, *v), 0);
  if (!fix)
    return fix.takeError();
  auto e = expCore(in, addShares(*v, *fix));
  if (!e)
    return e.takeError();
  Shares d = plusPublic(in, *e, 1.0); // in [1, 2]
  auto y0 = linearCombination(in, {{-8.0 / 17.0, &d}}, 24.0 / 17.0, n);
  if (!y0)
    return y0.takeError();
  auto r = recipNewton(in, d, std::move(*y0)); // sigmoid(|x|)
  if (!r)
    return r.takeError();
  // x < 0: 1 - r.
  auto flip = in.mul(neg, publicMinus(in, 1.0, scaleShares(*r, Ring(2))), 0);
  if (!flip)
    return flip.takeError();
  return addShares(*r, *flip);
}

// Σ_axis x y with one truncation per result element (a dot product: one
// reshare per OUTPUT). 2 rounds.
llvm::Expected<SharedTensor> sumOfProducts(Rep3Internals &in,
                                           const SharedTensor &x,
                                           const SharedTensor &y,
                                           int64_t axis) {
  std::vector<Ring> z(x.s.size(), 0);
  mulLocal(z.size(), x.s.a.data(), x.s.b.data(), y.s.a.data(), y.s.b.data(),
           z.data());
  auto reduced = reduceSum(RingArray{x.shape, std::move(z)}, {axis}, true);
  if (!reduced)
    return reduced.takeError();
  std::vector<Ring> alpha = in.zeroShare(reduced->data.size());
  addVec(alpha.size(), reduced->data.data(), alpha.data(),
         reduced->data.data());
  auto r = in.reshareTruncated(std::move(reduced->data), in.fracBits());
  if (!r)
    return r.takeError();
  return SharedTensor{reduced->shape, EncodingKind::Fixed, std::move(*r)};
}

int ceilLog2(int64_t n) {
  int k = 0;
  while ((int64_t(1) << k) < n)
    ++k;
  return k;
}

} // namespace

// --- Engine operations
// -------------------------------------------------------------------------

llvm::Expected<SharedTensor> Rep3Engine::exp(const SharedTensor &x) {
  OpScope scope(*this, "exp");
  Rep3Internals in(*this);
  auto clipped = clip(toFixed(x, fracBits()), approx::kExpMin, approx::kExpMax);
  if (!clipped)
    return clipped.takeError();
  auto e = expCore(in, clipped->s);
  if (!e)
    return e.takeError();
  return SharedTensor{x.shape, EncodingKind::Fixed, std::move(*e)};
}

llvm::Expected<SharedTensor> Rep3Engine::reciprocal(const SharedTensor &x) {
  OpScope scope(*this, "reciprocal");
  Rep3Internals in(*this);
  int f = fracBits();
  auto r = reciprocalRaw(in, toFixed(x, f).s, -f,
                         f + approx::kScaleExtraBits - 1, true);
  if (!r)
    return r.takeError();
  return SharedTensor{x.shape, EncodingKind::Fixed, std::move(*r)};
}

llvm::Expected<SharedTensor> Rep3Engine::div(const SharedTensor &x,
                                             const SharedTensor &y) {
  OpScope scope(*this, "div");
  Rep3Internals in(*this);
  int f = fracBits(), g = approx::kScaleExtraBits;
  SharedTensor xo, yo;
  if (auto err = broadcastPair(toFixed(x, f), toFixed(y, f), xo, yo))
    return err;
  // x / y = (x S) (1 / y'): the small factor first keeps the error at a
  // few ulps of the quotient instead of |x| times 1 / y's ulp.
  auto parts = reciprocalParts(in, yo.s, -f, f + g - 1, true);
  if (!parts)
    return parts.takeError();
  auto xs = in.mul(xo.s, parts->scale, f + g);
  if (!xs)
    return xs.takeError();
  auto q = in.mul(*xs, parts->y, f);
  if (!q)
    return q.takeError();
  return SharedTensor{xo.shape, EncodingKind::Fixed, std::move(*q)};
}

llvm::Expected<SharedTensor> Rep3Engine::rsqrt(const SharedTensor &x) {
  OpScope scope(*this, "rsqrt");
  Rep3Internals in(*this);
  int f = fracBits();
  int g = approx::kScaleExtraBits;
  auto parts = rsqrtParts(in, toFixed(x, f).s, -f, f + g - 1);
  if (!parts)
    return parts.takeError();
  auto r = in.mul(parts->y, parts->down, f + g);
  if (!r)
    return r.takeError();
  return SharedTensor{x.shape, EncodingKind::Fixed, std::move(*r)};
}

llvm::Expected<SharedTensor> Rep3Engine::sqrt(const SharedTensor &x) {
  OpScope scope(*this, "sqrt");
  Rep3Internals in(*this);
  int f = fracBits(), g = approx::kScaleExtraBits;
  // sqrt(x) = x' rsqrt(x') 2^j: the normalized product keeps the relative
  // error of rsqrt(x') instead of multiplying rsqrt's absolute error by x.
  auto parts = rsqrtParts(in, toFixed(x, f).s, -f, f + g - 1);
  if (!parts)
    return parts.takeError();
  auto s = in.mul(parts->xp, parts->y, f); // sqrt(x') in [0.5, 1)
  if (!s)
    return s.takeError();
  auto r = in.mul(*s, parts->up, f + g);
  if (!r)
    return r.takeError();
  return SharedTensor{x.shape, EncodingKind::Fixed, std::move(*r)};
}

llvm::Expected<SharedTensor> Rep3Engine::sigmoid(const SharedTensor &x) {
  OpScope scope(*this, "sigmoid");
  Rep3Internals in(*this);
  auto s = sigmoidRaw(in, toFixed(x, fracBits()).s);
  if (!s)
    return s.takeError();
  return SharedTensor{x.shape, EncodingKind::Fixed, std::move(*s)};
}

llvm::Expected<SharedTensor> Rep3Engine::tanh(const SharedTensor &x) {
  OpScope scope(*this, "tanh");
  Rep3Internals in(*this);
  auto s = sigmoidRaw(in, scaleShares(toFixed(x, fracBits()).s, 2));
  if (!s)
    return s.takeError();
  return SharedTensor{x.shape, EncodingKind::Fixed,
                      plusPublic(in, scaleShares(*s, 2), -1.0)};
}

llvm::Expected<SharedTensor> Rep3Engine::gelu(const SharedTensor &x,
                                              bool approximate) {
  OpScope scope(*this, "gelu");
  Rep3Internals in(*this);
  int f = fracBits();
  const double k = std::sqrt(2.0 / M_PI);
  // u = c1 x + c3 x^3 + c5 x^5 (see the file comment).
  const double c1 = approximate ? 2 * k : 1.5950199666037788;
  const double c3 = approximate ? 2 * k * 0.044715 : 0.07401166358889637;
  const double c5 = approximate ? 0.0 : -0.0007036686966866867;
  SharedTensor xf = toFixed(x, f);
  auto xc = clip(xf, -approx::kGeluClip, approx::kGeluClip);
  if (!xc)
    return xc.takeError();
  auto w = in.truncate(xc->s, 3); // x / 8, so every power stays within [-1, 1]
  if (!w)
    return w.takeError();
  auto w2 = in.mul(*w, *w, f);
  if (!w2)
    return w2.takeError();
  auto w3 = in.mul(*w2, *w, f);
  if (!w3)
    return w3.takeError();
  std::vector<Term> terms = {{c1, &xc->s}, {c3 * 512.0, &*w3}};
  Shares w5;
  if (c5 != 0.0) {
    auto p = in.mul(*w3, *w2, f);
    if (!p)
      return p.takeError();
    w5 = std::move(*p);
    terms.push_back({c5 * 32768.0, &w5});
  }
  auto u = linearCombination(in, terms, 0.0, xf.s.size());
  if (!u)
    return u.takeError();
  auto s = sigmoidRaw(in, *u);
  if (!s)
    return s.takeError();
  auto out = in.mul(xf.s, *s, f);
  if (!out)
    return out.takeError();
  return SharedTensor{x.shape, EncodingKind::Fixed, std::move(*out)};
}

llvm::Expected<SharedTensor> Rep3Engine::softmax(const SharedTensor &x,
                                                 int64_t axis) {
  OpScope scope(*this, "softmax");
  Rep3Internals in(*this);
  int f = fracBits();
  auto ax = normalizeAxis(axis, x.shape.size());
  if (!ax)
    return ax.takeError();
  SharedTensor xf = toFixed(x, f);
  auto m = reduceMax(xf, *ax, true);
  if (!m)
    return m.takeError();
  auto d = sub(xf, *m); // <= 0
  if (!d)
    return d.takeError();
  auto dc = clipBelow(in, d->s, approx::kExpMin);
  if (!dc)
    return dc.takeError();
  auto e = expCore(in, *dc);
  if (!e)
    return e.takeError();
  SharedTensor et{x.shape, EncodingKind::Fixed, std::move(*e)};
  auto s = sum(et, {*ax}, true); // in [1, n] up to exp's error
  if (!s)
    return s.takeError();
  auto r = reciprocalRaw(in, s->s, -1, ceilLog2(x.shape[*ax]), false);
  if (!r)
    return r.takeError();
  return mul(et, SharedTensor{s->shape, EncodingKind::Fixed, std::move(*r)});
}

llvm::Expected<SharedTensor> Rep3Engine::layerNorm(const SharedTensor &x,
                                                   const SharedTensor *gamma,
                                                   const SharedTensor *beta,
                                                   double eps, int64_t axis) {
  OpScope scope(*this, "layernorm");
  Rep3Internals in(*this);
  int f = fracBits();
  auto ax = normalizeAxis(axis, x.shape.size());
  if (!ax)
    return ax.takeError();
  int64_t n = x.shape[*ax];
  SharedTensor xf = toFixed(x, f);
  auto mu = mean(xf, {*ax}, true);
  if (!mu)
    return mu.takeError();
  auto d = sub(xf, *mu);
  if (!d)
    return d.takeError();
  auto ssq = sumOfProducts(in, *d, *d, *ax);
  if (!ssq)
    return ssq.takeError();
  auto var = mulScalar(*ssq, 1.0 / double(n));
  if (!var)
    return var.takeError();
  Shares v = plusPublic(in, var->s, eps);
  int g = approx::kScaleExtraBits;
  auto parts = rsqrtParts(in, v, -f, f + g - 1);
  if (!parts)
    return parts.takeError();
  // d 2^-j first (small, exact to an ulp), then times rsqrt(x') in (1, 2]:
  // d * rsqrt(var) with an error of a few ulps whatever the variance.
  auto down = broadcastShared(
      SharedTensor{var->shape, EncodingKind::Integer, parts->down}, x.shape);
  auto yn = broadcastShared(
      SharedTensor{var->shape, EncodingKind::Fixed, parts->y}, x.shape);
  if (!down || !yn)
    return llvm::joinErrors(down ? llvm::Error::success() : down.takeError(),
                            yn ? llvm::Error::success() : yn.takeError());
  auto scaled = in.mul(d->s, down->s, f + g);
  if (!scaled)
    return scaled.takeError();
  auto yv = in.mul(*scaled, yn->s, f);
  if (!yv)
    return yv.takeError();
  llvm::Expected<SharedTensor> y =
      SharedTensor{x.shape, EncodingKind::Fixed, std::move(*yv)};
  if (gamma) {
    y = mul(*y, *gamma);
    if (!y)
      return y.takeError();
  }
  if (beta)
    return add(*y, *beta);
  return y;
}

} // namespace mdl::backend::mpc
