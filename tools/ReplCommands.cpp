// The REPL's `:` commands (:help, :type, :ir, :devices, :load, :save,
// :reset, :time, :quit) and its tab completion. Evaluation and definitions
// are in ReplSession.cpp.
//
// `:save FILE` writes the live definitions as they were typed or loaded
// (an imported file's items inline, a relative weight path made absolute
// when FILE is in another folder), then each value bound by `let` as a
// global: a `const` with the values written out when it is small (at most
// 64 finite elements, not f64), else a `param` loaded from FILE's name plus
// `.NAME.npy`, written beside FILE. When the session defines no `main`, a
// `main` returning those values is added, so that `mdl run FILE` shows them.
#include "tools/ReplSession.h"

#include "backend/runtime/Weights.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "ir/passes/PlacementSummary.h"
#include "ir/text/Printer.h"
#include "stdlib/Registry.h"
#include "tools/Compilation.h"
#include "tools/OutputFiles.h"
#include "tools/ReplInput.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace mdl::tools {

using backend::Tensor;

namespace {

const char *const kCommands[] = {"help", "type",  "ir",   "devices", "load",
                                 "save", "reset", "time", "quit"};

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/// A file name as typed: surrounding double quotes are dropped.
std::string unquote(std::string s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
    s = s.substr(1, s.size() - 2);
  return s;
}

std::string currentDir() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

/// An absolute, resolved folder ("" resolves to the current folder).
std::string resolvedDir(const std::string &dir) {
  std::string d = dir.empty() ? "." : dir;
  char buf[PATH_MAX];
  return realpath(d.c_str(), buf) ? std::string(buf) : d;
}

/// A string literal of mdl.
std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + "\"";
}

/// The elements of a small tensor as an mdl literal, or "" when it cannot
/// be written exactly (f64, non-finite values, no elements).
std::string literalOf(const Tensor &t) {
  ir::DType dt = t.dtype();
  int64_t n = t.numElements();
  if (n == 0 || n > 64 || dt == ir::DType::F64)
    return "";
  bool isFloat = ir::isFloat(dt);
  auto element = [&](int64_t i) -> std::string {
    if (dt == ir::DType::Bool)
      return t.getInt(i) ? "true" : "false";
    if (!isFloat)
      return std::to_string(t.getInt(i));
    double v = t.getDouble(i);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos)
      s += ".0";
    return s;
  };
  for (int64_t i = 0; isFloat && i < n; ++i)
    if (!std::isfinite(t.getDouble(i)))
      return "";
  std::vector<int64_t> sizes = t.type().sizes();
  int64_t next = 0;
  std::function<std::string(size_t)> nest = [&](size_t axis) -> std::string {
    if (axis == sizes.size())
      return element(next++);
    std::string s = "[";
    for (int64_t k = 0; k < sizes[axis]; ++k)
      s += (k ? ", " : "") + nest(axis + 1);
    return s + "]";
  };
  std::string lit = nest(0);
  // A float literal is f32 and an integer literal i64: other types are casts.
  bool plain = dt == ir::DType::F32 || dt == ir::DType::I64 || dt == ir::DType::Bool;
  return plain ? lit : "cast(" + lit + ", " + ir::dtypeName(dt) + ")";
}

} // namespace

std::string ReplSession::helpText() {
  std::string passes;
  for (const std::string &p : passNames())
    passes += (passes.empty() ? "" : ", ") + p;
  return "Type definitions (device, param, const, fn, import), statements (let, on) or an\n"
         "expression, whose value is shown; `_` is the last value shown. An input goes on\n"
         "over several lines while a bracket or brace is open.\n"
         "Commands:\n"
         "  :help            this list\n"
         "  :type EXPR       the type (dtype and shape) of EXPR, without running it\n"
         "  :ir EXPR [PASS]  the IR of EXPR after PASS (default lower; " +
         passes +
         ");\n"
         "                   :ir alone: the definitions\n"
         "  :devices         the placement summary of the definitions, as `mdl check` shows it\n"
         "  :load FILE       load the definitions of FILE (and of what it imports)\n"
         "  :save FILE       save the session as a program that `mdl run` accepts\n"
         "  :reset           forget every definition and value\n"
         "  :time EXPR       compile EXPR once and run it repeatedly: min and median per call\n"
         "  :quit            leave (Ctrl-D too)\n"
         "Tab completes names, operations, keyword arguments, devices and commands.\n"
         "Ctrl-C cancels the input being typed, or stops a running computation at the next\n"
         "loop iteration (E0409); the session goes on.\n";
}

