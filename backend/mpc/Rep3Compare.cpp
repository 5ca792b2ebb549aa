// Comparisons and everything built on them: the sign bit (MSB) of a secret,
// lt/le/gt/ge/eq/ne, select, relu, abs, max/min, clip, and the tree
// reductions max/min/argmax/argmin along an axis (Rep3Engine.h).
//
// MSB extraction converts the arithmetic sharing to a binary (XOR) one and
// adds it up with a parallel-prefix circuit (ABY3 section 5.3):
//   1. the three arithmetic shares are, locally, XOR sharings of x_0, x_1
//      and x_2; a full-adder layer (carry-save) turns the three into two,
//      s = x_0 ^ x_1 ^ x_2 and c = maj(x_0, x_1, x_2) << 1 (1 round: one
//      AND per 64-bit word, maj(a, b, d) = ((a ^ d) & (b ^ d)) ^ d);
//   2. generate and propagate, G = s & c, P = s ^ c (1 round);
//   3. Kogge-Stone: for shift in 1, 2, 4, 8, 16, 32,
//      G ^= P & (G << shift), P &= P << shift (6 rounds; both ANDs of a
//      level in one round, the last level needs only G);
//   4. msb = bit 63 of (s ^ c ^ (G << 1)), and bit injection turns that
//      XOR-shared bit into an arithmetic 0/1 (1 round, three-party OT).
// 9 rounds in all, log2(64) + 3. Every AND of 64-bit words costs 8 bytes
// per party: 13 words in steps 1-3 (104 B), plus 8 B (P0, P1) or 32 B (P2)
// for the injection.
//
// Bit injection (ABY3 section 5.4.1, three-party OT). The bit is
// b = b_0 ^ b_1 ^ b_2; P0 and P1 both know c = b_1, P2 knows e = b_2 ^ b_0.
// The result shares are z_2 = F(K_1) (P1, P2), z_0 = F(K_2) (P2, P0) and
// z_1 = b - z_0 - z_2, which P0 and P1 must both learn: P2 is the sender of
// an OT with messages m_j = (j ^ e) - z_0 - z_2; for receiver P0 the helper
// P1 sends the mask w_c, for receiver P1 the helper P0 sends w'_c, the
// masks w (K_1) and w' (K_2) being shared by sender and helper. A receiver
// learns m_c = z_1 only, masked by a PRG output it does not hold.
#include "backend/mpc/Rep3Internals.h"

#include "backend/mpc/Layout.h"
#include "backend/mpc/ShareKernels.h"

namespace mdl::backend::mpc {

namespace {

// Left shift of every word of an XOR sharing (linear, so local).
Shares shiftLeft(const Shares &x, int bits) {
  Shares out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    out.a[i] = x.a[i] << bits;
    out.b[i] = x.b[i] << bits;
  }
  return out;
}

Shares xorShares(const Shares &x, const Shares &y) {
  Shares out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    out.a[i] = x.a[i] ^ y.a[i];
    out.b[i] = x.b[i] ^ y.b[i];
  }
  return out;
}

} // namespace

llvm::Expected<std::vector<Shares>>
Rep3Internals::andMany(const std::vector<const Shares *> &xs,
                       const std::vector<const Shares *> &ys) {
  size_t total = 0;
  for (const Shares *x : xs)
    total += x->size();
  std::vector<Ring> z = zeroShareXor(total);
  size_t offset = 0;
  for (size_t p = 0; p < xs.size(); ++p) {
    const Shares &x = *xs[p], &y = *ys[p];
    andLocal(x.size(), x.a.data(), x.b.data(), y.a.data(), y.b.data(),
             z.data() + offset);
    offset += x.size();
  }
  auto r = reshare(std::move(z));
  if (!r)
    return r.takeError();
  return splitShares(*r, xs);
}

llvm::Expected<Shares> Rep3Internals::andWords(const Shares &x,
                                               const Shares &y) {
  auto r = andMany({&x}, {&y});
  if (!r)
    return r.takeError();
  return std::move((*r)[0]);
}

