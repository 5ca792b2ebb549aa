// A statistical check of rep3's privacy: one party's view (every message it
// receives and the two shares it holds of every result) must have the same
// distribution whatever the secret inputs are, and look uniform.
//
// The same program (three inputs from three owners; a fixed-point product,
// a matmul, a comparison, a select, a truncation) runs R times on secrets A
// (all zeros) and R times on secrets B (large, mixed-sign values), each run
// with its own test seed; the setup round (fixed hello bytes) and any
// reveal are outside the recorded view. For each party:
//   1. per bit position of the view: ones among the R runs of A against the
//      R runs of B (two-proportion z-test), and each against 1/2;
//   2. all view bytes pooled (each distinct 8-byte word of a run once: a
//      message that becomes a share appears twice in the record): a
//      chi-square test of A's and of B's byte histograms against uniform,
//      and of A's against B's (homogeneity).
// Thresholds: |z| > 7.5 (two-sided 6.4e-14 per test, about 2e-8 over the
// ~3.4e5 bit tests) and chi-square > 450 with 255 degrees of freedom (about
// 7e-13). The seeds are fixed, so the test is deterministic; a correct
// protocol fails it with probability about 3e-8 over the choice of seeds.
// LeakDetector below shows the same statistics do catch a leak.
#include "MpcTestUtil.h"

#include <cstring>
#include <unordered_set>

using namespace mdl::backend::mpc;
using namespace mdl::backend::mpc::test;

namespace {

// Passes everything to the in-process channel beneath and keeps what this
// party receives while `recording`.
class RecordingChannel : public Channel {
public:
  explicit RecordingChannel(std::unique_ptr<Channel> inner)
      : Channel(inner->party()), inner_(std::move(inner)) {}
  void close() override { inner_->close(); }

  bool recording = false;
  std::vector<uint8_t> view;

  void record(const void *data, size_t size) {
    const uint8_t *p = static_cast<const uint8_t *>(data);
    view.insert(view.end(), p, p + size);
  }

protected:
  llvm::Error doExchange(ConstBytes toNext, ConstBytes toPrev,
                         MutableBytes fromNext,
                         MutableBytes fromPrev) override {
    llvm::Error err = inner_->exchange(toNext, toPrev, fromNext, fromPrev);
    if (!err && recording) {
      record(fromNext.data, fromNext.size);
      record(fromPrev.data, fromPrev.size);
    }
    return err;
  }

private:
  std::unique_ptr<Channel> inner_;
};

constexpr int64_t kN = 16;

struct Secrets {
  std::vector<double> x, y, w;
};

// The three parties' views of one run.
std::array<std::vector<uint8_t>, 3> runOnce(const Secrets &s, uint64_t seed) {
  auto local = makeLocalChannels(std::chrono::seconds(10));
  std::vector<std::unique_ptr<RecordingChannel>> rec;
  for (auto &c : local)
    rec.push_back(std::make_unique<RecordingChannel>(std::move(c)));
  llvm::Error err = runOnChannels(
      {rec[0].get(), rec[1].get(), rec[2].get()}, testOptions(seed),
      [&](Rep3Engine &e) -> llvm::Error {
        RecordingChannel &me = *rec[e.party()];
        me.recording = true; // after setup
        PlainTensor xt{{kN}, s.x}, yt{{kN}, s.y}, wt{{4, 4}, s.w};
        MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {kN}));
        MPC_TRY(y, e.input(1, e.party() == 1 ? &yt : nullptr, {kN}));
        MPC_TRY(w, e.input(2, e.party() == 2 ? &wt : nullptr, {4, 4}));
        MPC_TRY(p, e.mul(x, y));
        MPC_TRY(x44, e.reshape(x, {4, 4}));
        MPC_TRY(q, e.matmul(x44, w));
        MPC_TRY(c, e.compare(CompareKind::Lt, p, y));
        MPC_TRY(sel, e.select(c, x, y));
        MPC_TRY(t, e.mulScalar(sel, 0.3));
        for (const SharedTensor *r : {&x, &y, &w, &p, &q, &c, &sel, &t}) {
          me.record(r->s.a.data(), r->s.a.size() * sizeof(Ring));
          me.record(r->s.b.data(), r->s.b.size() * sizeof(Ring));
        }
        me.recording = false;
        return llvm::Error::success();
      });
  EXPECT_FALSE(err) << llvm::toString(std::move(err));
  return {rec[0]->view, rec[1]->view, rec[2]->view};
}

