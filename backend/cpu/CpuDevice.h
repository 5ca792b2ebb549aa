// The CPU device: host memory, and segments run operation by operation on
// the CPU kernels. It implements the C device interface, so the host program
// drives it exactly as it drives a GPU plugin.
#pragma once

#include "backend/runtime/DeviceInterface.h"

namespace mdl::backend::cpu {

/// The CPU device kind's interface (a static table).
const mdl_device_interface *cpuDeviceInterface();

} // namespace mdl::backend::cpu
