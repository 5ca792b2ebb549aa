// Rep3Engine: setup, accounting, randomness, input and reveal, and the
// local linear operations (Rep3Engine.h). Products are in
// Rep3Multiply.cpp, comparisons in Rep3Compare.cpp, nonlinear functions in
// Rep3Nonlinear.cpp, shape operations in Rep3Shape.cpp, local helpers on
// share vectors in ShareOps.cpp.
//
// Setup is one round: each party sends a hello to both neighbours (magic,
// version, its index, frac_bits, whether and which test seed) and, to the
// next party only, the AES key K_i it has drawn from RAND_bytes; it checks
// the hellos it receives, so that mismatched parties fail at once with a
// message naming the difference rather than computing garbage.
#include "backend/mpc/Rep3Internals.h"

#include "backend/mpc/Layout.h"
#include "backend/mpc/Parallel.h"
#include "backend/mpc/ShareKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mdl::backend::mpc {

namespace {

constexpr char kMagic[8] = {'M', 'D', 'L', 'R', 'E', 'P', '3', '\0'};
constexpr uint32_t kProtocolVersion = 1;

// The setup message; raw bytes on the wire (all parties are little-endian).
struct Hello {
  char magic[8];
  uint32_t version;
  uint32_t party;
  uint32_t fracBits;
  uint32_t hasTestSeed;
  uint64_t testSeed;
  uint8_t key[16];
};
static_assert(sizeof(Hello) == 48, "Hello is sent as raw bytes");

std::vector<Ring> helloWords(const Hello &h) {
  std::vector<Ring> w(sizeof(Hello) / sizeof(Ring));
  std::memcpy(w.data(), &h, sizeof h);
  return w;
}

llvm::Error checkHello(const std::vector<Ring> &words, int me, int from,
                       const Rep3Options &options) {
  Hello h;
  std::memcpy(&h, words.data(), sizeof h);
  std::string who = "party " + std::to_string(me) +
                    ": neighbour expected to be party " + std::to_string(from);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return mpcError(who + " does not speak the mdl rep3 protocol");
  if (h.version != kProtocolVersion)
    return mpcError(who + " speaks protocol version " +
                    std::to_string(h.version) + ", this party " +
                    std::to_string(kProtocolVersion));
  if (int(h.party) != from)
    return mpcError(who + " says it is party " + std::to_string(h.party));
  if (int(h.fracBits) != options.fracBits)
    return mpcError(who + " uses frac_bits " + std::to_string(h.fracBits) +
                    ", this party " + std::to_string(options.fracBits));
  bool theirs = h.hasTestSeed != 0;
  if (theirs != options.testSeed.has_value() ||
      (theirs && h.testSeed != *options.testSeed))
    return mpcError(who + " uses " +
                    (theirs ? "test seed " + std::to_string(h.testSeed)
                            : std::string("keys from entropy")) +
                    ", this party " +
                    (options.testSeed
                         ? "test seed " + std::to_string(*options.testSeed)
                         : std::string("keys from entropy")));
  return llvm::Error::success();
}

} // namespace

Rep3Engine::Rep3Engine(Channel &channel, const Rep3Options &options)
    : channel_(channel), options_(options), party_(channel.party()),
      threads_(options.threads > 0 ? options.threads : hardwareThreads()) {}

Rep3Engine::~Rep3Engine() = default;

