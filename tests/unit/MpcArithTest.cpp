// The ring, the fixed-point encoding and the arithmetic protocols of rep3
// (input, reveal, linear operations, products, matmul, truncation) against
// plaintext double computations, with their communication checked against
// the cost model.
#include "MpcTestUtil.h"

#include "backend/mpc/Ring.h"

#include <chrono>

using namespace mdl::backend::mpc;
using namespace mdl::backend::mpc::test;

namespace {

// Plain row-major matmul of [m, k] and [k, n].
std::vector<double> plainMatmul(const std::vector<double> &a,
                                const std::vector<double> &b, int64_t m,
                                int64_t k, int64_t n) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

} // namespace

TEST(MpcRing, FixedPointRoundTrip) {
  const int f = kDefaultFracBits;
  for (double v :
       {0.0, 1.0, -1.0, 0.5, -0.25, 3.14159, -2.71828, 1e6, -1e6, 1e-5}) {
    double decoded = decodeFixed(encodeFixed(v, f), f);
    EXPECT_LE(std::fabs(decoded - v), ulp(f) / 2) << v;
  }
  // Two's complement: -1 is all ones times 2^f.
  EXPECT_EQ(encodeFixed(-1.0, f), Ring(0) - (Ring(1) << f));
  // The range is [-2^(63-f), 2^(63-f)); beyond it encoding saturates.
  EXPECT_EQ(fixedRange(f), std::ldexp(1.0, 45));
  EXPECT_EQ(encodeFixed(1e300, f), Ring(INT64_MAX));
  EXPECT_EQ(encodeFixed(-1e300, f), Ring(INT64_MIN));
  EXPECT_EQ(encodeFixed(NAN, f), 0u);
  EXPECT_EQ(decodeFixed(encodeFixed(-35184372088832.0, f), f),
            -35184372088832.0);
  EXPECT_EQ(shiftRightSigned(Ring(0) - 8, 2), Ring(0) - 2);
}

TEST(MpcRing, Shapes) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({2, 3, 4}), 24);
  EXPECT_EQ(numElements({2, 0}), 0);
  EXPECT_EQ(numElements({-1}), -1);
  EXPECT_EQ(numElements({INT64_MAX, 2}), -1);
  EXPECT_EQ(stridesOf({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
}

TEST(MpcArith, InputAndRevealEveryOwner) {
  std::vector<double> values = uniformValues(100, -1000, 1000, 7);
  // Edge values: zero, one ulp, near the ends of the range.
  for (double v : {0.0, ulp(), -ulp(), 1.0e13, -1.0e13, 35184372088831.0,
                   -35184372088832.0})
    values.push_back(v);
  Shape shape{int64_t(values.size())};
  auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
    for (int owner = 0; owner < 3; ++owner) {
      PlainTensor t{shape, values};
      MPC_TRY(x, e.input(owner, e.party() == owner ? &t : nullptr, shape));
      if (auto err = revealInto(e, x, r))
        return err;
    }
    PlainTensor ints{{4}, {-3, 0, 7, 1e15}};
    MPC_TRY(k, e.input(1, e.party() == 1 ? &ints : nullptr, {4},
                       EncodingKind::Integer));
    return revealInto(e, k, r);
  });
  ASSERT_EQ(out.size(), 4u);
  std::vector<double> expected = onGrid(values);
  for (int owner = 0; owner < 3; ++owner)
    EXPECT_EQ(out[owner].values, expected) << "owner " << owner;
  EXPECT_EQ(out[3].values, (std::vector<double>{-3, 0, 7, 1e15}));
}

