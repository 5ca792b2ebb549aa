// Secret products: element-wise multiplication, matmul and the truncation
// that follows a fixed-point product (Rep3Engine.h, Rep3Internals.h).
//
// Multiplication (ABY3 section 3): party i computes its part of
//   z = x y = sum_{j,k} x_j y_k
// from the shares it holds, z_i = x_i y_i + x_i y_{i+1} + x_{i+1} y_i,
// plus a 3-out-of-3 zero-sharing alpha_i = F(K_i) - F(K_{i-1}) drawn from
// the pairwise PRGs, and sends z_i to party i-1: one round, 8 bytes per
// element and party. A matmul does the same with matrices; the local part
// is two 64-bit integer GEMMs, Z_i = X_i (Y_i + Y_{i+1}) + X_{i+1} Y_i, and
// the reshare sends one ring element per OUTPUT element.
//
// Truncation (ABY3's Pi_trunc1, after SecureML's two-party truncation).
// A fixed-point product carries 2f fractional bits and must be shifted
// right by f. The three-party sharing is first reduced to a two-party one,
// z = A + B, where A is uniformly random and known to party 0 and B is
// known to party 1 (and to party 2 for a replicated input); then
//   t0 = A >> f          (arithmetic shift, by party 0)
//   t1 = -((-B) >> f)    (by the holder(s) of B)
// gives t0 + t1 in { floor(z / 2^f), floor(z / 2^f) + 1 }: an error of at
// most one unit in the last place (2^-f), whenever A + B does not wrap
// around as signed 64-bit integers. It wraps with probability exactly
// (|z| + 1) / 2^64 over A; then the result is off by about 2^(64-f). For a
// product of reals with |x y| < 2^k, |z| < 2^(k + 2f), so the failure
// probability per element is below 2^(k + 2f - 64): 2^(k - 28) for f = 18
// (3.7e-9 for |x y| < 1, 3.8e-6 for |x y| < 1024). Finally the parties turn
// t0 + t1 into a fresh replicated sharing whose three shares are uniform.
//
//   reshareTruncated (after a product, z = z_0 + z_1 + z_2):
//     round 1: P2 sends z_2 to P1 (now B = z_1 + z_2);
//              P0 sends m = t0 - u0 - u1 to P1, with u0 = F(K_2), u1 = F(K_0)
//     round 2: P1 sends u2 = t1 + m to P2
//     shares: P0 (u0, u1), P1 (u1, u2), P2 (u2, u0); each party sends 8 B.
//   truncate (a replicated x, A = x_0 + x_1 at P0, B = x_2 at P1 and P2):
//     round 1: P0 sends u1 = t0 - r to P1, r = F(K_2);
//              P2 sends u0 = r + t1 - u2 to P0, u2 = F(K_1)
//     shares: P0 (u0, u1), P1 (u1, u2), P2 (u2, u0).
// Every message is masked by a PRG output the receiver does not hold.
#include "backend/mpc/Rep3Internals.h"

#include "backend/mpc/Gemm.h"
#include "backend/mpc/Layout.h"
#include "backend/mpc/ShareKernels.h"