llvm::Expected<Shares> Rep3Internals::msb(const Shares &x) {
  size_t n = x.size();
  int me = party();
  // This party's XOR shares of the arithmetic share x_j: (a, 0) for j = me,
  // (0, b) for j = me + 1, (0, 0) for the share it does not hold.
  auto shareOf = [&](int j) {
    Shares s(n);
    if (j == me)
      s.a = x.a;
    else if (j == nextParty(me))
      s.b = x.b;
    return s;
  };
  Shares x0 = shareOf(0), x1 = shareOf(1), x2 = shareOf(2);
  // s = x0 ^ x1 ^ x2 has exactly the shares (a, b).
  const Shares &s = x;
  Shares u = xorShares(x0, x2), v = xorShares(x1, x2);
  auto uv = andWords(u, v);
  if (!uv)
    return uv.takeError();
  Shares c = shiftLeft(xorShares(*uv, x2), 1);

  Shares p = xorShares(s, c);
  auto g = andWords(s, c);
  if (!g)
    return g.takeError();
  Shares gen = std::move(*g), prop = p;
  for (int shift = 1; shift < 64; shift *= 2) {
    Shares gShift = shiftLeft(gen, shift);
    if (shift == 32) {
      auto r = andWords(prop, gShift);
      if (!r)
        return r.takeError();
      gen = xorShares(gen, *r);
      break;
    }
    Shares pShift = shiftLeft(prop, shift);
    auto r = andMany({&prop, &prop}, {&gShift, &pShift});
    if (!r)
      return r.takeError();
    gen = xorShares(gen, (*r)[0]);
    prop = std::move((*r)[1]);
  }
  // Bit 63 of the sum is p_63 ^ (carry into bit 63) = p_63 ^ G_62.
  Shares sumBits = xorShares(p, shiftLeft(gen, 1));
  return bitInjectMsb(sumBits);
}

llvm::Expected<Shares> Rep3Internals::bitInjectMsb(const Shares &words) {
  size_t n = words.size();
  Shares out(n);
  auto bit = [](Ring w) { return w >> 63; };
  switch (party()) {
  case 0: { // holds (b0, b1): choice c = b1; helper for receiver P1
    std::vector<Ring> z0 = drawPrev(n), w0 = drawPrev(n), w1 = drawPrev(n);
    std::vector<Ring> help(n), fromSender(2 * n), fromHelper(n);
    for (size_t i = 0; i < n; ++i)
      help[i] = bit(words.b[i]) ? w1[i] : w0[i];
    if (auto err = exchange(help, {}, &fromHelper, &fromSender))
      return err;
    for (size_t i = 0; i < n; ++i) {
      Ring c = bit(words.b[i]);
      out.b[i] = fromSender[c * n + i] - fromHelper[i];
    }
    out.a = std::move(z0);
    break;
  }
  case 1: { // holds (b1, b2): choice c = b1; helper for receiver P0
    std::vector<Ring> z2 = drawNext(n), w0 = drawNext(n), w1 = drawNext(n);
    std::vector<Ring> help(n), fromSender(2 * n), fromHelper(n);
    for (size_t i = 0; i < n; ++i)
      help[i] = bit(words.a[i]) ? w1[i] : w0[i];
    if (auto err = exchange({}, help, &fromSender, &fromHelper))
      return err;
    for (size_t i = 0; i < n; ++i) {
      Ring c = bit(words.a[i]);
      out.a[i] = fromSender[c * n + i] - fromHelper[i];
    }
    out.b = std::move(z2);
    break;
  }
  default: { // holds (b2, b0): the sender, knows e = b2 ^ b0
    std::vector<Ring> z2 = drawPrev(n), w0 = drawPrev(n), w1 = drawPrev(n);
    std::vector<Ring> z0 = drawNext(n), v0 = drawNext(n), v1 = drawNext(n);
    std::vector<Ring> toP0(2 * n), toP1(2 * n);
    for (size_t i = 0; i < n; ++i) {
      Ring e = bit(words.a[i] ^ words.b[i]);
      Ring m0 = e - z0[i] - z2[i];       // (0 ^ e) - z0 - z2
      Ring m1 = (1 - e) - z0[i] - z2[i]; // (1 ^ e) - z0 - z2
      toP0[i] = m0 + w0[i];
      toP0[n + i] = m1 + w1[i];
      toP1[i] = m0 + v0[i];
      toP1[n + i] = m1 + v1[i];
    }
    if (auto err = exchange(toP0, toP1, nullptr, nullptr))
      return err;
    out.a = std::move(z2);
    out.b = std::move(z0);
    break;
  }
  }
  return out;
}

// --- Engine operations
// ---------------------------------------------------------------------------