bool ReplSession::command(const std::string &text) {
  size_t b = text.find(':'), e = b + 1;
  while (e < text.size() && isIdentChar(text[e]))
    ++e;
  std::string name = text.substr(b + 1, e - b - 1);
  std::string rest = trim(text.substr(e));
  // The argument keeps its columns, so carets point where it was typed.
  std::string masked = std::string(e, ' ') + text.substr(e);
  auto usage = [&](const std::string &msg, const std::string &note) {
    const frontend::SourceBuffer &buf = addInput(text);
    ir::DiagnosticEngine diags;
    diags.addHandler(printer_.get());
    auto &d = diags.error("E0107", {buf.fileId, 1, uint32_t(b + 1), uint32_t(e - b)}, msg);
    if (!note.empty())
      d.notes.push_back({{}, note});
    diags.flush();
    return false;
  };
  if (name == "help" || name == "h") {
    out_ << helpText();
    out_.flush();
    return true;
  }
  if (name == "quit" || name == "q" || name == "exit") {
    quit_ = true;
    return true;
  }
  if (name == "type" || name == "t" || name == "time") {
    if (rest.empty())
      return usage("':" + name + "' needs an expression", "write :" + name + " EXPR");
    return evaluate(masked, name == "time" ? Action::Time : Action::Type);
  }
  if (name == "ir") {
    // A last word that names a step of the pipeline is the step.
    std::string pass = "lower";
    const std::vector<std::string> &steps = passNames();
    size_t w = masked.find_last_not_of(" \t\r\n");
    if (w != std::string::npos) {
      size_t s = w + 1;
      while (s > 0 && isIdentChar(masked[s - 1]))
        --s;
      std::string word = masked.substr(s, w + 1 - s);
      if (std::find(steps.begin(), steps.end(), word) != steps.end()) {
        pass = word;
        masked.replace(s, word.size(), std::string(word.size(), ' '));
      }
    }
    if (trim(masked).empty()) { // the definitions alone
      DriverOptions o = opts_;
      o.entry.clear();
      std::unique_ptr<Compilation> c = compilation(o);
      auto loan = lend(units_, *c);
      if (!c->runThrough(pass)) {
        c->diags.flush();
        return false;
      }
      ir::printModule(*c->current, out_);
      out_.flush();
      return true;
    }
    return evaluate(masked, Action::Ir, pass);
  }
  if (name == "devices")
    return showDevices();
  if (name == "load" || name == "save") {
    std::string file = unquote(rest);
    if (file.empty())
      return usage("':" + name + "' needs a file name", "write :" + name + " FILE.mdl");
    return name == "load" ? loadFile(file) : save(file);
  }
  if (name == "reset")
    return reset();
  std::vector<std::string> all(std::begin(kCommands), std::end(kCommands));
  std::string close = frontend::closestName(name, all);
  std::string list;
  for (const std::string &c : all)
    list += (list.empty() ? ":" : ", :") + c;
  return usage("unknown command ':" + name + "'" +
                   (close.empty() ? "" : " (did you mean ':" + close + "'?)"),
               "the commands: " + list + " (:help says what they do)");
}

bool ReplSession::showDevices() {
  DriverOptions o = opts_;
  o.entry.clear();
  std::unique_ptr<Compilation> c = compilation(o);
  auto loan = lend(units_, *c);
  if (!c->runThrough("partition")) {
    c->diags.flush();
    return false;
  }
  c->diags.flush();
  const ir::Module &m = *c->placed;
  size_t fns = c->generic->functions.size();
  out_ << "session: ok (" << fns << " function" << (fns == 1 ? "" : "s") << ", " << m.globals.size()
       << " globals, " << m.devices.size() << " devices)\n";
  // The summary of `main`, else of the last function nothing calls.
  std::string entry = m.findFunction("main") ? "main" : "";
  if (entry.empty()) {
    std::vector<const ir::Function *> entries = stdlib::uncalledFunctions(m);
    if (!entries.empty())
      entry = entries.back()->name;
  }
  std::string summary = passes::formatPlacementSummary(passes::summarizePlacement(m, entry));
  if (entry.empty())
    summary = "placement summary (no functions):" + summary.substr(summary.find('\n'));
  out_ << summary;
  out_.flush();
  return true;
}

