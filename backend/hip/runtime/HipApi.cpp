// The HIP implementation of the GPU API layer (GpuApi.h), for AMD GPUs,
// through ROCm's libamdhip64.so opened with dlopen. The entry points used
// are declared here (ROCm's headers are not part of the build, and their
// device-attribute enumeration changed between releases, so only
// functions whose signatures never changed are used). Each device runs on
// one non-blocking stream of its own; code is an AMDGPU code object for
// exactly the GPU's architecture (no forward compatibility, unlike PTX).
#include "backend/hip/GpuProgram.h"
#include "backend/hip/runtime/DriverDevice.h"
#include "backend/hip/runtime/DynamicLibrary.h"

#include <algorithm>
#include <cstring>

namespace mdl::backend::hip {

namespace {

using llvm::Error;
using llvm::Expected;

// --- HIP, as far as mdl uses it (the names of ROCm's headers) ---------------
using hipError_t = int;
using hipStream_t = struct ihipStream_t *;
using hipEvent_t = struct ihipEvent_t *;
using hipModule_t = struct ihipModule_t *;
using hipFunction_t = struct ihipModuleSymbol_t *;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorNotReady = 600;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101; // hipInit's answer where ROCm finds no GPU
constexpr unsigned hipStreamNonBlocking = 1;
constexpr unsigned hipEventDisableTiming = 2;
// hipGetDeviceProperties writes a structure whose layout changed between
// ROCm releases; it is given room enough for any of them.
constexpr size_t kPropertiesRoom = 64 * 1024;

// The entry points used. The members DriverDevice calls are named as in
// CudaApi.cpp's table (DriverDevice.h).
struct HipLibrary {
  hipError_t (*init)(unsigned);
  hipError_t (*runtimeGetVersion)(int *);
  hipError_t (*getDeviceCount)(int *);
  hipError_t (*makeCurrent)(int); // hipSetDevice: a device's context is its ordinal
  hipError_t (*deviceGetName)(char *, int, int);
  hipError_t (*getDeviceProperties)(void *, int);
  hipError_t (*deviceCanAccessPeer)(int *, int, int);
  hipError_t (*enablePeerAccess)(int, unsigned);
  hipError_t (*streamCreateWithFlags)(hipStream_t *, unsigned);
  hipError_t (*streamDestroy)(hipStream_t);
  hipError_t (*streamSynchronize)(hipStream_t);
  hipError_t (*streamWaitEvent)(hipStream_t, hipEvent_t, unsigned);
  hipError_t (*memAlloc)(void **, size_t);
  hipError_t (*memFree)(void *);
  hipError_t (*memcpyHtoDAsync)(void *, const void *, size_t, hipStream_t);
  hipError_t (*memcpyDtoHAsync)(void *, void *, size_t, hipStream_t);
  hipError_t (*memcpyDtoDAsync)(void *, void *, size_t, hipStream_t);
  hipError_t (*memcpyPeerAsync)(void *, int, const void *, int, size_t, hipStream_t);
  hipError_t (*moduleLoadData)(hipModule_t *, const void *);
  hipError_t (*moduleUnload)(hipModule_t);
  hipError_t (*moduleGetFunction)(hipFunction_t *, hipModule_t, const char *);
  hipError_t (*launchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, hipStream_t, void **, void **);
  hipError_t (*eventCreate)(hipEvent_t *, unsigned);
  hipError_t (*eventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*eventQuery)(hipEvent_t);
  hipError_t (*eventElapsedTime)(float *, hipEvent_t, hipEvent_t);
  hipError_t (*eventDestroy)(hipEvent_t);
  const char *(*getErrorName)(hipError_t);

