// Registration of the device kinds (see Registration.h).
#include "tools/Registration.h"

#include "backend/cpu/CpuDevice.h"
#include "backend/hip/HipKind.h"
#include "backend/mpc/MpcKind.h"
#include "backend/runtime/DeviceBackend.h"

#include <dlfcn.h>

namespace mdl::tools {

bool registerDeviceKinds(const std::vector<std::string> &plugins, std::string &error) {
  // The first kind with host memory is the host kind: it comes first.
  backend::cpu::registerCpuKind();
  backend::hip::registerHipKind();
  backend::mpc::registerMpcKind();
  for (const std::string &path : plugins) {
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char *e = dlerror();
      error = "cannot load the device plugin " + path + ": " + (e ? e : "unknown error");
      return false;
    }
    auto fn = reinterpret_cast<backend::RegisterKindsFn>(dlsym(h, MDL_REGISTER_KINDS_SYMBOL));
    if (!fn) {
      error = path + " is not an mdl device plugin (no " MDL_REGISTER_KINDS_SYMBOL ")";
      return false;
    }
    std::string why;
    if (!fn(MDL_DEVICE_ABI_VERSION, why)) {
      error = path + ": " + why;
      return false;
    }
  }
  return true;
}

} // namespace mdl::tools
