// The compilation pipeline and the run / check / ir commands.
//
// The pipeline, in order (each step can be printed with --print-ir-after
// and verified with --verify-each):
//   load (parse + imports) -> sema -> lower -> verify -> validate weights
//   -> specialize -> affinity -> transfers -> partition
//   -> [jit: canonicalize -> fuse -> codegen] -> execute
#include "tools/Driver.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

#include "backend/interp/Interpreter.h"
#include "backend/jit/JitSession.h"
#include "backend/mpc/MpcKind.h"
#include "backend/runtime/Devices.h"
#include "backend/runtime/Weights.h"
#include "frontend/DiagnosticPrinter.h"
#include "frontend/Lower.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/hlo/HloImport.h"
#include "ir/text/Printer.h"
#include "tools/Graph.h"
#include "tools/OutputFiles.h"
#include "ir/passes/Affinity.h"
#include "ir/passes/Canonicalize.h"
#include "ir/passes/Fuse.h"
#include "ir/passes/InsertTransfers.h"
#include "ir/passes/Partition.h"
#include "ir/passes/PlacementSummary.h"
#include "ir/passes/Specialize.h"
#include "ir/passes/Verify.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>

namespace mdl::tools {

using backend::Tensor;
using ir::DiagnosticEngine;
using ir::TensorType;

namespace {

using Clock = std::chrono::steady_clock;

bool isHlo(const std::string &path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".hlo") == 0;
}

std::string tempWeightsPath();

/// One invocation's state: sources, diagnostics, the program at each stage.
class Compilation {
public:
  explicit Compilation(const DriverOptions &o) : opts(o) {
    if (o.diagnostics == "json")
      printer = std::make_unique<frontend::JsonDiagnosticPrinter>(std::cerr);
    else
      printer = std::make_unique<frontend::TextDiagnosticPrinter>(std::cerr, sm);
    diags.addHandler(printer.get());
  }
  /// Delivers pending diagnostics and prints --timings.
  void finish() {
    diags.flush();
    if (opts.timings)
      printTimings();
  }

  /// A Compilation for one command. It is deliberately never freed: tearing
  /// down the AST and IR of a large program costs more than the process
  /// exit that follows (as clang's -disable-free); `finish` runs at the end
  /// of the command instead.
  static Compilation &create(const DriverOptions &o) { return *new Compilation(o); }