llvm::Expected<std::unique_ptr<Rep3Engine>>
Rep3Engine::create(Channel &channel, const Rep3Options &options) {
  int me = channel.party();
  if (me < 0 || me >= kNumParties)
    return mpcError("party index " + std::to_string(me) + " is not 0, 1 or 2");
  // Products carry 2f fractional bits and the approximations scale by up
  // to 2^(f + 2 + f): f beyond 30 leaves no room in 64 bits.
  if (options.fracBits < 8 || options.fracBits > 30)
    return mpcError("frac_bits " + std::to_string(options.fracBits) +
                    " is out of range (8 to 30)");
  std::unique_ptr<Rep3Engine> engine(new Rep3Engine(channel, options));
  OpScope scope(*engine, "setup");

  PrgKey myKey{}; // K_me, shared with the next party
  if (options.testSeed) {
    myKey = testKey(*options.testSeed, me);
  } else {
    auto key = randomKey();
    if (!key)
      return key.takeError();
    myKey = *key;
  }
  Hello hello{};
  std::memcpy(hello.magic, kMagic, sizeof kMagic);
  hello.version = kProtocolVersion;
  hello.party = uint32_t(me);
  hello.fracBits = uint32_t(options.fracBits);
  hello.hasTestSeed = options.testSeed.has_value();
  hello.testSeed = options.testSeed.value_or(0);
  Hello toPrev = hello;
  if (!options.testSeed)
    std::memcpy(hello.key, myKey.data(),
                myKey.size()); // only the next party gets K_me
  std::vector<Ring> fromNext(sizeof(Hello) / sizeof(Ring)),
      fromPrev(fromNext.size());
  Rep3Internals in(*engine);
  if (auto err = in.exchange(helloWords(hello), helloWords(toPrev), &fromNext,
                             &fromPrev))
    return err;
  if (auto err = checkHello(fromNext, me, nextParty(me), options))
    return err;
  if (auto err = checkHello(fromPrev, me, prevParty(me), options))
    return err;

  PrgKey prevKey{}; // K_{me-1}
  if (options.testSeed) {
    prevKey = testKey(*options.testSeed, prevParty(me));
  } else {
    Hello h;
    std::memcpy(&h, fromPrev.data(), sizeof h);
    std::memcpy(prevKey.data(), h.key, prevKey.size());
  }
  if (auto err = engine->nextPrg_.init(myKey))
    return err;
  if (auto err = engine->prevPrg_.init(prevKey))
    return err;
  return engine;
}

// --- Accounting
// ---------------------------------------------------------------------

OpScope::OpScope(Rep3Engine &engine, const char *name)
    : engine_(engine), name_(name), start_(engine.channel_.stats()),
      began_(std::chrono::steady_clock::now()) {
  ++engine_.scopeDepth_;
}

OpScope::~OpScope() {
  if (--engine_.scopeDepth_ != 0)
    return;
  const ChannelStats &now = engine_.channel_.stats();
  OpStats &s = engine_.stats_[name_];
  ++s.calls;
  s.rounds += now.rounds - start_.rounds;
  s.bytesSent += now.bytesSent - start_.bytesSent;
  s.bytesReceived += now.bytesReceived - start_.bytesReceived;
  double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  s.seconds += took;
  s.fastestCall = s.calls == 1 ? took : std::min(s.fastestCall, took);
}

// --- Internals: randomness, rounds
// ----------------------------------------------------

std::vector<Ring> Rep3Internals::drawNext(size_t n) {
  std::vector<Ring> v(n);
  e.nextPrg_.fill(v.data(), n);
  return v;
}

std::vector<Ring> Rep3Internals::drawPrev(size_t n) {
  std::vector<Ring> v(n);
  e.prevPrg_.fill(v.data(), n);
  return v;
}

std::vector<Ring> Rep3Internals::zeroShare(size_t n) {
  std::vector<Ring> v = drawNext(n);
  std::vector<Ring> p = drawPrev(n);
  subVec(n, v.data(), p.data(), v.data());
  return v;
}

std::vector<Ring> Rep3Internals::zeroShareXor(size_t n) {
  std::vector<Ring> v = drawNext(n);
  std::vector<Ring> p = drawPrev(n);
  for (size_t i = 0; i < n; ++i)
    v[i] ^= p[i];
  return v;
}

llvm::Error Rep3Internals::exchange(const std::vector<Ring> &toNext,
                                    const std::vector<Ring> &toPrev,
                                    std::vector<Ring> *fromNext,
                                    std::vector<Ring> *fromPrev) {
  MutableBytes inNext, inPrev;
  if (fromNext)
    inNext = {fromNext->data(), fromNext->size() * sizeof(Ring)};
  if (fromPrev)
    inPrev = {fromPrev->data(), fromPrev->size() * sizeof(Ring)};
  return e.channel_.exchange({toNext.data(), toNext.size() * sizeof(Ring)},
                             {toPrev.data(), toPrev.size() * sizeof(Ring)},
                             inNext, inPrev);
}