bool ReplSession::reset() {
  units_.clear();
  bindings_.clear();
  globals_.clear();
  out_ << "session reset: no definitions, no values\n";
  out_.flush();
  return true;
}

bool ReplSession::save(const std::string &path) {
  ir::DiagnosticEngine diags;
  diags.addHandler(printer_.get());
  ir::Location loc;
  loc.file = ir::internFile(path);
  // Never over a file the session was loaded from (its definitions may
  // have been replaced since).
  std::vector<std::string> inputs;
  for (const Unit &u : units_)
    if (!u.typed)
      inputs.push_back(u.buf->path);
  std::string which, error;
  if (overwritesInput(path, inputs, which)) {
    auto &d = diags.error("E0408", loc,
                          "refusing to write '" + path +
                              "': the session loaded its definitions from '" + which + "'");
    d.notes.push_back({{}, "save the session under another name"});
    diags.flush();
    return false;
  }
  // A device, a pipe or a folder is never replaced by the saved file.
  struct stat st;
  std::string text;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    error = "it exists and is not a regular file";
  else if (!makeParentDirs(path, error))
    error = "cannot create its folder: " + error;
  else
    text = savedText(path, error);
  std::string tmp = path + ".tmp";
  if (error.empty()) {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.close();
    if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      error = "cannot write it";
    }
  }
  if (!error.empty()) {
    diags.error("E0407", loc, "cannot save the session to '" + path + "': " + error);
    diags.flush();
    return false;
  }
  out_ << "saved to " << path << "\n";
  out_.flush();
  return true;
}

std::string ReplSession::savedText(const std::string &path, std::string &error) {
  std::ostringstream os;
  os << "# An mdl repl session, saved with :save.\n";
  std::string targetDir = resolvedDir(dirOf(path));
  std::string cwd = currentDir();
  for (const Unit &u : units_) {
    const frontend::SourceBuffer &buf = *u.buf;
    // Weight paths are relative to the file that declares the param: for
    // a typed input, the current folder.
    std::string base = u.typed ? cwd + "/" : dirOf(buf.path);
    bool rebase = resolvedDir(base) != targetDir;
    for (size_t i = 0; i < u.live.size(); ++i) {
      if (!u.live[i] || u.ast->items[i]->kind == frontend::ItemKind::Import)
        continue;
      const frontend::Item &item = *u.ast->items[i];
      auto [begin, end] = u.spans[i];
      std::string text = buf.text.substr(begin, end - begin);
      if (rebase && item.kind == frontend::ItemKind::Param) {
        auto &p = static_cast<const frontend::ParamItem &>(item);
        if (p.init && p.init->kind == frontend::ExprKind::Call) {
          auto &call = static_cast<const frontend::CallExpr &>(*p.init);
          if (call.callee.name == "load" && !call.args.empty() &&
              call.args[0].value->kind == frontend::ExprKind::StringLit) {
            auto &lit = static_cast<const frontend::StringLit &>(*call.args[0].value);
            size_t at = buf.offset(lit.loc);
            if (!lit.value.empty() && lit.value[0] != '/' && at >= begin && at < end) {
              std::string abs = base + lit.value;
              text.replace(at - begin, std::min<size_t>(lit.loc.len, end - at), quoted(abs));
            }
          }
        }
      }
      while (!text.empty() &&
             (std::isspace(static_cast<unsigned char>(text.back())) || text.back() == ';'))
        text.pop_back();
      os << "\n" << text << "\n";
    }
  }
  // Values bound by let become globals.
  std::string stem = path.size() > 4 && path.compare(path.size() - 4, 4, ".mdl") == 0
                         ? path.substr(0, path.size() - 4)
                         : path;
  std::vector<std::string> saved;
  for (const Binding &b : bindings_) {
    if (b.name == "_")
      continue;
    std::string lit = literalOf(b.value);
    if (saved.empty())
      os << "\n# Values bound by let in the session.\n";
    if (!lit.empty()) {
      os << "const " << b.name << " = " << lit << "\n";
    } else {
      std::string npy = stem + "." + b.name + ".npy";
      if (auto e = backend::writeNpy(npy, b.value)) {
        error = "cannot write " + npy + ": " + llvm::toString(std::move(e));
        return "";
      }
      size_t slash = npy.rfind('/');
      os << "param " << b.name << " : " << b.value.type().str() << " = load("
         << quoted(slash == std::string::npos ? npy : npy.substr(slash + 1)) << ")\n";
    }
    saved.push_back(b.name);
  }
  if (!saved.empty() && !defines("fn:main")) {
    os << "\nfn main() {\n  return ";
    for (size_t i = 0; i < saved.size(); ++i)
      os << (i ? ", " : "") << saved[i];
    os << "\n}\n";
  }
  return os.str();
}