  Error bindAll(const DynamicLibrary &lib) {
    return lib.bindAll({{init, "hipInit"},
                        {runtimeGetVersion, "hipRuntimeGetVersion"},
                        {getDeviceCount, "hipGetDeviceCount"},
                        {makeCurrent, "hipSetDevice"},
                        {deviceGetName, "hipDeviceGetName"},
                        {getDeviceProperties, "hipGetDeviceProperties"},
                        {deviceCanAccessPeer, "hipDeviceCanAccessPeer"},
                        {enablePeerAccess, "hipDeviceEnablePeerAccess"},
                        {streamCreateWithFlags, "hipStreamCreateWithFlags"},
                        {streamDestroy, "hipStreamDestroy"},
                        {streamSynchronize, "hipStreamSynchronize"},
                        {streamWaitEvent, "hipStreamWaitEvent"},
                        {memAlloc, "hipMalloc"},
                        {memFree, "hipFree"},
                        {memcpyHtoDAsync, "hipMemcpyHtoDAsync"},
                        {memcpyDtoHAsync, "hipMemcpyDtoHAsync"},
                        {memcpyDtoDAsync, "hipMemcpyDtoDAsync"},
                        {memcpyPeerAsync, "hipMemcpyPeerAsync"},
                        {moduleLoadData, "hipModuleLoadData"},
                        {moduleUnload, "hipModuleUnload"},
                        {moduleGetFunction, "hipModuleGetFunction"},
                        {launchKernel, "hipModuleLaunchKernel"},
                        {eventCreate, "hipEventCreateWithFlags"},
                        {eventRecord, "hipEventRecord"},
                        {eventQuery, "hipEventQuery"},
                        {eventElapsedTime, "hipEventElapsedTime"},
                        {eventDestroy, "hipEventDestroy"},
                        {getErrorName, "hipGetErrorName"}});
  }
};

// The process's HIP: loaded and initialized once, never unloaded.
struct Hip {
  HipLibrary hip{};
  std::string problem;
  int count = 0;
  int version = 0;

  static Hip &get() {
    static Hip *instance = [] {
      auto *h = new Hip;
      h->init();
      return h;
    }();
    return *instance;
  }

  std::string name(hipError_t r) const {
    const char *s = hip.getErrorName ? hip.getErrorName(r) : nullptr;
    return s ? s : "HIP error " + std::to_string(r);
  }

  void init() {
    // ROCm installs the unversioned name with its development files only.
    auto lib = openAndBind(hip, "MDL_AMDHIP_LIBRARY",
                           {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"});
    if (!lib) {
      problem = "HIP: " + llvm::toString(lib.takeError());
      return;
    }
    hipError_t r = hip.init(0);
    const char *call = "hipInit";
    if (r == hipSuccess) {
      r = hip.getDeviceCount(&count);
      call = "hipGetDeviceCount";
    }
    if (r == hipErrorNoDevice || r == hipErrorInvalidDevice) {
      problem = "HIP: no AMD GPU (" + std::string(call) + ": " + name(r) + ")";
      count = 0;
      return;
    }
    if (r == hipSuccess && count == 0) {
      problem = "HIP: no AMD GPU";
      return;
    }
    if (r != hipSuccess) {
      problem = "HIP: " + std::string(call) + " failed: " + name(r);
      count = 0;
      return;
    }
    hip.runtimeGetVersion(&version);
  }
};

Error hipError(const std::string &what, hipError_t r) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " failed: " + Hip::get().name(r));
}

// The GPU's architecture ("gfx90a") from its properties: the first
// "gfx..." string after the name (the name field comes first in every
// layout), without the feature suffix (":sramecc+:xnack-").
std::string archName(const std::vector<char> &props) {
  constexpr size_t kNameBytes = 256;
  for (size_t i = kNameBytes; i + 4 < props.size(); ++i) {
    if (props[i - 1] != '\0' || std::strncmp(&props[i], "gfx", 3) != 0)
      continue;
    size_t end = i;
    while (end < props.size() && props[end] != '\0' && props[end] != ':')
      ++end;
    std::string arch(&props[i], end - i);
    if (arch.size() > 3 && std::all_of(arch.begin() + 3, arch.end(),
                                       [](char c) { return std::isalnum((unsigned char)c); }))
      return arch;
  }
  return "";
}

// HIP for DriverDevice (DriverDevice.h).
struct HipDriver {
  using Library = HipLibrary;
  using Result = hipError_t;
  using Stream = hipStream_t;
  using Event = hipEvent_t;
  using Module = hipModule_t;
  using Function = hipFunction_t;
  using DevicePtr = void *;
  using Device = int;  // the ordinal
  using Context = int; // the ordinal too: hipSetDevice makes it current
  static constexpr Result kSuccess = hipSuccess;
  static constexpr Result kNotReady = hipErrorNotReady;
  static constexpr unsigned kEventDisableTiming = hipEventDisableTiming;
  static constexpr const char *kMemAlloc = "hipMalloc";
  static constexpr const char *kMemcpyHtoD = "hipMemcpyHtoDAsync";
  static constexpr const char *kMemcpyDtoH = "hipMemcpyDtoHAsync";
  static constexpr const char *kMemcpyDtoD = "hipMemcpyDtoDAsync";
  static constexpr const char *kMemcpyPeer = "hipMemcpyPeerAsync";
  static constexpr const char *kModuleGetFunction = "hipModuleGetFunction";
  static constexpr const char *kLaunchKernel = "hipModuleLaunchKernel";
  static constexpr const char *kStreamSynchronize = "hipStreamSynchronize";
  static constexpr const char *kEventCreate = "hipEventCreateWithFlags";

