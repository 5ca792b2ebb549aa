// Protocol programs: the text form, the verifier, the executor against
// plaintext, and three `mpc_party` PROCESSES over TLS: the same results as
// thread mode for the same seed, and a peer killed (SIGKILL) or stopped
// (SIGSTOP) ends the run on the others with an error in bounded time.
#include "MpcTestUtil.h"

#include "backend/mpc/Certificates.h"
#include "backend/mpc/Program.h"

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

using namespace mdl::backend::mpc;
using namespace mdl::backend::mpc::test;
namespace fs = std::filesystem;

namespace {

const char *kMlp = R"(# a two-layer MLP with a softmax head
mpc.program slots 10
input %0 owner 0 fixed [2, 3]
input %1 owner 1 fixed [3, 4]
input %2 owner 2 fixed [4]
%3 = matmul %0, %1 : [2, 4]
%4 = add %3, %2 : [2, 4]
%5 = relu %4 : [2, 4]
%6 = softmax %5 {axis = i[1]} : [2, 4]
%7 = argmax %4 {axis = i[1]} : [2]
%8 = mul_public %5 {value = f[0.5, -2.25, 1, 3], value_shape = i[4]} : [2, 4]
%9 = slice %8 {starts = i[0, 1], stops = i[2, 3], steps = i[1, 1]} : [2, 2]
output %6 reveal
output %7 reveal
output %9 reveal
output %5 shared
)";

const std::vector<double> kX = {1, 2, 3, -1, -2, 0.5};
const std::vector<double> kW = {0.1, 0.2, 0.3, 0.4, -0.5, 0.6,
                                0.7, 0.8, 0.9, -1,  1.1,  1.2};
const std::vector<double> kB = {0, 0.1, -0.1, 0.2};

