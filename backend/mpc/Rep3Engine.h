// One party's engine of rep3: ABY3-style replicated secret sharing among
// three parties over Z_2^64, semi-honest, honest majority.
//
// Each of the three parties creates one Rep3Engine on its Channel and then
// calls the same operations in the same order with the same public
// arguments (shapes, axes, public constants); secrets exist only as
// SharedTensors. Every operation returns its result or an error (a peer that
// left or stalled, a shape that does not fit); none throws or aborts.
//
// Cost of each operation, per element of the result unless stated, in
// rounds and bytes sent by each party (P0/P1/P2 where they differ); the
// ABY3 cost model puts a multiplication at 1 round and 64 bits per element
// per party, a matmul at 64 bits per output element. docs/mpc.md has the
// table with measured figures.
//   input                1 round   owner 16 B, others 0
//   reveal               1 round   8 B
//   add, sub, neg, *int  0
//   truncate, *public    1 round   P0, P2: 8 B; P1: 0
//   mul (fixed x fixed)  2 rounds  8 B (product and truncation fused)
//   mul (with integer)   1 round   8 B
//   matmul               as mul, per OUTPUT element (not per inner term)
//   msb, lt/le/gt/ge     9 rounds  P0, P1: 112 B; P2: 136 B
//   eq, ne               9 rounds  twice a comparison
//   select               1 round   8 B
//   relu, abs, max, min  10 rounds comparison + select
//   reduceMax/Min/argmax 10 rounds per halving of the axis
// The nonlinear functions (exp, reciprocal, rsqrt, sigmoid, tanh, gelu,
// softmax, layernorm) are compositions of the above; their costs and
// measured errors are in docs/mpc.md and in Rep3Nonlinear.cpp.
#pragma once

#include "backend/mpc/Accounting.h"
#include "backend/mpc/Channel.h"
#include "backend/mpc/Prg.h"
#include "backend/mpc/SharedTensor.h"

#include <llvm/Support/Error.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mdl::backend::mpc {

/// Parameters every party must agree on (checked during setup) plus local
/// tuning.
struct Rep3Options {
  /// Fractional bits of the fixed-point encoding, 8 to 30.
  int fracBits = kDefaultFracBits;
  /// Derive every PRG key from this public seed instead of the OS's
  /// entropy. FOR TESTS ONLY: anyone knowing the seed can unmask everything.
  std::optional<uint64_t> testSeed;
  /// Threads for this party's local work; 0 means all hardware threads.
  int threads = 0;
};

/// Input domains of the nonlinear approximations (Rep3Nonlinear.cpp has
/// the methods, docs/mpc.md the measured errors).
namespace approx {
/// exp clips its input to [kExpMin, kExpMax]: exp(-16) is below half a
/// unit of 2^-18, and exp(10) keeps the last squaring's truncation failure
/// probability near 2^-14 (see Rep3Multiply.cpp).
constexpr double kExpMin = -16.0;
constexpr double kExpMax = 10.0;
/// exp computes p(x / 2^s)^(2^s) with a degree-6 polynomial p.
constexpr int kExpSquarings = 4;
/// Extra fractional bits G of the power-of-two scale factors of reciprocal
/// and rsqrt: they are accurate for 2^-f <= |x| < 2^(f + G) and give 0
/// below 2^-f.
constexpr int kScaleExtraBits = 2;
/// sigmoid and tanh evaluate exp(-|x|) with |x| clipped to this.
constexpr double kSigmoidClip = 16.0;
/// gelu's inner polynomial sees x clipped to [-kGeluClip, kGeluClip].
constexpr double kGeluClip = 8.0;
/// Newton-Raphson iterations of reciprocal and rsqrt.
constexpr int kNewtonIterations = 3;
} // namespace approx

/// Comparison operators; results are secret bits (EncodingKind::Integer).
enum class CompareKind { Lt, Le, Gt, Ge, Eq, Ne };

/// One party of a rep3 computation.
class Rep3Engine {
public:
  /// Sets up party `channel.party()`: checks that the three parties agree
  /// on the options (one round) and agrees on the pairwise PRG keys (party i
  /// sends the key it shares with i+1; nothing secret under testSeed).
  static llvm::Expected<std::unique_ptr<Rep3Engine>>
  create(Channel &channel, const Rep3Options &options);
  ~Rep3Engine();

  int party() const { return party_; }
  int fracBits() const { return options_.fracBits; }
  const Rep3Options &options() const { return options_; }
  Channel &channel() { return channel_; }
  /// Per operation kind: calls, rounds, bytes, time (this party).
  const OpStatsTable &stats() const { return stats_; }

  // --- Entering and leaving the device -------------------------------------

