// Helpers shared by the mpc unit tests: running the three parties with a
// test seed, collecting what they reveal, plaintext references.
#pragma once

#include "backend/mpc/Parties.h"
#include "backend/mpc/Rep3Engine.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

namespace mdl::backend::mpc::test {

/// Unwraps an llvm::Expected inside a party body, returning its error.
#define MPC_TRY(var, expr)                                                     \
  auto var##OrErr = (expr);                                                    \
  if (!var##OrErr)                                                             \
    return var##OrErr.takeError();                                             \
  auto &var = *var##OrErr;

/// What each party revealed, in order.
using PartyResults = std::array<std::vector<PlainTensor>, 3>;

inline Rep3Options testOptions(uint64_t seed = 1) {
  Rep3Options o;
  o.testSeed = seed;
  return o;
}

/// Reveals x and records it under the revealing party.
inline llvm::Error revealInto(Rep3Engine &e, const SharedTensor &x,
                              PartyResults &results) {
  auto t = e.reveal(x);
  if (!t)
    return t.takeError();
  results[e.party()].push_back(std::move(*t));
  return llvm::Error::success();
}

/// Runs `fn` on three threads and fails the test on any error; checks that
/// the three parties revealed identical values and returns party 0's.
inline std::vector<PlainTensor>
runAndReveal(const std::function<llvm::Error(Rep3Engine &, PartyResults &)> &fn,
             Rep3Options options = testOptions(),
             std::vector<OpStatsTable> *stats = nullptr) {
  PartyResults results;
  llvm::Error err = runThreeParties(
      options, [&](Rep3Engine &e) { return fn(e, results); }, stats);
  if (err) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return {};
  }
  for (int p = 1; p < 3; ++p) {
    EXPECT_EQ(results[p].size(), results[0].size());
    for (size_t i = 0; i < results[0].size() && i < results[p].size(); ++i) {
      EXPECT_EQ(results[p][i].shape, results[0][i].shape);
      EXPECT_EQ(results[p][i].values, results[0][i].values)
          << "party " << p << " output " << i;
    }
  }
  return results[0];
}

/// n uniform values in [lo, hi] from a fixed seed.
inline std::vector<double> uniformValues(size_t n, double lo, double hi,
                                         uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

/// `values` rounded to the fixed-point grid of f fractional bits.
inline std::vector<double> onGrid(std::vector<double> values,
                                  int f = kDefaultFracBits) {
  for (double &x : values)
    x = std::ldexp(std::nearbyint(std::ldexp(x, f)), -f);
  return values;
}

/// Largest |a[i] - b[i]|.
inline double maxAbsError(const std::vector<double> &a,
                          const std::vector<double> &b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return a.size() == b.size() ? m : INFINITY;
}

/// One unit in the last place of the default encoding.
inline double ulp(int f = kDefaultFracBits) { return std::ldexp(1.0, -f); }

} // namespace mdl::backend::mpc::test
