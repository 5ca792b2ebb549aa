// Each nonlinear approximation against double precision over the input
// ranges of docs/mpc.md, held within the bound documented there:
// |mpc(x) - f(x)| <= rel * |f(x)| + abs at every point of a dense grid
// (inputs on the fixed-point grid). The measured figures come from
// `mpc_report errors`; the bounds leave a margin of about two.
#include "MpcTestUtil.h"

using namespace mdl::backend::mpc;
using namespace mdl::backend::mpc::test;

namespace {

using UnaryOp = std::function<llvm::Expected<SharedTensor>(
    Rep3Engine &, const SharedTensor &)>;

struct Bound {
  double rel;
  double abs;
};

std::vector<double> grid(double lo, double hi, size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = lo + (hi - lo) * double(i) / double(n - 1);
  return onGrid(v);
}

std::vector<double> runUnary(const UnaryOp &op, const std::vector<double> &xs,
                             Shape shape = {}) {
  if (shape.empty())
    shape = {int64_t(xs.size())};
  auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
    PlainTensor t{shape, xs};
    MPC_TRY(x, e.input(1, e.party() == 1 ? &t : nullptr, shape));
    MPC_TRY(y, op(e, x));
    return revealInto(e, y, r);
  });
  return out.empty() ? std::vector<double>() : out[0].values;
}

void expectWithin(const char *name, const UnaryOp &op,
                  const std::function<double(double)> &ref,
                  const std::vector<double> &xs, Bound bound) {
  std::vector<double> got = runUnary(op, xs);
  ASSERT_EQ(got.size(), xs.size()) << name;
  int bad = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = ref(xs[i]);
    double allowed = bound.rel * std::fabs(want) + bound.abs;
    if (!(std::fabs(got[i] - want) <= allowed) && ++bad <= 5)
      ADD_FAILURE() << name << "(" << xs[i] << ") = " << got[i] << ", expected "
                    << want << " within " << allowed;
  }
  EXPECT_EQ(bad, 0) << name;
}

double geluExact(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double geluTanh(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

} // namespace

TEST(MpcNonlinear, Exp) {
  auto op = [](Rep3Engine &e, const SharedTensor &x) { return e.exp(x); };
  auto ref = [](double x) { return std::exp(x); };
  expectWithin("exp", op, ref, grid(-16, 0, 2001), {2.5e-4, 1e-5});
  expectWithin("exp", op, ref, grid(0, 10, 1001), {2.5e-4, 1e-5});
  // Outside [-16, 10] the input is clipped.
  std::vector<double> out = runUnary(op, {-100.0, 12.0, 50.0});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_LE(std::fabs(out[0]), 4 * ulp());
  EXPECT_NEAR(out[1], std::exp(approx::kExpMax),
              2.5e-4 * std::exp(approx::kExpMax));
  EXPECT_NEAR(out[2], std::exp(approx::kExpMax),
              2.5e-4 * std::exp(approx::kExpMax));
}

TEST(MpcNonlinear, ReciprocalAndDivision) {
  auto op = [](Rep3Engine &e, const SharedTensor &x) {
    return e.reciprocal(x);
  };
  auto ref = [](double x) { return 1 / x; };
  expectWithin("reciprocal", op, ref, grid(0.01, 1, 1001), {2e-5, 1e-5});
  expectWithin("reciprocal", op, ref, grid(1, 1000, 1001), {2e-5, 1e-5});
  expectWithin("reciprocal", op, ref, grid(1000, 1e6, 1001), {2e-5, 1e-5});
  expectWithin("reciprocal", op, ref, grid(-100, -0.01, 1001), {2e-5, 1e-5});
  auto div = [](Rep3Engine &e,
                const SharedTensor &y) -> llvm::Expected<SharedTensor> {
    MPC_TRY(x, e.constant(PlainTensor{{}, {-7.5}}));
    return e.div(x, y);
  };
  expectWithin("div", div, [](double y) { return -7.5 / y; },
               grid(0.1, 100, 1001), {2e-5, 2e-5});
  // Below the domain (|x| < 2^-18) the result is 0, not garbage.
  std::vector<double> zero = runUnary(op, {0.0});
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero[0], 0.0);
}

TEST(MpcNonlinear, RsqrtAndSqrt) {
  auto op = [](Rep3Engine &e, const SharedTensor &x) { return e.rsqrt(x); };
  auto ref = [](double x) { return 1 / std::sqrt(x); };
  expectWithin("rsqrt", op, ref, grid(0.001, 1, 1001), {2e-5, 1e-5});
  expectWithin("rsqrt", op, ref, grid(1, 1e4, 1001), {2e-5, 1e-5});
  expectWithin("rsqrt", op, ref, grid(1e4, 1e6, 1001), {2e-5, 1e-5});
  expectWithin(
      "sqrt", [](Rep3Engine &e, const SharedTensor &x) { return e.sqrt(x); },
      [](double x) { return std::sqrt(x); }, grid(0.01, 1e4, 1001),
      {3e-5, 1e-5});
}

