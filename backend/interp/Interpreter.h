// The reference interpreter: executes specialized IR operation by operation
// on the CPU kernels. Loops run as loops, calls as calls; globals are
// materialized once, at load time, by running their initializer regions.
//
// It is the oracle the JIT is compared against, so it favours plainness
// over speed.
#pragma once

#include "backend/runtime/Tensor.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mdl::backend {

class Interpreter {
public:
  /// `out` receives the output of `print`.
  Interpreter(const ir::Module &m, ir::DiagnosticEngine &diags, std::ostream &out);

  /// Materializes every global (loads weights, runs initializers). Reports
  /// E0401 for weight files that are missing or do not match.
  bool loadGlobals();

  /// Calls a function; nullopt after a run-time error was reported.
  std::optional<std::vector<Tensor>> call(const std::string &fn,
                                          const std::vector<Tensor> &args);

private:
  using Frame = std::unordered_map<const ir::Value *, Tensor>;
  bool runRegion(const ir::Region &r, Frame &frame, std::vector<Tensor> &terminatorValues);
  bool runOp(const ir::Operation &op, Frame &frame);
  bool callFunction(const ir::Function &f, const std::vector<Tensor> &args,
                    std::vector<Tensor> &results);
  bool bindRegion(const ir::Region &r, const std::vector<Tensor> &args, Frame &frame);
  bool fail(const std::string &code, const ir::Location &loc, const std::string &msg);

  const ir::Module &m_;
  ir::DiagnosticEngine &diags_;
  std::ostream &out_;
  std::vector<Tensor> globals_;
  bool globalsLoaded_ = false;
  int depth_ = 0;
};

} // namespace mdl::backend