  /// Secret-shares a public tensor that party `owner` holds: the owner
  /// passes its values, the others pass null; all pass the same shape.
  /// 1 round; the owner sends 16 B per element, the others nothing.
  llvm::Expected<SharedTensor>
  input(int owner, const PlainTensor *value, const Shape &shape,
        EncodingKind encoding = EncodingKind::Fixed);
  /// input() of ring elements already encoded.
  llvm::Expected<SharedTensor> inputRing(int owner,
                                         const std::vector<Ring> *value,
                                         const Shape &shape,
                                         EncodingKind encoding);
  /// A public tensor as a (trivial) sharing; local.
  llvm::Expected<SharedTensor>
  constant(const PlainTensor &value,
           EncodingKind encoding = EncodingKind::Fixed);
  /// Opens x to all three parties, decoded by its encoding. 1 round, 8 B.
  llvm::Expected<PlainTensor> reveal(const SharedTensor &x);
  /// Opens several tensors in one round.
  llvm::Expected<std::vector<PlainTensor>>
  revealMany(const std::vector<const SharedTensor *> &xs);
  /// Opens x as raw ring elements. 1 round, 8 B.
  llvm::Expected<std::vector<Ring>> revealRing(const SharedTensor &x);

  // --- Linear operations: local, no communication ---------------------------

  /// x + y, NumPy broadcasting; an integer operand beside a fixed one is
  /// scaled to fixed point first.
  llvm::Expected<SharedTensor> add(const SharedTensor &x,
                                   const SharedTensor &y);
  llvm::Expected<SharedTensor> sub(const SharedTensor &x,
                                   const SharedTensor &y);
  SharedTensor neg(const SharedTensor &x);
  /// x + c for a public c (broadcasting).
  llvm::Expected<SharedTensor> addPublic(const SharedTensor &x,
                                         const PlainTensor &c);
  /// c - x for a public c.
  llvm::Expected<SharedTensor> subFromPublic(const PlainTensor &c,
                                             const SharedTensor &x);
  /// x * k for a public integer k; local, keeps the encoding.
  SharedTensor mulInteger(const SharedTensor &x, int64_t k);
  /// x * c for a public real c (broadcasting). A fixed x needs a truncation:
  /// 1 round (P0, P2 send 8 B); an integer x becomes fixed without one.
  llvm::Expected<SharedTensor> mulPublic(const SharedTensor &x,
                                         const PlainTensor &c);
  /// x * c for a public scalar.
  llvm::Expected<SharedTensor> mulScalar(const SharedTensor &x, double c);

  // --- Products --------------------------------------------------------------

  /// Element-wise x * y (broadcasting). Fixed x fixed: 2 rounds, 8 B per
  /// element and party (the reshare and ABY3's truncation fused); with an
  /// integer operand: 1 round, 8 B.
  llvm::Expected<SharedTensor> mul(const SharedTensor &x,
                                   const SharedTensor &y);
  /// Matrix product with NumPy's matmul semantics (1-D operands, batch
  /// dimensions broadcast). Cost as mul but per OUTPUT element: the bytes
  /// do not depend on the inner dimension. Local work: two 64-bit integer
  /// GEMMs per party, C_i = X_i (Y_i + Y_{i+1}) + X_{i+1} Y_i.
  llvm::Expected<SharedTensor> matmul(const SharedTensor &x,
                                      const SharedTensor &y);
  /// Probabilistic truncation by `bits` (ABY3's Pi_trunc1, see
  /// Rep3Multiply.cpp for its error): 1 round, P0 and P2 send 8 B.
  llvm::Expected<SharedTensor> truncate(const SharedTensor &x, int bits);

  // --- Comparisons and selection ---------------------------------------------

  /// Secret bit of x < 0 (the most significant bit): A2B with a
  /// Kogge-Stone adder, then bit injection. 9 rounds.
  llvm::Expected<SharedTensor> msb(const SharedTensor &x);
  /// x OP y as secret bits (broadcasting); x - y must not overflow the
  /// fixed-point range. 9 rounds.
  llvm::Expected<SharedTensor> compare(CompareKind kind, const SharedTensor &x,
                                       const SharedTensor &y);
  /// x OP c for a public c.
  llvm::Expected<SharedTensor>
  comparePublic(CompareKind kind, const SharedTensor &x, const PlainTensor &c);
  /// cond ? x : y with a secret bit cond (broadcasting). 1 round.
  llvm::Expected<SharedTensor> select(const SharedTensor &cond,
                                      const SharedTensor &x,
                                      const SharedTensor &y);
  llvm::Expected<SharedTensor> relu(const SharedTensor &x);
  llvm::Expected<SharedTensor> abs(const SharedTensor &x);
  /// Element-wise maximum / minimum. 10 rounds.
  llvm::Expected<SharedTensor> max(const SharedTensor &x,
                                   const SharedTensor &y);
  llvm::Expected<SharedTensor> min(const SharedTensor &x,
                                   const SharedTensor &y);
  /// x clipped to [lo, hi] (public bounds): both comparisons in one batch.
  llvm::Expected<SharedTensor> clip(const SharedTensor &x, double lo,
                                    double hi);
  /// Maximum / minimum along `axis` by a tree of pairwise comparisons:
  /// ceil(log2 n) levels of 10 rounds.
  llvm::Expected<SharedTensor> reduceMax(const SharedTensor &x, int64_t axis,
                                         bool keepDims);
  llvm::Expected<SharedTensor> reduceMin(const SharedTensor &x, int64_t axis,
                                         bool keepDims);
  /// Index of the first maximum / minimum along `axis` (integer encoded):
  /// the same tree, the index riding along in the same rounds.
  llvm::Expected<SharedTensor> argmax(const SharedTensor &x, int64_t axis,
                                      bool keepDims);
  llvm::Expected<SharedTensor> argmin(const SharedTensor &x, int64_t axis,
                                      bool keepDims);