std::vector<std::string> ReplSession::complete(const std::string &before, size_t &wordStart) const {
  size_t i = before.size();
  while (i > 0 && isIdentChar(before[i - 1]))
    --i;
  wordStart = i;
  std::string word = before.substr(i);
  std::vector<std::string> out;
  auto add = [&](const std::string &c) {
    if (c.size() >= word.size() && c.compare(0, word.size(), word) == 0)
      out.push_back(c);
  };
  size_t first = before.find_first_not_of(" \t");
  if (first != std::string::npos && before[first] == ':') {
    if (i == first + 1) { // the command's name
      for (const char *c : kCommands)
        add(c);
      return out;
    }
    std::string cmd = before.substr(first + 1, before.find_first_of(" \t", first) - first - 1);
    if (cmd == "load" || cmd == "save")
      return out; // file names: not completed
  }
  std::vector<std::string> devices;
  for (const Unit &u : units_)
    for (size_t k = 0; k < u.keys.size(); ++k)
      if (u.live[k] && u.keys[k].rfind("device:", 0) == 0)
        devices.push_back(u.keys[k].substr(7));
  // The word before: after `on`, a device.
  size_t j = i;
  while (j > 0 && std::isspace(static_cast<unsigned char>(before[j - 1])))
    --j;
  size_t pb = j;
  while (pb > 0 && isIdentChar(before[pb - 1]))
    --pb;
  if (before.substr(pb, j - pb) == "on") {
    for (const std::string &d : devices)
      add(d);
    return out;
  }
  // Inside a call of an operation: its keyword arguments.
  int depth = 0;
  std::string callee;
  for (size_t k = i; k-- > 0;) {
    char c = before[k];
    if (c == ')' || c == ']')
      ++depth;
    else if ((c == '(' || c == '[') && depth > 0)
      --depth;
    else if (c == '[')
      break;
    else if (c == '(') {
      size_t ce = k;
      while (ce > 0 && std::isspace(static_cast<unsigned char>(before[ce - 1])))
        --ce;
      size_t cb = ce;
      while (cb > 0 && isIdentChar(before[cb - 1]))
        --cb;
      callee = before.substr(cb, ce - cb);
      break;
    }
  }
  if (const stdlib::OpInfo *op = callee.empty() ? nullptr : stdlib::lookupCallable(callee)) {
    for (const stdlib::ParamSpec &p : op->params)
      if (p.kind != stdlib::ParamKind::Tensor && p.kind != stdlib::ParamKind::TensorList &&
          p.kind != stdlib::ParamKind::Variadic)
        add(std::string(p.name) + " = ");
    if (callee == "to")
      for (const std::string &d : devices)
        add(d);
  }
  if (!word.empty()) {
    for (const Unit &u : units_)
      for (size_t k = 0; k < u.keys.size(); ++k)
        if (u.live[k] && !u.keys[k].empty())
          add(u.keys[k].substr(u.keys[k].find(':') + 1));
    for (const Binding &b : bindings_)
      add(b.name);
    for (const std::string &n : stdlib::callableNames())
      add(n);
    for (const char *k :
         {"let",  "fn",  "device", "param", "const", "import", "return", "on",    "if",
          "else", "for", "while",  "in",    "carry", "yield",  "true",   "false", "bool",
          "i8",   "u8",  "i32",    "i64",   "f16",   "bf16",   "f32",    "f64"})
      add(k);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

} // namespace mdl::tools
