// The hip kind's GPU code generator, end to end (see SegmentCompiler.h):
//
//   segment (plain operations)
//     -> prepareSegment   copy, trailing reductions, canonicalize, constants
//                         evaluated on the host, fuse        (SegmentPrepare)
//     -> lowerSegment     views, kernels, steps, scratch by liveness,
//                         outputs in place                   (SegmentLowering)
//     -> GpuModule::finish  math library, verify, the target's emission
//                         (AMDGPU code object / PTX / spir64 bitcode)
//     -> GpuProgram::serialize
#include "backend/hip/codegen/SegmentCompiler.h"
#include "backend/hip/GpuProgram.h"
#include "backend/hip/codegen/GpuTarget.h"
#include "backend/hip/codegen/KernelBuilder.h"
#include "backend/hip/codegen/SegmentLowering.h"
#include "backend/hip/codegen/SegmentPrepare.h"

#include "ir/Diagnostics.h"

#include <llvm/Support/ErrorHandling.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <unistd.h>

namespace mdl::backend::hip {

namespace {

// The segment being compiled, for the fatal-error handler's location.
std::atomic<const ir::Operation *> current{nullptr};

// An error LLVM's GPU back ends cannot recover from ends the process; it is
// reported as mdl reports everything (a code, the segment's line, a reason,
// exit status 1) rather than with LLVM's bare "LLVM ERROR".
void installFatalErrorHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::install_fatal_error_handler([](void *, const char *reason, bool) {
      ir::Diagnostic d;
      d.code = "E0900";
      if (const ir::Operation *seg = current.load())
        d.loc = seg->loc;
      d.message = std::string("internal error in LLVM's GPU code generation: ") + reason +
                  " (please report this; --fallback and a CPU device run without it)";
      std::string msg = ir::diagnosticLine(d);
      ssize_t ignored = ::write(2, msg.data(), msg.size());
      (void)ignored;
      std::_Exit(1);
    });
  });
}

bool compile(const ir::Operation &segment, const std::string &targetName, std::string &bytes,
             std::string &error) {
  std::unique_ptr<GpuTarget> target = makeGpuTarget(targetName, error);
  if (!target)
    return false;
  PreparedSegment prepared;
  if (!prepareSegment(segment, prepared, error))
    return false;
  GpuModule gm(*target);
  GpuProgram program;
  program.target = targetName;
  program.codeFormat = target->format();
  if (!lowerSegment(*prepared.segment, gm, program, error))
    return false;
  if (!gm.finish(program.code, error))
    return false;
  program.kernels = gm.kernels();
  bytes = program.serialize();
  return true;
}

} // namespace

bool compileSegment(const ir::Operation &segment, const std::string &target, std::string &program,
                    std::string &error) {
  installFatalErrorHandler();
  current = &segment;
  bool ok = false;
  // Nothing thrown inside (LLVM, the standard library) leaves the plugin.
  try {
    ok = compile(segment, target, program, error);
  } catch (const std::exception &e) {
    error = std::string("internal error in the GPU code generator: ") + e.what();
  } catch (...) {
    error = "internal error in the GPU code generator";
  }
  current = nullptr;
  return ok;
}

} // namespace mdl::backend::hip