TEST(MpcArith, LinearOperationsAreExact) {
  std::vector<double> xv = onGrid(uniformValues(12, -50, 50, 1));
  std::vector<double> yv = onGrid(uniformValues(4, -50, 50, 2));
  std::vector<double> cv = onGrid(uniformValues(3, -5, 5, 3));
  auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
    PlainTensor xt{{3, 4}, xv}, yt{{4}, yv};
    MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {3, 4}));
    MPC_TRY(y, e.input(2, e.party() == 2 ? &yt : nullptr, {4}));
    MPC_TRY(sum, e.add(x, y)); // broadcast [3,4] + [4]
    MPC_TRY(diff, e.sub(y, x));
    SharedTensor negX = e.neg(x);
    MPC_TRY(plusC,
            e.addPublic(x, PlainTensor{{3, 1}, cv})); // broadcast [3,4] + [3,1]
    MPC_TRY(cMinus, e.subFromPublic(PlainTensor{{}, {2.5}}, x));
    SharedTensor times = e.mulInteger(x, -3);
    for (const SharedTensor *t : {&sum, &diff, &negX, &plusC, &cMinus, &times})
      if (auto err = revealInto(e, *t, r))
        return err;
    return llvm::Error::success();
  });
  ASSERT_EQ(out.size(), 6u);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double x = xv[i * 4 + j], y = yv[j], c = cv[i];
      int k = i * 4 + j;
      EXPECT_EQ(out[0].values[k], x + y);
      EXPECT_EQ(out[1].values[k], y - x);
      EXPECT_EQ(out[2].values[k], -x);
      EXPECT_EQ(out[3].values[k], x + c);
      EXPECT_EQ(out[4].values[k], 2.5 - x);
      EXPECT_EQ(out[5].values[k], -3 * x);
    }
  EXPECT_EQ(out[0].shape, (Shape{3, 4}));
}

TEST(MpcArith, MultiplyWithinOneUlpAndCostsOneReshare) {
  const int64_t n = 1000;
  std::vector<double> xv = onGrid(uniformValues(n, -30, 30, 11));
  std::vector<double> yv = onGrid(uniformValues(n, -30, 30, 12));
  xv[0] = 0;
  yv[1] = -1;
  xv[2] = -ulp();
  std::vector<double> kv(n);
  for (int64_t i = 0; i < n; ++i)
    kv[i] = double(int64_t(i % 17) - 8);
  std::vector<OpStatsTable> stats;
  auto out = runAndReveal(
      [&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
        PlainTensor xt{{n}, xv}, yt{{n}, yv}, kt{{n}, kv};
        MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {n}));
        MPC_TRY(y, e.input(1, e.party() == 1 ? &yt : nullptr, {n}));
        MPC_TRY(k, e.input(2, e.party() == 2 ? &kt : nullptr, {n},
                           EncodingKind::Integer));
        MPC_TRY(xy, e.mul(x, y));
        if (auto err = revealInto(e, xy, r))
          return err;
        MPC_TRY(xk, e.mul(x, k)); // fixed x integer: no truncation
        if (auto err = revealInto(e, xk, r))
          return err;
        MPC_TRY(kk, e.mul(k, k));
        return revealInto(e, kk, r);
      },
      testOptions(), &stats);
  ASSERT_EQ(out.size(), 3u);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(out[0].values[i] - xv[i] * yv[i]));
    EXPECT_EQ(out[1].values[i], xv[i] * kv[i]);
    EXPECT_EQ(out[2].values[i], kv[i] * kv[i]);
  }
  EXPECT_LE(worst, ulp() * 1.0001);
  EXPECT_EQ(out[2].shape, (Shape{n}));
  // ABY3's model: one reshare of 64 bits per element and party; the fixed
  // product adds one round for the fused truncation, not one byte.
  for (int p = 0; p < 3; ++p) {
    const OpStats &mul = stats[p].at("mul");
    EXPECT_EQ(mul.calls, 3u);
    EXPECT_EQ(mul.rounds, 2u + 1u + 1u);
    EXPECT_EQ(mul.bytesSent, 3u * 8u * n) << "party " << p;
  }
}

