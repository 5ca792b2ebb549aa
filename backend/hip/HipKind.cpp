// The `hip` device kind (see HipKind.h).
#include "backend/hip/HipKind.h"
#include "stdlib/Registry.h"
#include "backend/runtime/DeviceBackend.h"
#include "backend/runtime/Devices.h"

#include <cstdlib>
#include <dlfcn.h>

namespace mdl::backend::hip {

namespace {

class HipBackend : public DeviceBackend {
public:
  ~HipBackend() override {
    if (handle_)
      dlclose(handle_);
  }

  stdlib::DeviceKindInfo descriptor() const override {
    return stdlib::ordinalDeviceKind(
        "hip", "HIP kernels on GPU ordinal N; CPU fallback when that GPU is absent");
  }

  // What a hip device runs is what its executor runs: without GPU code
  // generation, every operation runs on the CPU fallback's kernels.
  bool supports(ir::OpKind) const override { return true; }
  bool inlineIntoHost(const mdl_device_interface &) const override { return false; }
  std::unique_ptr<Artifact> compile(const ir::Operation &, std::string &error) const override {
    error = "this build has no GPU code generation for hip segments";
    return nullptr;
  }

  RuntimeChoice runtime() override {
    if (!tried_) {
      tried_ = true;
      const char *env = std::getenv("MDL_HIP_RUNTIME");
      std::string path = env && *env ? env : libraryPath("libmdl_hip.so");
      handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle_) {
        const char *e = dlerror();
        problem_ = "no HIP runtime (" + std::string(e ? e : path) + ")";
      } else {
        auto fn = reinterpret_cast<mdl_device_runtime_fn>(dlsym(handle_, MDL_DEVICE_RUNTIME_SYMBOL));
        iface_ = fn ? fn() : nullptr;
        if (!iface_ || iface_->abi_version != MDL_DEVICE_ABI_VERSION) {
          problem_ = path + " is not an mdl device runtime of ABI version " +
                     std::to_string(MDL_DEVICE_ABI_VERSION);
          iface_ = nullptr;
        }
      }
    }
    return {iface_, problem_, false};
  }
  bool fallsBackToHost() const override { return true; }

private:
  bool tried_ = false;
  void *handle_ = nullptr;
  const mdl_device_interface *iface_ = nullptr;
  std::string problem_;
};

} // namespace

bool registerHipKind() { return registerDeviceBackend(std::make_unique<HipBackend>()); }

} // namespace mdl::backend::hip
