// The `hip` device kind: GPUs numbered by ordinal. Both of its heavy halves
// live in libmdl_hip.so (beside mdl or in lib/mdl, or $MDL_HIP_LIBRARY),
// loaded on first use (HipPlugin.h): the compile-time half turns a segment
// into a GPU program for the target its device's runtime names, the
// run-time half opens GPUs through HIP, the CUDA driver or OpenCL. What
// stays in mdl is the descriptor, the operations the kind runs (GpuOps.h)
// and the loader. Without the library or without a GPU, hip devices fall
// back to the host kind (the CPU) with a note (N0803).
#pragma once

namespace mdl::backend::hip {

/// Registers the hip kind (from the tool's main).
bool registerHipKind();

} // namespace mdl::backend::hip