TEST(MpcArith, MatmulShapesAndBytesPerOutput) {
  struct Case {
    Shape a, b, out;
  };
  std::vector<Case> cases = {
      {{4, 5}, {5, 3}, {4, 3}},
      {{1, 7}, {7, 9}, {1, 9}},
      {{8, 8}, {8, 1}, {8, 1}},
      {{3}, {3, 4}, {4}},
      {{4, 3}, {3}, {4}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{1, 3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{33, 70}, {70, 17}, {33, 17}},
  };
  std::vector<std::vector<double>> as, bs;
  for (size_t c = 0; c < cases.size(); ++c) {
    as.push_back(
        onGrid(uniformValues(numElements(cases[c].a), -4, 4, 100 + c)));
    bs.push_back(
        onGrid(uniformValues(numElements(cases[c].b), -4, 4, 200 + c)));
  }
  auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
    for (size_t c = 0; c < cases.size(); ++c) {
      PlainTensor at{cases[c].a, as[c]}, bt{cases[c].b, bs[c]};
      MPC_TRY(a, e.input(0, e.party() == 0 ? &at : nullptr, cases[c].a));
      MPC_TRY(b, e.input(1, e.party() == 1 ? &bt : nullptr, cases[c].b));
      MPC_TRY(p, e.matmul(a, b));
      if (auto err = revealInto(e, p, r))
        return err;
    }
    return llvm::Error::success();
  });
  ASSERT_EQ(out.size(), cases.size());
  for (size_t c = 0; c < cases.size(); ++c) {
    EXPECT_EQ(out[c].shape, cases[c].out) << "case " << c;
    // Reference: broadcast the batch by hand.
    Shape a = cases[c].a, b = cases[c].b;
    if (a.size() == 1)
      a.insert(a.begin(), 1);
    if (b.size() == 1)
      b.push_back(1);
    int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
    int64_t batches = numElements(cases[c].out) / (m * n);
    int64_t aBatches = numElements(a) / (m * k),
            bBatches = numElements(b) / (k * n);
    std::vector<double> expected;
    for (int64_t t = 0; t < batches; ++t) {
      std::vector<double> at(as[c].begin() + (t % aBatches) * m * k,
                             as[c].begin() + (t % aBatches + 1) * m * k);
      std::vector<double> bt(bs[c].begin() + (t % bBatches) * k * n,
                             bs[c].begin() + (t % bBatches + 1) * k * n);
      auto part = plainMatmul(at, bt, m, k, n);
      expected.insert(expected.end(), part.begin(), part.end());
    }
    EXPECT_LE(maxAbsError(out[c].values, expected), ulp() * 1.001)
        << "case " << c;
  }
}

TEST(MpcArith, MatmulBytesDoNotDependOnInnerDimension) {
  for (int64_t k : {5, 64}) {
    const int64_t m = 6, n = 7;
    std::vector<OpStatsTable> stats;
    std::vector<double> av = onGrid(uniformValues(m * k, -1, 1, 5));
    std::vector<double> bv = onGrid(uniformValues(k * n, -1, 1, 6));
    runAndReveal(
        [&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
          PlainTensor at{{m, k}, av}, bt{{k, n}, bv};
          MPC_TRY(a, e.input(0, e.party() == 0 ? &at : nullptr, {m, k}));
          MPC_TRY(b, e.input(1, e.party() == 1 ? &bt : nullptr, {k, n}));
          MPC_TRY(p, e.matmul(a, b));
          return revealInto(e, p, r);
        },
        testOptions(), &stats);
    ASSERT_EQ(stats.size(), 3u);
    for (int p = 0; p < 3; ++p) {
      EXPECT_EQ(stats[p].at("matmul").rounds, 2u);
      EXPECT_EQ(stats[p].at("matmul").bytesSent, uint64_t(8 * m * n))
          << "k " << k;
      // input: the owner sends the third share to both neighbours.
      uint64_t inputBytes =
          (p == 0 ? 16 * m * k : 0) + (p == 1 ? 16 * k * n : 0);
      EXPECT_EQ(stats[p].at("input").bytesSent, inputBytes);
      EXPECT_EQ(stats[p].at("reveal").bytesSent, uint64_t(8 * m * n));
      EXPECT_EQ(stats[p].at("reveal").rounds, 1u);
    }
  }
}

