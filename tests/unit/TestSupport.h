// Helpers shared by the unit tests: compile source text to IR and collect
// the diagnostics.
#pragma once

#include "frontend/Lower.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/SourceManager.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace mdl::test {

/// The outcome of compiling one program.
struct Compiled {
  frontend::SourceManager sm;
  ir::DiagnosticEngine diags;
  std::unique_ptr<frontend::Program> program;
  std::unique_ptr<frontend::CheckedProgram> checked;
  std::unique_ptr<ir::Module> module;

  /// "E0101@3" for each error, in order.
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const ir::Diagnostic &d : diags.all())
      out.push_back(d.code + "@" + std::to_string(d.loc.line));
    return out;
  }
  bool hasCode(const std::string &code) const {
    for (const ir::Diagnostic &d : diags.all())
      if (d.code == code)
        return true;
    return false;
  }
};

inline std::unique_ptr<Compiled> compileText(const std::string &text,
                                             const std::string &name = "test.mdl") {
  auto c = std::make_unique<Compiled>();
  const frontend::SourceBuffer *buf = c->sm.addBuffer(name, text);
  c->program = frontend::loadProgramFromBuffer(*buf, c->sm, c->diags);
  if (c->program)
    c->checked = frontend::checkProgram(*c->program, c->diags);
  if (c->checked)
    c->module = frontend::lowerProgram(*c->checked);
  c->diags.flush();
  return c;
}

inline std::unique_ptr<Compiled> compileFile(const std::string &path) {
  auto c = std::make_unique<Compiled>();
  c->program = frontend::loadProgram(path, c->sm, c->diags);
  if (c->program)
    c->checked = frontend::checkProgram(*c->program, c->diags);
  if (c->checked)
    c->module = frontend::lowerProgram(*c->checked);
  c->diags.flush();
  return c;
}

} // namespace mdl::test