namespace mdl::backend::mpc {

namespace {

// Party 0's half of a local truncation.
void truncHigh(std::vector<Ring> &v, int bits) {
  for (Ring &x : v)
    x = shiftRightSigned(x, bits);
}

// The other half: -((-x) >> bits).
void truncLow(std::vector<Ring> &v, int bits) {
  for (Ring &x : v)
    x = Ring(0) - shiftRightSigned(Ring(0) - x, bits);
}

} // namespace

llvm::Expected<Shares> Rep3Internals::reshare(std::vector<Ring> z) {
  Shares out;
  out.b.resize(z.size());
  if (auto err = exchange({}, z, &out.b, nullptr))
    return err;
  out.a = std::move(z);
  return out;
}

llvm::Expected<Shares> Rep3Internals::reshareTruncated(std::vector<Ring> z,
                                                       int bits) {
  size_t n = z.size();
  Shares out;
  switch (party()) {
  case 0: {
    std::vector<Ring> u0 = drawPrev(n), u1 = drawNext(n);
    truncHigh(z, bits);
    for (size_t i = 0; i < n; ++i)
      z[i] = z[i] - u0[i] - u1[i];
    if (auto err = exchange(z, {}, nullptr, nullptr))
      return err;
    if (auto err = exchange({}, {}, nullptr, nullptr))
      return err;
    out.a = std::move(u0);
    out.b = std::move(u1);
    break;
  }
  case 1: {
    std::vector<Ring> z2(n), m(n);
    if (auto err = exchange({}, {}, &z2, &m))
      return err;
    addVec(n, z.data(), z2.data(), z.data());
    truncLow(z, bits);
    std::vector<Ring> u1 = drawPrev(n);
    addVec(n, z.data(), m.data(), z.data()); // u2 = t1 + m
    if (auto err = exchange(z, {}, nullptr, nullptr))
      return err;
    out.a = std::move(u1);
    out.b = std::move(z);
    break;
  }
  default: {
    if (auto err = exchange({}, z, nullptr, nullptr))
      return err;
    std::vector<Ring> u0 = drawNext(n), u2(n);
    if (auto err = exchange({}, {}, nullptr, &u2))
      return err;
    out.a = std::move(u2);
    out.b = std::move(u0);
    break;
  }
  }
  return out;
}

llvm::Expected<Shares> Rep3Internals::truncate(const Shares &x, int bits) {
  size_t n = x.size();
  Shares out;
  switch (party()) {
  case 0: {
    std::vector<Ring> t0(n);
    addVec(n, x.a.data(), x.b.data(), t0.data());
    truncHigh(t0, bits);
    std::vector<Ring> r = drawPrev(n);
    subVec(n, t0.data(), r.data(), t0.data()); // u1
    std::vector<Ring> u0(n);
    if (auto err = exchange(t0, {}, nullptr, &u0))
      return err;
    out.a = std::move(u0);
    out.b = std::move(t0);
    break;
  }
  case 1: {
    std::vector<Ring> u2 = drawNext(n), u1(n);
    if (auto err = exchange({}, {}, nullptr, &u1))
      return err;
    out.a = std::move(u1);
    out.b = std::move(u2);
    break;
  }
  default: {
    std::vector<Ring> t1 = x.a; // x_2
    truncLow(t1, bits);
    std::vector<Ring> u2 = drawPrev(n), r = drawNext(n);
    for (size_t i = 0; i < n; ++i)
      t1[i] = r[i] + t1[i] - u2[i]; // u0
    if (auto err = exchange(t1, {}, nullptr, nullptr))
      return err;
    out.a = std::move(u2);
    out.b = std::move(t1);
    break;
  }
  }
  return out;
}

llvm::Expected<std::vector<Shares>>
Rep3Internals::mulMany(const std::vector<const Shares *> &xs,
                       const std::vector<const Shares *> &ys, int bits) {
  assert(xs.size() == ys.size() && "mulMany takes pairs");
  size_t total = 0;
  for (size_t p = 0; p < xs.size(); ++p) {
    assert(xs[p]->size() == ys[p]->size() && "mulMany pairs have equal sizes");
    total += xs[p]->size();
  }
  std::vector<Ring> z = zeroShare(total);
  size_t offset = 0;
  for (size_t p = 0; p < xs.size(); ++p) {
    const Shares &x = *xs[p], &y = *ys[p];
    Ring *zp = z.data() + offset;
    parallel(int64_t(x.size()), [&](int64_t i0, int64_t i1) {
      mulLocal(size_t(i1 - i0), x.a.data() + i0, x.b.data() + i0,
               y.a.data() + i0, y.b.data() + i0, zp + i0);
    });
    offset += x.size();
  }
  auto r = bits ? reshareTruncated(std::move(z), bits) : reshare(std::move(z));
  if (!r)
    return r.takeError();
  return splitShares(*r, xs);
}

llvm::Expected<Shares> Rep3Internals::mul(const Shares &x, const Shares &y,
                                          int bits) {
  auto r = mulMany({&x}, {&y}, bits);
  if (!r)
    return r.takeError();
  return std::move((*r)[0]);
}

// --- Engine operations
// ------------------------------------------------------------------------

llvm::Expected<SharedTensor> Rep3Engine::mul(const SharedTensor &x,
                                             const SharedTensor &y) {
  OpScope scope(*this, "mul");
  Rep3Internals in(*this);
  SharedTensor xo, yo;
  if (auto err = broadcastPair(x, y, xo, yo))
    return err;
  bool bothFixed =
      xo.encoding == EncodingKind::Fixed && yo.encoding == EncodingKind::Fixed;
  auto z = in.mul(xo.s, yo.s, bothFixed ? options_.fracBits : 0);
  if (!z)
    return z.takeError();
  EncodingKind enc = xo.encoding == EncodingKind::Integer &&
                             yo.encoding == EncodingKind::Integer
                         ? EncodingKind::Integer
                         : EncodingKind::Fixed;
  return SharedTensor{xo.shape, enc, std::move(*z)};
}

llvm::Expected<SharedTensor> Rep3Engine::truncate(const SharedTensor &x,
                                                  int bits) {
  OpScope scope(*this, "truncate");
  if (bits <= 0 || bits >= 63)
    return mpcError("truncation by " + std::to_string(bits) +
                    " bits (expected 1 to 62)");
  Rep3Internals in(*this);
  auto t = in.truncate(x.s, bits);
  if (!t)
    return t.takeError();
  return SharedTensor{x.shape, x.encoding, std::move(*t)};
}

llvm::Expected<SharedTensor> Rep3Engine::matmul(const SharedTensor &x,
                                                const SharedTensor &y) {
  OpScope scope(*this, "matmul");
  Rep3Internals in(*this);
  if (x.shape.empty() || y.shape.empty())
    return mpcError("matmul needs operands of rank 1 or more, got " +
                    shapeToString(x.shape) + " and " + shapeToString(y.shape));
  // NumPy: a 1-D lhs is a row, a 1-D rhs a column; both dimensions are
  // dropped from the result.
  Shape xs = x.shape, ys = y.shape;
  bool xVec = xs.size() == 1, yVec = ys.size() == 1;
  if (xVec)
    xs.insert(xs.begin(), 1);
  if (yVec)
    ys.push_back(1);
  int64_t m = xs[xs.size() - 2], k = xs.back(), k2 = ys[ys.size() - 2],
          n = ys.back();
  if (k != k2)
    return mpcError("matmul contraction mismatch: lhs has " +
                    std::to_string(k) + " columns, rhs has " +
                    std::to_string(k2) + " rows");
  Shape xBatch(xs.begin(), xs.end() - 2), yBatch(ys.begin(), ys.end() - 2);
  auto batch = broadcastShapes(xBatch, yBatch);
  if (!batch)
    return batch.takeError();
  int64_t batches = numElements(*batch);

  SharedTensor xb{xs, x.encoding, x.s}, yb{ys, y.encoding, y.s};
  // A batched lhs against an unbatched rhs is one tall GEMM.
  bool flatten = yBatch.empty();
  if (flatten) {
    m *= numElements(xBatch);
    batches = 1;
  } else {
    Shape xFull = *batch, yFull = *batch;
    xFull.insert(xFull.end(), {m, k});
    yFull.insert(yFull.end(), {k, n});
    auto bx = broadcastShared(xb, xFull);
    if (!bx)
      return bx.takeError();
    auto by = broadcastShared(yb, yFull);
    if (!by)
      return by.takeError();
    xb = std::move(*bx);
    yb = std::move(*by);
  }
  std::vector<Ring> z = in.zeroShare(size_t(batches * m * n));
  std::vector<Ring> ySum(yb.s.size());
  addVec(ySum.size(), yb.s.a.data(), yb.s.b.data(), ySum.data());
  for (int64_t t = 0; t < batches; ++t) {
    const Ring *xa = xb.s.a.data() + t * m * k,
               *xbp = xb.s.b.data() + t * m * k;
    const Ring *ya = yb.s.a.data() + t * k * n, *ys2 = ySum.data() + t * k * n;
    Ring *zt = z.data() + t * m * n;
    gemmAccumulate(m, n, k, xa, k, ys2, n, zt, n, in.threads());
    gemmAccumulate(m, n, k, xbp, k, ya, n, zt, n, in.threads());
  }
  bool bothFixed =
      x.encoding == EncodingKind::Fixed && y.encoding == EncodingKind::Fixed;
  auto r = bothFixed ? in.reshareTruncated(std::move(z), options_.fracBits)
                     : in.reshare(std::move(z));
  if (!r)
    return r.takeError();
  Shape outShape = flatten ? xBatch : *batch;
  if (!xVec)
    outShape.push_back(flatten ? xs[xs.size() - 2] : m);
  if (!yVec)
    outShape.push_back(n);
  EncodingKind enc =
      x.encoding == EncodingKind::Integer && y.encoding == EncodingKind::Integer
          ? EncodingKind::Integer
          : EncodingKind::Fixed;
  return SharedTensor{outShape, enc, std::move(*r)};
}

} // namespace mdl::backend::mpc