llvm::Expected<SharedTensor> Rep3Engine::msb(const SharedTensor &x) {
  OpScope scope(*this, "msb");
  Rep3Internals in(*this);
  auto b = in.msb(x.s);
  if (!b)
    return b.takeError();
  return SharedTensor{x.shape, EncodingKind::Integer, std::move(*b)};
}

llvm::Expected<SharedTensor> Rep3Engine::compare(CompareKind kind,
                                                 const SharedTensor &x,
                                                 const SharedTensor &y) {
  static const char *const names[] = {"lt", "le", "gt", "ge", "eq", "ne"};
  OpScope scope(*this, names[int(kind)]);
  Rep3Internals in(*this);
  SharedTensor xo, yo;
  if (auto err = alignOperands(x, y, options_.fracBits, xo, yo))
    return err;
  Shares xMinusY = subShares(xo.s, yo.s);
  Shares yMinusX = subShares(yo.s, xo.s);
  Shares result;
  if (kind == CompareKind::Eq || kind == CompareKind::Ne) {
    // Both strict comparisons in one batch; equal iff neither holds.
    size_t n = xMinusY.size();
    auto both = in.msb(joinShares(xMinusY, yMinusX));
    if (!both)
      return both.takeError();
    Shares either =
        addShares(sliceShares(*both, 0, n), sliceShares(*both, n, n));
    result = kind == CompareKind::Ne ? std::move(either)
                                     : oneMinusBits(either, party_);
  } else {
    bool strictOnX =
        kind == CompareKind::Lt || kind == CompareKind::Ge; // msb(x - y)
    auto b = in.msb(strictOnX ? xMinusY : yMinusX);
    if (!b)
      return b.takeError();
    bool negate = kind == CompareKind::Ge || kind == CompareKind::Le;
    result = negate ? oneMinusBits(*b, party_) : std::move(*b);
  }
  return SharedTensor{xo.shape, EncodingKind::Integer, std::move(result)};
}

llvm::Expected<SharedTensor> Rep3Engine::comparePublic(CompareKind kind,
                                                       const SharedTensor &x,
                                                       const PlainTensor &c) {
  auto cs = constant(c, x.encoding);
  if (!cs)
    return cs.takeError();
  return compare(kind, x, *cs);
}

llvm::Expected<SharedTensor> Rep3Engine::select(const SharedTensor &cond,
                                                const SharedTensor &x,
                                                const SharedTensor &y) {
  OpScope scope(*this, "select");
  Rep3Internals in(*this);
  if (cond.encoding != EncodingKind::Integer)
    return mpcError(
        "select needs a condition of secret bits (an integer tensor), got a "
        "fixed-point one");
  SharedTensor xo, yo;
  if (auto err = alignOperands(x, y, options_.fracBits, xo, yo))
    return err;
  auto shape = broadcastShapes(cond.shape, xo.shape);
  if (!shape)
    return shape.takeError();
  auto cb = broadcastShared(cond, *shape);
  auto xb = broadcastShared(xo, *shape);
  auto yb = broadcastShared(yo, *shape);
  if (!cb || !xb || !yb) {
    llvm::Error err =
        llvm::joinErrors(cb ? llvm::Error::success() : cb.takeError(),
                         xb ? llvm::Error::success() : xb.takeError());
    return llvm::joinErrors(std::move(err),
                            yb ? llvm::Error::success() : yb.takeError());
  }
  // y + cond (x - y): a bit times a value needs no truncation.
  Shares diff = subShares(xb->s, yb->s);
  auto prod = in.mul(cb->s, diff, 0);
  if (!prod)
    return prod.takeError();
  return SharedTensor{*shape, xo.encoding, addShares(yb->s, *prod)};
}

llvm::Expected<SharedTensor> Rep3Engine::relu(const SharedTensor &x) {
  OpScope scope(*this, "relu");
  Rep3Internals in(*this);
  auto b = in.msb(x.s);
  if (!b)
    return b.takeError();
  auto xb = in.mul(x.s, *b, 0); // x when negative
  if (!xb)
    return xb.takeError();
  return SharedTensor{x.shape, x.encoding, subShares(x.s, *xb)};
}

llvm::Expected<SharedTensor> Rep3Engine::abs(const SharedTensor &x) {
  OpScope scope(*this, "abs");
  Rep3Internals in(*this);
  auto b = in.msb(x.s);
  if (!b)
    return b.takeError();
  auto xb = in.mul(x.s, *b, 0);
  if (!xb)
    return xb.takeError();
  Shares twice = addShares(*xb, *xb);
  return SharedTensor{x.shape, x.encoding, subShares(x.s, twice)};
}

