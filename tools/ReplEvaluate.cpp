// Evaluating statements in the REPL (see ReplSession.h): an input becomes
// the entry function `repl.input` of a program made of the session's live
// definitions, goes through the pipeline (through specialize for :type,
// through PASS for :ir, through fuse for the JIT), runs on the JIT or the
// interpreter with the values of earlier lets as arguments, and its results
// are bound and shown. Globals are materialized once per session and kept
// by their text.
#include "tools/ReplSession.h"

#include "backend/interp/Interpreter.h"
#include "backend/jit/JitSession.h"
#include "backend/runtime/Devices.h"
#include "backend/runtime/Interrupt.h"
#include "frontend/Parser.h"
#include "ir/text/Printer.h"
#include "tools/Compilation.h"
#include "tools/LineEditor.h"
#include "tools/OutputFiles.h"
#include "tools/ReplInput.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

namespace mdl::tools {

using backend::Tensor;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// A duration for people: `12.3 ms`, `850 us`, `4.21 us`.
std::string duration(double ms) {
  char buf[32];
  if (ms >= 1)
    std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  else if (ms >= 0.1)
    std::snprintf(buf, sizeof buf, "%.0f us", ms * 1000);
  else
    std::snprintf(buf, sizeof buf, "%.2f us", ms * 1000);
  return buf;
}

/// `f32[2, 3]` as a type in source form (a let's value as an argument).
frontend::TypeNode typeNode(const ir::TensorType &t, const ir::Location &loc) {
  frontend::TypeNode n;
  n.dtype = t.dtype;
  n.hasShape = t.rank() > 0;
  n.loc = loc;
  for (const ir::Dim &d : t.dims) {
    frontend::DimNode dn;
    dn.size = d.size;
    dn.loc = loc;
    n.dims.push_back(dn);
  }
  return n;
}
} // namespace

struct ReplSession::Prepared {
  DriverOptions opts;
  std::unique_ptr<Compilation> c;
  std::vector<std::string> bound; // the names the input binds, in order
  std::vector<Tensor> args;       // earlier bindings it reads
  ir::Location loc;               // the input
  Clock::time_point start;
};

// --- Statements ----------------------------------------------------------------

std::unique_ptr<ReplSession::Prepared> ReplSession::prepare(const std::string &text,
                                                            const std::string &last) {
  const frontend::SourceBuffer &buf = addInput(text);
  auto p = std::make_unique<Prepared>();
  p->start = Clock::now();
  p->loc = {buf.fileId, 1, 1, 1};
  p->opts = opts_;
  p->opts.entry = kReplEntry;
  p->opts.stableInstanceNames = true;
  p->c = compilation(p->opts);
  ir::DiagnosticEngine &diags = p->c->diags;
  std::unique_ptr<frontend::FnItem> fn = frontend::parseStatements(buf, diags);
  p->c->phase("parse", p->start);
  if (!fn) {
    diags.flush();
    return nullptr;
  }
  // The names the input binds at its top level (inside `on` blocks too,
  // whose names stay visible after them).
  bool ok = true;
  std::vector<frontend::Ident> bound;
  std::function<void(const frontend::Block &)> collect = [&](const frontend::Block &b) {
    for (const frontend::StmtPtr &s : b.stmts) {
      if (s->kind == frontend::StmtKind::Let) {
        for (const frontend::Ident &n : static_cast<const frontend::LetStmt &>(*s).names)
          bound.push_back(n);
      } else if (s->kind == frontend::StmtKind::On) {
        collect(static_cast<const frontend::OnStmt &>(*s).body);
      } else if (s->kind == frontend::StmtKind::Return || s->kind == frontend::StmtKind::Yield) {
        diags.error("E0211", s->loc,
                    std::string("'") +
                        (s->kind == frontend::StmtKind::Return ? "return" : "yield") +
                        "' is not allowed at the top level of the REPL: the value of the last "
                        "expression is shown");
        ok = false;
      }
    }
  };
  collect(fn->body);
  for (const frontend::Ident &n : bound)
    if (defines("value:" + n.name)) {
      auto &d = diags.error("E0103", n.loc,
                            "'" + n.name +
                                "' is a global of this session; a top-level let "
                                "cannot rebind it");
      d.notes.push_back({{}, "choose another name (functions may read the global)"});
      ok = false;
    }
  if (!ok) {
    diags.flush();
    return nullptr;
  }
  for (const frontend::Ident &n : bound)
    if (std::find(p->bound.begin(), p->bound.end(), n.name) == p->bound.end())
      p->bound.push_back(n.name);

  // Arguments: the earlier bindings the input names (sorted, so that the
  // same input compiles to the same function).
  std::vector<std::string> names = identifiersOf(text);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string &n : names)
    if (const Binding *b = binding(n)) {
      frontend::FnParam param;
      param.name = {n, fn->loc};
      param.type = typeNode(b->value.type(), fn->loc);
      fn->params.push_back(std::move(param));
      p->args.push_back(b->value);
      p->c->entryArgs.push_back(b->value.type());
    }
  // Results: the bound names, then the value of the last expression.
  ir::Location retLoc = fn->body.stmts.empty() ? fn->loc : fn->body.stmts.back()->loc;
  auto ret = std::make_unique<frontend::ValuesStmt>(frontend::StmtKind::Return, retLoc);
  for (const std::string &n : p->bound)
    ret->values.push_back(std::make_unique<frontend::NameExpr>(retLoc, n));
  if (!fn->body.stmts.empty() && fn->body.stmts.back()->kind == frontend::StmtKind::Expr) {
    auto &last = static_cast<frontend::ExprStmt &>(*fn->body.stmts.back());
    ret->values.push_back(std::move(last.expr));
    fn->body.stmts.pop_back();
  }
  fn->body.stmts.push_back(std::move(ret));
  fn->name = {kReplEntry, fn->loc};

  // The program: the session's definitions, then the input.
  auto loan = lend(units_, *p->c);
  auto file = std::make_unique<frontend::SourceFile>();
  file->path = buf.path;
  file->fileId = buf.fileId;
  file->items.push_back(std::move(fn));
  p->c->program->files.push_back(std::move(file));
  if (!p->c->runThrough(last)) {
    diags.flush();
    return nullptr;
  }
  return p;
}

