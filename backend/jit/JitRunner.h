// The JIT backend: compiles each function instance of a partitioned (and
// fused) module into native host code with LLVM ORC, then runs it.
//
// compile() builds one LLVM module per function instance (the host program
// plus the loop kernels of its small fusions) and one per kernel unit (the
// shared kernels of the large fusions, KernelUnits.h), optimizes them for
// the host CPU on all cores and adds the objects to the JIT; objects are
// looked up first in the compile cache (memory, and DIR/KEY.o with a cache
// directory), keyed by a hash of the function's IR, the devices' memory and
// segment handling, and the target (a unit: of its kernels and the target). load() takes the globals' values, allocates each function's
// arenas (the buffer plan, BufferPlan.h), has each device that runs its own
// segments compile and load them, and defines the per-run symbols the
// objects refer to. call() runs
// a function like Interpreter::call: arguments and results in host memory.
#pragma once

#include "backend/jit/JitSession.h"
#include "backend/runtime/Devices.h"
#include "backend/runtime/Tensor.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace mdl::backend::jit {

class JitRunner {
public:
  /// `m` (partitioned, canonicalized and fused) and `devices` must outlive
  /// the runner; `out` receives the output of `print`.
  JitRunner(const ir::Module &m, DeviceSet &devices, ir::DiagnosticEngine &diags,
            std::ostream &out, JitOptions opts = {});
  ~JitRunner();
  JitRunner(const JitRunner &) = delete;
  JitRunner &operator=(const JitRunner &) = delete;

  /// Compiles every function instance (or takes it from the cache).
  /// Reports E0900 and returns false if LLVM fails.
  bool compile();
  /// Takes the globals' values (see JitSession::load), allocates arenas,
  /// prepares segments, links.
  bool load(const std::vector<Tensor> &globals);
  /// Calls a function; results come back in host memory. nullopt after a
  /// run-time error was reported.
  std::optional<std::vector<Tensor>> call(const std::string &fn, const std::vector<Tensor> &args);

  const JitStats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reads `mdl_jit`'s one-time LLVM setup (native target); safe to call often.
void initializeJit();

} // namespace mdl::backend::jit
