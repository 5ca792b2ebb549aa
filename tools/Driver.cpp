// The commands run, check, ir and graph: each is a short function on top
// of one Compilation (tools/Compilation.h), which runs the pipeline.
#include "tools/Driver.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"
#include "tools/Compilation.h"

#include "backend/interp/Interpreter.h"
#include "backend/jit/JitSession.h"
#include "backend/mpc/MpcKind.h"
#include "backend/runtime/Devices.h"
#include "backend/runtime/Weights.h"
#include "ir/passes/PlacementSummary.h"
#include "ir/passes/Specialize.h"
#include "ir/text/Printer.h"
#include "tools/Graph.h"
#include "tools/OutputFiles.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <pthread.h>
#include <unistd.h>

namespace mdl::tools {

using backend::Tensor;
using ir::DiagnosticEngine;
using ir::TensorType;

namespace {

using Clock = Compilation::Clock;

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

} // namespace

std::vector<backend::RunArg> deviceRunArgs(const DriverOptions &o) {
  std::vector<backend::RunArg> a;
  auto add = [&](const char *name, ir::Attribute v) { a.push_back({name, std::move(v)}); };
  if (o.timings)
    add("timings", ir::Attribute::integer(o.diagnostics == "json" ? 2 : 1));
  add("hip_runtime", ir::Attribute::string(o.gpuRuntime));
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
  dopts.runArgs = deviceRunArgs(o);
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
              << s.cached << " from the cache), " << s.fusions << " fused loops";
    if (s.kernelUnits > 0)
      std::cerr << " (" << s.sharedFusions << " in " << s.sharedKernels << " shared kernels, "
                << s.kernelUnits << " units: " << s.kernelUnitsCompiled << " compiled, "
                << s.kernelUnitsCached << " from the cache)";
    std::cerr << ", llvm="
              << s.codegenMs << " ms; intermediates: peak " << s.peakIntermediateBytes
              << " bytes (" << s.unsharedIntermediateBytes << " without reuse)";
    for (auto &[d, bytes] : s.deviceIntermediateBytes)
      std::cerr << ", " << c.placed->devices[size_t(d)].name << " " << bytes << " bytes";
    if (s.inPlaceUpdates > 0)
      std::cerr << "; " << s.inPlaceUpdates << " in-place updates";
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

namespace {
/// Prints one diagnostic about `file` outside any compilation (in the
/// format --diagnostics asks for) and returns exit status 1.
int reportAlone(const DriverOptions &o, const std::string &code, const std::string &file,
                const std::string &message) {
  ir::Diagnostic d;
  d.code = code;
  d.loc.file = ir::internFile(file);
  d.message = message;
  std::cerr << (o.diagnostics == "json" ? ir::diagnosticJson(d) + "\n" : ir::diagnosticLine(d));
  return 1;
}
} // namespace

int mpcCertsCommand(const DriverOptions &o) {
  auto report = [&](const std::string &code, const std::string &msg) {
    return reportAlone(o, code, o.output, msg);
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
  reportAlone(o, "E0900", o.file,
              "internal error: " + what + " (please report this with the program)");
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