struct Verdict {
  std::vector<std::string> failures;
  double worstZ = 0;   // largest |z| of the A-vs-B bit tests
  double worstChi = 0; // largest chi-square
};

double chiSquare(const std::vector<double> &observed,
                 const std::vector<double> &expected) {
  double chi = 0;
  for (size_t i = 0; i < observed.size(); ++i)
    if (expected[i] > 0)
      chi += (observed[i] - expected[i]) * (observed[i] - expected[i]) /
             expected[i];
  return chi;
}

// The tests of the file comment on the views of one party.
Verdict judge(const std::vector<std::vector<uint8_t>> &a,
              const std::vector<std::vector<uint8_t>> &b) {
  constexpr double kZ = 7.5, kChi = 450;
  Verdict v;
  size_t runs = a.size(), bytes = a[0].size();
  for (const auto &view : a)
    if (view.size() != bytes)
      v.failures.push_back("views of different lengths");
  for (const auto &view : b)
    if (view.size() != bytes)
      v.failures.push_back("views of different lengths");
  if (!v.failures.empty())
    return v;
  std::vector<double> histA(256, 0), histB(256, 0);
  for (size_t pos = 0; pos < bytes; ++pos) {
    int onesA[8] = {0}, onesB[8] = {0};
    for (size_t r = 0; r < runs; ++r) {
      uint8_t ba = a[r][pos], bb = b[r][pos];
      for (int bit = 0; bit < 8; ++bit) {
        onesA[bit] += (ba >> bit) & 1;
        onesB[bit] += (bb >> bit) & 1;
      }
    }
    for (int bit = 0; bit < 8; ++bit) {
      double pa = double(onesA[bit]) / runs, pb = double(onesB[bit]) / runs;
      double pooled = (pa + pb) / 2;
      double sd = std::sqrt(pooled * (1 - pooled) * 2.0 / runs);
      double z = sd > 0 ? (pa - pb) / sd : (pa == pb ? 0 : INFINITY);
      double zA = (pa - 0.5) / std::sqrt(0.25 / runs),
             zB = (pb - 0.5) / std::sqrt(0.25 / runs);
      v.worstZ = std::max(v.worstZ, std::fabs(z));
      if (std::fabs(z) > kZ || std::fabs(zA) > kZ || std::fabs(zB) > kZ) {
        if (v.failures.size() < 5)
          v.failures.push_back("byte " + std::to_string(pos) + " bit " +
                               std::to_string(bit) +
                               ": P(1) = " + std::to_string(pa) + " for A, " +
                               std::to_string(pb) + " for B");
        else if (v.failures.size() == 5)
          v.failures.push_back("...");
      }
    }
  }
  // Pooled bytes, each distinct 8-byte word of a run once: a received
  // message that becomes a share is recorded twice, and exact copies would
  // inflate the statistic without saying anything about uniformity.
  auto pool = [](const std::vector<std::vector<uint8_t>> &views,
                 std::vector<double> &hist) {
    double count = 0;
    for (const auto &view : views) {
      std::unordered_set<uint64_t> seen;
      for (size_t i = 0; i + 8 <= view.size(); i += 8) {
        uint64_t word;
        std::memcpy(&word, view.data() + i, 8);
        if (!seen.insert(word).second)
          continue;
        for (int k = 0; k < 8; ++k)
          hist[view[i + k]] += 1;
        count += 8;
      }
    }
    return count;
  };
  double totalA = pool(a, histA), totalB = pool(b, histB);
  if (totalA != totalB)
    v.failures.push_back(
        "views of A and B have different numbers of distinct words");
  std::vector<double> uniform(256, totalA / 256);
  double chiA = chiSquare(histA, uniform), chiB = chiSquare(histB, uniform);
  // Homogeneity of A and B: expected counts from the pooled histogram.
  std::vector<double> pooled(256);
  for (int i = 0; i < 256; ++i)
    pooled[i] = (histA[i] + histB[i]) / 2;
  double chiAB = chiSquare(histA, pooled) + chiSquare(histB, pooled);
  v.worstChi = std::max({chiA, chiB, chiAB});
  if (chiA > kChi || chiB > kChi)
    v.failures.push_back("bytes not uniform: chi-square " +
                         std::to_string(chiA) + " (A), " +
                         std::to_string(chiB) + " (B)");
  if (chiAB > kChi)
    v.failures.push_back("byte histograms of A and B differ: chi-square " +
                         std::to_string(chiAB));
  return v;
}