Shares Rep3Internals::publicShares(const std::vector<Ring> &v) const {
  Shares s(v.size());
  if (party() == 0)
    s.a = v;
  else if (party() == 2)
    s.b = v;
  return s;
}

void Rep3Internals::parallel(
    int64_t n, const std::function<void(int64_t, int64_t)> &fn) const {
  parallelFor(n, n >= (int64_t(1) << 18) ? threads() : 1, 4096, fn);
}

// --- Input and reveal
// ------------------------------------------------------------------------

llvm::Expected<SharedTensor>
Rep3Engine::inputRing(int owner, const std::vector<Ring> *value,
                      const Shape &shape, EncodingKind encoding) {
  OpScope scope(*this, "input");
  Rep3Internals in(*this);
  if (owner < 0 || owner >= kNumParties)
    return mpcError("input owner " + std::to_string(owner) +
                    " is not 0, 1 or 2");
  int64_t n = numElements(shape);
  if (n < 0)
    return mpcError("input shape " + shapeToString(shape) + " is invalid");
  if (party_ == owner && (!value || int64_t(value->size()) != n))
    return mpcError(
        "party " + std::to_string(owner) + " owns an input of shape " +
        shapeToString(shape) + " (" + std::to_string(n) +
        " elements) but has " +
        (value ? std::to_string(value->size()) + " values" : "no value"));
  SharedTensor out{shape, encoding, Shares(size_t(n))};
  if (party_ == owner) {
    // x_owner from K_{owner-1}, x_{owner+1} from K_owner, the third share
    // to both neighbours.
    out.s.a = in.drawPrev(n);
    out.s.b = in.drawNext(n);
    std::vector<Ring> third(n);
    for (int64_t i = 0; i < n; ++i)
      third[i] = (*value)[i] - out.s.a[i] - out.s.b[i];
    if (auto err = in.exchange(third, third, nullptr, nullptr))
      return err;
  } else if (party_ == nextParty(owner)) {
    out.s.a = in.drawPrev(n);
    if (auto err = in.exchange({}, {}, nullptr, &out.s.b))
      return err;
  } else {
    out.s.b = in.drawNext(n);
    if (auto err = in.exchange({}, {}, &out.s.a, nullptr))
      return err;
  }
  return out;
}

llvm::Expected<SharedTensor> Rep3Engine::input(int owner,
                                               const PlainTensor *value,
                                               const Shape &shape,
                                               EncodingKind encoding) {
  std::vector<Ring> encoded;
  if (party_ == owner && value) {
    if (value->shape != shape ||
        int64_t(value->values.size()) != numElements(shape)) {
      OpScope scope(*this, "input");
      return mpcError("party " + std::to_string(owner) +
                      " owns an input of shape " + shapeToString(shape) +
                      " but its value has shape " +
                      shapeToString(value->shape) + " and " +
                      std::to_string(value->values.size()) + " values");
    }
    encoded = encodeValues(value->values, encoding, options_.fracBits);
  }
  return inputRing(owner, party_ == owner && value ? &encoded : nullptr, shape,
                   encoding);
}

llvm::Expected<SharedTensor> Rep3Engine::constant(const PlainTensor &value,
                                                  EncodingKind encoding) {
  if (numElements(value.shape) != int64_t(value.values.size()))
    return mpcError("constant of shape " + shapeToString(value.shape) +
                    " has " + std::to_string(value.values.size()) + " values");
  Rep3Internals in(*this);
  return SharedTensor{
      value.shape, encoding,
      in.publicShares(encodeValues(value.values, encoding, options_.fracBits))};
}

llvm::Expected<std::vector<PlainTensor>>
Rep3Engine::revealMany(const std::vector<const SharedTensor *> &xs) {
  OpScope scope(*this, "reveal");
  Rep3Internals in(*this);
  std::vector<Ring> mine, missing;
  for (const SharedTensor *x : xs)
    mine.insert(mine.end(), x->s.a.begin(), x->s.a.end());
  missing.resize(mine.size());
  // Party i sends x_i to party i+1, which holds x_{i+1} and x_{i+2}.
  if (auto err = in.exchange(mine, {}, nullptr, &missing))
    return err;
  std::vector<PlainTensor> out;
  size_t offset = 0;
  for (const SharedTensor *x : xs) {
    PlainTensor t{x->shape, std::vector<double>(x->s.size())};
    for (size_t i = 0; i < x->s.size(); ++i) {
      Ring v = x->s.a[i] + x->s.b[i] + missing[offset + i];
      t.values[i] = x->encoding == EncodingKind::Fixed
                        ? decodeFixed(v, options_.fracBits)
                        : decodeInteger(v);
    }
    offset += x->s.size();
    out.push_back(std::move(t));
  }
  return out;
}