std::string join(const std::vector<double> &v) {
  std::ostringstream os;
  os.precision(17);
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? "," : "") << v[i];
  return os.str();
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl =
        (fs::temp_directory_path() / "mdl-mpc-prog-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string readFile(const fs::path &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Starts `args` with stdout and stderr in files.
pid_t spawn(const std::vector<std::string> &args, const fs::path &out,
            const fs::path &err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The exit status, or -1 if still running after `seconds` (then killed).
int waitFor(pid_t pid, double seconds) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

bool waitForText(const fs::path &file, const std::string &text,
                 double seconds) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (readFile(file).find(text) != std::string::npos)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string peersArg() {
  static std::mt19937 gen(
      uint32_t(getpid()) * 40503u ^
      uint32_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  int base = std::uniform_int_distribution<int>(20000, 60000)(gen);
  return "127.0.0.1:" + std::to_string(base) +
         ",127.0.0.1:" + std::to_string(base + 1) +
         ",127.0.0.1:" + std::to_string(base + 2);
}

struct Processes {
  pid_t pid[3];
  fs::path out[3], err[3];
};

// Three mpc_party processes on `programFile`; party i gets inputArgs[i].
Processes startParties(const TempDir &dir, const fs::path &programFile,
                       const std::string &peers,
                       const std::vector<std::vector<std::string>> &inputArgs,
                       int ioTimeoutMs) {
  Processes ps;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> args = {MDL_MPC_PARTY_EXE,
                                     "--program",
                                     programFile.string(),
                                     "--mpc-party",
                                     std::to_string(i),
                                     "--mpc-peers",
                                     peers,
                                     "--mpc-tls",
                                     (dir.path / "certs").string(),
                                     "--test-seed",
                                     "9",
                                     "--io-timeout-ms",
                                     std::to_string(ioTimeoutMs),
                                     "--connect-timeout-ms",
                                     "10000"};
    args.insert(args.end(), inputArgs[i].begin(), inputArgs[i].end());
    ps.out[i] = dir.path / ("out" + std::to_string(i));
    ps.err[i] = dir.path / ("err" + std::to_string(i));
    ps.pid[i] = spawn(args, ps.out[i], ps.err[i]);
  }
  return ps;
}

bool portTaken(const Processes &ps) {
  for (int i = 0; i < 3; ++i)
    if (readFile(ps.err[i]).find("cannot listen on port") != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST(MpcProgram, TextRoundTripsAndErrorsNameTheLine) {
  auto p = parseProgram(kMlp);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->numSlots, 10);
  EXPECT_EQ(p->inputs.size(), 3u);
  EXPECT_EQ(p->instructions.size(), 7u);
  EXPECT_EQ(p->instructions[4].op, ProgramOpKind::ArgMax);
  std::string printed = printProgram(*p);
  auto again = parseProgram(printed);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(printProgram(*again), printed);
  EXPECT_NE(printed.find("%8 = mul_public %5 {value = f[0.5, -2.25, 1, 3], "
                         "value_shape = i[4]}"),
            std::string::npos)
      << printed;

  auto bad = parseProgram("mpc.program slots 2\ninput %0 owner 0 fixed [2]\n%1 "
                          "= frobnicate %0 : [2]\n");
  ASSERT_FALSE(bool(bad));
  std::string msg = llvm::toString(bad.takeError());
  EXPECT_NE(msg.find("program line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown operation 'frobnicate'"), std::string::npos)
      << msg;

  auto unverified = parseProgram(
      "mpc.program slots 3\ninput %0 owner 4 fixed [2]\n"
      "%1 = add %0, %2 : [2]\n%1 = softmax %0 : [2]\noutput %5 reveal\n");
  ASSERT_FALSE(bool(unverified));
  msg = llvm::toString(unverified.takeError());
  for (const char *want :
       {"owner 4 is not 0, 1 or 2", "operand %2 is not defined before",
        "missing attribute 'axis'", "slot %1 is written twice",
        "output 0: slot %5 is not defined"})
    EXPECT_NE(msg.find(want), std::string::npos) << want << "\n" << msg;
  // Every operation of the table has a distinct name that parses back.
  for (const ProgramOpInfo &info : programOps())
    EXPECT_EQ(programOpByName(info.name), &info);
}

TEST(MpcProgram, ExecutorMatchesPlaintext) {
  auto p = parseProgram(kMlp);
  ASSERT_TRUE(bool(p));
  std::array<std::vector<ProgramValue>, 3> results;
  llvm::Error err =
      runThreeParties(testOptions(3), [&](Rep3Engine &e) -> llvm::Error {
        PlainTensor x{{2, 3}, kX}, w{{3, 4}, kW}, b{{4}, kB};
        auto out = runProgram(e, *p, {&x, &w, &b});
        if (!out)
          return out.takeError();
        results[e.party()] = std::move(*out);
        return llvm::Error::success();
      });
  ASSERT_FALSE(err) << llvm::toString(std::move(err));
  const auto &r = results[0];
  ASSERT_EQ(r.size(), 4u);
  // Plaintext reference.
  std::vector<double> h(8), relu(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = kB[j];
      for (int k = 0; k < 3; ++k)
        s += kX[i * 3 + k] * kW[k * 4 + j];
      h[i * 4 + j] = s;
      relu[i * 4 + j] = std::max(s, 0.0);
    }
  for (int i = 0; i < 2; ++i) {
    double mx = *std::max_element(relu.begin() + i * 4,
                                  relu.begin() + i * 4 + 4),
           sum = 0;
    for (int j = 0; j < 4; ++j)
      sum += std::exp(relu[i * 4 + j] - mx);
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(r[0].value.values[i * 4 + j],
                  std::exp(relu[i * 4 + j] - mx) / sum, 1e-4);
    auto row = h.begin() + i * 4;
    EXPECT_EQ(r[1].value.values[i],
              double(std::max_element(row, row + 4) - row));
  }
  const double scale[4] = {0.5, -2.25, 1, 3};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(r[2].value.values[i * 2 + j],
                  relu[i * 4 + j + 1] * scale[j + 1], 1e-4);
  EXPECT_FALSE(r[3].revealed);
  EXPECT_EQ(r[3].shared.shape, (Shape{2, 4}));
  for (int party = 1; party < 3; ++party)
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(results[party][k].value.values, r[k].value.values);
}

TEST(MpcProgram, ShapeDisagreementIsReportedAtTheStep) {
  auto p = parseProgram("mpc.program slots 2\ninput %0 owner 0 fixed [2, 3]\n"
                        "%1 = sum %0 {axes = i[1]} : [3]\noutput %1 reveal\n");
  ASSERT_TRUE(bool(p));
  llvm::Error err =
      runThreeParties(testOptions(), [&](Rep3Engine &e) -> llvm::Error {
        PlainTensor x{{2, 3}, kX};
        return runProgram(e, *p, {&x}).takeError();
      });
  std::string msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("instruction 0 (%1 = sum): result has shape [2], the "
                     "program declares [3]"),
            std::string::npos)
      << msg;
}

TEST(MpcProgram, ProcessesOverTlsGiveThreadModeResults) {
  TempDir dir;
  ASSERT_FALSE(bool(createTestCertificates((dir.path / "certs").string())));
  fs::path programFile = dir.path / "mlp.txt";
  std::ofstream(programFile) << kMlp;
  std::vector<std::vector<std::string>> inputs = {{"--input", "0=" + join(kX)},
                                                  {"--input", "1=" + join(kW)},
                                                  {"--input", "2=" + join(kB)}};
  // Thread mode in one process of the tool, same seed.
  std::vector<std::string> threadArgs = {
      MDL_MPC_PARTY_EXE, "--program", programFile.string(), "--test-seed", "9"};
  for (auto &in : inputs)
    threadArgs.insert(threadArgs.end(), in.begin(), in.end());
  pid_t t = spawn(threadArgs, dir.path / "thread.out", dir.path / "thread.err");
  ASSERT_EQ(waitFor(t, 30), 0) << readFile(dir.path / "thread.err");
  std::string expected = readFile(dir.path / "thread.out");
  ASSERT_NE(expected.find("output 0 [2, 4]"), std::string::npos) << expected;

  for (int attempt = 0; attempt < 5; ++attempt) {
    Processes ps = startParties(dir, programFile, peersArg(), inputs, 10000);
    int status[3];
    for (int i = 0; i < 3; ++i)
      status[i] = waitFor(ps.pid[i], 30);
    if (portTaken(ps))
      continue;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(status[i], 0) << "party " << i << ": " << readFile(ps.err[i]);
      EXPECT_EQ(readFile(ps.out[i]), expected) << "party " << i;
    }
    return;
  }
  FAIL() << "no free ports found";
}

TEST(MpcProgram, KilledOrStoppedProcessEndsTheRunWithinTheTimeout) {
  TempDir dir;
  ASSERT_FALSE(bool(createTestCertificates((dir.path / "certs").string())));
  // A long chain of sigmoids: minutes of rounds, so the signal lands mid-run.
  std::ostringstream prog;
  const int steps = 3000;
  prog << "mpc.program slots " << steps + 1
       << "\ninput %0 owner 0 fixed [64]\n";
  for (int k = 0; k < steps; ++k)
    prog << "%" << k + 1 << " = sigmoid %" << k << " : [64]\n";
  prog << "output %" << steps << " reveal\n";
  fs::path programFile = dir.path / "long.txt";
  std::ofstream(programFile) << prog.str();
  std::vector<std::vector<std::string>> inputs = {
      {"--input", "0=@" + (dir.path / "x.txt").string()}, {}, {}};
  std::ofstream(dir.path / "x.txt") << join(uniformValues(64, -3, 3, 1));

  for (int signal : {SIGKILL, SIGSTOP}) {
    const int ioTimeoutMs = 1500;
    bool done = false;
    for (int attempt = 0; attempt < 5 && !done; ++attempt) {
      Processes ps =
          startParties(dir, programFile, peersArg(), inputs, ioTimeoutMs);
      bool running = waitForText(ps.err[2], "running", 15);
      if (!running && portTaken(ps)) {
        for (int i = 0; i < 3; ++i)
          waitFor(ps.pid[i], 15);
        continue;
      }
      ASSERT_TRUE(running) << readFile(ps.err[2]);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      auto start = std::chrono::steady_clock::now();
      kill(ps.pid[2], signal);
      int s0 = waitFor(ps.pid[0], 10), s1 = waitFor(ps.pid[1], 10);
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      kill(ps.pid[2], SIGKILL);
      waitFor(ps.pid[2], 10);
      std::string e0 = readFile(ps.err[0]), e1 = readFile(ps.err[1]);
      EXPECT_EQ(s0, 1) << e0;
      EXPECT_EQ(s1, 1) << e1;
      std::string want = signal == SIGKILL
                             ? "connection to party 2 lost"
                             : "timed out after 1500 ms waiting for party 2";
      // Both survivors fail; at least one names party 2 (the other may see
      // its other neighbour leave first).
      EXPECT_NE((e0 + e1).find(want), std::string::npos) << e0 << "\n" << e1;
      EXPECT_LT(seconds, signal == SIGKILL ? 2.0 : ioTimeoutMs / 1000.0 + 2.5);
      std::printf("  signal %d: survivors exited after %.2f s\n    %s    %s",
                  signal, seconds, e0.substr(e0.find("mpc_party")).c_str(),
                  e1.substr(e1.find("mpc_party")).c_str());
      done = true;
    }
    EXPECT_TRUE(done) << "no free ports found";
  }
}
