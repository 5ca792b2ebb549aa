// Measures the mpc device's protocol core and prints the tables of
// docs/mpc.md:
//   mpc_report errors   each approximation against double precision over
//                       stated input ranges (max absolute and relative error)
//   mpc_report costs    rounds and bytes sent per element and party of each
//                       operation, from the engine's own accounting
// Three parties run as threads with a fixed test seed, so the figures are
// reproducible.
#include "backend/mpc/Parties.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace mdl::backend::mpc;

namespace {

#define TRY(var, expr)                                                         \
  auto var##OrErr = (expr);                                                    \
  if (!var##OrErr)                                                             \
    return var##OrErr.takeError();                                             \
  auto &var = *var##OrErr;

using UnaryOp = std::function<llvm::Expected<SharedTensor>(
    Rep3Engine &, const SharedTensor &)>;

Rep3Options seeded() {
  Rep3Options o;
  o.testSeed = 2024;
  return o;
}

// Runs `op` on `inputs` (shape [n] or `shape`), returns what party 0 revealed.
std::vector<double> runUnary(const UnaryOp &op,
                             const std::vector<double> &inputs,
                             Shape shape = {}) {
  if (shape.empty())
    shape = {int64_t(inputs.size())};
  std::vector<double> out;
  llvm::Error err =
      runThreeParties(seeded(), [&](Rep3Engine &e) -> llvm::Error {
        PlainTensor t{shape, inputs};
        TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, shape));
        TRY(y, op(e, x));
        TRY(r, e.reveal(y));
        if (e.party() == 0)
          out = r.values;
        return llvm::Error::success();
      });
  if (err) {
    std::fprintf(stderr, "error: %s\n", llvm::toString(std::move(err)).c_str());
    std::exit(1);
  }
  return out;
}

std::vector<double> grid(double lo, double hi, size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = lo + (hi - lo) * double(i) / double(n - 1);
  return v;
}

// Inputs as the device sees them (rounded to the fixed-point grid), so the
// error measured is the protocol's, not the input encoding's.
std::vector<double> onGrid(std::vector<double> v) {
  for (double &x : v)
    x = std::ldexp(std::nearbyint(std::ldexp(x, kDefaultFracBits)),
                   -kDefaultFracBits);
  return v;
}

void errorRow(const char *name, const char *range, const UnaryOp &op,
              const std::function<double(double)> &ref,
              std::vector<double> xs) {
  xs = onGrid(std::move(xs));
  std::vector<double> got = runUnary(op, xs);
  double maxAbs = 0, maxRel = 0, atAbs = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = ref(xs[i]);
    double abs = std::fabs(got[i] - want);
    if (abs > maxAbs) {
      maxAbs = abs;
      atAbs = xs[i];
    }
    if (std::fabs(want) >= 0.01)
      maxRel = std::max(maxRel, abs / std::fabs(want));
  }
  std::printf("| %s | %s | %zu | %.2e | %.2e | %.4g |\n", name, range,
              xs.size(), maxAbs, maxRel, atAbs);
}

double geluExact(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double geluTanh(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

void rowwiseErrors(const char *name, const char *what, int64_t rows,
                   int64_t cols, double scale, bool layernorm) {
  std::mt19937_64 gen(7);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> xs(rows * cols);
  for (double &x : xs)
    x = dist(gen);
  xs = onGrid(xs);
  std::vector<double> got = runUnary(
      [&](Rep3Engine &e, const SharedTensor &x) {
        return layernorm ? e.layerNorm(x, nullptr, nullptr, 1e-5, -1)
                         : e.softmax(x, -1);
      },
      xs, {rows, cols});
  double maxAbs = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = xs.data() + r * cols;
    std::vector<double> want(cols);
    if (layernorm) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < cols; ++j)
        mean += row[j] / cols;
      for (int64_t j = 0; j < cols; ++j)
        var += (row[j] - mean) * (row[j] - mean) / cols;
      for (int64_t j = 0; j < cols; ++j)
        want[j] = (row[j] - mean) / std::sqrt(var + 1e-5);
    } else {
      double mx = *std::max_element(row, row + cols), sum = 0;
      for (int64_t j = 0; j < cols; ++j)
        sum += std::exp(row[j] - mx);
      for (int64_t j = 0; j < cols; ++j)
        want[j] = std::exp(row[j] - mx) / sum;
    }
    for (int64_t j = 0; j < cols; ++j)
      maxAbs = std::max(maxAbs, std::fabs(got[r * cols + j] - want[j]));
  }
  std::printf("| %s | %s | %lld | %.2e | - | - |\n", name, what,
              (long long)(rows * cols), maxAbs);
}

