// The `hip` device kind (see HipKind.h).
#include "backend/hip/HipKind.h"
#include "backend/hip/GpuOps.h"
#include "backend/hip/GpuProgram.h"
#include "backend/hip/HipPlugin.h"
#include "backend/runtime/DeviceBackend.h"
#include "backend/runtime/Devices.h"
#include "stdlib/Registry.h"

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
        "hip", "GPU N (AMD through HIP, NVIDIA through CUDA, or OpenCL when asked); the CPU "
               "when that GPU is absent");
  }

  bool supports(ir::OpKind k) const override { return gpuImplements(k); }
  // Device memory: segments are compiled into GPU programs, never into host
  // code (on the CPU fallback, the host kind's half decides instead).
  bool inlineIntoHost(const mdl_device_interface &) const override { return false; }

  std::unique_ptr<Artifact> compile(const ir::Operation &segment, const std::string &target,
                                    std::string &error) const override {
    if (target.empty()) {
      error = "the hip kind compiles for a GPU target (one of " + knownGpuTargetList() + "), and none was named";
      return nullptr;
    }
    if (!isKnownGpuTarget(target)) {
      error = "unknown GPU target '" + target + "' (known: " + knownGpuTargetList() + ")";
      return nullptr;
    }
    const HipPlugin *p = plugin();
    if (!p) {
      error = problem_;
      return nullptr;
    }
    std::string bytes;
    if (!p->compile(segment, target, bytes, error))
      return nullptr;
    return std::make_unique<GpuArtifact>(std::move(bytes));
  }

  bool describeArtifact(const Artifact &artifact,
                        std::vector<std::pair<std::string, std::string>> &files,
                        std::string &manifestJson) const override {
    mdl_artifact a = artifact.view();
    std::string error;
    std::optional<GpuProgram> p = GpuProgram::parse(a.data, size_t(a.size), error);
    if (!p)
      return false;
    files.push_back({codeSuffix(p->codeFormat), p->code});
    files.push_back({".program", std::string(static_cast<const char *>(a.data), size_t(a.size))});
    manifestJson = gpuProgramManifest(*p);
    return true;
  }

  RuntimeChoice runtime() override {
    const HipPlugin *p = plugin();
    if (!p)
      return {nullptr, problem_, false};
    const mdl_device_interface *iface = p->runtime();
    if (!iface || iface->abi_version != MDL_DEVICE_ABI_VERSION)
      return {nullptr, "the GPU runtime of " + path_ + " is not of device ABI version " +
                           std::to_string(MDL_DEVICE_ABI_VERSION), false};
    return {iface, "", false};
  }
  bool fallsBackToHost() const override { return true; }

private:
  // libmdl_hip.so (beside mdl or in lib/mdl, or $MDL_HIP_LIBRARY), loaded
  // once; null with problem_ set when it cannot be.
  const HipPlugin *plugin() const {
    if (tried_)
      return plugin_;
    tried_ = true;
    const char *env = std::getenv("MDL_HIP_LIBRARY");
    path_ = env && *env ? env : libraryPath("libmdl_hip.so");
    handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char *e = dlerror();
      problem_ = "no GPU support library (" + std::string(e ? e : path_) + ")";
      return nullptr;
    }
    auto fn = reinterpret_cast<HipPluginFn>(dlsym(handle_, kHipPluginSymbol));
    const HipPlugin *p = fn ? fn() : nullptr;
    if (!p || p->version != kHipPluginVersion) {
      problem_ = path_ + " is not mdl's GPU support library of version " +
                 std::to_string(kHipPluginVersion) + " (another build?)";
      return nullptr;
    }
    plugin_ = p;
    return plugin_;
  }

  mutable bool tried_ = false;
  mutable void *handle_ = nullptr;
  mutable const HipPlugin *plugin_ = nullptr;
  mutable std::string path_, problem_;
};

} // namespace

bool registerHipKind() { return registerDeviceBackend(std::make_unique<HipBackend>()); }

} // namespace mdl::backend::hip
