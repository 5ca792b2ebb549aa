// What libmdl_hip.so exports to the hip kind (HipKind.cpp): the GPU code
// generator (the compile-time half's heavy part, LLVM's AMDGPU, NVPTX and
// SPIR back ends) and the GPU runtime (the run-time half: HIP, the CUDA
// driver or OpenCL, each opened with dlopen). The library is loaded on
// first use, like libmdl_jit.so, so that `mdl` never maps LLVM's GPU back
// ends unless a hip segment is compiled, and runs where no GPU software is
// installed. It is built from the same headers as mdl (the IR crosses the
// boundary as C++ objects); the version refuses a library of another build.
#pragma once

#include "backend/runtime/DeviceInterface.h"
#include "ir/IR.h"

#include <string>

namespace mdl::backend::hip {

inline constexpr unsigned kHipPluginVersion = 1;

struct HipPlugin {
  unsigned version; // kHipPluginVersion
  /// Compiles a hip `segment` (its region: plain operations, static types;
  /// the generator canonicalizes and fuses a copy itself) for `target`
  /// ("gfx90a", "sm_90", "spir64", ...) into the bytes of a GpuProgram
  /// (GpuProgram::serialize). False with `error` when it cannot.
  bool (*compile)(const ir::Operation &segment, const std::string &target, std::string &program,
                  std::string &error);
  /// The GPU runtime: one mdl_device_interface over whichever GPU API its
  /// devices open on (the run argument `hip_runtime`: auto, hip, cuda or
  /// opencl).
  const mdl_device_interface *(*runtime)();
};

/// The symbol libmdl_hip.so exports: `const HipPlugin *mdl_hip_plugin()`.
inline constexpr const char *kHipPluginSymbol = "mdl_hip_plugin";
using HipPluginFn = const HipPlugin *(*)();

} // namespace mdl::backend::hip
