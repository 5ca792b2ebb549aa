// The REPL session (see ReplSession.h): inputs dispatched by kind, and
// definitions kept as source units (parsed once, their items lent to each
// compilation), checked with everything else before they are kept.
// Statements are evaluated in ReplEvaluate.cpp, the `:` commands are in
// ReplCommands.cpp.
#include "tools/ReplSession.h"

#include "backend/runtime/Interrupt.h"
#include "frontend/DiagnosticPrinter.h"
#include "frontend/Program.h"
#include "tools/Compilation.h"
#include "tools/ReplInput.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

namespace mdl::tools {

using backend::Tensor;
using frontend::Item;
using frontend::ItemKind;

namespace {

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

ReplSession::ReplSession(const DriverOptions &o, std::ostream &out, std::ostream &err)
    : opts_(o), out_(out), err_(err), printer_(std::make_unique<Printer>(o, out, err, sm_)) {}

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
    for (size_t i = 0; i < file->items.size(); ++i) {
      u.keys.push_back(itemKey(*file->items[i]));
      u.live.push_back(true);
      size_t end =
          i + 1 < file->items.size() ? buf.offset(file->items[i + 1]->loc) : buf.text.size();
      u.spans.push_back({buf.offset(file->items[i]->loc), end});
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
  return load([&](ir::DiagnosticEngine &diags) {
    return frontend::loadProgramFromBuffer(buf, sm_, diags);
  }, buf.fileId);
}

bool ReplSession::loadFile(const std::string &path) {
  return load([&](ir::DiagnosticEngine &diags) { return frontend::loadProgram(path, sm_, diags); },
              0);
}

bool ReplSession::load(
    const std::function<std::unique_ptr<frontend::Program>(ir::DiagnosticEngine &)> &read,
    uint32_t typedFile) {
  ir::DiagnosticEngine diags;
  diags.addHandler(printer_.get());
  std::unique_ptr<frontend::Program> loaded = read(diags);
  diags.flush();
  if (!loaded)
    return false;
  // A note about the whole input points at its first line; about a file,
  // at the file.
  ir::Location where{loaded->files.front()->fileId, typedFile ? 1u : 0u, 1, 1};
  return addUnits(unitsOf(*loaded, typedFile), where);
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

} // namespace mdl::tools
