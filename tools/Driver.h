// The compiler driver behind the `mdl` command: one Compilation object
// (Compilation.h) runs the pipeline (load, check, lower, verify, specialize,
// ...) step by step, and the commands (run, check, ir, graph, repl) are
// short functions on top of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mdl::backend {
struct RunArg;
}

namespace mdl::tools {

/// Everything the command line can set.
struct DriverOptions {
  std::string file;
  std::string entry;                   // empty: main
  std::vector<std::string> inputs;     // NAME=FILE or K=FILE
  std::string outDir;                  // --out
  std::string backend = "jit";         // jit | interp
  std::string cacheDir;                // --cache-dir: compiled objects on disk
  int optLevel = 2;                    // --opt-level: LLVM's, 0..3
  std::string diagnostics = "text";    // text | json
  std::string after;                   // mdl ir --after PASS
  std::vector<std::string> printIrAfter;
  bool verifyEach = false;
  bool timings = false;
  int repeat = 0;
  bool explain = false;
  bool strictPlacement = false;
  std::string fallback = "cpu";
  std::vector<std::string> deviceMap; // A=B
  std::string gpuRuntime = "auto";    // hip devices: auto | hip | cuda | opencl
  bool quiet = false;                  // do not print results
  // mpc devices: this process as one party of three (--mpc-party I), or
  // the three parties as threads (mpcParty < 0)
  int mpcParty = -1;
  std::string mpcPeers;                // H0:P0,H1:P1,H2:P2
  std::string mpcTls;                  // DIR with ca.pem, partyI.pem, partyI.key
  int64_t mpcTestSeed = -1;            // >= 0: fixed correlated randomness (tests)
  double mpcTimeout = 30;              // seconds: connecting, and every wait on a peer
  bool force = false;                  // mdl mpc-certs --force
  // mdl import / .hlo inputs
  std::string output;                  // -o FILE.mdl
  std::string elidedWeights;           // --weights FILE (values of elided constants)
  std::string fillElided;              // --fill-elided=zeros
  // mdl compile
  std::string gpuArch;                 // --gpu-arch: gfx90a, gfx942, sm_80, sm_90, spir64
  /// Instances named after their binding and placement (the REPL; see
  /// passes::SpecializeOptions::stableNames).
  bool stableInstanceNames = false;
};

/// The pipeline's steps that --print-ir-after and `mdl ir --after` name,
/// in order.
const std::vector<std::string> &passNames();

/// The run's arguments for its devices, each named with the prefix of the
/// kind that reads it: --timings (every kind), --gpu-runtime (hip_runtime),
/// --mpc-* (mpc devices).
std::vector<backend::RunArg> deviceRunArgs(const DriverOptions &o);

/// Exit codes: 0 success, 1 diagnostics (errors in the program or its
/// data), 2 usage errors (reported by the command-line parser).
int runCommand(const DriverOptions &o);
int checkCommand(const DriverOptions &o);
int irCommand(const DriverOptions &o);
/// `mdl graph FILE -o g.svg|g.dot|g.png`: the partitioned graph.
int graphCommand(const DriverOptions &o);
/// `mdl import model.hlo -o model.mdl` (tools/ImportCommand.cpp).
int importCommand(const DriverOptions &o);
/// `mdl compile FILE --gpu-arch ARCH -o DIR`: ahead-of-time code for the
/// GPU segments (tools/CompileCommand.cpp).
int compileCommand(const DriverOptions &o);
/// `mdl mpc-certs DIR`: a test CA and three party certificates.
int mpcCertsCommand(const DriverOptions &o);
/// `mdl repl [FILE]`: an interactive session (tools/Repl*.cpp); FILE may
/// be empty.
int replCommand(const DriverOptions &o);
/// The REPL's commands, for `mdl repl --help`.
std::string replHelp();

/// Runs `fn` on a thread with a large stack (deeply nested programs recurse
/// deeply in every pass) and returns its result.
int withLargeStack(int (*fn)(const DriverOptions &), const DriverOptions &o);

} // namespace mdl::tools