namespace {
// max (wantMax) or min of x and y, already aligned: with b = [x < y],
// max = x + b (y - x), min = y - b (y - x).
llvm::Expected<Shares> pickExtreme(Rep3Internals &in, const Shares &x,
                                   const Shares &y, bool wantMax) {
  Shares d = subShares(y, x);
  auto b = in.msb(subShares(x, y));
  if (!b)
    return b.takeError();
  auto bd = in.mul(*b, d, 0);
  if (!bd)
    return bd.takeError();
  return wantMax ? addShares(x, *bd) : subShares(y, *bd);
}
} // namespace

llvm::Expected<SharedTensor> Rep3Engine::max(const SharedTensor &x,
                                             const SharedTensor &y) {
  OpScope scope(*this, "max");
  Rep3Internals in(*this);
  SharedTensor xo, yo;
  if (auto err = alignOperands(x, y, options_.fracBits, xo, yo))
    return err;
  auto r = pickExtreme(in, xo.s, yo.s, true);
  if (!r)
    return r.takeError();
  return SharedTensor{xo.shape, xo.encoding, std::move(*r)};
}

llvm::Expected<SharedTensor> Rep3Engine::min(const SharedTensor &x,
                                             const SharedTensor &y) {
  OpScope scope(*this, "min");
  Rep3Internals in(*this);
  SharedTensor xo, yo;
  if (auto err = alignOperands(x, y, options_.fracBits, xo, yo))
    return err;
  auto r = pickExtreme(in, xo.s, yo.s, false);
  if (!r)
    return r.takeError();
  return SharedTensor{xo.shape, xo.encoding, std::move(*r)};
}

llvm::Expected<SharedTensor> Rep3Engine::clip(const SharedTensor &x, double lo,
                                              double hi) {
  OpScope scope(*this, "clip");
  Rep3Internals in(*this);
  if (!(lo <= hi))
    return mpcError("clip bounds [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "] are empty");
  size_t n = x.s.size();
  std::vector<Ring> loV(n, x.encoding == EncodingKind::Fixed
                               ? encodeFixed(lo, fracBits())
                               : encodeInteger(lo));
  std::vector<Ring> hiV(n, x.encoding == EncodingKind::Fixed
                               ? encodeFixed(hi, fracBits())
                               : encodeInteger(hi));
  Shares loS = in.publicShares(loV), hiS = in.publicShares(hiV);
  Shares loMinusX = subShares(loS, x.s), hiMinusX = subShares(hiS, x.s);
  // [x < lo] and [x > hi] in one batch, then both corrections in one round.
  auto bits = in.msb(joinShares(subShares(x.s, loS), hiMinusX));
  if (!bits)
    return bits.takeError();
  Shares below = sliceShares(*bits, 0, n), above = sliceShares(*bits, n, n);
  auto fix = in.mulMany({&below, &above}, {&loMinusX, &hiMinusX}, 0);
  if (!fix)
    return fix.takeError();
  return SharedTensor{x.shape, x.encoding,
                      addShares(addShares(x.s, (*fix)[0]), (*fix)[1])};
}

// --- Reductions along an axis
// ------------------------------------------------------------------

namespace {

enum class ReduceKind { Max, Min, ArgMax, ArgMin };

// Columns [first, first + step * count) of a row-major [rows, cols] sharing.
Shares columns(const Shares &x, int64_t rows, int64_t cols, int64_t first,
               int64_t step, int64_t count) {
  Shares out(size_t(rows * count));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < count; ++j) {
      out.a[r * count + j] = x.a[r * cols + first + j * step];
      out.b[r * count + j] = x.b[r * cols + first + j * step];
    }
  return out;
}

// [rows, c1] and [rows, c2] side by side as [rows, c1 + c2].
Shares joinColumns(const Shares &x, int64_t c1, const Shares &y, int64_t c2,
                   int64_t rows) {
  Shares out(size_t(rows * (c1 + c2)));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < c1; ++j) {
      out.a[r * (c1 + c2) + j] = x.a[r * c1 + j];
      out.b[r * (c1 + c2) + j] = x.b[r * c1 + j];
    }
    for (int64_t j = 0; j < c2; ++j) {
      out.a[r * (c1 + c2) + c1 + j] = y.a[r * c2 + j];
      out.b[r * (c1 + c2) + c1 + j] = y.b[r * c2 + j];
    }
  }
  return out;
}