TEST(MpcNonlinear, SigmoidTanhGelu) {
  expectWithin(
      "sigmoid",
      [](Rep3Engine &e, const SharedTensor &x) { return e.sigmoid(x); },
      [](double x) { return 1 / (1 + std::exp(-x)); }, grid(-20, 20, 2001),
      {0, 1e-4});
  expectWithin(
      "tanh", [](Rep3Engine &e, const SharedTensor &x) { return e.tanh(x); },
      [](double x) { return std::tanh(x); }, grid(-10, 10, 2001), {0, 2e-4});
  expectWithin(
      "gelu",
      [](Rep3Engine &e, const SharedTensor &x) { return e.gelu(x, false); },
      geluExact, grid(-10, 10, 2001), {0, 1.5e-4});
  expectWithin(
      "gelu tanh form",
      [](Rep3Engine &e, const SharedTensor &x) { return e.gelu(x, true); },
      geluTanh, grid(-10, 10, 2001), {0, 1e-4});
}

TEST(MpcNonlinear, SoftmaxAndLayerNormRows) {
  for (int64_t cols : {1, 5, 16, 128}) {
    const int64_t rows = 8;
    std::mt19937_64 gen(cols);
    std::normal_distribution<double> dist(0.0, 3.0);
    std::vector<double> xs(rows * cols);
    for (double &x : xs)
      x = dist(gen);
    xs = onGrid(xs);
    std::vector<double> gamma = onGrid(uniformValues(cols, 0.5, 2, 3));
    std::vector<double> beta = onGrid(uniformValues(cols, -1, 1, 4));
    auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
      PlainTensor t{{rows, cols}, xs}, bt{{cols}, beta};
      MPC_TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {rows, cols}));
      MPC_TRY(g, e.constant(PlainTensor{{cols}, gamma}));
      MPC_TRY(b, e.input(2, e.party() == 2 ? &bt : nullptr, {cols}));
      MPC_TRY(sm, e.softmax(x, 1));
      MPC_TRY(ln, e.layerNorm(x, &g, &b, 1e-5, -1));
      MPC_TRY(sm0, e.softmax(x, 0)); // along the other axis
      for (const SharedTensor *s : {&sm, &ln, &sm0})
        if (auto err = revealInto(e, *s, r))
          return err;
      return llvm::Error::success();
    });
    ASSERT_EQ(out.size(), 3u);
    for (int64_t i = 0; i < rows; ++i) {
      const double *row = xs.data() + i * cols;
      double mx = *std::max_element(row, row + cols), sum = 0, mean = 0,
             var = 0;
      for (int64_t j = 0; j < cols; ++j) {
        sum += std::exp(row[j] - mx);
        mean += row[j] / cols;
      }
      for (int64_t j = 0; j < cols; ++j)
        var += (row[j] - mean) * (row[j] - mean) / cols;
      for (int64_t j = 0; j < cols; ++j) {
        EXPECT_NEAR(out[0].values[i * cols + j], std::exp(row[j] - mx) / sum,
                    1e-4)
            << "softmax row " << i << " of " << cols;
        double ln =
            (row[j] - mean) / std::sqrt(var + 1e-5) * gamma[j] + beta[j];
        EXPECT_NEAR(out[1].values[i * cols + j], ln, 1e-4 * (1 + std::fabs(ln)))
            << "layernorm row " << i << " of " << cols;
      }
    }
    for (int64_t j = 0; j < cols; ++j) {
      double mx = -1e300, sum = 0;
      for (int64_t i = 0; i < rows; ++i)
        mx = std::max(mx, xs[i * cols + j]);
      for (int64_t i = 0; i < rows; ++i)
        sum += std::exp(xs[i * cols + j] - mx);
      for (int64_t i = 0; i < rows; ++i)
        EXPECT_NEAR(out[2].values[i * cols + j],
                    std::exp(xs[i * cols + j] - mx) / sum, 1e-4);
    }
  }
}

TEST(MpcNonlinear, SumAndMean) {
  std::vector<double> xs = onGrid(uniformValues(24, -10, 10, 9));
  auto out = runAndReveal([&](Rep3Engine &e, PartyResults &r) -> llvm::Error {
    PlainTensor t{{2, 3, 4}, xs};
    MPC_TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {2, 3, 4}));
    MPC_TRY(s, e.sum(x, {1}, false));
    MPC_TRY(m, e.mean(x, {0, 2}, true));
    MPC_TRY(all, e.mean(x, {}, false));
    for (const SharedTensor *v : {&s, &m, &all})
      if (auto err = revealInto(e, *v, r))
        return err;
    return llvm::Error::success();
  });
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape, (Shape{2, 4}));
  EXPECT_EQ(out[1].shape, (Shape{1, 3, 1}));
  EXPECT_EQ(out[2].shape, Shape{});
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double s = 0;
      for (int j = 0; j < 3; ++j)
        s += xs[i * 12 + j * 4 + k];
      EXPECT_EQ(out[0].values[i * 4 + k], s); // sums are exact
    }
  double total = 0;
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k)
        s += xs[i * 12 + j * 4 + k];
    total += s;
    EXPECT_NEAR(out[1].values[j], s / 8, ulp());
  }
  EXPECT_NEAR(out[2].values[0], total / 24, ulp());
}
