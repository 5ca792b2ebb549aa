// Parties over TLS on loopback, each with its own Asio TLS channel (three
// threads of this test): the same results as thread mode for the same test
// seed; certificates from another CA or naming another party refused; a
// peer that leaves or stalls ends the run on the others within the timeout.
#include "MpcTestUtil.h"

#include "backend/mpc/Certificates.h"
#include "backend/mpc/TlsChannel.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace mdl::backend::mpc;
using namespace mdl::backend::mpc::test;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system's temp dir, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "mdl-mpc-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Certificate sets made once per process, each with its own CA: set 0 is
// the good one, set 1 another CA's.
const std::string &certificateSet(int set) {
  static TempDir dirs[2];
  static std::string paths[2];
  static std::once_flag once[2];
  std::call_once(once[set], [set] {
    paths[set] = dirs[set].path.string();
    llvm::Error err = createTestCertificates(paths[set]);
    EXPECT_FALSE(err) << llvm::toString(std::move(err));
  });
  return paths[set];
}

const std::string &goodCerts() { return certificateSet(0); }
const std::string &otherCaCerts() { return certificateSet(1); }

// Random high ports; different for every call in this process.
std::vector<PeerAddress> freshPeers() {
  static std::mt19937 gen(
      uint32_t(getpid()) * 2654435761u ^
      uint32_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::uniform_int_distribution<int> port(20000, 60000);
  int base = port(gen);
  return {{"127.0.0.1", uint16_t(base)},
          {"127.0.0.1", uint16_t(base + 1)},
          {"127.0.0.1", uint16_t(base + 2)}};
}

struct TlsRun {
  std::array<std::string, 3> errors; // empty: that party succeeded
  double seconds = 0;
};

// Three runParty threads; `dirFor(i)` is party i's TLS directory. Retries
// with other ports when a port is taken.
TlsRun
runTls(const std::function<std::string(int)> &dirFor, const PartyFn &fn,
       std::chrono::milliseconds ioTimeout = std::chrono::seconds(5),
       std::chrono::milliseconds connectTimeout = std::chrono::seconds(10)) {
  TlsRun run;
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::vector<PeerAddress> peers = freshPeers();
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i)
      threads.emplace_back([&, i] {
        PartyConfig cfg;
        cfg.party = i;
        cfg.peers = peers;
        cfg.tlsDir = dirFor(i);
        cfg.connectTimeout = connectTimeout;
        cfg.ioTimeout = ioTimeout;
        Rep3Options opts = testOptions(1);
        opts.threads = 1;
        if (llvm::Error err = runParty(cfg, opts, fn))
          run.errors[i] = llvm::toString(std::move(err));
        else
          run.errors[i].clear();
      });
    for (auto &t : threads)
      t.join();
    run.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    for (int i = 0; i < 3; ++i)
      if (!run.errors[i].empty())
        std::printf("  [party %d] %s\n", i, run.errors[i].c_str());
    bool portTaken = false;
    for (const std::string &e : run.errors)
      portTaken |= e.find("cannot listen on port") != std::string::npos;
    if (!portTaken)
      return run;
  }
  return run;
}

// A program touching every kind of round: inputs from all owners, a
// matmul, a comparison, a softmax, a reveal.
PartyFn sampleProgram(PartyResults &results) {
  return [&results](Rep3Engine &e) -> llvm::Error {
    std::vector<double> xs = onGrid(uniformValues(12, -3, 3, 5));
    std::vector<double> ws = onGrid(uniformValues(12, -1, 1, 6));
    PlainTensor xt{{3, 4}, xs}, wt{{4, 3}, ws}, bt{{3}, {0.5, -0.5, 1.0}};
    MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {3, 4}));
    MPC_TRY(w, e.input(1, e.party() == 1 ? &wt : nullptr, {4, 3}));
    MPC_TRY(b, e.input(2, e.party() == 2 ? &bt : nullptr, {3}));
    MPC_TRY(h, e.matmul(x, w));
    MPC_TRY(hb, e.add(h, b));
    MPC_TRY(r, e.relu(hb));
    MPC_TRY(s, e.softmax(r, -1));
    MPC_TRY(am, e.argmax(hb, 1, false));
    if (auto err = revealInto(e, s, results))
      return err;
    return revealInto(e, am, results);
  };
}