bool ReplSession::evaluate(const std::string &text, Action action, const std::string &pass) {
  std::string last = action == Action::Type   ? "specialize"
                     : action == Action::Ir   ? pass
                     : opts_.backend == "jit" ? "fuse"
                                              : "partition";
  std::unique_ptr<Prepared> p = prepare(text, last);
  if (!p)
    return false;
  Compilation &c = *p->c;
  if (action == Action::Ir) {
    ir::printModule(*c.current, out_);
    out_.flush();
    return true;
  }
  if (action == Action::Type) {
    const ir::Function *f = c.specialized->findFunction(kReplEntry);
    std::vector<ir::TensorType> types = f ? f->resultTypes : std::vector<ir::TensorType>();
    size_t k = std::min(p->bound.size(), types.size());
    for (size_t i = 0; i < k; ++i)
      out_ << p->bound[i] << " : " << types[i].str() << "\n";
    if (types.size() == k + 1)
      out_ << types[k].str() << "\n";
    else if (types.size() > k + 1) {
      out_ << "(";
      for (size_t i = k; i < types.size(); ++i)
        out_ << (i > k ? ", " : "") << types[i].str();
      out_ << ")\n";
    } else if (p->bound.empty())
      out_ << "()\n";
    out_.flush();
    return true;
  }
  return run(*p, action);
}

void ReplSession::printTimings(Compilation &c, double compileMs, const std::string &stats) {
  c.printTimings();
  err_ << "repl: compile " << duration(compileMs) << (stats.empty() ? "" : " (" + stats + ")")
       << "\n";
}