TEST(MpcArith, TruncationAndPublicProducts) {
  const int64_t n = 500;
  std::vector<double> xv = onGrid(uniformValues(n, -100, 100, 21));
  std::vector<double> cv = uniformValues(n, -3, 3, 22);
  std::vector<OpStatsTable> stats;
  auto out = runAndReveal(
      [&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
        PlainTensor xt{{n}, xv};
        MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {n}));
        MPC_TRY(xc, e.mulPublic(x, PlainTensor{{n}, cv}));
        MPC_TRY(half, e.mulScalar(x, 0.5));
        MPC_TRY(three, e.mulScalar(x, 3.0)); // integral: exact and local
        MPC_TRY(t, e.truncate(x, 4));
        for (const SharedTensor *s : {&xc, &half, &three, &t})
          if (auto err = revealInto(e, *s, r))
            return err;
        return llvm::Error::success();
      },
      testOptions(), &stats);
  ASSERT_EQ(out.size(), 4u);
  std::vector<double> cg = onGrid(cv);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_LE(std::fabs(out[0].values[i] - xv[i] * cg[i]), ulp() * 1.001);
    EXPECT_LE(std::fabs(out[1].values[i] - xv[i] * 0.5), ulp());
    EXPECT_EQ(out[2].values[i], xv[i] * 3.0);
    // Truncating the ring element by 4 bits divides the value by 16.
    EXPECT_LE(std::fabs(out[3].values[i] - xv[i] / 16), ulp());
  }
  // Truncation: 1 round; P0 and P2 send one ring element per value, P1 none.
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(stats[p].at("truncate").rounds, 1u);
    EXPECT_EQ(stats[p].at("truncate").bytesSent, p == 1 ? 0u : uint64_t(8 * n));
    EXPECT_EQ(stats[p].at("mul_public").rounds,
              2u); // two real factors; 3.0 is local
  }
}

TEST(MpcArith, BadShapesAreErrorsNotCrashes) {
  llvm::Error err =
      runThreeParties(testOptions(), [](Rep3Engine &e) -> llvm::Error {
        MPC_TRY(a,
                e.constant(PlainTensor{{2, 3}, std::vector<double>(6, 1.0)}));
        MPC_TRY(b,
                e.constant(PlainTensor{{4, 5}, std::vector<double>(20, 1.0)}));
        auto p = e.matmul(a, b);
        if (p)
          return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                         "matmul accepted");
        return p.takeError();
      });
  std::string msg = llvm::toString(std::move(err));
  EXPECT_NE(
      msg.find(
          "matmul contraction mismatch: lhs has 3 columns, rhs has 4 rows"),
      std::string::npos)
      << msg;
  llvm::Error err2 =
      runThreeParties(testOptions(), [](Rep3Engine &e) -> llvm::Error {
        MPC_TRY(a,
                e.constant(PlainTensor{{2, 3}, std::vector<double>(6, 1.0)}));
        MPC_TRY(b, e.constant(PlainTensor{{2}, std::vector<double>(2, 1.0)}));
        return e.add(a, b).takeError();
      });
  msg = llvm::toString(std::move(err2));
  EXPECT_NE(msg.find("shapes [2, 3] and [2] are not broadcastable"),
            std::string::npos)
      << msg;
}

TEST(MpcArith, OwnerWithWrongInputEndsTheRunPromptly) {
  auto start = std::chrono::steady_clock::now();
  llvm::Error err = runThreeParties(
      testOptions(),
      [](Rep3Engine &e) -> llvm::Error {
        PlainTensor wrong{{3}, {1, 2, 3}};
        MPC_TRY(x, e.input(1, e.party() == 1 ? &wrong : nullptr, {4}));
        return e.reveal(x).takeError();
      },
      nullptr, std::chrono::seconds(20));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("party 1: party 1 owns an input of shape [4]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("left the computation"), std::string::npos) << msg;
  EXPECT_LT(seconds, 5.0); // the others do not wait for their 20 s timeout
}