bool contains(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

} // namespace

TEST(MpcTls, CertificatesChainToTheirCaAndNameTheParty) {
  const std::string &dir = goodCerts();
  X509_STORE *store = X509_STORE_new();
  ASSERT_EQ(X509_STORE_load_file(store, (dir + "/ca.pem").c_str()), 1);
  for (int i = 0; i < 3; ++i) {
    std::string base = dir + "/party" + std::to_string(i);
    FILE *f = std::fopen((base + ".pem").c_str(), "r");
    ASSERT_TRUE(f);
    X509 *cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
    std::fclose(f);
    ASSERT_TRUE(cert);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, cert, nullptr);
    EXPECT_EQ(X509_verify_cert(ctx), 1)
        << X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
    X509_STORE_CTX_free(ctx);
    char cn[64] = {0};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn,
                              sizeof cn);
    EXPECT_EQ(std::string(cn), partyCommonName(i));
    // About ten years.
    int days = 0, secs = 0;
    ASSERT_EQ(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(cert),
                             X509_get0_notAfter(cert)),
              1);
    EXPECT_GE(days, 3650);
    X509_free(cert);
    struct stat st;
    ASSERT_EQ(stat((base + ".key").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u)
        << "private keys are readable by their owner only";
  }
  X509_STORE_free(store);
}

TEST(MpcTls, SameResultsAsThreadMode) {
  PartyResults threadResults;
  llvm::Error err =
      runThreeParties(testOptions(1), sampleProgram(threadResults));
  ASSERT_FALSE(err) << llvm::toString(std::move(err));
  PartyResults tlsResults;
  TlsRun run =
      runTls([](int) { return goodCerts(); }, sampleProgram(tlsResults));
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run.errors[i], "") << "party " << i;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(tlsResults[i].size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(tlsResults[i][k].shape, threadResults[i][k].shape);
      EXPECT_EQ(tlsResults[i][k].values, threadResults[i][k].values)
          << "party " << i;
    }
  }
}

TEST(MpcTls, CertificateFromAnotherCaIsRefused) {
  // Party 2 trusts the right CA but presents a certificate of another one.
  TempDir mixed;
  fs::copy_file(goodCerts() + "/ca.pem", mixed.path / "ca.pem");
  fs::copy_file(otherCaCerts() + "/party2.pem", mixed.path / "party2.pem");
  fs::copy_file(otherCaCerts() + "/party2.key", mixed.path / "party2.key");
  PartyResults unused;
  const auto connectTimeout = std::chrono::seconds(3);
  TlsRun run =
      runTls([&](int i) { return i == 2 ? mixed.path.string() : goodCerts(); },
             sampleProgram(unused), std::chrono::seconds(5), connectTimeout);
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(run.errors[i], "") << "party " << i << " should fail";
  // The parties that party 2 dials refuse it, naming the verification error.
  EXPECT_TRUE(
      contains(run.errors[0] + run.errors[1], "certificate verify failed") &&
      contains(run.errors[0] + run.errors[1],
               "unable to get local issuer certificate"))
      << run.errors[0] << "\n"
      << run.errors[1];
  // Party 2 learns of the refusal from the TLS alert. A party that its
  // peers give up on before they connect to it waits for its connect
  // timeout: nobody can tell it sooner.
  EXPECT_TRUE(contains(run.errors[2], "did not accept this party"))
      << run.errors[2];
  EXPECT_LT(run.seconds, 3.0 + 2.0);
}

