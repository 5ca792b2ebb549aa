// Comparisons through MSB extraction and what is built on them (select,
// relu, abs, max/min, clip, reductions, argmax) against plaintext; these
// involve no truncation, so results must be exact. Costs are checked
// against Rep3Compare.cpp's account.
#include "MpcTestUtil.h"

using namespace mdl::backend::mpc;
using namespace mdl::backend::mpc::test;

namespace {

// Random values with deliberate ties, zeros, one-ulp gaps and large
// magnitudes.
std::vector<double> trickyValues(size_t n, uint64_t seed) {
  std::vector<double> v = onGrid(uniformValues(n, -1000, 1000, seed));
  std::vector<double> special = {0.0,   ulp(), -ulp(), 1e10,
                                 -1e10, 17.0,  17.0,   -3.5};
  for (size_t i = 0; i < special.size() && i < n; ++i)
    v[i] = special[i];
  return v;
}

} // namespace

TEST(MpcCompare, AllOperatorsMatchPlaintext) {
  const int64_t n = 400;
  std::vector<double> xv = trickyValues(n, 31), yv = trickyValues(n, 32);
  // Pairs that are equal or one ulp apart.
  for (int i = 10; i < 60; ++i)
    yv[i] = xv[i] + (i % 3 - 1) * ulp();
  std::vector<OpStatsTable> stats;
  auto out = runAndReveal(
      [&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
        PlainTensor xt{{n}, xv}, yt{{n}, yv};
        MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {n}));
        MPC_TRY(y, e.input(1, e.party() == 1 ? &yt : nullptr, {n}));
        for (CompareKind k :
             {CompareKind::Lt, CompareKind::Le, CompareKind::Gt,
              CompareKind::Ge, CompareKind::Eq, CompareKind::Ne}) {
          MPC_TRY(b, e.compare(k, x, y));
          if (auto err = revealInto(e, b, r))
            return err;
        }
        MPC_TRY(pub,
                e.comparePublic(CompareKind::Gt, x, PlainTensor{{}, {17.0}}));
        if (auto err = revealInto(e, pub, r))
          return err;
        MPC_TRY(m, e.msb(x));
        return revealInto(e, m, r);
      },
      testOptions(), &stats);
  ASSERT_EQ(out.size(), 8u);
  for (int64_t i = 0; i < n; ++i) {
    double x = xv[i], y = yv[i];
    EXPECT_EQ(out[0].values[i], double(x < y)) << i;
    EXPECT_EQ(out[1].values[i], double(x <= y)) << i;
    EXPECT_EQ(out[2].values[i], double(x > y)) << i;
    EXPECT_EQ(out[3].values[i], double(x >= y)) << i;
    EXPECT_EQ(out[4].values[i], double(x == y)) << i;
    EXPECT_EQ(out[5].values[i], double(x != y)) << i;
    EXPECT_EQ(out[6].values[i], double(x > 17.0)) << i;
    EXPECT_EQ(out[7].values[i], double(x < 0)) << i;
  }
  // MSB extraction: carry-save (1) + generate (1) + Kogge-Stone (6) + bit
  // injection (1) rounds; 13 AND words plus the injection's OT messages.
  for (int p = 0; p < 3; ++p) {
    const OpStats &msb = stats[p].at("msb");
    EXPECT_EQ(msb.rounds, 9u);
    EXPECT_EQ(msb.bytesSent, uint64_t(n) * (p == 2 ? 104 + 32 : 104 + 8))
        << "party " << p;
    EXPECT_EQ(stats[p].at("lt").rounds, 9u);
    EXPECT_EQ(stats[p].at("eq").rounds, 9u);
    EXPECT_EQ(stats[p].at("eq").bytesSent, 2 * msb.bytesSent);
  }
}

TEST(MpcCompare, SelectReluAbsMaxMinClipAreExact) {
  const int64_t n = 300;
  std::vector<double> xv = trickyValues(n, 41), yv = trickyValues(n, 42);
  std::vector<OpStatsTable> stats;
  auto out = runAndReveal(
      [&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
        PlainTensor xt{{n}, xv}, yt{{n}, yv};
        MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {n}));
        MPC_TRY(y, e.input(2, e.party() == 2 ? &yt : nullptr, {n}));
        MPC_TRY(c, e.compare(CompareKind::Lt, x, y));
        MPC_TRY(sel, e.select(c, x, y));
        MPC_TRY(relu, e.relu(x));
        MPC_TRY(abs, e.abs(x));
        MPC_TRY(mx, e.max(x, y));
        MPC_TRY(mn, e.min(x, y));
        MPC_TRY(cl, e.clip(x, -100.0, 250.5));
        for (const SharedTensor *t : {&sel, &relu, &abs, &mx, &mn, &cl})
          if (auto err = revealInto(e, *t, r))
            return err;
        return llvm::Error::success();
      },
      testOptions(), &stats);
  ASSERT_EQ(out.size(), 6u);
  for (int64_t i = 0; i < n; ++i) {
    double x = xv[i], y = yv[i];
    EXPECT_EQ(out[0].values[i], x < y ? x : y);
    EXPECT_EQ(out[1].values[i], std::max(x, 0.0));
    EXPECT_EQ(out[2].values[i], std::fabs(x));
    EXPECT_EQ(out[3].values[i], std::max(x, y));
    EXPECT_EQ(out[4].values[i], std::min(x, y));
    EXPECT_EQ(out[5].values[i], std::min(std::max(x, -100.0), 250.5));
  }
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(stats[p].at("select").rounds, 1u);
    EXPECT_EQ(stats[p].at("select").bytesSent, uint64_t(8 * n));
    EXPECT_EQ(stats[p].at("relu").rounds, 10u);
    EXPECT_EQ(stats[p].at("max").rounds, 10u);
    EXPECT_EQ(stats[p].at("clip").rounds, 10u);
  }
}

