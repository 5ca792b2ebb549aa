// Local helpers on share vectors shared by the Rep3Engine operation files
// (Rep3Internals.h): encoding public values, broadcasting sharings, and the
// linear arithmetic that needs no communication.
#include "backend/mpc/Rep3Internals.h"

#include "backend/mpc/Layout.h"
#include "backend/mpc/ShareKernels.h"

namespace mdl::backend::mpc {

std::vector<Ring> encodeValues(const std::vector<double> &values,
                               EncodingKind encoding, int fracBits) {
  std::vector<Ring> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = encoding == EncodingKind::Fixed ? encodeFixed(values[i], fracBits)
                                             : encodeInteger(values[i]);
  return out;
}

llvm::Expected<SharedTensor> broadcastShared(const SharedTensor &x,
                                             const Shape &shape) {
  if (x.shape == shape)
    return x;
  SharedTensor out{shape, x.encoding, {}};
  for (int half = 0; half < 2; ++half) {
    auto r = mpc::broadcastTo(RingArray{x.shape, half ? x.s.b : x.s.a}, shape);
    if (!r)
      return r.takeError();
    (half ? out.s.b : out.s.a) = std::move(r->data);
  }
  return out;
}

llvm::Error broadcastPair(const SharedTensor &x, const SharedTensor &y,
                          SharedTensor &xOut, SharedTensor &yOut) {
  auto shape = broadcastShapes(x.shape, y.shape);
  if (!shape)
    return shape.takeError();
  auto bx = broadcastShared(x, *shape);
  if (!bx)
    return bx.takeError();
  auto by = broadcastShared(y, *shape);
  if (!by)
    return by.takeError();
  xOut = std::move(*bx);
  yOut = std::move(*by);
  return llvm::Error::success();
}

SharedTensor toFixed(const SharedTensor &x, int fracBits) {
  if (x.encoding == EncodingKind::Fixed)
    return x;
  SharedTensor out = x;
  out.encoding = EncodingKind::Fixed;
  Ring k = Ring(1) << fracBits;
  scaleVec(out.s.size(), out.s.a.data(), k, out.s.a.data());
  scaleVec(out.s.size(), out.s.b.data(), k, out.s.b.data());
  return out;
}

Shares addShares(const Shares &x, const Shares &y) {
  Shares out(x.size());
  addVec(x.size(), x.a.data(), y.a.data(), out.a.data());
  addVec(x.size(), x.b.data(), y.b.data(), out.b.data());
  return out;
}

Shares subShares(const Shares &x, const Shares &y) {
  Shares out(x.size());
  subVec(x.size(), x.a.data(), y.a.data(), out.a.data());
  subVec(x.size(), x.b.data(), y.b.data(), out.b.data());
  return out;
}

Shares scaleShares(const Shares &x, Ring k) {
  Shares out(x.size());
  scaleVec(x.size(), x.a.data(), k, out.a.data());
  scaleVec(x.size(), x.b.data(), k, out.b.data());
  return out;
}

Shares addPublicRing(const Shares &x, const std::vector<Ring> &c, int party) {
  Shares out = x;
  if (party == 0)
    addVec(c.size(), out.a.data(), c.data(), out.a.data());
  else if (party == 2)
    addVec(c.size(), out.b.data(), c.data(), out.b.data());
  return out;
}

Shares oneMinusBits(const Shares &bits, int party) {
  return addPublicRing(scaleShares(bits, Ring(-1)),
                       std::vector<Ring>(bits.size(), 1), party);
}

Shares joinShares(const Shares &x, const Shares &y) {
  Shares out = x;
  out.a.insert(out.a.end(), y.a.begin(), y.a.end());
  out.b.insert(out.b.end(), y.b.begin(), y.b.end());
  return out;
}

Shares sliceShares(const Shares &x, size_t from, size_t count) {
  Shares out;
  out.a.assign(x.a.begin() + from, x.a.begin() + from + count);
  out.b.assign(x.b.begin() + from, x.b.begin() + from + count);
  return out;
}

std::vector<Shares> splitShares(const Shares &joined, const std::vector<const Shares *> &parts) {
  std::vector<Shares> out;
  size_t offset = 0;
  for (const Shares *x : parts) {
    out.push_back(sliceShares(joined, offset, x->size()));
    offset += x->size();
  }
  return out;
}

} // namespace mdl::backend::mpc
