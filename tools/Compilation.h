// One compilation through the pipeline: the program at each stage, its
// diagnostics and its timings. Every command of the driver (run, check, ir,
// graph) and every input of the REPL is one Compilation.
//
// The pipeline is written once, as the list kPipeline of named steps
// (lower, specialize, affinity, transfers, partition, epilogues,
// canonicalize, fuse); a command runs a prefix of it with runThrough(STEP).
// The first step reads `opts.file` (an `.mdl` program with its imports, or
// `.hlo` text) unless a parsed program was handed over first (the REPL
// builds its programs from the session's definitions and the input).
#pragma once

#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"
#include "tools/Driver.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mdl::tools {

/// One invocation's state: sources, diagnostics, the program at each stage.
class Compilation {
public:
  using Clock = std::chrono::steady_clock;

  /// A compilation of `o.file` with its own source manager, printing its
  /// diagnostics to standard error (text or JSON, as `o` says).
  explicit Compilation(const DriverOptions &o);
  /// A compilation that shares the caller's source manager and sends its
  /// diagnostics to `handler` (the REPL: one Compilation per input, the
  /// session's buffers and printer shared by all).
  Compilation(const DriverOptions &o, frontend::SourceManager &sm,
              ir::DiagnosticHandler &handler);
  Compilation(const Compilation &) = delete;
  Compilation &operator=(const Compilation &) = delete;

  /// Delivers pending diagnostics and prints --timings.
  void finish();

  /// A Compilation for one command. It is deliberately never freed: tearing
  /// down the AST and IR of a large program costs more than the process
  /// exit that follows (as clang's -disable-free); `finish` runs at the end
  /// of the command instead.
  static Compilation &create(const DriverOptions &o) { return *new Compilation(o); }

  /// load, sema, lower, verify (or, for `.hlo` files, import and verify).
  /// A program set in `program` beforehand is checked instead of loading
  /// `opts.file`.
  bool frontend();
  /// Checks every `load` against the weight file's header (E0401).
  bool validateWeights();

  // --- The pipeline's steps (kPipeline lists them in order). Each leaves
  // its module in `current`; runThrough prints and verifies it.

  /// Specializes every entry (the one --entry names, with `entryArgs`).
  bool specialize();
  bool affinity();
  bool transfers();
  bool partition();
  /// epilogues, canonicalize and fuse shape the partitioned program for the
  /// JIT; the interpreter runs it as partitioned.
  bool epilogues();
  bool canonicalize();
  bool fuse();

  struct Step {
    const char *name;
    bool (Compilation::*run)();
  };
  /// The pipeline, in order: `run` takes all of it (the interpreter up to
  /// `partition`), `check` and `graph` up to `partition`, `ir` up to --after.
  static constexpr Step kPipeline[] = {
      {"lower", &Compilation::frontend},         {"specialize", &Compilation::specialize},
      {"affinity", &Compilation::affinity},      {"transfers", &Compilation::transfers},
      {"partition", &Compilation::partition},    {"epilogues", &Compilation::epilogues},
      {"canonicalize", &Compilation::canonicalize}, {"fuse", &Compilation::fuse},
  };

  /// Runs the steps not run yet, through `last`; false after errors.
  bool runThrough(const std::string &last);

  std::string entryName() const { return opts.entry.empty() ? "main" : opts.entry; }

  /// Prints (--print-ir-after) and verifies (--verify-each, always after
  /// lowering) the module produced by a step.
  bool afterPass(const std::string &name, const ir::Module &m);

  /// Records the time since `t0` as phase `name` (--timings).
  void phase(const std::string &name, Clock::time_point t0);
  void printTimings();

  const DriverOptions &opts;

private:
  std::unique_ptr<frontend::SourceManager> ownSm_; // unless shared

public:
  frontend::SourceManager &sm;
  ir::DiagnosticEngine diags;

private:
  std::unique_ptr<ir::DiagnosticHandler> printer_; // unless shared

public:
  std::unique_ptr<frontend::Program> program;
  std::unique_ptr<frontend::CheckedProgram> checked;
  std::unique_ptr<ir::Module> generic;
  std::unique_ptr<ir::Module> specialized;
  std::unique_ptr<ir::Module> placed;
  ir::Module *current = nullptr; // the latest step's module
  size_t done = 0;               // steps of kPipeline run so far
  std::vector<ir::TensorType> entryArgs;
  std::vector<std::pair<std::string, double>> timings;
};

} // namespace mdl::tools
