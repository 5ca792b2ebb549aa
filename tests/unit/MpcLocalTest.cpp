// The local pieces of the mpc device: the 64-bit integer GEMM (both
// kernels, edge sizes, threads) against the textbook loop, the PRG, the
// in-process channel's checks, and the shape operations on secret tensors
// against index arithmetic done by hand.
#include "MpcTestUtil.h"

#include "backend/mpc/Channel.h"
#include "backend/mpc/Gemm.h"
#include "backend/mpc/Prg.h"

#include <thread>

using namespace mdl::backend::mpc;
using namespace mdl::backend::mpc::test;

namespace {

std::vector<Ring> randomRing(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Ring> v(n);
  for (Ring &x : v)
    x = gen();
  return v;
}

} // namespace

TEST(MpcGemm, MatchesNaiveOnEdgeShapesKernelsAndThreads) {
  struct Case {
    int64_t m, n, k;
  };
  std::vector<Case> cases = {
      {1, 1, 1},    {1, 17, 5},    {9, 1, 3},      {8, 16, 1},   {7, 15, 33},
      {8, 16, 512}, {65, 33, 513}, {130, 200, 70}, {3, 1030, 9}, {200, 3, 600}};
  std::vector<GemmKernelKind> kinds = {GemmKernelKind::Generic};
  if (gemmHasAvx512())
    kinds.push_back(GemmKernelKind::Avx512);
  for (const Case &c : cases)
    for (GemmKernelKind kind : kinds)
      for (int threads : {1, 2}) {
        // Leading dimensions larger than the matrices, and C accumulated.
        int64_t lda = c.k + 3, ldb = c.n + 1, ldc = c.n + 5;
        std::vector<Ring> a = randomRing(c.m * lda, 1),
                          b = randomRing(c.k * ldb, 2);
        std::vector<Ring> got = randomRing(c.m * ldc, 3), want = got;
        gemmAccumulate(c.m, c.n, c.k, a.data(), lda, b.data(), ldb, got.data(),
                       ldc, threads, kind);
        gemmNaive(c.m, c.n, c.k, a.data(), lda, b.data(), ldb, want.data(),
                  ldc);
        EXPECT_EQ(got, want) << c.m << "x" << c.k << "x" << c.n << " "
                             << gemmKernelName(kind) << " threads " << threads;
      }
  EXPECT_STREQ(gemmKernelName(GemmKernelKind::Generic), "generic");
}

TEST(MpcPrg, StreamsAreDeterministicPerKeyAndDiffer) {
  Prg a, b, c;
  ASSERT_FALSE(bool(a.init(testKey(1, 0))));
  ASSERT_FALSE(bool(b.init(testKey(1, 0))));
  ASSERT_FALSE(bool(c.init(testKey(1, 1))));
  std::vector<Ring> x(1000), y(600), y2(400), z(1000);
  a.fill(x.data(), x.size());
  b.fill(y.data(), y.size()); // the same stream, drawn in two pieces
  b.fill(y2.data(), y2.size());
  c.fill(z.data(), z.size());
  y.insert(y.end(), y2.begin(), y2.end());
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
  // Roughly half the bits set (a PRG that returns zeros would pass the rest).
  int ones = 0;
  for (Ring v : x)
    ones += __builtin_popcountll(v);
  EXPECT_NEAR(ones, 32000, 1000);
  auto k1 = randomKey(), k2 = randomKey();
  ASSERT_TRUE(k1 && k2);
  EXPECT_NE(*k1, *k2);
}

