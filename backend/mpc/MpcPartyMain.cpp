// mpc_party: runs a protocol program (Program.h, text form) with the three
// parties as threads of this process, or as ONE party of a three-process
// run over TLS; a stand-in for `mdl run --mpc-party` until the compiler
// wiring exists, and the process half of the tests.
//
//   mpc_party --program P.txt --input 0=1,2,3 --input 1=@w.txt
//   mpc_party --program P.txt --mpc-party 1 --mpc-peers h0:7000,h1:7000,h2:7000
//             --mpc-tls certs/ --input 1=@w.txt
//   mpc_party --make-certs certs/
//
// Revealed outputs go to stdout, one line each: "output K [SHAPE] v v ...",
// numbers in shortest round-trip form. Errors go to stderr with exit
// status 1.
#include "backend/mpc/Certificates.h"
#include "backend/mpc/Parties.h"
#include "backend/mpc/Program.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>

using namespace mdl::backend::mpc;

namespace {

// "1,2.5,-3" or "@FILE" (numbers separated by white space or commas).
llvm::Expected<std::vector<double>> parseValues(const std::string &spec) {
  std::string text = spec;
  if (!spec.empty() && spec[0] == '@') {
    std::ifstream f(spec.substr(1));
    if (!f)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot read " + spec.substr(1));
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  std::vector<double> v;
  const char *p = text.data(), *end = p + text.size();
  while (p < end) {
    if (*p == ',' || std::isspace(static_cast<unsigned char>(*p))) {
      ++p;
      continue;
    }
    double x;
    auto r = std::from_chars(p, end, x);
    if (r.ec != std::errc())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "not a number in input values: '" +
              std::string(p, std::min<size_t>(20, end - p)) + "'");
    v.push_back(x);
    p = r.ptr;
  }
  return v;
}

std::string formatValue(const ProgramValue &v, size_t index) {
  std::string line = "output " + std::to_string(index) + " ";
  if (!v.revealed)
    return line + shapeToString(v.shared.shape) + " shared";
  line += shapeToString(v.value.shape);
  char buf[64];
  for (double x : v.value.values) {
    auto r = std::to_chars(buf, buf + sizeof buf, x);
    line += " " + std::string(buf, r.ptr);
  }
  return line;
}

int fail(const std::string &message) {
  std::cerr << "mpc_party: error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "Runs an mpc protocol program (threads, or one party of three over TLS)"};
  std::string programFile, peers, tlsDir, certsDir;
  std::vector<std::string> inputs;
  int party = -1, threads = 0;
  int64_t seed = -1;
  int ioTimeoutMs = 30000, connectTimeoutMs = 30000;
  bool timings = false;
  app.add_option("--program", programFile, "protocol program (text form)");
  app.add_option("--input", inputs,
                 "K=v,v,... or K=@file: the value of input K");
  app.add_option("--mpc-party", party, "this process's party (0, 1 or 2)");
  app.add_option("--mpc-peers", peers, "H0:P0,H1:P1,H2:P2");
  app.add_option("--mpc-tls", tlsDir,
                 "directory with ca.pem, partyI.pem, partyI.key");
  app.add_option("--test-seed", seed,
                 "fixed PRG seed (tests only: not secure)");
  app.add_option("--threads", threads, "threads per party (0: default)");
  app.add_option("--io-timeout-ms", ioTimeoutMs,
                 "bound on each wait for a peer");
  app.add_option("--connect-timeout-ms", connectTimeoutMs,
                 "bound on connecting to peers");
  app.add_flag("--timings", timings,
               "print rounds, bytes and time per operation kind");
  app.add_option("--make-certs", certsDir,
                 "write a test CA and three party certificates");
  CLI11_PARSE(app, argc, argv);

  if (!certsDir.empty()) {
    if (llvm::Error err = createTestCertificates(certsDir))
      return fail(llvm::toString(std::move(err)));
    std::cout << "wrote " << certsDir << "/ca.pem and party{0,1,2}.{pem,key}\n";
    return 0;
  }
  if (programFile.empty())
    return fail("--program is required");
  std::ifstream f(programFile);
  if (!f)
    return fail("cannot read " + programFile);
  std::stringstream text;
  text << f.rdbuf();
  auto program = parseProgram(text.str());
  if (!program)
    return fail(programFile + ": " + llvm::toString(program.takeError()));

  std::vector<PlainTensor> values(program->inputs.size());
  std::vector<bool> given(program->inputs.size(), false);
  for (const std::string &spec : inputs) {
    size_t eq = spec.find('=');
    size_t k = 0;
    auto r = std::from_chars(
        spec.data(), spec.data() + (eq == std::string::npos ? 0 : eq), k);
    if (eq == std::string::npos || r.ec != std::errc() || k >= values.size())
      return fail("--input " + spec + ": expected K=VALUES with K below " +
                  std::to_string(values.size()));
    auto v = parseValues(spec.substr(eq + 1));
    if (!v)
      return fail("--input " + std::to_string(k) + ": " +
                  llvm::toString(v.takeError()));
    values[k] = PlainTensor{program->inputs[k].shape, std::move(*v)};
    given[k] = true;
  }
  std::vector<const PlainTensor *> ptrs;
  for (size_t k = 0; k < values.size(); ++k)
    ptrs.push_back(given[k] ? &values[k] : nullptr);

  Rep3Options options;
  options.threads = threads;
  if (seed >= 0)
    options.testSeed = uint64_t(seed);
  std::mutex printMutex;
  std::vector<std::vector<std::string>> lines(kNumParties);
  PartyFn body = [&](Rep3Engine &e) -> llvm::Error {
    {
      std::lock_guard<std::mutex> lock(printMutex);
      std::cerr << "mpc party " << e.party() << ": running\n" << std::flush;
    }
    auto out = runProgram(e, *program, ptrs);
    if (!out)
      return out.takeError();
    for (size_t k = 0; k < out->size(); ++k)
      lines[e.party()].push_back(formatValue((*out)[k], k));
    return llvm::Error::success();
  };

  if (party < 0) {
    std::vector<OpStatsTable> stats;
    if (llvm::Error err = runThreeParties(options, body, &stats))
      return fail(llvm::toString(std::move(err)));
    if (lines[1] != lines[0] || lines[2] != lines[0])
      return fail("the parties revealed different values");
    for (const std::string &l : lines[0])
      std::cout << l << "\n";
    if (timings)
      printStats(std::cerr, stats);
    return 0;
  }
  PartyConfig cfg;
  cfg.party = party;
  auto parsed = parsePeers(peers);
  if (!parsed)
    return fail("--mpc-peers: " + llvm::toString(parsed.takeError()));
  cfg.peers = std::move(*parsed);
  cfg.tlsDir = tlsDir.empty() ? "." : tlsDir;
  cfg.ioTimeout = std::chrono::milliseconds(ioTimeoutMs);
  cfg.connectTimeout = std::chrono::milliseconds(connectTimeoutMs);
  OpStatsTable stats;
  if (llvm::Error err = runParty(cfg, options, body, &stats))
    return fail(llvm::toString(std::move(err)));
  for (const std::string &l : lines[party])
    std::cout << l << "\n";
  if (timings)
    printStats(std::cerr, party, stats);
  return 0;
}
