// The `cpu` device kind, both halves: its compile-time half turns a segment
// into a kernel program (the CPU kernel of each operation, in order; JIT
// backends may compile the segment into host code instead), and its
// run-time half is host memory plus an executor of kernel programs, behind
// the C device interface, so the host program drives it exactly as it
// drives any other device. It is the host kind: devices that fall back, and
// programs that declare no device, run on it.
#pragma once

#include "backend/runtime/DeviceBackend.h"

#include <memory>
#include <string>

namespace mdl::backend::cpu {

/// Registers the cpu kind (from the tool's main).
bool registerCpuKind();

/// The artifact format of kernel programs ("cpu-kernels"): any kind whose
/// runtime executes CPU kernels (the CPU, a test device) can run one.
extern const char *const kKernelProgramFormat;

/// Compiles a segment into a kernel program.
std::unique_ptr<Artifact> compileKernelProgram(const ir::Operation &segment, std::string &error);

/// Runs a kernel program on tensors whose data are the given buffers
/// (inputs read, outputs written). An error names "LINE:COL: " first.
bool runKernelProgram(const mdl_artifact &program, const mdl_buffer *inputs, uint32_t nIn,
                      const mdl_buffer *outputs, uint32_t nOut, std::string &error);

} // namespace mdl::backend::cpu
