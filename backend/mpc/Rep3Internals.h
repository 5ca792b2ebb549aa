// Internal to backend/mpc: the raw protocols on share vectors that the
// Rep3Engine operations are made of, shared by Rep3Engine.cpp,
// Rep3Multiply.cpp, Rep3Compare.cpp and Rep3Nonlinear.cpp.
//
// Conventions. Party i holds (a, b) = (x_i, x_{i+1}). Key K_i is shared by
// parties i and i+1: party i draws it from nextPrg, party i+1 from prevPrg.
// Both holders of a key must draw the same amounts in the same order; every
// function below that draws says from which keys, and all parties call the
// same functions in the same order. Every round is an exchange() on every
// party, with empty messages where a party has nothing to send, so the
// round counts agree across parties.
#pragma once

#include "backend/mpc/Rep3Engine.h"

#include <functional>

namespace mdl::backend::mpc {

class Rep3Internals {
public:
  explicit Rep3Internals(Rep3Engine &engine) : e(engine) {}

  int party() const { return e.party_; }
  int fracBits() const { return e.options_.fracBits; }
  int threads() const { return e.threads_; }

  // --- Randomness
  // -------------------------------------------------------------

  /// n draws from K_i (the key shared with the next party).
  std::vector<Ring> drawNext(size_t n);
  /// n draws from K_{i-1} (the key shared with the previous party).
  std::vector<Ring> drawPrev(size_t n);
  /// A 3-out-of-3 sharing of zero, F(K_i) - F(K_{i-1}); draws n from both.
  std::vector<Ring> zeroShare(size_t n);
  /// A 3-out-of-3 XOR sharing of zero, F(K_i) ^ F(K_{i-1}); draws n from both.
  std::vector<Ring> zeroShareXor(size_t n);

  // --- Communication
  // ------------------------------------------------------------

  /// One round with ring vectors; empty vectors send / expect nothing.
  llvm::Error exchange(const std::vector<Ring> &toNext,
                       const std::vector<Ring> &toPrev,
                       std::vector<Ring> *fromNext,
                       std::vector<Ring> *fromPrev);

  // --- Arithmetic protocols
  // -----------------------------------------------------------

  /// A 3-out-of-3 sharing z (this party's z_i, zero-sharing already added)
  /// turned into a replicated one: send z_i to prev. 1 round, 8 B.
  llvm::Expected<Shares> reshare(std::vector<Ring> z);
  /// The same with a truncation by `bits` fused in (ABY3's Pi_trunc1 on
  /// the 2-out-of-2 sharing (z_0, z_1 + z_2)). 2 rounds, 8 B per party.
  llvm::Expected<Shares> reshareTruncated(std::vector<Ring> z, int bits);
  /// Truncation of a replicated sharing: 1 round, P0 and P2 send 8 B.
  llvm::Expected<Shares> truncate(const Shares &x, int bits);
  /// Element-wise ring product of equal-length sharings, then truncation by
  /// `bits` (0: none).
  llvm::Expected<Shares> mul(const Shares &x, const Shares &y, int bits);
  /// Element-wise products of several pairs in one round (each pair with
  /// its own truncation; all truncated pairs use the same bits).
  llvm::Expected<std::vector<Shares>>
  mulMany(const std::vector<const Shares *> &xs,
          const std::vector<const Shares *> &ys, int bits);

  // --- Binary protocols
  // -----------------------------------------------------------

  /// Element-wise AND of XOR-shared 64-bit words. 1 round, 8 B.
  llvm::Expected<Shares> andWords(const Shares &x, const Shares &y);
  /// Several ANDs in one round.
  llvm::Expected<std::vector<Shares>>
  andMany(const std::vector<const Shares *> &xs,
          const std::vector<const Shares *> &ys);
  /// Arithmetic bits (0/1, integer) of x < 0. 9 rounds.
  llvm::Expected<Shares> msb(const Shares &x);
  /// XOR-shared words -> arithmetic sharing of their bit 63, by three-party
  /// OT. 1 round; P2 sends 32 B, P0 and P1 8 B.
  llvm::Expected<Shares> bitInjectMsb(const Shares &words);

  // --- Local helpers
  // -----------------------------------------------------------------

  /// The sharing of a public ring vector: party 0 holds (v, 0), party 1
  /// (0, 0), party 2 (0, v).
  Shares publicShares(const std::vector<Ring> &v) const;
  /// Loop over [0, n) on the party's threads when n is large.
  void parallel(int64_t n,
                const std::function<void(int64_t, int64_t)> &fn) const;

  Rep3Engine &e;
};

/// The ring encoding of public values for a tensor of `encoding`.
std::vector<Ring> encodeValues(const std::vector<double> &values,
                               EncodingKind encoding, int fracBits);

/// x and y broadcast to their common shape (copies only where needed).
llvm::Error broadcastPair(const SharedTensor &x, const SharedTensor &y,
                          SharedTensor &xOut, SharedTensor &yOut);

/// A tensor broadcast to `shape`.
llvm::Expected<SharedTensor> broadcastShared(const SharedTensor &x,
                                             const Shape &shape);

/// x and y brought to one shape (broadcast) and one encoding (fixed point
/// when they differ), for elementwise operations and comparisons.
llvm::Error alignOperands(const SharedTensor &x, const SharedTensor &y, int fracBits,
                          SharedTensor &xo, SharedTensor &yo);
/// Integer shares scaled to fixed point (x * 2^f), others unchanged.
SharedTensor toFixed(const SharedTensor &x, int fracBits);

// Local arithmetic on equal-length sharings.
Shares addShares(const Shares &x, const Shares &y);
Shares subShares(const Shares &x, const Shares &y);
/// x * k for a public ring element k.
Shares scaleShares(const Shares &x, Ring k);
/// x + c for a public ring vector c: party 0 adds c to its first share,
/// party 2 to its second (both hold x_0 there).
Shares addPublicRing(const Shares &x, const std::vector<Ring> &c, int party);
/// 1 - bit for secret integer bits.
Shares oneMinusBits(const Shares &bits, int party);
/// x then y, as one sharing.
Shares joinShares(const Shares &x, const Shares &y);
/// Elements [from, from + count).
Shares sliceShares(const Shares &x, size_t from, size_t count);
/// `joined` cut back into pieces of the sizes of `parts`, in order (the
/// results of one batched round).
std::vector<Shares> splitShares(const Shares &joined, const std::vector<const Shares *> &parts);

} // namespace mdl::backend::mpc
