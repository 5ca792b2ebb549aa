// The reference interpreter: executes IR operation by operation. Loops run
// as loops, calls as calls; globals are materialized once, at load time, by
// running their initializer regions (and copied once to each device that
// reads them).
//
// On a partitioned program it is the host program: each segment is compiled
// by its device's compile-time half and run by its runtime (load, run),
// data moves between devices with copy in/out, and conditions and results
// are read back to the host. Without devices (global initializers, tests) it runs every
// operation on the CPU kernels directly. It is the oracle the JIT is
// compared against, so it favours plainness over speed.
#pragma once

#include "backend/runtime/Devices.h"
#include "backend/runtime/Tensor.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mdl::backend {

/// Every global of a placed module computed once, at load time, by the
/// reference interpreter (weights mapped, initializers run; the functions
/// they apply, such as an HLO reducer, unfused first), for backends that
/// take globals as values (the JIT).
bool materializeGlobals(const ir::Module &m, ir::DiagnosticEngine &diags, std::ostream &out,
                        std::vector<Tensor> &values);

class Interpreter {
public:
  /// `out` receives the output of `print`. `devices` (optional) are the
  /// opened devices of a partitioned module.
  Interpreter(const ir::Module &m, ir::DiagnosticEngine &diags, std::ostream &out,
              DeviceSet *devices = nullptr);
  ~Interpreter();

  /// Materializes every global (loads weights, runs initializers). Reports
  /// E0401 for weight files that are missing or do not match.
  bool loadGlobals();
  /// Takes every global's value (in module order, in host memory) instead
  /// of computing them: the REPL materializes globals once per session.
  void setGlobals(std::vector<Tensor> values) {
    globals_ = std::move(values);
    globalsLoaded_ = true;
  }

  /// Calls a function; its results come back in host memory. nullopt after
  /// a run-time error was reported.
  std::optional<std::vector<Tensor>> call(const std::string &fn,
                                          const std::vector<Tensor> &args);

private:
  using Frame = std::unordered_map<const ir::Value *, Tensor>;
  bool runRegion(const ir::Region &r, Frame &frame, std::vector<Tensor> &terminatorValues);
  bool runOp(const ir::Operation &op, Frame &frame);
  bool runSegment(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out);
  bool move(const ir::Location &loc, const Tensor &src, int from, int to, Tensor &out);
  bool callFunction(const ir::Function &f, const std::vector<Tensor> &args,
                    std::vector<Tensor> &results);
  void bindRegion(const ir::Region &r, const std::vector<Tensor> &args, Frame &frame);
  bool fail(const std::string &code, const ir::Location &loc, const std::string &msg);
  /// A copy of `t` (on device `d`, -1 for the host) readable by the host.
  bool toHost(const Tensor &t, int d, Tensor &out, const ir::Location &loc);
  /// Device memory for a tensor of type `t` on device `d`.
  bool allocate(int d, const ir::TensorType &t, Tensor &out, const ir::Location &loc);
  bool globalOn(int g, int d, Tensor &out, const ir::Location &loc);

  const ir::Module &m_;
  ir::DiagnosticEngine &diags_;
  std::ostream &out_;
  DeviceSet *devices_;
  std::vector<Tensor> globals_;
  std::map<std::pair<int, int>, Tensor> globalOnDevice_;
  /// A segment compiled by its device's compile-time half and loaded on it.
  std::unordered_map<const ir::Operation *, LoadedSegment> prepared_;
  /// Per region: the values to release after each of its operations.
  std::unordered_map<const ir::Region *, std::vector<std::vector<const ir::Value *>>> deadAfter_;
  bool globalsLoaded_ = false;
  int depth_ = 0;
};

} // namespace mdl::backend