bool ReplSession::run(Prepared &p, Action action) {
  Compilation &c = *p.c;
  auto fail = [&] {
    setComputing(false);
    c.diags.flush();
    return false;
  };
  backend::DeviceOptions dopts;
  dopts.fallbackError = opts_.fallback == "error";
  dopts.runArgs = deviceRunArgs(opts_);
  std::string err;
  if (!backend::parseDeviceMap(opts_.deviceMap, dopts.deviceMap, err)) {
    c.diags.error("E0204", p.loc, err);
    return fail();
  }
  auto t0 = Clock::now();
  backend::DeviceSet devices;
  if (!devices.open(*c.placed, dopts, c.diags))
    return fail();
  c.phase("devices", t0);
  t0 = Clock::now();
  std::vector<Tensor> globals;
  if (!materializeGlobals(c, globals))
    return fail();
  c.phase("globals", t0);
  std::unique_ptr<backend::jit::JitSession> jit;
  std::unique_ptr<backend::Interpreter> interp;
  std::string stats;
  if (opts_.backend == "jit") {
    t0 = Clock::now();
    if (!opts_.cacheDir.empty() && !makeDirs(opts_.cacheDir, err)) {
      c.diags.error("E0407", p.loc, "cannot create the cache directory: " + err);
      return fail();
    }
    backend::jit::JitOptions jo;
    jo.cacheDir = opts_.cacheDir;
    jo.optLevel = opts_.optLevel;
    jo.sourceFile = "mdl repl";
    jo.jsonDiagnostics = opts_.diagnostics == "json";
    jo.interrupt = &backend::interruptFlag();
    jit = backend::jit::openJitSession(*c.placed, devices, c.diags, out_, jo);
    if (!jit || !jit->compile())
      return fail();
    c.diags.flush();
    c.phase("codegen", t0);
    t0 = Clock::now();
    if (!jit->load(globals))
      return fail();
    c.phase("load", t0);
    const backend::jit::JitStats &s = jit->stats();
    stats = std::to_string(s.functions) + " functions: " + std::to_string(s.compiled) +
            " compiled, " + std::to_string(s.cached) + " from the cache";
  } else {
    interp = std::make_unique<backend::Interpreter>(*c.placed, c.diags, out_, &devices);
    interp->setGlobals(std::move(globals));
  }
  double compileMs = msSince(p.start);
  auto call = [&] {
    return jit ? jit->call(kReplEntry, p.args) : interp->call(kReplEntry, p.args);
  };
  if (backend::interruptRequested()) { // Ctrl-C while compiling
    backend::reportInterrupted(c.diags, p.loc);
    return fail();
  }
  setComputing(true);
  t0 = Clock::now();
  std::optional<std::vector<Tensor>> results = call();
  double runMs = msSince(t0);
  c.phase("run", t0);
  if (!results)
    return fail();
  if (action == Action::Time) {
    // Repeated calls, until a second has passed (at least 5, at most 1000).
    std::vector<double> times = {runMs};
    auto begin = Clock::now();
    while (times.size() < 1000 && (times.size() < 5 || msSince(begin) < 1000)) {
      if (backend::interruptRequested()) { // Ctrl-C between two calls
        backend::reportInterrupted(c.diags, p.loc);
        return fail();
      }
      auto s = Clock::now();
      if (!call())
        return fail();
      times.push_back(msSince(s));
    }
    setComputing(false);
    std::sort(times.begin(), times.end());
    out_ << "compile " << duration(compileMs) << (stats.empty() ? "" : " (" + stats + ")")
         << "; run: min " << duration(times.front()) << ", median "
         << duration(times[times.size() / 2]) << " over " << times.size() << " calls\n";
    out_.flush();
    return true;
  }
  setComputing(false);
  c.diags.flush();
  size_t k = std::min(p.bound.size(), results->size());
  for (size_t i = 0; i < k; ++i) {
    bind(p.bound[i], (*results)[i]);
    out_ << p.bound[i] << " : " << (*results)[i].type().str() << "\n";
  }
  size_t values = results->size() - k;
  for (size_t i = k; i < results->size(); ++i) {
    const Tensor &t = (*results)[i];
    if (values > 1)
      out_ << "result " << i - k << ": ";
    out_ << t.type().str() << "\n" << backend::formatTensor(t) << "\n";
  }
  if (values == 1)
    bind("_", results->back());
  out_.flush();
  if (opts_.timings) {
    printTimings(c, compileMs, stats);
    err_ << "repl: run " << duration(runMs) << "\n";
  }
  return true;
}

// --- Globals -------------------------------------------------------------------

bool ReplSession::materializeGlobals(Compilation &c, std::vector<Tensor> &values) {
  const ir::Module &m = *c.placed;
  size_t n = m.globals.size();
  values.assign(n, Tensor());
  // A global's key: its text, and the keys of the globals it reads (a
  // const computed from a redefined const changes too).
  std::vector<std::string> keys(n);
  std::vector<int> state(n, 0); // 0 not yet, 1 in progress, 2 done
  ir::PrintOptions po;
  po.locations = false;
  std::function<const std::string &(size_t)> key = [&](size_t i) -> const std::string & {
    if (state[i] != 0)
      return keys[i];
    state[i] = 1;
    ir::Module one;
    one.devices = m.devices;
    one.globals.push_back(ir::cloneGlobal(m.globals[i]));
    std::string k = ir::printModule(one, po);
    ir::walk(*m.globals[i].init, [&](const ir::Operation &op) {
      if (op.kind != ir::OpKind::Global)
        return;
      int g = m.findGlobal(op.stringAttr("name"));
      if (g >= 0 && state[size_t(g)] != 1)
        k += key(size_t(g));
    });
    keys[i] = std::move(k);
    state[i] = 2;
    return keys[i];
  };
  std::vector<size_t> missing;
  bool readsGlobals = false;
  for (size_t i = 0; i < n; ++i) {
    auto it = globals_.find(key(i));
    if (it != globals_.end()) {
      values[i] = it->second.second;
      continue;
    }
    missing.push_back(i);
    ir::walk(*m.globals[i].init,
             [&](const ir::Operation &op) { readsGlobals |= op.kind == ir::OpKind::Global; });
  }
  if (missing.empty())
    return true;
  // Initializers that read other globals are computed with all of them.
  std::vector<size_t> which = missing;
  if (readsGlobals) {
    which.clear();
    for (size_t i = 0; i < n; ++i)
      which.push_back(i);
  }
  ir::Module tmp;
  tmp.devices = m.devices;
  for (size_t i : which)
    tmp.globals.push_back(ir::cloneGlobal(m.globals[i]));
  tmp.reindex();
  std::vector<Tensor> computed;
  if (!backend::materializeGlobals(tmp, c.diags, out_, computed))
    return false;
  for (size_t k = 0; k < which.size(); ++k) {
    values[which[k]] = computed[k];
    globals_[keys[which[k]]] = {m.globals[which[k]].name, computed[k]};
  }
  return true;
}

} // namespace mdl::tools
