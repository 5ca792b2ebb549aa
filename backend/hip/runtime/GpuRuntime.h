// The hip kind's run-time half: one mdl_device_interface over the GPU APIs
// (HIP, the CUDA driver, OpenCL), each opened with dlopen.
#pragma once

#include "backend/runtime/DeviceInterface.h"

namespace mdl::backend::hip {

/// The GPU runtime (static; never null).
const mdl_device_interface *gpuRuntime();

} // namespace mdl::backend::hip
