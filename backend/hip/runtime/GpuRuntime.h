// The hip kind's run-time half: one mdl_device_interface over the GPU APIs
// (HIP, the CUDA driver, OpenCL), each opened with dlopen (GpuApi.h). The
// run argument `hip_runtime` (auto, hip, cuda, opencl; `mdl run
// --gpu-runtime`) chooses the API, `timings` prints what each device did
// when it closes (GpuStats.h).
#pragma once

#include "backend/runtime/DeviceInterface.h"

namespace mdl::backend::hip {

/// The GPU runtime (static; never null).
const mdl_device_interface *gpuRuntime();

} // namespace mdl::backend::hip