  // --- Nonlinear functions (Rep3Nonlinear.cpp: methods, ranges, errors)
  // -------

  llvm::Expected<SharedTensor> exp(const SharedTensor &x);
  llvm::Expected<SharedTensor> reciprocal(const SharedTensor &x);
  llvm::Expected<SharedTensor> div(const SharedTensor &x,
                                   const SharedTensor &y);
  llvm::Expected<SharedTensor> rsqrt(const SharedTensor &x);
  llvm::Expected<SharedTensor> sqrt(const SharedTensor &x);
  llvm::Expected<SharedTensor> sigmoid(const SharedTensor &x);
  llvm::Expected<SharedTensor> tanh(const SharedTensor &x);
  /// gelu's exact (erf) form, or its tanh form when `approximate`.
  llvm::Expected<SharedTensor> gelu(const SharedTensor &x,
                                    bool approximate = false);
  /// Softmax along `axis`: subtract the row maximum, clipped exp, one
  /// reciprocal per row, one product.
  llvm::Expected<SharedTensor> softmax(const SharedTensor &x, int64_t axis);
  /// (x - mean) * rsqrt(var + eps) * gamma + beta along `axis`; gamma and
  /// beta are optional (null) and broadcast against the normalized axis.
  llvm::Expected<SharedTensor> layerNorm(const SharedTensor &x,
                                         const SharedTensor *gamma,
                                         const SharedTensor *beta, double eps,
                                         int64_t axis);

  // --- Shapes and reductions: local ---------------------------------------

  /// Same elements, another shape (one dimension may be -1).
  llvm::Expected<SharedTensor> reshape(const SharedTensor &x,
                                       const Shape &shape);
  llvm::Expected<SharedTensor> transpose(const SharedTensor &x,
                                         const std::vector<int64_t> &perm);
  llvm::Expected<SharedTensor> slice(const SharedTensor &x,
                                     const std::vector<int64_t> &starts,
                                     const std::vector<int64_t> &stops,
                                     const std::vector<int64_t> &steps);
  llvm::Expected<SharedTensor>
  concat(const std::vector<const SharedTensor *> &parts, int64_t axis);
  /// Rows picked along `axis` by public indices of shape `indexShape`.
  llvm::Expected<SharedTensor> gather(const SharedTensor &x,
                                      const std::vector<int64_t> &indices,
                                      const Shape &indexShape, int64_t axis);
  llvm::Expected<SharedTensor> broadcastTo(const SharedTensor &x,
                                           const Shape &shape);
  /// Sum over `axes` (empty: all).
  llvm::Expected<SharedTensor>
  sum(const SharedTensor &x, const std::vector<int64_t> &axes, bool keepDims);
  /// Mean over `axes` (empty: all); fixed point result, 1 round (the
  /// product by 1/n is truncated).
  llvm::Expected<SharedTensor>
  mean(const SharedTensor &x, const std::vector<int64_t> &axes, bool keepDims);

private:
  friend class OpScope;
  friend class Rep3Internals;
  Rep3Engine(Channel &channel, const Rep3Options &options);

  Channel &channel_;
  Rep3Options options_;
  int party_;
  int threads_;
  Prg nextPrg_; ///< key K_i, shared with party i+1
  Prg prevPrg_; ///< key K_{i-1}, shared with party i-1
  OpStatsTable stats_;
  int scopeDepth_ = 0;
};

/// Records one operation's rounds, bytes and time in the engine's table
/// unless an enclosing operation is already recording.
class OpScope {
public:
  OpScope(Rep3Engine &engine, const char *name);
  ~OpScope();

private:
  Rep3Engine &engine_;
  const char *name_;
  ChannelStats start_;
  std::chrono::steady_clock::time_point began_;
};

} // namespace mdl::backend::mpc
