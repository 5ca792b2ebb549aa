// The JIT as the rest of mdl sees it: a session that compiles a module,
// loads it and calls its functions.
//
// The JIT and what it needs (LLVM's optimizer and code generators, oneDNN)
// live in a shared library of their own, libmdl_jit.so beside the mdl
// binary, loaded the first time a program runs on the JIT. Commands that
// never generate code (check, ir, graph, import, run --backend=interp) then
// never map LLVM's code generators: they start faster and stay small (the
// static initializers of LLVM's libraries alone make about 15 MB resident).
// The library holds its own copy of every mdl library it uses, hidden, and
// exports one C function; objects cross the boundary only through this
// interface and the plain types it names (the IR, tensors, diagnostics),
// which both sides compile from the same headers.
#pragma once

#include "backend/runtime/Devices.h"
#include "backend/runtime/Tensor.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace mdl::backend::jit {

struct JitOptions {
  std::string cacheDir; // empty: the in-memory cache only
  int optLevel = 2;     // LLVM optimization level, 0..3
  /// How an error inside LLVM that ends the process is reported: the
  /// program's file and the diagnostic format (text or JSON lines).
  std::string sourceFile;
  bool jsonDiagnostics = false;
  /// The flag that stops running code at the next loop iteration (E0409;
  /// backend/runtime/Interrupt.h), or null when nothing will set it.
  const std::atomic<int32_t> *interrupt = nullptr;
};

struct JitStats {
  double codegenMs = 0;  // LLVM IR generation, optimization, object emission
  double linkMs = 0;     // linking objects and resolving symbols
  int functions = 0;     // function instances
  int compiled = 0;      // ... compiled now
  int cached = 0;        // ... taken from the cache (memory or disk)
  int fusions = 0;       // loop kernels generated
  int inPlaceUpdates = 0; // updates computed in their operand's buffer (BufferPlan.h)
  /// Fusions calling shared kernels, the distinct kernels, and the kernel
  /// units they are compiled in (KernelUnits.h): compiled now, or cached.
  int sharedFusions = 0;
  int sharedKernels = 0;
  int kernelUnits = 0, kernelUnitsCompiled = 0, kernelUnitsCached = 0;
  /// Host arena bytes of all function instances (intermediates after
  /// sharing), and what they would take without sharing.
  int64_t peakIntermediateBytes = 0;
  int64_t unsharedIntermediateBytes = 0;
  /// Device arena bytes, per module device.
  std::map<int, int64_t> deviceIntermediateBytes;
};

class JitSession {
public:
  virtual ~JitSession() = default;
  /// Compiles every function instance (or takes it from the cache).
  /// Reports E0900 and returns false if LLVM fails.
  virtual bool compile() = 0;
  /// Takes the globals' values (in module order, in host memory: the
  /// driver materializes them, see Interpreter.h), copies them to the
  /// devices that read them, allocates arenas, prepares segments, links.
  virtual bool load(const std::vector<Tensor> &globals) = 0;
  /// Calls a function; results come back in host memory. nullopt after a
  /// run-time error was reported.
  virtual std::optional<std::vector<Tensor>> call(const std::string &fn,
                                                  const std::vector<Tensor> &args) = 0;
  virtual const JitStats &stats() const = 0;
};

/// Changes whenever this interface or a type it names changes layout: the
/// loader refuses a library built for another.
constexpr int kJitInterfaceVersion = 5; // 5: JitStats: in-place updates, shared kernels

/// The library's one export (C linkage): a session for `m` (partitioned,
/// canonicalized and fused; it and `devices` must outlive the session),
/// printing to `out`. `version` is the caller's kJitInterfaceVersion; a
/// library built for another returns null.
using JitCreateFn = JitSession *(*)(int version, const ir::Module &m, DeviceSet &devices,
                                    ir::DiagnosticEngine &diags, std::ostream &out,
                                    const JitOptions &opts);
#define MDL_JIT_CREATE_SYMBOL "mdl_jit_create_session"

/// Loads the JIT library ($MDL_JIT_LIBRARY, else libmdl_jit.so beside the
/// binary; once per process) and opens a session. Reports E0900, saying
/// where it looked and what to do, when the library is missing or does not
/// match, and returns null.
std::unique_ptr<JitSession> openJitSession(const ir::Module &m, DeviceSet &devices,
                                           ir::DiagnosticEngine &diags, std::ostream &out,
                                           const JitOptions &opts);

} // namespace mdl::backend::jit