Secrets secretsA() {
  return {std::vector<double>(kN, 0.0), std::vector<double>(kN, 0.0),
          std::vector<double>(16, 0.0)};
}

Secrets secretsB() {
  Secrets s{onGrid(uniformValues(kN, -3e4, 3e4, 77)),
            onGrid(uniformValues(kN, -50, 50, 78)),
            onGrid(uniformValues(16, -1e3, 1e3, 79))};
  s.x[0] = 1e9;
  s.y[1] = -ulp();
  return s;
}

// R runs of each secret: views[class][party][run].
using AllViews =
    std::array<std::array<std::vector<std::vector<uint8_t>>, 3>, 2>;

const AllViews &collectViews() {
  static AllViews views = [] {
    constexpr int kRuns = 1500;
    AllViews v;
    Secrets s[2] = {secretsA(), secretsB()};
    for (int cls = 0; cls < 2; ++cls)
      for (int r = 0; r < kRuns; ++r) {
        auto one = runOnce(s[cls], 1000000 * (cls + 1) + r);
        for (int p = 0; p < 3; ++p)
          v[cls][p].push_back(std::move(one[p]));
      }
    return v;
  }();
  return views;
}

} // namespace

TEST(MpcSecurity, ViewDoesNotDependOnSecretsAndIsUniform) {
  const AllViews &views = collectViews();
  for (int p = 0; p < 3; ++p) {
    ASSERT_FALSE(views[0][p].empty());
    EXPECT_GT(views[0][p][0].size(), 2000u)
        << "party " << p << " saw too little";
    Verdict v = judge(views[0][p], views[1][p]);
    for (const std::string &f : v.failures)
      ADD_FAILURE() << "party " << p << ": " << f;
    // For the record: how far from the thresholds a correct protocol stays.
    std::printf("party %d: view %zu bytes x %zu runs, worst |z| %.2f, worst "
                "chi-square %.1f\n",
                p, views[0][p][0].size(), views[0][p].size(), v.worstZ,
                v.worstChi);
  }
}

TEST(MpcSecurity, LeakDetectorCatchesLeaks) {
  const AllViews &views = collectViews();
  // One received byte replaced by the low byte of the secret's encoding:
  // constant per class, so both the bit test and uniformity must fail.
  auto leaky = views;
  Ring ax = encodeFixed(secretsA().x[3], kDefaultFracBits);
  Ring bx = encodeFixed(secretsB().x[3], kDefaultFracBits);
  for (auto &view : leaky[0][1])
    view[100] = uint8_t(ax >> 20);
  for (auto &view : leaky[1][1])
    view[100] = uint8_t(bx >> 20);
  EXPECT_FALSE(judge(leaky[0][1], leaky[1][1]).failures.empty());
  // A subtler leak: one bit of a message XORed with a secret bit that
  // differs between A and B, in 30% of the runs only.
  auto subtle = views;
  for (size_t r = 0; r < subtle[1][2].size(); ++r)
    if (r % 10 < 3)
      subtle[1][2][r][40] |= 0x10; // B's bit forced to one sometimes
  EXPECT_FALSE(judge(subtle[0][2], subtle[1][2]).failures.empty());
}
