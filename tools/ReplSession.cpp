// The REPL session (see ReplSession.h): definitions kept as source units,
// statements compiled as the entry function `repl.input` and run on the
// JIT (or the interpreter), values bound by `let` kept as tensors, globals
// materialized once. The `:` commands are in ReplCommands.cpp.
#include "tools/ReplSession.h"

#include "backend/interp/Interpreter.h"
#include "backend/jit/JitSession.h"
#include "backend/runtime/Devices.h"
#include "backend/runtime/Interrupt.h"
#include "frontend/DiagnosticPrinter.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "ir/text/Printer.h"
#include "tools/Compilation.h"
#include "tools/LineEditor.h"
#include "tools/OutputFiles.h"
#include "tools/ReplInput.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

namespace mdl::tools {

using backend::Tensor;
using frontend::Item;
using frontend::ItemKind;
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

/// The namespace and name an item defines ("" for an import): the three
/// namespaces Sema keeps (functions, values, devices).
std::string itemKey(const Item &it) {
  switch (it.kind) {
  case ItemKind::Fn:
    return "fn:" + it.name.name;
  case ItemKind::Const:
  case ItemKind::Param:
    return "value:" + it.name.name;
  case ItemKind::Device:
    return "device:" + it.name.name;
  case ItemKind::Import:
    break;
  }
  return "";
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

/// Every input's diagnostics: printed after what the program printed so
/// far, and the CPU fallback of `hip` devices (N0803) said once per session.
class ReplSession::Printer : public ir::DiagnosticHandler {
public:
  Printer(const DriverOptions &o, std::ostream &out, std::ostream &err,
          const frontend::SourceManager &sm)
      : out_(out) {
    if (o.diagnostics == "json")
      inner_ = std::make_unique<frontend::JsonDiagnosticPrinter>(err);
    else
      inner_ = std::make_unique<frontend::TextDiagnosticPrinter>(err, sm);
  }
  void handle(const ir::Diagnostic &d) override {
    if (d.code == "N0803" && !noted_.insert(d.code).second)
      return;
    out_.flush();
    inner_->handle(d);
  }

private:
  std::ostream &out_;
  std::unique_ptr<ir::DiagnosticHandler> inner_;
  std::set<std::string> noted_;
};

struct ReplSession::Prepared {
  DriverOptions opts;
  std::unique_ptr<Compilation> c;
  std::vector<std::string> bound; // the names the input binds, in order
  std::vector<Tensor> args;       // earlier bindings it reads
  ir::Location loc;               // the input
  Clock::time_point start;
};

ReplSession::ReplSession(const DriverOptions &o, std::ostream &out, std::ostream &err)
    : opts_(o), out_(out), err_(err),
      printer_(std::make_unique<Printer>(o, out, err, sm_)) {}

ReplSession::~ReplSession() = default;

bool ReplSession::handle(const std::string &text) {
  backend::interruptFlag().store(0);
  switch (classifyInput(text)) {
  case InputKind::Empty:
    return true;
  case InputKind::Command:
    return command(text);
  case InputKind::Definitions:
    return define(text);
  case InputKind::Statements:
    return evaluate(text, Action::Run);
  }
  return true;
}

const frontend::SourceBuffer &ReplSession::addInput(const std::string &text) {
  return *sm_.addBuffer("<repl:" + std::to_string(++inputs_) + ">", text);
}

std::unique_ptr<Compilation> ReplSession::compilation(DriverOptions &opts) {
  return std::make_unique<Compilation>(opts, sm_, *printer_);
}

/// Gives the items of the program back to the units they were lent from.
ReplSession::Loan::~Loan() {
  if (!c.program)
    return;
  for (size_t k = 0; k < units.size() && k < c.program->files.size(); ++k) {
    auto &items = c.program->files[k]->items;
    size_t j = 0;
    for (size_t i = 0; i < units[k].live.size(); ++i)
      if (units[k].live[i] && j < items.size())
        units[k].ast->items[i] = std::move(items[j++]);
  }
  c.program->files.erase(c.program->files.begin(),
                         c.program->files.begin() +
                             std::min(units.size(), c.program->files.size()));
}

std::unique_ptr<ReplSession::Loan> ReplSession::lend(const std::vector<Unit> &units,
                                                     Compilation &c) const {
  c.program = std::make_unique<frontend::Program>();
  for (const Unit &u : units) {
    auto file = std::make_unique<frontend::SourceFile>();
    file->path = u.ast->path;
    file->fileId = u.ast->fileId;
    for (size_t i = 0; i < u.live.size(); ++i)
      if (u.live[i])
        file->items.push_back(std::move(u.ast->items[i]));
    c.program->files.push_back(std::move(file));
  }
  return std::unique_ptr<Loan>(new Loan{units, c});
}

std::vector<ReplSession::Unit> ReplSession::unitsOf(frontend::Program &loaded,
                                                    uint32_t typedFile) const {
  std::vector<Unit> units;
  for (auto &file : loaded.files) {
    Unit u;
    u.buf = std::make_shared<frontend::SourceBuffer>(*sm_.get(file->fileId));
    u.typed = file->fileId == typedFile;
    const frontend::SourceBuffer &buf = *u.buf;
    auto offset = [&](const ir::Location &l) {
      size_t line = std::min<size_t>(std::max<uint32_t>(l.line, 1), buf.lineStarts.size());
      return std::min(buf.text.size(), buf.lineStarts[line - 1] + (l.col ? l.col - 1 : 0));
    };
    for (size_t i = 0; i < file->items.size(); ++i) {
      u.keys.push_back(itemKey(*file->items[i]));
      u.live.push_back(true);
      size_t end = i + 1 < file->items.size() ? offset(file->items[i + 1]->loc) : buf.text.size();
      u.spans.push_back({offset(file->items[i]->loc), end});
    }
    u.ast = std::move(file);
    units.push_back(std::move(u));
  }
  return units;
}

bool ReplSession::defines(const std::string &key) const {
  for (const Unit &u : units_)
    for (size_t i = 0; i < u.keys.size(); ++i)
      if (u.live[i] && u.keys[i] == key)
        return true;
  return false;
}

const ReplSession::Binding *ReplSession::binding(const std::string &name) const {
  for (const Binding &b : bindings_)
    if (b.name == name)
      return &b;
  return nullptr;
}

void ReplSession::bind(const std::string &name, Tensor value) {
  bindings_.erase(std::remove_if(bindings_.begin(), bindings_.end(),
                                 [&](const Binding &b) { return b.name == name; }),
                  bindings_.end());
  bindings_.push_back({name, std::move(value)});
}

// --- Definitions -------------------------------------------------------------

bool ReplSession::define(const std::string &text) {
  const frontend::SourceBuffer &buf = addInput(text);
  ir::DiagnosticEngine diags;
  diags.addHandler(printer_.get());
  std::unique_ptr<frontend::Program> loaded = frontend::loadProgramFromBuffer(buf, sm_, diags);
  diags.flush();
  if (!loaded)
    return false;
  return addUnits(unitsOf(*loaded, buf.fileId), {buf.fileId, 1, 1, 1});
}

bool ReplSession::loadFile(const std::string &path) {
  ir::DiagnosticEngine diags;
  diags.addHandler(printer_.get());
  std::unique_ptr<frontend::Program> loaded = frontend::loadProgram(path, sm_, diags);
  diags.flush();
  if (!loaded)
    return false;
  ir::Location where;
  where.file = loaded->files.front()->fileId;
  return addUnits(unitsOf(*loaded, 0), where);
}

bool ReplSession::addUnits(std::vector<Unit> fresh, const ir::Location &where) {
  // The session with the new units: a file loaded again replaces its
  // unit, and an item replaces the older item of the same name.
  std::set<uint32_t> freshFiles;
  std::set<std::string> freshKeys;
  for (const Unit &u : fresh) {
    freshFiles.insert(u.buf->fileId);
    for (const std::string &k : u.keys)
      if (!k.empty())
        freshKeys.insert(k);
  }
  std::vector<Unit> next;
  std::vector<std::string> replaced;
  for (const Unit &u : units_) {
    Unit v = u;
    bool any = false;
    for (size_t i = 0; i < v.keys.size(); ++i) {
      if (!v.live[i])
        continue;
      if (freshKeys.count(v.keys[i]) &&
          std::find(replaced.begin(), replaced.end(), v.keys[i]) == replaced.end())
        replaced.push_back(v.keys[i]);
      if (freshKeys.count(v.keys[i]) || freshFiles.count(v.buf->fileId))
        v.live[i] = false;
      any |= v.live[i];
    }
    if (any)
      next.push_back(std::move(v));
  }
  for (Unit &u : fresh)
    next.push_back(std::move(u));

  // The whole program is checked as `mdl check` does (through partition):
  // what calls a redefined function is checked again with it.
  DriverOptions o = opts_;
  o.entry.clear();
  std::unique_ptr<Compilation> c = compilation(o);
  bool ok;
  {
    auto loan = lend(next, *c);
    ok = c->runThrough("lower") && c->validateWeights() && c->runThrough("partition");
  }
  c->diags.flush();
  if (!ok) {
    bool older = false;
    for (const ir::Diagnostic &d : c->diags.all())
      older |= d.severity == ir::Severity::Error && d.loc.valid() && !freshFiles.count(d.loc.file);
    if (older) {
      c->diags.note("N0804", where,
                    "the new definitions were not added: definitions made earlier do not check "
                    "with them (above)");
      c->diags.flush();
    }
    return false;
  }
  units_ = std::move(next);

  // Say what was replaced and what was checked again with it; forget the
  // values of redefined globals and the lets that a global now names.
  for (const std::string &key : replaced) {
    std::string kind = key.substr(0, key.find(':')), name = key.substr(key.find(':') + 1);
    std::string line;
    if (kind == "fn") {
      std::vector<std::string> callers;
      for (auto &f : c->generic->functions)
        ir::walk(*f->body, [&](const ir::Operation &op) {
          if (op.kind == ir::OpKind::Call && op.stringAttr("callee") == name &&
              std::find(callers.begin(), callers.end(), f->name) == callers.end())
            callers.push_back(f->name);
        });
      line = "redefined fn '" + name + "'";
      for (size_t i = 0; i < callers.size(); ++i)
        line += (i ? ", '" : "; checked again with it: '") + callers[i] + "'";
    } else {
      if (kind == "value")
        for (auto it = globals_.begin(); it != globals_.end();)
          it = it->second.first == name ? globals_.erase(it) : std::next(it);
      line = "redefined " + std::string(kind == "value" ? "global" : "device") + " '" + name + "'";
    }
    out_ << line << "\n";
  }
  for (const std::string &key : freshKeys)
    if (key.rfind("value:", 0) == 0 && binding(key.substr(6))) {
      std::string name = key.substr(6);
      bindings_.erase(std::remove_if(bindings_.begin(), bindings_.end(),
                                     [&](const Binding &b) { return b.name == name; }),
                      bindings_.end());
      out_ << "'" << name << "' now names a global; the value bound by let is dropped\n";
    }
  out_.flush();
  return true;
}

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
                    std::string("'") + (s->kind == frontend::StmtKind::Return ? "return" : "yield") +
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
                            "'" + n.name + "' is a global of this session; a top-level let "
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
  std::string last = action == Action::Type ? "specialize"
                     : action == Action::Ir ? pass
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