  static Error error(const std::string &what, Result r) { return hipError(what, r); }

  // A code object for exactly this GPU's architecture.
  static Expected<Module> loadModule(const Library &hip, const std::string &code) {
    hipModule_t module = nullptr;
    hipError_t r = hip.moduleLoadData(&module, code.data());
    if (r != hipSuccess)
      return hipError("hipModuleLoadData", r);
    return module;
  }

  static std::unique_ptr<VendorBlas> openBlas(Stream stream) { return openRocblas(stream); }

  // The runtime API keeps the device's context itself.
  static void releaseDevice(const Library &, Device) {}
};

} // namespace

Expected<std::unique_ptr<GpuDevice>> openHipDevice(const GpuOpenOptions &options) {
  Hip &h = Hip::get();
  if (!h.problem.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), h.problem);
  const HipLibrary &hip = h.hip;
  if (options.ordinal < 0 || options.ordinal >= h.count)
    return noSuchGpu("HIP", h.count, options.ordinal);
  hipError_t r = hip.makeCurrent(options.ordinal);
  if (r != hipSuccess)
    return hipError("hipSetDevice", r);
  char name[256] = {0};
  hip.deviceGetName(name, sizeof name - 1, options.ordinal);
  std::vector<char> props(kPropertiesRoom, '\0');
  r = hip.getDeviceProperties(props.data(), options.ordinal);
  if (r != hipSuccess)
    return hipError("hipGetDeviceProperties", r);
  std::string arch = archName(props);
  if (!isKnownGpuTarget(arch) || codeFormatOf(arch) != GpuCodeFormat::AmdgpuCodeObject) {
    std::string list = knownGpuTargetList(GpuCodeFormat::AmdgpuCodeObject);
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "HIP GPU " + std::to_string(options.ordinal) + " (" + name +
                                       ") is " +
                                       (arch.empty() ? "of an unknown architecture" : arch) +
                                       ", and mdl compiles for " + list);
  }
  hipStream_t stream = nullptr;
  r = hip.streamCreateWithFlags(&stream, hipStreamNonBlocking);
  if (r != hipSuccess)
    return hipError("hipStreamCreateWithFlags", r);
  GpuDeviceInfo info;
  info.api = "HIP";
  info.target = arch;
  int major = h.version / 10000000, minor = h.version / 100000 % 100;
  info.description = std::string(name) + " (HIP " + std::to_string(major) + "." +
                     std::to_string(minor) + ", " + arch + ")";
  return std::make_unique<DriverDevice<HipDriver>>(hip, options.ordinal, options.ordinal, stream,
                                                   std::move(info));
}

} // namespace mdl::backend::hip
