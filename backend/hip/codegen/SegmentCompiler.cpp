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

#include <exception>

namespace mdl::backend::hip {

namespace {

bool compile(const ir::Operation &segment, const std::string &targetName,
             std::string &bytes, std::string &error) {
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

bool compileSegment(const ir::Operation &segment, const std::string &target,
                    std::string &program, std::string &error) {
  // Nothing thrown inside (LLVM, the standard library) leaves the plugin.
  try {
    return compile(segment, target, program, error);
  } catch (const std::exception &e) {
    error =
        std::string("internal error in the GPU code generator: ") + e.what();
  } catch (...) {
    error = "internal error in the GPU code generator";
  }
  return false;
}

} // namespace mdl::backend::hip