TEST(MpcCompare, SelectBroadcastsAndNeedsBits) {
  auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
    PlainTensor ct{{3, 1}, {1, 0, 1}};
    MPC_TRY(c, e.input(1, e.party() == 1 ? &ct : nullptr, {3, 1},
                       EncodingKind::Integer));
    MPC_TRY(a, e.constant(PlainTensor{{2}, {1.5, -2.0}}));
    MPC_TRY(b, e.constant(PlainTensor{{}, {7.0}}));
    MPC_TRY(s, e.select(c, a, b));
    if (auto err = revealInto(e, s, r))
      return err;
    auto bad = e.select(a, a, b); // a fixed-point condition is refused
    if (bad)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "select accepted reals");
    llvm::consumeError(bad.takeError());
    return llvm::Error::success();
  });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Shape{3, 2}));
  EXPECT_EQ(out[0].values,
            (std::vector<double>{1.5, -2.0, 7.0, 7.0, 1.5, -2.0}));
}

TEST(MpcCompare, ReductionsAndArgmaxAlongAxes) {
  // [5, 7] with ties inside rows and columns so first-occurrence matters.
  const int64_t rows = 5, cols = 7;
  std::vector<double> v = onGrid(uniformValues(rows * cols, -10, 10, 51));
  v[0 * cols + 2] = 50;
  v[0 * cols + 5] = 50; // row 0: max 50 twice, first at 2
  v[3 * cols + 1] = -50;
  v[3 * cols + 6] = -50; // row 3: min -50 twice, first at 1
  v[1 * cols + 4] = 50;  // column 4 max 50 at rows 1 (first)
  v[4 * cols + 4] = 50;
  std::vector<OpStatsTable> stats;
  auto out = runAndReveal(
      [&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
        PlainTensor xt{{rows, cols}, v};
        MPC_TRY(x, e.input(2, e.party() == 2 ? &xt : nullptr, {rows, cols}));
        MPC_TRY(mx1, e.reduceMax(x, 1, false));
        MPC_TRY(mn1, e.reduceMin(x, -1, true));
        MPC_TRY(mx0, e.reduceMax(x, 0, false));
        MPC_TRY(am1, e.argmax(x, 1, false));
        MPC_TRY(an1, e.argmin(x, 1, false));
        MPC_TRY(am0, e.argmax(x, 0, true));
        for (const SharedTensor *t : {&mx1, &mn1, &mx0, &am1, &an1, &am0})
          if (auto err = revealInto(e, *t, r))
            return err;
        return llvm::Error::success();
      },
      testOptions(), &stats);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].shape, (Shape{rows}));
  EXPECT_EQ(out[1].shape, (Shape{rows, 1}));
  EXPECT_EQ(out[2].shape, (Shape{cols}));
  EXPECT_EQ(out[5].shape, (Shape{1, cols}));
  for (int64_t i = 0; i < rows; ++i) {
    auto row = v.begin() + i * cols;
    auto mx = std::max_element(row, row + cols),
         mn = std::min_element(row, row + cols);
    EXPECT_EQ(out[0].values[i], *mx);
    EXPECT_EQ(out[1].values[i], *mn);
    EXPECT_EQ(out[3].values[i], double(mx - row))
        << "row " << i; // first maximum
    EXPECT_EQ(out[4].values[i], double(mn - row)) << "row " << i;
  }
  for (int64_t j = 0; j < cols; ++j) {
    double best = v[j];
    int64_t at = 0;
    for (int64_t i = 1; i < rows; ++i)
      if (v[i * cols + j] > best) {
        best = v[i * cols + j];
        at = i;
      }
    EXPECT_EQ(out[2].values[j], best);
    EXPECT_EQ(out[5].values[j], double(at));
  }
  EXPECT_EQ(out[3].values[0], 2.0);
  EXPECT_EQ(out[4].values[3], 1.0);
  EXPECT_EQ(out[5].values[4], 1.0);
  // ceil(log2 7) = ceil(log2 5) = 3 levels of 10 rounds (comparison +
  // selection), once along axis 1 and once along axis 0.
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(stats[p].at("reduce_max").rounds, 2u * 3 * 10) << p;
    EXPECT_EQ(stats[p].at("argmax").rounds, 2u * 3 * 10) << p;
    EXPECT_EQ(stats[p].at("reduce_min").rounds, 3u * 10) << p;
  }
}