  /// load, sema, lower, verify (or, for `.hlo` files, import and verify).
  bool frontend() {
    auto t0 = Clock::now();
    if (isHlo(opts.file)) {
      frontend::hlo::HloImportOptions ho;
      ho.weightsOut = tempWeightsPath();
      ho.elidedWeights = opts.elidedWeights;
      ho.fillElidedZeros = opts.fillElided == "zeros";
      generic = frontend::hlo::importHloFile(opts.file, diags, ho);
      phase("import", t0);
      current = generic.get();
      return generic != nullptr;
    }
    program = frontend::loadProgram(opts.file, sm, diags);
    phase("parse", t0);
    if (!program)
      return false;
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

  /// Checks every `load` against the weight file's header (E0401).
  bool validateWeights() {
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

  // --- The pipeline's steps (kPipeline below lists them in order). Each
  // leaves its module in `current`; runThrough prints and verifies it.

  /// Specializes every entry (the one --entry names, with `entryArgs`).
  bool specialize() {
    passes::SpecializeOptions so;
    if (!opts.entry.empty())
      so.entries = {opts.entry};
    so.entryArgs = entryArgs;
    specialized = passes::specialize(*generic, so, diags);
    current = specialized.get();
    return specialized != nullptr;
  }

  bool affinity() {
    passes::AffinityOptions ao;
    ao.entry = entryName();
    ao.strictPlacement = opts.strictPlacement;
    ao.explain = opts.explain;
    placed = passes::affinity(*specialized, ao, diags);
    current = placed.get();
    return placed != nullptr && !diags.hasErrors();
  }

  bool transfers() { return passes::insertTransfers(*placed, diags); }
  bool partition() {
    passes::partition(*placed);
    return true;
  }
  // canonicalize and fuse shape the partitioned program for the JIT; the
  // interpreter runs it as partitioned.
  bool canonicalize() {
    passes::canonicalize(*placed);
    return !diags.hasErrors();
  }
  bool fuse() {
    passes::fuse(*placed);
    return true;
  }

  struct Step {
    const char *name;
    bool (Compilation::*run)();
  };
  /// The pipeline, in order: `run` takes all of it (the interpreter up to
  /// `partition`), `check` and `graph` up to `partition`, `ir` up to --after.
  static constexpr Step kPipeline[] = {
      {"lower", &Compilation::frontend},         {"specialize", &Compilation::specialize},
      {"affinity", &Compilation::affinity},      {"transfers", &Compilation::transfers},
      {"partition", &Compilation::partition},    {"canonicalize", &Compilation::canonicalize},
      {"fuse", &Compilation::fuse},
  };

  /// Runs the steps not run yet, through `last`; false after errors.
  bool runThrough(const std::string &last) {
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

  std::string entryName() const { return opts.entry.empty() ? "main" : opts.entry; }

  /// Prints (--print-ir-after) and verifies (--verify-each, always after
  /// lowering) the module produced by a step.
  bool afterPass(const std::string &name, const ir::Module &m) {
    const auto &p = opts.printIrAfter;
    if (std::find(p.begin(), p.end(), name) != p.end() ||
        std::find(p.begin(), p.end(), "all") != p.end()) {
      std::cerr << "// ----- IR after " << name << " -----\n";
      ir::printModule(m, std::cerr);
    }
    if (opts.verifyEach || name == "lower") {
      std::vector<std::string> problems = passes::verifyModule(m);
      if (!problems.empty()) {
        auto &d = diags.error("E0900", {}, "internal error: the IR is malformed after '" +
                                               name + "' (please report this)");
        for (size_t i = 0; i < problems.size() && i < 20; ++i)
          d.notes.push_back({{}, problems[i]});
        return false;
      }
    }
    return true;
  }

  void phase(const std::string &name, Clock::time_point t0) {
    timings.push_back({name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
  }

  void printTimings() {
    std::cerr << "timings (ms):";
    for (auto &[n, ms] : timings)
      std::cerr << " " << n << "=" << ms;
    std::cerr << "\n";
  }

  const DriverOptions &opts;
  frontend::SourceManager sm;
  DiagnosticEngine diags;
  std::unique_ptr<ir::DiagnosticHandler> printer;
  std::unique_ptr<frontend::Program> program;
  std::unique_ptr<frontend::CheckedProgram> checked;
  std::unique_ptr<ir::Module> generic;
  std::unique_ptr<ir::Module> specialized;
  std::unique_ptr<ir::Module> placed;
  ir::Module *current = nullptr; // the latest step's module
  size_t done = 0;               // steps of kPipeline run so far
  std::vector<TensorType> entryArgs;
  std::vector<std::pair<std::string, double>> timings;
};

} // namespace

const std::vector<std::string> &passNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Compilation::Step &s : Compilation::kPipeline)
      n.push_back(s.name);
    return n;
  }();
  return names;
}

namespace {

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

/// Runs Compilation::finish when a command returns, on every path.
struct Finish {
  Compilation &c;
  ~Finish() { c.finish(); }
};

int exitCode(const Compilation &c) { return c.diags.hasErrors() ? 1 : 0; }

/// Reports E0408 when writing `output` would replace a file the command
/// reads (the program, an --input): the user's file is never lost.
bool refuseOverwrite(Compilation &c, const std::string &output) {
  std::vector<std::string> inputs = {c.opts.file};
  for (const std::string &spec : c.opts.inputs)
    inputs.push_back(spec.substr(spec.find('=') + 1));
  std::string which;
  if (!overwritesInput(output, inputs, which))
    return false;
  ir::Location loc;
  loc.file = ir::internFile(output);
  c.diags.error("E0408", loc, "refusing to write '" + output + "': it is the input '" + which +
                                  "', which would be lost");
  return true;
}

/// Reads --input files and matches them to the entry's arguments (E0402).
bool readInputs(Compilation &c, const ir::Function &entry, std::vector<Tensor> &args) {
  std::vector<ir::Value *> params = entry.args();
  args.assign(params.size(), Tensor());
  std::vector<bool> given(params.size(), false);
  bool ok = true;
  // Where to point at an argument: its declaration in a .mdl source, else
  // the function.
  const frontend::FnItem *item = nullptr;
  if (c.checked) {
    auto it = c.checked->fnByName.find(entry.name);
    if (it != c.checked->fnByName.end())
      item = it->second;
  }
  auto argName = [&](size_t i) {
    return i < entry.argNames.size() ? entry.argNames[i] : std::to_string(i);
  };
  auto argLoc = [&](size_t i) {
    return item && i < item->params.size() ? item->params[i].name.loc : entry.loc;
  };
  for (const std::string &spec : c.opts.inputs) {
    size_t eq = spec.find('=');
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    int idx = -1;
    for (size_t i = 0; i < params.size(); ++i)
      if (argName(i) == name)
        idx = int(i);
    if (idx < 0 && !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) {
      idx = name.size() < 9 ? std::stoi(name) : -2;
      if (idx >= int(params.size()))
        idx = -2;
    }
    if (idx < 0) {
      std::string list;
      for (size_t i = 0; i < params.size(); ++i)
        list += (list.empty() ? "" : ", ") + argName(i);
      auto &d = c.diags.error("E0402", entry.loc,
                              "--input " + name + ": '" + entry.name + "' has no argument " +
                                  (idx == -2 ? "number " : "") + name);
      d.notes.push_back({{}, list.empty() ? "it takes no arguments" : "its arguments: " + list});
      ok = false;
      continue;
    }
    if (args[size_t(idx)].valid() || given[size_t(idx)]) {
      c.diags.error("E0402", argLoc(size_t(idx)),
                    "--input " + name + ": argument '" + argName(size_t(idx)) +
                        "' of '" + entry.name + "' is given twice (by name and by position)");
      ok = false;
      continue;
    }
    given[size_t(idx)] = true;
    auto t = backend::readArray(file);
    if (!t) {
      c.diags.error("E0402", entry.loc, "--input " + name + ": " + llvm::toString(t.takeError()));
      ok = false;
      continue;
    }
    args[size_t(idx)] = *t;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    // In a run of several processes, an argument another party gives is
    // absent here; its shape must be known to every party.
    if (!args[i].valid() && ok && c.opts.mpcParty >= 0) {
      if (!params[i]->type.isStatic()) {
        auto &d = c.diags.error("E0402", argLoc(i),
                                "argument '" + argName(i) + "' (" + params[i]->type.str() +
                                    ") of '" + entry.name +
                                    "' is not given here, and its shape is not static");
        d.notes.push_back({{}, "in a run of several processes the parties that do not hold "
                               "an argument must know its shape from the program"});
        ok = false;
      }
      args[i] = Tensor::absent(params[i]->type);
      continue;
    }
    if (!args[i].valid() && ok) {
      auto &d = c.diags.error("E0402", argLoc(i),
                              "missing input for argument '" + argName(i) + "' (" +
                                  params[i]->type.str() + ") of '" + entry.name + "'");
      d.notes.push_back({{}, "pass it with --input " + argName(i) + "=FILE.npy"});
      ok = false;
    }
  }
  if (!ok)
    return false;
  // Check dtypes, ranks and static sizes, and bind the symbols.
  std::vector<std::pair<std::string, ir::Dim>> binding;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string err;
    if (!args[i].valid())
      continue; // absent: its static type is the one declared
    if (!passes::bindSymbols({params[i]->type}, {args[i].type()}, binding, err)) {
      c.diags.error("E0402", argLoc(i),
                    "input for '" + argName(i) + "' is " + args[i].type().str() + ", but '" +
                        entry.name + "' expects " + params[i]->type.str() +
                        (err.find("symbol") != std::string::npos ? " (" + err + ")" : ""));
      ok = false;
    }
  }
  return ok;
}

} // namespace

namespace {

/// Whether device `d` of `m` holds secret shares (an mpc device).
bool secretDevice(const ir::Module &m, int d) {
  return d >= 0 && size_t(d) < m.devices.size() && stdlib::isSecret(m.devices[size_t(d)]);
}

/// In a run of several processes, the arguments absent here (another party
/// gives them) may only enter a secret-sharing device: anything else would
/// compute on a value this process does not have (E0402).
bool checkAbsentArgs(Compilation &c, const std::vector<Tensor> &args) {
  const ir::Function *f = c.placed->findFunction(c.entryName());
  if (!f)
    return true;
  bool ok = true;
  for (size_t i = 0; i < args.size() && i < f->body->args.size(); ++i) {
    if (args[i].valid())
      continue;
    const ir::Value *a = f->body->args[i].get();
    if (secretDevice(*c.placed, a->device))
      continue;
    const ir::Operation *bad = nullptr;
    ir::walk(*f->body, [&](const ir::Operation &op) {
      for (const ir::Value *v : op.operands)
        if (v == a && !bad &&
            !((stdlib::isTransfer(op.kind) || op.kind == ir::OpKind::Segment) &&
              secretDevice(*c.placed, op.device)))
          bad = &op;
    });
    if (!bad)
      continue;
    std::string name = i < f->argNames.size() ? f->argNames[i] : std::to_string(i);
    auto &d = c.diags.error("E0402", bad->loc,
                            "argument '" + name + "' is not given to this party (--input), but "
                                "this operation reads it outside the mpc device");
    d.notes.push_back({{}, "in a run of several processes, each party gives only the arguments "
                           "it holds, and those enter the mpc device secret-shared"});
    ok = false;
  }
  return ok;
}

/// The run's arguments for mpc devices (--mpc-*, --timings).
std::vector<backend::RunArg> mpcRunArgs(const DriverOptions &o) {
  std::vector<backend::RunArg> a;
  auto add = [&](const char *name, ir::Attribute v) { a.push_back({"mpc", name, std::move(v)}); };
  if (o.timings)
    add("timings", ir::Attribute::integer(o.diagnostics == "json" ? 2 : 1));
  if (o.mpcTestSeed >= 0)
    add("mpc_test_seed", ir::Attribute::integer(o.mpcTestSeed));
  add("mpc_timeout_ms", ir::Attribute::integer(int64_t(o.mpcTimeout * 1000)));
  if (o.mpcParty >= 0) {
    add("mpc_party", ir::Attribute::integer(o.mpcParty));
    add("mpc_peers", ir::Attribute::string(o.mpcPeers));
    add("mpc_tls", ir::Attribute::string(o.mpcTls));
  }
  return a;
}

} // namespace

int runCommand(const DriverOptions &o) {
  Compilation &c = Compilation::create(o);
  Finish finish{c};
  if (!c.runThrough("lower"))
    return 1;
  std::string entryName = c.entryName();
  const ir::Function *entry = c.generic->findFunction(entryName);
  if (!entry) {
    std::string list;
    for (auto &f : c.generic->functions)
      list += (list.empty() ? "" : ", ") + f->name;
    auto &d = c.diags.error("E0101", {}, "no function '" + entryName + "' to run");
    d.loc.file = ir::internFile(o.file);
    d.notes.push_back({{}, list.empty() ? "the program defines no functions"
                                        : "functions: " + list + " (choose one with --entry)"});
    return 1;
  }
  // Every weight is checked against its file before anything runs, so all
  // the bad ones are reported at once (as `mdl check` does).
  bool weightsOk = c.validateWeights();
  std::vector<Tensor> args;
  if (!readInputs(c, *entry, args) || !weightsOk)
    return 1;
  std::vector<ir::Value *> params = entry->args();
  for (size_t i = 0; i < args.size(); ++i)
    c.entryArgs.push_back(args[i].valid() ? args[i].type() : params[i]->type);
  bool jit = o.backend == "jit";
  if (!c.runThrough(jit ? "fuse" : "partition") || !checkAbsentArgs(c, args))
    return 1;
  if (!o.cacheDir.empty()) {
    std::string err;
    if (!makeDirs(o.cacheDir, err)) {
      c.diags.error("E0407", {}, "cannot create the cache directory: " + err);
      return 1;
    }
  }
  auto t0 = Clock::now();
  backend::DeviceOptions dopts;
  dopts.fallbackError = o.fallback == "error";
  dopts.runArgs = mpcRunArgs(o);
  std::string err;
  if (!backend::parseDeviceMap(o.deviceMap, dopts.deviceMap, err)) {
    c.diags.error("E0204", {}, err);
    return 1;
  }
  backend::DeviceSet devices;
  if (!devices.open(*c.placed, dopts, c.diags))
    return 1;
  // The backend: the reference interpreter, or the JIT (compiled, then
  // loaded: the globals the interpreter computes, arenas, linking).
  std::unique_ptr<backend::Interpreter> interp;
  std::unique_ptr<backend::jit::JitSession> runner;
  if (jit) {
    backend::jit::JitOptions jo;
    jo.cacheDir = o.cacheDir;
    jo.optLevel = o.optLevel;
    jo.sourceFile = o.file;
    jo.jsonDiagnostics = o.diagnostics == "json";
    runner = backend::jit::openJitSession(*c.placed, devices, c.diags, std::cout, jo);
    if (!runner)
      return 1;
    bool compiled = runner->compile();
    c.diags.flush(); // its warnings before the program's output
    c.phase("codegen", t0);
    t0 = Clock::now();
    std::vector<Tensor> globals;
    if (!compiled || !backend::materializeGlobals(*c.placed, c.diags, std::cout, globals) ||
        !runner->load(globals))
      return 1;
  } else {
    interp = std::make_unique<backend::Interpreter>(*c.placed, c.diags, std::cout, &devices);
    if (!interp->loadGlobals())
      return 1;
  }
  c.phase("load", t0);
  auto callEntry = [&] {
    return jit ? runner->call(entryName, args) : interp->call(entryName, args);
  };
  t0 = Clock::now();
  auto results = callEntry();
  c.phase("run", t0);
  if (!results)
    return 1;
  if (o.repeat > 0) {
    std::vector<double> times;
    for (int i = 0; i < o.repeat; ++i) {
      auto s = Clock::now();
      if (!callEntry())
        return 1;
      times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
    }
    std::sort(times.begin(), times.end());
    std::cerr << "repeat " << o.repeat << ": min " << times.front() << " us, median "
              << times[times.size() / 2] << " us per call\n";
  }
  if (!o.outDir.empty()) {
    std::string err;
    if (!makeDirs(o.outDir, err)) {
      c.diags.error("E0407", {}, "cannot create output directory: " + err);
      return 1;
    }
    for (size_t i = 0; i < results->size(); ++i) {
      std::string path = o.outDir + "/" + std::to_string(i) + ".npy";
      if (refuseOverwrite(c, path))
        return 1;
      if (auto e = backend::writeNpy(path, (*results)[i])) {
        c.diags.error("E0407", {}, "cannot write " + path + ": " + llvm::toString(std::move(e)));
        return 1;
      }
    }
  }
  if (!o.quiet)
    for (size_t i = 0; i < results->size(); ++i) {
      const Tensor &t = (*results)[i];
      std::cout << "result " << i << ": " << t.type().str() << "\n"
                << backend::formatTensor(t) << "\n";
    }
  if (o.timings && runner) {
    const backend::jit::JitStats &s = runner->stats();
    std::cerr << "jit: " << s.functions << " functions (" << s.compiled << " compiled, "
              << s.cached << " from the cache), " << s.fusions << " fused loops, llvm="
              << s.codegenMs << " ms; intermediates: peak " << s.peakIntermediateBytes
              << " bytes (" << s.unsharedIntermediateBytes << " without reuse)";
    for (auto &[d, bytes] : s.deviceIntermediateBytes)
      std::cerr << ", " << c.placed->devices[size_t(d)].name << " " << bytes << " bytes";
    std::cerr << "\n";
  }
  return exitCode(c);
}

int checkCommand(const DriverOptions &o) {
  Compilation &c = Compilation::create(o);
  Finish finish{c};
  if (!c.runThrough("lower"))
    return 1;
  bool weightsOk = c.validateWeights();
  if (!weightsOk || !c.runThrough("partition"))
    return 1;
  c.diags.flush();
  size_t fns = c.placed->functions.size();
  std::cout << (o.file == "-" ? frontend::SourceManager::kStdinName : o.file) << ": ok (" << fns
            << " function" << (fns == 1 ? "" : "s") << ", " << c.placed->globals.size()
            << " globals, " << c.placed->devices.size() << " devices)\n";
  if (c.placed->findFunction(c.entryName()))
    std::cout << passes::formatPlacementSummary(
        passes::summarizePlacement(*c.placed, c.entryName()));
  return exitCode(c);
}

int irCommand(const DriverOptions &o) {
  Compilation &c = Compilation::create(o);
  Finish finish{c};
  if (!c.runThrough(o.after.empty() ? "lower" : o.after))
    return 1;
  ir::printModule(*c.current, std::cout);
  return exitCode(c);
}

int graphCommand(const DriverOptions &o) {
  Compilation &c = Compilation::create(o);
  Finish finish{c};
  if (!c.runThrough("partition"))
    return 1;
  std::string entry = c.entryName();
  std::string err;
  ir::Location loc;
  loc.file = ir::internFile(o.output);
  if (!makeParentDirs(o.output, err)) {
    c.diags.error("E0407", loc, "cannot create the graph's folder: " + err);
    return 1;
  }
  if (refuseOverwrite(c, o.output))
    return 1;
  if (!writeGraph(*c.placed, entry, o.output, err)) {
    c.diags.error("E0407", loc, "cannot write the graph: " + err);
    return 1;
  }
  return exitCode(c);
}

int mpcCertsCommand(const DriverOptions &o) {
  ir::Location loc;
  loc.file = ir::internFile(o.output);
  auto report = [&](const std::string &code, const std::string &msg) {
    ir::Diagnostic d;
    d.code = code;
    d.loc = loc;
    d.message = msg;
    std::cerr << ir::diagnosticLine(d);
    return 1;
  };
  // Keys are never replaced by accident: another run may be using them.
  if (!o.force) {
    std::string existing;
    for (const std::string f : {"ca.pem", "party0.pem", "party0.key", "party1.pem", "party1.key",
                                "party2.pem", "party2.key"})
      if (access((o.output + "/" + f).c_str(), F_OK) == 0)
        existing += (existing.empty() ? "" : ", ") + f;
    if (!existing.empty())
      return report("E0408", "refusing to replace " + existing + " in '" + o.output +
                                 "' (--force replaces them)");
  }
  std::string err;
  if (!backend::mpc::writeTestCertificates(o.output, err))
    return report("E0407", "cannot write the certificates: " + err);
  std::cout << "wrote " << o.output << "/ca.pem and party0..2.pem/.key (a test authority: give "
            << "each party its own key and ca.pem)\n";
  return 0;
}

namespace {
void reportInternalError(const DriverOptions &o, const std::string &what) {
  ir::Diagnostic d;
  d.code = "E0900";
  d.loc.file = ir::internFile(o.file);
  d.message = "internal error: " + what + " (please report this with the program)";
  std::cerr << (o.diagnostics == "json" ? ir::diagnosticJson(d) + "\n" : ir::diagnosticLine(d));
}
} // namespace

int withLargeStack(int (*fn)(const DriverOptions &), const DriverOptions &o) {
  struct Args {
    int (*fn)(const DriverOptions &);
    const DriverOptions *o;
    int result;
  } args{fn, &o, 1};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(1) << 30); // reserved, not committed
  pthread_t th;
  auto entry = [](void *p) -> void * {
    auto *a = static_cast<Args *>(p);
    // Library code reports errors as diagnostics; an exception reaching
    // here is a bug, reported as such instead of an abort.
    try {
      a->result = a->fn(*a->o);
    } catch (const std::exception &e) {
      reportInternalError(*a->o, e.what());
      a->result = 1;
    } catch (...) {
      reportInternalError(*a->o, "unknown exception");
      a->result = 1;
    }
    return nullptr;
  };
  if (pthread_create(&th, &attr, entry, &args) != 0) {
    pthread_attr_destroy(&attr);
    return fn(o);
  }
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  return args.result;
}

} // namespace mdl::tools