llvm::Expected<PlainTensor> Rep3Engine::reveal(const SharedTensor &x) {
  auto r = revealMany({&x});
  if (!r)
    return r.takeError();
  return std::move((*r)[0]);
}

llvm::Expected<std::vector<Ring>>
Rep3Engine::revealRing(const SharedTensor &x) {
  OpScope scope(*this, "reveal");
  Rep3Internals in(*this);
  std::vector<Ring> missing(x.s.size());
  if (auto err = in.exchange(x.s.a, {}, nullptr, &missing))
    return err;
  for (size_t i = 0; i < missing.size(); ++i)
    missing[i] += x.s.a[i] + x.s.b[i];
  return missing;
}

// --- Linear operations
// -----------------------------------------------------------------------

llvm::Error alignOperands(const SharedTensor &x, const SharedTensor &y, int fracBits,
                          SharedTensor &xo, SharedTensor &yo) {
  if (auto err = broadcastPair(x, y, xo, yo))
    return err;
  if (xo.encoding != yo.encoding) {
    xo = toFixed(xo, fracBits);
    yo = toFixed(yo, fracBits);
  }
  return llvm::Error::success();
}

namespace {
bool allIntegral(const std::vector<double> &v) {
  for (double d : v)
    if (!(std::isfinite(d) && d == std::nearbyint(d) && std::fabs(d) < 9.0e15))
      return false;
  return true;
}

// The public tensor broadcast to `shape`, encoded.
llvm::Expected<std::vector<Ring>> publicOperand(const PlainTensor &c,
                                                const Shape &shape,
                                                EncodingKind encoding,
                                                int fracBits) {
  if (numElements(c.shape) != int64_t(c.values.size()))
    return mpcError("public operand of shape " + shapeToString(c.shape) +
                    " has " + std::to_string(c.values.size()) + " values");
  auto b = broadcastTo(
      RingArray{c.shape, encodeValues(c.values, encoding, fracBits)}, shape);
  if (!b)
    return b.takeError();
  return std::move(b->data);
}
} // namespace

llvm::Expected<SharedTensor> Rep3Engine::add(const SharedTensor &x,
                                             const SharedTensor &y) {
  OpScope scope(*this, "add");
  SharedTensor xo, yo;
  if (auto err = alignOperands(x, y, options_.fracBits, xo, yo))
    return err;
  addVec(xo.s.size(), xo.s.a.data(), yo.s.a.data(), xo.s.a.data());
  addVec(xo.s.size(), xo.s.b.data(), yo.s.b.data(), xo.s.b.data());
  return xo;
}

llvm::Expected<SharedTensor> Rep3Engine::sub(const SharedTensor &x,
                                             const SharedTensor &y) {
  OpScope scope(*this, "sub");
  SharedTensor xo, yo;
  if (auto err = alignOperands(x, y, options_.fracBits, xo, yo))
    return err;
  subVec(xo.s.size(), xo.s.a.data(), yo.s.a.data(), xo.s.a.data());
  subVec(xo.s.size(), xo.s.b.data(), yo.s.b.data(), xo.s.b.data());
  return xo;
}

SharedTensor Rep3Engine::neg(const SharedTensor &x) {
  OpScope scope(*this, "neg");
  SharedTensor out = x;
  scaleVec(out.s.size(), out.s.a.data(), Ring(-1), out.s.a.data());
  scaleVec(out.s.size(), out.s.b.data(), Ring(-1), out.s.b.data());
  return out;
}

