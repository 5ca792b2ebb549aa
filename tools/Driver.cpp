// The compilation pipeline and the run / check / ir commands.
//
// The pipeline, in order (each step can be printed with --print-ir-after
// and verified with --verify-each):
//   load (parse + imports) -> sema -> lower -> verify -> validate weights
//   -> specialize -> execute
#include "tools/Driver.h"

#include "backend/interp/Interpreter.h"
#include "backend/runtime/Weights.h"
#include "frontend/DiagnosticPrinter.h"
#include "frontend/Lower.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "ir/Printer.h"
#include "ir/passes/Specialize.h"
#include "ir/passes/Verify.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <pthread.h>
#include <sys/stat.h>

namespace mdl::tools {

using backend::Tensor;
using ir::DiagnosticEngine;
using ir::TensorType;

namespace {

using Clock = std::chrono::steady_clock;

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
  ~Compilation() {
    diags.flush();
    if (opts.timings)
      printTimings();
  }

  /// load, sema, lower, verify.
  bool frontend() {
    auto t0 = Clock::now();
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
    return afterPass("lower", *generic);
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

  bool specialize(const std::vector<TensorType> &entryArgs) {
    auto t0 = Clock::now();
    passes::SpecializeOptions so;
    if (!opts.entry.empty())
      so.entries = {opts.entry};
    so.entryArgs = entryArgs;
    specialized = passes::specialize(*generic, so, diags);
    phase("specialize", t0);
    return specialized && afterPass("specialize", *specialized);
  }

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
  std::vector<std::pair<std::string, double>> timings;
};

int exitCode(const Compilation &c) { return c.diags.hasErrors() ? 1 : 0; }

bool makeDirs(const std::string &dir, std::string &err) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty())
      continue;
    if (mkdir(cur.c_str(), 0777) != 0 && errno != EEXIST) {
      err = cur + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    err = dir + ": not a directory";
    return false;
  }
  return true;
}

/// Reads --input files and matches them to the entry's arguments (E0402).
bool readInputs(Compilation &c, const ir::Function &entry, std::vector<Tensor> &args) {
  std::vector<ir::Value *> params = entry.args();
  args.assign(params.size(), Tensor());
  bool ok = true;
  // Parameter names are not in the IR; Sema's FnItem has them.
  const frontend::FnItem *item = c.checked->fnByName.at(entry.name);
  for (const std::string &spec : c.opts.inputs) {
    size_t eq = spec.find('=');
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    int idx = -1;
    if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) {
      idx = std::stoi(name);
      if (idx >= int(params.size()))
        idx = -2;
    } else {
      for (size_t i = 0; i < item->params.size(); ++i)
        if (item->params[i].name.name == name)
          idx = int(i);
    }
    if (idx < 0) {
      std::string list;
      for (auto &p : item->params)
        list += (list.empty() ? "" : ", ") + p.name.name;
      auto &d = c.diags.error("E0402", entry.loc,
                              "--input " + name + ": '" + entry.name + "' has no argument " +
                                  (idx == -2 ? "number " : "") + name);
      d.notes.push_back({{}, list.empty() ? "it takes no arguments" : "its arguments: " + list});
      ok = false;
      continue;
    }
    auto t = backend::readNpy(file);
    if (!t) {
      c.diags.error("E0402", entry.loc, "--input " + name + ": " + llvm::toString(t.takeError()));
      ok = false;
      continue;
    }
    args[size_t(idx)] = *t;
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (!args[i].valid() && ok) {
      auto &d = c.diags.error("E0402", item->params[i].name.loc,
                              "missing input for argument '" + item->params[i].name.name +
                                  "' (" + params[i]->type.str() + ") of '" + entry.name + "'");
      d.notes.push_back({{}, "pass it with --input " + item->params[i].name.name + "=FILE.npy"});
      ok = false;
    }
  if (!ok)
    return false;
  // Check dtypes, ranks and static sizes, and bind the symbols.
  std::vector<std::pair<std::string, ir::Dim>> binding;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string err;
    if (!passes::bindSymbols({params[i]->type}, {args[i].type()}, binding, err)) {
      c.diags.error("E0402", item->params[i].name.loc,
                    "input for '" + item->params[i].name.name + "' is " + args[i].type().str() +
                        ", but '" + entry.name + "' expects " + params[i]->type.str() +
                        (err.find("symbol") != std::string::npos ? " (" + err + ")" : ""));
      ok = false;
    }
  }
  return ok;
}

} // namespace

int runCommand(const DriverOptions &o) {
  Compilation c(o);
  if (!c.frontend())
    return 1;
  std::string entryName = o.entry.empty() ? "main" : o.entry;
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
  std::vector<Tensor> args;
  if (!readInputs(c, *entry, args))
    return 1;
  std::vector<TensorType> argTypes;
  for (const Tensor &t : args)
    argTypes.push_back(t.type());
  if (!c.specialize(argTypes))
    return 1;
  auto t0 = Clock::now();
  backend::Interpreter interp(*c.specialized, c.diags, std::cout);
  if (!interp.loadGlobals())
    return 1;
  c.phase("load", t0);
  t0 = Clock::now();
  auto results = interp.call(entryName, args);
  c.phase("run", t0);
  if (!results)
    return 1;
  if (o.repeat > 0) {
    std::vector<double> times;
    for (int i = 0; i < o.repeat; ++i) {
      auto s = Clock::now();
      if (!interp.call(entryName, args))
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
  return exitCode(c);
}

int checkCommand(const DriverOptions &o) {
  Compilation c(o);
  if (!c.frontend())
    return 1;
  bool weightsOk = c.validateWeights();
  if (!c.specialize({}) || !weightsOk)
    return 1;
  size_t ops = 0;
  for (auto &f : c.specialized->functions)
    ir::walk(*f->body, [&](const ir::Operation &) { ++ops; });
  std::cout << o.file << ": ok (" << c.specialized->functions.size() << " functions, " << ops
            << " operations, " << c.specialized->globals.size() << " globals, "
            << c.specialized->devices.size() << " devices)\n";
  return exitCode(c);
}

int irCommand(const DriverOptions &o) {
  Compilation c(o);
  if (!c.frontend())
    return 1;
  if (o.after.empty() || o.after == "lower") {
    ir::printModule(*c.generic, std::cout);
    return 0;
  }
  if (o.after == "specialize") {
    if (!c.specialize({}))
      return 1;
    ir::printModule(*c.specialized, std::cout);
    return 0;
  }
  c.diags.error("E0204", {}, "unknown pass '" + o.after + "' for --after (expected: lower, specialize)");
  return 1;
}

namespace {
void reportInternalError(const DriverOptions &o, const std::string &what) {
  std::string msg = "internal error: " + what + " (please report this with the program)";
  if (o.diagnostics == "json") {
    std::string esc;
    for (char c : msg)
      esc += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    std::cerr << "{\"code\":\"E0900\",\"severity\":\"error\",\"message\":\"" << esc
              << "\",\"file\":\"" << o.file << "\",\"line\":0,\"column\":0,\"notes\":[]}\n";
  } else {
    std::cerr << o.file << ": error[E0900]: " << msg << "\n";
  }
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