void errors() {
  std::printf("| function | inputs | points | max abs error | max rel error "
              "(|f| >= 0.01) | at x (abs) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  auto exp = [](Rep3Engine &e, const SharedTensor &x) { return e.exp(x); };
  errorRow(
      "exp", "[-16, 0]", exp, [](double x) { return std::exp(x); },
      grid(-16, 0, 4001));
  errorRow(
      "exp", "[0, 10]", exp, [](double x) { return std::exp(x); },
      grid(0, 10, 2001));
  auto recip = [](Rep3Engine &e, const SharedTensor &x) {
    return e.reciprocal(x);
  };
  auto inv = [](double x) { return 1 / x; };
  errorRow("reciprocal", "[0.01, 1]", recip, inv, grid(0.01, 1, 2001));
  errorRow("reciprocal", "[1, 1000]", recip, inv, grid(1, 1000, 2001));
  errorRow("reciprocal", "[1000, 1e6]", recip, inv, grid(1000, 1e6, 2001));
  errorRow("reciprocal", "[-100, -0.01]", recip, inv, grid(-100, -0.01, 2001));
  auto rs = [](Rep3Engine &e, const SharedTensor &x) { return e.rsqrt(x); };
  auto rsRef = [](double x) { return 1 / std::sqrt(x); };
  errorRow("rsqrt", "[0.001, 1]", rs, rsRef, grid(0.001, 1, 2001));
  errorRow("rsqrt", "[1, 1e4]", rs, rsRef, grid(1, 1e4, 2001));
  errorRow("rsqrt", "[1e4, 1e6]", rs, rsRef, grid(1e4, 1e6, 2001));
  errorRow(
      "sqrt", "[0.01, 1e4]",
      [](Rep3Engine &e, const SharedTensor &x) { return e.sqrt(x); },
      [](double x) { return std::sqrt(x); }, grid(0.01, 1e4, 2001));
  errorRow(
      "sigmoid", "[-20, 20]",
      [](Rep3Engine &e, const SharedTensor &x) { return e.sigmoid(x); },
      [](double x) { return 1 / (1 + std::exp(-x)); }, grid(-20, 20, 4001));
  errorRow(
      "tanh", "[-10, 10]",
      [](Rep3Engine &e, const SharedTensor &x) { return e.tanh(x); },
      [](double x) { return std::tanh(x); }, grid(-10, 10, 4001));
  errorRow(
      "gelu (erf form)", "[-10, 10]",
      [](Rep3Engine &e, const SharedTensor &x) { return e.gelu(x, false); },
      geluExact, grid(-10, 10, 4001));
  errorRow(
      "gelu (tanh form)", "[-10, 10]",
      [](Rep3Engine &e, const SharedTensor &x) { return e.gelu(x, true); },
      geluTanh, grid(-10, 10, 4001));
  // x / y for y in [0.1, 100] against a fixed numerator.
  errorRow(
      "div 7.5 / y", "y in [0.1, 100]",
      [](Rep3Engine &e, const SharedTensor &y) -> llvm::Expected<SharedTensor> {
        auto x = e.constant(PlainTensor{{}, {7.5}});
        if (!x)
          return x.takeError();
        return e.div(*x, y);
      },
      [](double y) { return 7.5 / y; }, grid(0.1, 100, 2001));
  rowwiseErrors("softmax", "rows of 16, N(0, 3)", 256, 16, 3.0, false);
  rowwiseErrors("softmax", "rows of 128, N(0, 3)", 32, 128, 3.0, false);
  rowwiseErrors("layernorm", "rows of 64, N(0, 1)", 64, 64, 1.0, true);
  rowwiseErrors("layernorm", "rows of 64, N(0, 30)", 64, 64, 30.0, true);
}

// Rounds and bytes of one call of `op` on n elements, per party; only the
// rows named in `only` count when it is not empty, else all but input,
// reveal and setup.
void costRow(const char *name, const char *per, int64_t n,
             const std::function<llvm::Error(Rep3Engine &, OpStatsTable &)> &op,
             double divisor, const std::vector<std::string> &only = {}) {
  std::vector<OpStatsTable> stats;
  std::vector<OpStatsTable> measured(3);
  llvm::Error err = runThreeParties(
      seeded(),
      [&](Rep3Engine &e) -> llvm::Error {
        OpStatsTable before = e.stats();
        if (auto err = op(e, measured[e.party()]))
          return err;
        // The op's own rows: everything recorded after `before`.
        OpStatsTable after = e.stats();
        OpStats total;
        for (auto &[k, s] : after) {
          OpStats b = before.count(k) ? before.at(k) : OpStats();
          bool wanted =
              only.empty()
                  ? !(k == "input" || k == "reveal" || k == "setup")
                  : std::find(only.begin(), only.end(), k) != only.end();
          if (!wanted)
            continue;
          total.rounds += s.rounds - b.rounds;
          total.bytesSent += s.bytesSent - b.bytesSent;
        }
        measured[e.party()]["op"] = total;
        return llvm::Error::success();
      },
      &stats);
  if (err) {
    std::fprintf(stderr, "error: %s\n", llvm::toString(std::move(err)).c_str());
    std::exit(1);
  }
  const OpStats &p0 = measured[0]["op"], &p1 = measured[1]["op"],
                &p2 = measured[2]["op"];
  std::printf("| %s | %llu | %.1f | %.1f | %.1f | %s |\n", name,
              (unsigned long long)p0.rounds, p0.bytesSent / divisor,
              p1.bytesSent / divisor, p2.bytesSent / divisor, per);
  (void)n;
}

void costs() {
  const int64_t n = 1024;
  std::printf(
      "| operation | rounds | P0 bytes | P1 bytes | P2 bytes | per |\n");
  std::printf("|---|---|---|---|---|---|\n");
  auto unary = [&](const char *name, const UnaryOp &op) {
    costRow(
        name, "element", n,
        [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
          std::vector<double> v = grid(0.5, 4, n);
          PlainTensor t{{n}, v};
          TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {n}));
          return op(e, x).takeError();
        },
        double(n));
  };
  auto binary =
      [&](const char *name,
          std::function<llvm::Expected<SharedTensor>(
              Rep3Engine &, const SharedTensor &, const SharedTensor &)>
              op) {
        costRow(
            name, "element", n,
            [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
              PlainTensor t{{n}, grid(0.5, 4, n)}, u{{n}, grid(-2, 3, n)};
              TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {n}));
              TRY(y, e.input(1, e.party() == 1 ? &u : nullptr, {n}));
              return op(e, x, y).takeError();
            },
            double(n));
      };
  costRow("input (owned by P0)", "element", n,
          [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
            PlainTensor t{{n}, grid(0, 1, n)};
            return e.input(0, e.party() == 0 ? &t : nullptr, {n}).takeError();
          },
          double(n), {"input"});
  costRow("reveal", "element", n,
          [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
            PlainTensor t{{n}, grid(0, 1, n)};
            TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {n}));
            return e.reveal(x).takeError();
          },
          double(n), {"reveal"});
  binary("add, sub", [](Rep3Engine &e, const SharedTensor &x,
                        const SharedTensor &y) { return e.add(x, y); });
  unary(
      "mul by public real (truncate)",
      [](Rep3Engine &e, const SharedTensor &x) { return e.mulScalar(x, 0.3); });
  binary("mul (fixed x fixed)",
         [](Rep3Engine &e, const SharedTensor &x, const SharedTensor &y) {
           return e.mul(x, y);
         });
  costRow(
      "matmul 64x64 @ 64x64", "output element", 64,
      [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
        PlainTensor t{{64, 64}, grid(-1, 1, 4096)};
        TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {64, 64}));
        return e.matmul(x, x).takeError();
      },
      4096.0);
  binary("lt, le, gt, ge",
         [](Rep3Engine &e, const SharedTensor &x, const SharedTensor &y) {
           return e.compare(CompareKind::Lt, x, y);
         });
  binary("eq, ne",
         [](Rep3Engine &e, const SharedTensor &x, const SharedTensor &y) {
           return e.compare(CompareKind::Eq, x, y);
         });
  costRow(
      "select (secret bit given)", "element", n,
      [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
        PlainTensor t{{n}, grid(0.5, 4, n)},
            c{{n}, std::vector<double>(n, 1.0)};
        TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {n}));
        TRY(b, e.input(1, e.party() == 1 ? &c : nullptr, {n},
                       EncodingKind::Integer));
        return e.select(b, x, x).takeError();
      },
      double(n));
  unary("relu", [](Rep3Engine &e, const SharedTensor &x) { return e.relu(x); });
  unary("abs", [](Rep3Engine &e, const SharedTensor &x) { return e.abs(x); });
  binary("max, min", [](Rep3Engine &e, const SharedTensor &x,
                        const SharedTensor &y) { return e.max(x, y); });
  unary("exp", [](Rep3Engine &e, const SharedTensor &x) { return e.exp(x); });
  unary(
      "sum, reshape, transpose, slice, concat, gather, broadcast",
      [](Rep3Engine &e, const SharedTensor &x) { return e.sum(x, {}, false); });
  unary("mean (times 1/n)", [](Rep3Engine &e, const SharedTensor &x) {
    return e.mean(x, {}, false);
  });
  unary("reciprocal",
        [](Rep3Engine &e, const SharedTensor &x) { return e.reciprocal(x); });
  binary("div", [](Rep3Engine &e, const SharedTensor &x,
                   const SharedTensor &y) { return e.div(x, y); });
  unary("rsqrt",
        [](Rep3Engine &e, const SharedTensor &x) { return e.rsqrt(x); });
  unary("sqrt", [](Rep3Engine &e, const SharedTensor &x) { return e.sqrt(x); });
  unary("sigmoid",
        [](Rep3Engine &e, const SharedTensor &x) { return e.sigmoid(x); });
  unary("tanh", [](Rep3Engine &e, const SharedTensor &x) { return e.tanh(x); });
  unary("gelu",
        [](Rep3Engine &e, const SharedTensor &x) { return e.gelu(x, false); });
  unary("gelu (tanh form)",
        [](Rep3Engine &e, const SharedTensor &x) { return e.gelu(x, true); });
  for (int64_t cols : {16, 128}) {
    std::string name = "softmax, rows of " + std::to_string(cols);
    costRow(
        name.c_str(), "row", cols,
        [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
          PlainTensor t{{8, cols}, grid(-3, 3, 8 * cols)};
          TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {8, cols}));
          return e.softmax(x, -1).takeError();
        },
        8.0);
    name = "layernorm, rows of " + std::to_string(cols);
    costRow(
        name.c_str(), "row", cols,
        [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
          PlainTensor t{{8, cols}, grid(-3, 3, 8 * cols)};
          TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {8, cols}));
          return e.layerNorm(x, nullptr, nullptr, 1e-5, -1).takeError();
        },
        8.0);
    name = "reduce_max / argmax, rows of " + std::to_string(cols);
    costRow(
        name.c_str(), "row", cols,
        [&](Rep3Engine &e, OpStatsTable &) -> llvm::Error {
          PlainTensor t{{8, cols}, grid(-3, 3, 8 * cols)};
          TRY(x, e.input(0, e.party() == 0 ? &t : nullptr, {8, cols}));
          return e.argmax(x, -1, false).takeError();
        },
        8.0);
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string what = argc > 1 ? argv[1] : "";
  if (what == "errors")
    errors();
  else if (what == "costs")
    costs();
  else {
    std::fprintf(stderr, "usage: %s errors|costs\n", argv[0]);
    return 2;
  }
  return 0;
}