SharedTensor Rep3Engine::mulInteger(const SharedTensor &x, int64_t k) {
  OpScope scope(*this, "mul_public");
  SharedTensor out = x;
  scaleVec(out.s.size(), out.s.a.data(), Ring(k), out.s.a.data());
  scaleVec(out.s.size(), out.s.b.data(), Ring(k), out.s.b.data());
  return out;
}

llvm::Expected<SharedTensor> Rep3Engine::addPublic(const SharedTensor &x,
                                                   const PlainTensor &c) {
  OpScope scope(*this, "add_public");
  auto shape = broadcastShapes(x.shape, c.shape);
  if (!shape)
    return shape.takeError();
  auto xb = broadcastShared(x, *shape);
  if (!xb)
    return xb.takeError();
  SharedTensor out = std::move(*xb);
  if (out.encoding == EncodingKind::Integer && !allIntegral(c.values))
    out = toFixed(out, options_.fracBits);
  auto cv = publicOperand(c, *shape, out.encoding, options_.fracBits);
  if (!cv)
    return cv.takeError();
  // x_0 is party 0's first share and party 2's second.
  if (party_ == 0)
    addVec(cv->size(), out.s.a.data(), cv->data(), out.s.a.data());
  else if (party_ == 2)
    addVec(cv->size(), out.s.b.data(), cv->data(), out.s.b.data());
  return out;
}

llvm::Expected<SharedTensor> Rep3Engine::subFromPublic(const PlainTensor &c,
                                                       const SharedTensor &x) {
  OpScope scope(*this, "add_public");
  return addPublic(neg(x), c);
}

llvm::Expected<SharedTensor> Rep3Engine::mulPublic(const SharedTensor &x,
                                                   const PlainTensor &c) {
  OpScope scope(*this, "mul_public");
  Rep3Internals in(*this);
  auto shape = broadcastShapes(x.shape, c.shape);
  if (!shape)
    return shape.takeError();
  auto xb = broadcastShared(x, *shape);
  if (!xb)
    return xb.takeError();
  SharedTensor out = std::move(*xb);
  // Integer factors scale the shares exactly.
  if (allIntegral(c.values)) {
    auto cv =
        publicOperand(c, *shape, EncodingKind::Integer, options_.fracBits);
    if (!cv)
      return cv.takeError();
    mulVec(cv->size(), out.s.a.data(), cv->data(), out.s.a.data());
    mulVec(cv->size(), out.s.b.data(), cv->data(), out.s.b.data());
    return out;
  }
  // Real factors below 1 get E extra fractional bits so that they keep f
  // significant bits (1/24 as 2^-18 multiples is off by 3e-5 relative);
  // since |c| 2^E < 1 the product, and so the truncation's failure
  // probability, is no larger than x times a factor below 1 with E = 0.
  double maxAbs = 0;
  for (double v : c.values)
    maxAbs = std::max(maxAbs, std::fabs(v));
  int extra = 0;
  while (extra < 20 && maxAbs > 0 && maxAbs * std::ldexp(1.0, extra + 1) < 1.0)
    ++extra;
  int cBits = options_.fracBits + extra;
  std::vector<double> scaled(c.values.size());
  for (size_t i = 0; i < scaled.size(); ++i)
    scaled[i] = std::ldexp(c.values[i], extra);
  auto cv = publicOperand(PlainTensor{c.shape, scaled}, *shape,
                          EncodingKind::Fixed, options_.fracBits);
  if (!cv)
    return cv.takeError();
  mulVec(cv->size(), out.s.a.data(), cv->data(), out.s.a.data());
  mulVec(cv->size(), out.s.b.data(), cv->data(), out.s.b.data());
  // An integer x times c 2^(f+E) has f + E fractional bits; a fixed x 2f + E.
  int drop = out.encoding == EncodingKind::Integer ? extra : cBits;
  out.encoding = EncodingKind::Fixed;
  if (drop == 0)
    return out;
  auto t = in.truncate(out.s, drop);
  if (!t)
    return t.takeError();
  out.s = std::move(*t);
  return out;
}

llvm::Expected<SharedTensor> Rep3Engine::mulScalar(const SharedTensor &x,
                                                   double c) {
  return mulPublic(x, PlainTensor{{}, {c}});
}

} // namespace mdl::backend::mpc
