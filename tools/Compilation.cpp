// The compilation pipeline (see Compilation.h). In order (each step can be
// printed with --print-ir-after and verified with --verify-each):
//   load (parse + imports) -> sema -> lower -> verify -> validate weights
//   -> specialize -> affinity -> transfers -> partition
//   -> [jit: canonicalize -> fuse -> codegen] -> execute
#include "tools/Compilation.h"

#include "backend/runtime/Weights.h"
#include "frontend/DiagnosticPrinter.h"
#include "frontend/Lower.h"
#include "frontend/hlo/HloImport.h"
#include "ir/passes/Affinity.h"
#include "ir/passes/Canonicalize.h"
#include "ir/passes/ConvEpilogue.h"
#include "ir/passes/Fuse.h"
#include "ir/passes/InsertTransfers.h"
#include "ir/passes/Partition.h"
#include "ir/passes/Specialize.h"
#include "ir/passes/Verify.h"
#include "ir/text/Printer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

namespace mdl::tools {

namespace {

bool isHlo(const std::string &path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".hlo") == 0;
}

/// A fresh weight file for the large constants of an `.hlo` being run;
/// removed at exit (its mapping stays valid while the program runs).
std::string tempWeightsPath() {
  const char *dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/mdl-hlo-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0)
    return path + ".safetensors";
  close(fd);
  std::string p(buf.data());
  static std::vector<std::string> toRemove;
  static bool registered = false;
  toRemove.push_back(p);
  if (!registered) {
    registered = true;
    std::atexit([] {
      for (const std::string &f : toRemove)
        std::remove(f.c_str());
    });
  }
  return p;
}

} // namespace

Compilation::Compilation(const DriverOptions &o)
    : opts(o), ownSm_(std::make_unique<frontend::SourceManager>()), sm(*ownSm_) {
  if (o.diagnostics == "json")
    printer_ = std::make_unique<frontend::JsonDiagnosticPrinter>(std::cerr);
  else
    printer_ = std::make_unique<frontend::TextDiagnosticPrinter>(std::cerr, sm);
  diags.addHandler(printer_.get());
}

Compilation::Compilation(const DriverOptions &o, frontend::SourceManager &shared,
                         ir::DiagnosticHandler &handler)
    : opts(o), sm(shared) {
  diags.addHandler(&handler);
}

void Compilation::finish() {
  diags.flush();
  if (opts.timings)
    printTimings();
}

bool Compilation::frontend() {
  auto t0 = Clock::now();
  if (!program && isHlo(opts.file)) {
    frontend::hlo::HloImportOptions ho;
    ho.weightsOut = tempWeightsPath();
    ho.elidedWeights = opts.elidedWeights;
    ho.fillElidedZeros = opts.fillElided == "zeros";
    generic = frontend::hlo::importHloFile(opts.file, diags, ho);
    phase("import", t0);
    current = generic.get();
    return generic != nullptr;
  }
  if (!program) {
    program = frontend::loadProgram(opts.file, sm, diags);
    phase("parse", t0);
    if (!program)
      return false;
  }
  t0 = Clock::now();
  checked = frontend::checkProgram(*program, diags);
  phase("check", t0);
  if (!checked)
    return false;
  t0 = Clock::now();
  generic = frontend::lowerProgram(*checked);
  phase("lower", t0);
  current = generic.get();
  return true;
}

bool Compilation::validateWeights() {
  auto t0 = Clock::now();
  bool ok = true;
  for (const ir::Global &g : generic->globals)
    ir::walk(*g.init, [&](const ir::Operation &op) {
      if (op.kind != ir::OpKind::Load)
        return;
      auto t = backend::weightType(op.stringAttr("file"), op.stringAttr("key"));
      if (!t) {
        diags.error("E0401", op.loc, llvm::toString(t.takeError()));
        ok = false;
      } else if (*t != op.results[0]->type) {
        std::string key = op.stringAttr("key");
        auto &d = diags.error("E0401", op.loc,
                              op.stringAttr("file") + ": " +
                                  (key.empty() ? "array" : "key '" + key + "'") + " is " +
                                  t->str() + ", but the declaration says " +
                                  op.results[0]->type.str());
        d.notes.push_back({g.loc, "param '" + g.name + "' is declared here"});
        ok = false;
      }
    });
  phase("weights", t0);
  return ok;
}

bool Compilation::specialize() {
  passes::SpecializeOptions so;
  if (!opts.entry.empty())
    so.entries = {opts.entry};
  so.entryArgs = entryArgs;
  so.stableNames = opts.stableInstanceNames;
  specialized = passes::specialize(*generic, so, diags);
  current = specialized.get();
  return specialized != nullptr;
}

bool Compilation::affinity() {
  passes::AffinityOptions ao;
  ao.entry = entryName();
  ao.strictPlacement = opts.strictPlacement;
  ao.explain = opts.explain;
  ao.stableNames = opts.stableInstanceNames;
  placed = passes::affinity(*specialized, ao, diags);
  current = placed.get();
  return placed != nullptr && !diags.hasErrors();
}

bool Compilation::transfers() { return passes::insertTransfers(*placed, diags); }

bool Compilation::partition() {
  passes::partition(*placed);
  return true;
}

bool Compilation::epilogues() {
  passes::fuseConvolutionEpilogues(*placed);
  return true;
}

bool Compilation::canonicalize() {
  passes::canonicalize(*placed);
  return !diags.hasErrors();
}

bool Compilation::fuse() {
  passes::fuse(*placed);
  return true;
}

bool Compilation::runThrough(const std::string &last) {
  for (; done < std::size(kPipeline); ++done) {
    const Step &step = kPipeline[done];
    auto t0 = Clock::now();
    bool ok = (this->*step.run)();
    if (std::string(step.name) != "lower") // the frontend times its own parts
      phase(step.name, t0);
    if (!ok || !afterPass(step.name, *current)) {
      done = std::size(kPipeline); // nothing after a failed step
      return false;
    }
    if (step.name == last) {
      ++done;
      return true;
    }
  }
  return true;
}

bool Compilation::afterPass(const std::string &name, const ir::Module &m) {
  const auto &p = opts.printIrAfter;
  if (std::find(p.begin(), p.end(), name) != p.end() ||
      std::find(p.begin(), p.end(), "all") != p.end()) {
    std::cerr << "// ----- IR after " << name << " -----\n";
    ir::printModule(m, std::cerr);
  }
  if (opts.verifyEach || name == "lower") {
    std::vector<std::string> problems = passes::verifyModule(m);
    if (!problems.empty()) {
      auto &d = diags.error("E0900", {}, "internal error: the IR is malformed after '" + name +
                                             "' (please report this)");
      for (size_t i = 0; i < problems.size() && i < 20; ++i)
        d.notes.push_back({{}, problems[i]});
      return false;
    }
  }
  return true;
}

void Compilation::phase(const std::string &name, Clock::time_point t0) {
  timings.push_back({name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
}

void Compilation::printTimings() {
  std::cerr << "timings (ms):";
  for (auto &[n, ms] : timings)
    std::cerr << " " << n << "=" << ms;
  std::cerr << "\n";
}

const std::vector<std::string> &passNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Compilation::Step &s : Compilation::kPipeline)
      n.push_back(s.name);
    return n;
  }();
  return names;
}

} // namespace mdl::tools