TEST(MpcTls, CertificateOfAnotherPartyIsRefused) {
  // Party 2 presents party 1's (valid) certificate and key.
  TempDir impostor;
  fs::copy_file(goodCerts() + "/ca.pem", impostor.path / "ca.pem");
  fs::copy_file(goodCerts() + "/party1.pem", impostor.path / "party2.pem");
  fs::copy_file(goodCerts() + "/party1.key", impostor.path / "party2.key");
  PartyResults unused;
  const auto connectTimeout = std::chrono::seconds(3);
  TlsRun run = runTls(
      [&](int i) { return i == 2 ? impostor.path.string() : goodCerts(); },
      sampleProgram(unused), std::chrono::seconds(5), connectTimeout);
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(run.errors[i], "") << "party " << i << " should fail";
  // Whoever sees the second certificate naming party 1 refuses it: party 1
  // (which accepts party 2 only) or party 0 (which already has a party 1).
  // A party that its peers abandon before connecting to it gives up at its
  // connect timeout.
  EXPECT_TRUE(
      contains(run.errors[0] + run.errors[1],
               "its certificate names 'mdl-party-1', expected mdl-party-2"))
      << run.errors[0] << "\n"
      << run.errors[1];
  EXPECT_LT(run.seconds, 3.0 + 2.0);
}

TEST(MpcTls, MissingFilesAreErrors) {
  PartyConfig cfg;
  cfg.party = 0;
  cfg.peers = freshPeers();
  cfg.tlsDir = "/nonexistent/mdl-mpc";
  llvm::Error err = runParty(
      cfg, testOptions(), [](Rep3Engine &) { return llvm::Error::success(); });
  std::string msg = llvm::toString(std::move(err));
  EXPECT_TRUE(
      contains(msg, "cannot load CA certificate /nonexistent/mdl-mpc/ca.pem"))
      << msg;
  EXPECT_FALSE(bool(parsePeers("a:1,b:2")));
  llvm::consumeError(parsePeers("a:1,b:2").takeError());
  auto ok = parsePeers("h0:7000,[::1]:7001,h2:7002");
  ASSERT_TRUE(bool(ok));
  EXPECT_EQ((*ok)[1].host, "::1");
  EXPECT_EQ((*ok)[2].port, 7002);
  auto bad = parsePeers("h0:7000,h1:99999,h2:7002");
  EXPECT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
}

TEST(MpcTls, PeerThatLeavesEndsTheRunAtOnce) {
  // Party 2 quits in the middle of the computation (its process would
  // close its sockets the same way when killed).
  TlsRun run =
      runTls([](int) { return goodCerts(); },
             [](Rep3Engine &e) -> llvm::Error {
               PlainTensor xt{{4}, {1, 2, 3, 4}};
               MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {4}));
               if (e.party() == 2)
                 return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                "party 2 dies");
               MPC_TRY(y, e.mul(x, x));
               return e.reveal(y).takeError();
             },
             std::chrono::seconds(20));
  EXPECT_TRUE(contains(run.errors[2], "party 2 dies"));
  EXPECT_TRUE(
      contains(run.errors[0] + run.errors[1], "connection to party 2 lost"))
      << run.errors[0] << "\n"
      << run.errors[1];
  EXPECT_NE(run.errors[0], "");
  EXPECT_NE(run.errors[1], "");
  EXPECT_LT(run.seconds, 5.0)
      << "the others must not wait for their 20 s timeout";
}

TEST(MpcTls, PeerThatStallsEndsTheRunAtTheTimeout) {
  const auto timeout = std::chrono::milliseconds(800);
  TlsRun run =
      runTls([](int) { return goodCerts(); },
             [](Rep3Engine &e) -> llvm::Error {
               PlainTensor xt{{4}, {1, 2, 3, 4}};
               MPC_TRY(x, e.input(0, e.party() == 0 ? &xt : nullptr, {4}));
               if (e.party() == 1)
                 std::this_thread::sleep_for(
                     std::chrono::milliseconds(2500)); // stalls
               MPC_TRY(y, e.mul(x, x));
               return e.reveal(y).takeError();
             },
             timeout);
  EXPECT_TRUE(contains(run.errors[0] + run.errors[2],
                       "timed out after 800 ms waiting for party 1"))
      << run.errors[0] << "\n"
      << run.errors[2];
  // The stalled party finds its peers gone when it wakes up.
  EXPECT_NE(run.errors[1], "");
  EXPECT_LT(run.seconds, 6.0);
}