// The tree: adjacent pairs (2j, 2j+1) so that, with ties resolved to the
// left, the first extreme wins (NumPy's argmax). An odd last column waits.
llvm::Expected<SharedTensor> reduceAlong(Rep3Engine &engine, Rep3Internals &in,
                                         const SharedTensor &x, int64_t axis,
                                         bool keepDims, ReduceKind kind) {
  auto ax = normalizeAxis(axis, x.shape.size());
  if (!ax)
    return ax.takeError();
  int64_t n = x.shape[*ax];
  if (n == 0)
    return mpcError("cannot reduce an empty axis " + std::to_string(*ax) +
                    " of shape " + shapeToString(x.shape));
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < int64_t(x.shape.size()); ++d)
    if (d != *ax)
      perm.push_back(d);
  perm.push_back(*ax);
  auto moved = engine.transpose(x, perm);
  if (!moved)
    return moved.takeError();
  int64_t rows = x.size() / n;
  Shares vals = std::move(moved->s);
  bool wantIndex = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin;
  bool wantMax = kind == ReduceKind::Max || kind == ReduceKind::ArgMax;
  Shares idx;
  if (wantIndex) {
    std::vector<Ring> iota(size_t(rows * n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        iota[r * n + j] = Ring(j);
    idx = in.publicShares(iota);
  }
  int64_t cols = n;
  while (cols > 1) {
    int64_t half = cols / 2, rest = cols % 2;
    Shares l = columns(vals, rows, cols, 0, 2, half),
           r = columns(vals, rows, cols, 1, 2, half);
    // b = 1 where the right element wins strictly.
    auto b = in.msb(wantMax ? subShares(l, r) : subShares(r, l));
    if (!b)
      return b.takeError();
    Shares dv = subShares(r, l);
    Shares il, ir, di;
    std::vector<const Shares *> xs{&*b}, ys{&dv};
    if (wantIndex) {
      il = columns(idx, rows, cols, 0, 2, half);
      ir = columns(idx, rows, cols, 1, 2, half);
      di = subShares(ir, il);
      xs.push_back(&*b);
      ys.push_back(&di);
    }
    auto prods = in.mulMany(xs, ys, 0);
    if (!prods)
      return prods.takeError();
    Shares newVals = addShares(l, (*prods)[0]);
    Shares lastV = columns(vals, rows, cols, cols - 1, 1, rest);
    vals = joinColumns(newVals, half, lastV, rest, rows);
    if (wantIndex) {
      Shares newIdx = addShares(il, (*prods)[1]);
      Shares lastI = columns(idx, rows, cols, cols - 1, 1, rest);
      idx = joinColumns(newIdx, half, lastI, rest, rows);
    }
    cols = half + rest;
  }
  Shape outShape;
  for (int64_t d = 0; d < int64_t(x.shape.size()); ++d)
    if (d != *ax)
      outShape.push_back(x.shape[d]);
    else if (keepDims)
      outShape.push_back(1);
  if (wantIndex)
    return SharedTensor{outShape, EncodingKind::Integer, std::move(idx)};
  return SharedTensor{outShape, x.encoding, std::move(vals)};
}

} // namespace

llvm::Expected<SharedTensor>
Rep3Engine::reduceMax(const SharedTensor &x, int64_t axis, bool keepDims) {
  OpScope scope(*this, "reduce_max");
  Rep3Internals in(*this);
  return reduceAlong(*this, in, x, axis, keepDims, ReduceKind::Max);
}

llvm::Expected<SharedTensor>
Rep3Engine::reduceMin(const SharedTensor &x, int64_t axis, bool keepDims) {
  OpScope scope(*this, "reduce_min");
  Rep3Internals in(*this);
  return reduceAlong(*this, in, x, axis, keepDims, ReduceKind::Min);
}

llvm::Expected<SharedTensor> Rep3Engine::argmax(const SharedTensor &x,
                                                int64_t axis, bool keepDims) {
  OpScope scope(*this, "argmax");
  Rep3Internals in(*this);
  return reduceAlong(*this, in, x, axis, keepDims, ReduceKind::ArgMax);
}

llvm::Expected<SharedTensor> Rep3Engine::argmin(const SharedTensor &x,
                                                int64_t axis, bool keepDims) {
  OpScope scope(*this, "argmin");
  Rep3Internals in(*this);
  return reduceAlong(*this, in, x, axis, keepDims, ReduceKind::ArgMin);
}

} // namespace mdl::backend::mpc
