// Placeholder until the GPU runtime lands: every device fails to open.
#include "backend/hip/runtime/GpuRuntime.h"

namespace mdl::backend::hip {

namespace {
mdl_device *openNone(const mdl_device_arg *, uint32_t, const char **error) {
  *error = "no GPU runtime yet";
  return nullptr;
}
mdl_device_interface makeNone() {
  mdl_device_interface i{};
  i.abi_version = MDL_DEVICE_ABI_VERSION;
  i.name = "GPU";
  i.open = openNone;
  return i;
}
const mdl_device_interface kNone = makeNone();
} // namespace

const mdl_device_interface *gpuRuntime() { return &kNone; }

} // namespace mdl::backend::hip
