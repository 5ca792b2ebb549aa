// The state of a REPL session and what one input does to it.
//
// A session keeps its definitions as mdl source: units, each a source
// buffer (an input typed at `<repl:N>`, or a file loaded with its imports)
// with the items of it that are still live. Every input is compiled as a
// program made of the live items plus the input, through the driver's
// pipeline (Compilation, kPipeline) and the JIT (or the interpreter):
//   * definitions (device, param, const, fn, import) are checked with
//     everything else and kept when the whole program checks; an item that
//     redefines a name replaces the older one, so redefining a function
//     re-checks what calls it, and errors there reject the new definition;
//   * statements (let, on, expressions) become the body of the entry
//     function `repl.input`, whose arguments are the values bound by
//     earlier top-level lets that the input names and whose results are the
//     names it binds and the value of its last expression. The values come
//     back as tensors and are kept: a let is never computed twice.
// Functions are compiled per input in a new JIT session; the JIT's compile
// cache (keyed by each function's text) returns the objects of functions
// compiled before, and instances are named after their binding and
// placement (DriverOptions::stableInstanceNames) so that their text does
// not depend on what else an input calls. Globals are materialized once and
// kept while their definition does not change.
#pragma once

#include "backend/runtime/Tensor.h"
#include "frontend/AST.h"
#include "frontend/Sema.h"
#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"
#include "tools/Driver.h"

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mdl::tools {

class Compilation;

/// The name of the entry function an input's statements become.
inline const char *const kReplEntry = "repl.input";

class ReplSession {
public:
  /// `o` holds the command line's options (backend, diagnostics, timings,
  /// devices); results go to `out`, diagnostics to `err`.
  ReplSession(const DriverOptions &o, std::ostream &out, std::ostream &err);
  ~ReplSession();

  /// Handles one complete input: a command, definitions or statements.
  /// Returns false when it reported an error; the session is then as it
  /// was before the input.
  bool handle(const std::string &text);
  /// Loads a file's definitions (`mdl repl FILE`, `:load FILE`).
  bool loadFile(const std::string &path);
  /// After `:quit`.
  bool quitRequested() const { return quit_; }

  /// Tab completion: candidates for the word that ends `before`; sets
  /// `wordStart` to where that word starts.
  std::vector<std::string> complete(const std::string &before, size_t &wordStart) const;

  /// The REPL's commands, as `:help` lists them.
  static std::string helpText();

private:
  /// One source buffer of definitions, parsed once, with which of its
  /// items are live. Each compilation borrows the live items (see lend):
  /// Sema annotates the tree in place and redoes it on every check.
  struct Unit {
    std::shared_ptr<const frontend::SourceBuffer> buf;
    std::shared_ptr<frontend::SourceFile> ast;
    std::vector<std::string> keys; // per item: "fn:f", "value:w", "device:d", "" (import)
    std::vector<std::pair<size_t, size_t>> spans; // per item: its text in buf (for :save)
    std::vector<bool> live;                       // per item
    bool typed = false;                           // an input (`<repl:N>`), not a file
  };
  /// A value bound by a top-level `let` (or `_`).
  struct Binding {
    std::string name;
    backend::Tensor value;
  };
  /// One input's statements, compiled: the compilation and what the entry
  /// returns.
  struct Prepared;
  enum class Action { Run, Time, Type, Ir };

  // --- ReplSession.cpp: definitions and evaluation.
  bool define(const std::string &text);
  /// Reads a program (a typed input, or a file, with its imports) and adds
  /// its files as units; `typedFile` is the typed input's file, or 0.
  bool load(const std::function<std::unique_ptr<frontend::Program>(ir::DiagnosticEngine &)> &read,
            uint32_t typedFile);
  bool addUnits(std::vector<Unit> fresh, const ir::Location &where);
  bool evaluate(const std::string &text, Action action, const std::string &pass = "");
  std::unique_ptr<Prepared> prepare(const std::string &text, const std::string &last);
  bool run(Prepared &p, Action action);
  bool materializeGlobals(Compilation &c, std::vector<backend::Tensor> &values);
  std::vector<Unit> unitsOf(frontend::Program &loaded, uint32_t typedFile) const;
  /// A program of the units' live items, lent to `c` (c.program) until the
  /// returned guard gives them back.
  struct Loan {
    const std::vector<Unit> &units;
    Compilation &c;
    ~Loan();
  };
  std::unique_ptr<Loan> lend(const std::vector<Unit> &units, Compilation &c) const;
  std::unique_ptr<Compilation> compilation(DriverOptions &opts);
  const frontend::SourceBuffer &addInput(const std::string &text);
  const Binding *binding(const std::string &name) const;
  void bind(const std::string &name, backend::Tensor value);
  bool defines(const std::string &key) const;
  void printTimings(Compilation &c, double compileMs, const std::string &stats);

  // --- ReplCommands.cpp: the `:` commands.
  bool command(const std::string &text);
  bool showDevices();
  bool save(const std::string &path);
  std::string savedText(const std::string &path, std::string &error);
  bool reset();

  DriverOptions opts_;
  std::ostream &out_, &err_;
  frontend::SourceManager sm_;
  class Printer;
  std::unique_ptr<ir::DiagnosticHandler> printer_; // every input's diagnostics (a Printer)
  std::vector<Unit> units_;
  std::vector<Binding> bindings_; // in the order they were bound
  /// Materialized globals by their text (name, type, initializer).
  std::map<std::string, std::pair<std::string, backend::Tensor>> globals_;
  int inputs_ = 0;
  bool quit_ = false;
};

} // namespace mdl::tools