TEST(MpcChannel, SizeMismatchAndTimeoutAreErrors) {
  auto ch = makeLocalChannels(std::chrono::milliseconds(200));
  Ring out[2] = {1, 2}, in[3];
  std::thread sender(
      [&] { llvm::consumeError(ch[0]->send(Peer::Next, out, sizeof out)); });
  sender.join();
  llvm::Error err = ch[1]->recv(Peer::Prev, in, sizeof in);
  std::string msg = llvm::toString(std::move(err));
  EXPECT_NE(
      msg.find("protocol out of step: expected 24 bytes from party 0, got 16"),
      std::string::npos)
      << msg;
  auto start = std::chrono::steady_clock::now();
  err = ch[2]->recv(Peer::Next, in, sizeof in);
  msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("party 2: timed out after 200 ms waiting for party 0"),
            std::string::npos)
      << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(ch[0]->stats().bytesSent, 16u);
  EXPECT_EQ(ch[0]->stats().rounds, 1u);
}

TEST(MpcShape, MovementOperationsMatchIndexArithmetic) {
  // x[i, j, k] = 100 i + 10 j + k on a [2, 3, 4] tensor (exact in fixed point).
  std::vector<double> xv(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        xv[i * 12 + j * 4 + k] = 100 * i + 10 * j + k;
  auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
    PlainTensor xt{{2, 3, 4}, xv};
    MPC_TRY(x, e.input(1, e.party() == 1 ? &xt : nullptr, {2, 3, 4}));
    MPC_TRY(t, e.transpose(x, {2, 0, 1}));
    MPC_TRY(s, e.slice(x, {1, 0, 1}, {2, 3, 99}, {1, 2, 2}));
    MPC_TRY(re, e.reshape(x, {4, -1}));
    MPC_TRY(c, e.concat({&x, &x}, 1));
    MPC_TRY(g, e.gather(x, {2, 0, -1, 2}, {2, 2}, 1));
    MPC_TRY(row, e.slice(x, {0, 0, 0}, {1, 1, 4}, {1, 1, 1}));
    MPC_TRY(b, e.broadcastTo(row, {2, 2, 3, 4}));
    for (const SharedTensor *v : {&t, &s, &re, &c, &g, &b})
      if (auto err = revealInto(e, *v, r))
        return err;
    // Bad arguments are errors.
    auto refused = [](llvm::Expected<SharedTensor> bad) {
      if (bad)
        return false;
      llvm::consumeError(bad.takeError());
      return true;
    };
    if (!refused(e.transpose(x, {0, 0, 1})) ||
        !refused(e.slice(x, {0, 0, 0}, {1, 1, 1}, {1, 0, 1})) ||
        !refused(e.reshape(x, {5, -1})) || !refused(e.gather(x, {3}, {1}, 1)) ||
        !refused(e.broadcastTo(x, {3, 4})))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "bad argument accepted");
    return llvm::Error::success();
  });
  ASSERT_EQ(out.size(), 6u);
  auto X = [&](int i, int j, int k) { return xv[i * 12 + j * 4 + k]; };
  EXPECT_EQ(out[0].shape, (Shape{4, 2, 3}));
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_EQ(out[0].values[k * 6 + i * 3 + j], X(i, j, k));
  EXPECT_EQ(out[1].shape, (Shape{1, 2, 2}));
  EXPECT_EQ(out[1].values, (std::vector<double>{X(1, 0, 1), X(1, 0, 3),
                                                X(1, 2, 1), X(1, 2, 3)}));
  EXPECT_EQ(out[2].shape, (Shape{4, 6}));
  EXPECT_EQ(out[2].values, xv);
  EXPECT_EQ(out[3].shape, (Shape{2, 6, 4}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(out[3].values[i * 24 + j * 4 + k], X(i, j % 3, k));
  EXPECT_EQ(out[4].shape, (Shape{2, 2, 2, 4}));
  const int picks[4] = {2, 0, 2, 2}; // -1 is the last row
  for (int i = 0; i < 2; ++i)
    for (int p = 0; p < 4; ++p)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(out[4].values[i * 16 + p * 4 + k], X(i, picks[p], k));
  EXPECT_EQ(out[5].shape, (Shape{2, 2, 3, 4}));
  for (size_t n = 0; n < out[5].values.size(); ++n)
    EXPECT_EQ(out[5].values[n], X(0, 0, int(n % 4)));
}
