// The CUDA driver API implementation of the GPU API layer (GpuApi.h), for
// NVIDIA GPUs, through libcuda.so.1 (the driver) opened with dlopen. The
// few entry points and constants used are declared here: the toolkit's
// headers are not part of the build (../shared/TOOLCHAIN.md). Each device
// runs in its GPU's primary context (shared with anything else in the
// process that uses the GPU) on one non-blocking stream of its own; code
// is PTX, which the driver compiles for the GPU when the module is loaded,
// so sm_80 code also runs on later GPUs of the same generation line.
#include "backend/hip/runtime/DriverDevice.h"
#include "backend/hip/runtime/DynamicLibrary.h"

namespace mdl::backend::hip {

namespace {

using llvm::Error;
using llvm::Expected;

// --- the driver API, as far as mdl uses it (the names of cuda.h) -----------
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// The entry points used. The members DriverDevice calls are named as in
// HipApi.cpp's table (DriverDevice.h).
struct CudaLibrary {
  CUresult (*init)(unsigned);
  CUresult (*driverGetVersion)(int *);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*deviceCanAccessPeer)(int *, CUdevice, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*primaryCtxRelease)(CUdevice);
  CUresult (*makeCurrent)(CUcontext);
  CUresult (*enablePeerAccess)(CUcontext, unsigned);
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamDestroy)(CUstream);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*streamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*memcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*memcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*moduleUnload)(CUmodule);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void **, void **);
  CUresult (*eventCreate)(CUevent *, unsigned);
  CUresult (*eventRecord)(CUevent, CUstream);
  CUresult (*eventQuery)(CUevent);
  CUresult (*eventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*eventDestroy)(CUevent);
  CUresult (*getErrorName)(CUresult, const char **);

  // A later name first where an entry point was versioned.
  Error bindAll(const DynamicLibrary &lib) {
    return lib.bindAll(
        {{init, "cuInit"},
         {driverGetVersion, "cuDriverGetVersion"},
         {deviceGetCount, "cuDeviceGetCount"},
         {deviceGet, "cuDeviceGet"},
         {deviceGetName, "cuDeviceGetName"},
         {deviceGetAttribute, "cuDeviceGetAttribute"},
         {deviceCanAccessPeer, "cuDeviceCanAccessPeer"},
         {primaryCtxRetain, "cuDevicePrimaryCtxRetain"},
         {primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
         {makeCurrent, "cuCtxSetCurrent"},
         {enablePeerAccess, "cuCtxEnablePeerAccess"},
         {streamCreate, "cuStreamCreate"},
         {streamDestroy, "cuStreamDestroy_v2"},
         {streamSynchronize, "cuStreamSynchronize"},
         {streamWaitEvent, "cuStreamWaitEvent"},
         {memAlloc, "cuMemAlloc_v2"},
         {memFree, "cuMemFree_v2"},
         {memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
         {memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
         {memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
         {memcpyPeerAsync, "cuMemcpyPeerAsync"},
         {moduleLoadDataEx, "cuModuleLoadDataEx"},
         {moduleUnload, "cuModuleUnload"},
         {moduleGetFunction, "cuModuleGetFunction"},
         {launchKernel, "cuLaunchKernel"},
         {eventCreate, "cuEventCreate"},
         {eventRecord, "cuEventRecord"},
         {eventQuery, "cuEventQuery"},
         {eventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"},
         {eventDestroy, "cuEventDestroy_v2"},
         {getErrorName, "cuGetErrorName"}});
  }
};

// The process's driver: loaded and initialized once, never unloaded.
struct Cuda {
  CudaLibrary cu{};
  std::string problem; // why no device can open
  int count = 0;
  int version = 0;

  static Cuda &get() {
    static Cuda *instance = [] {
      auto *c = new Cuda;
      c->init();
      return c;
    }();
    return *instance;
  }

  std::string name(CUresult r) const {
    const char *s = nullptr;
    if (cu.getErrorName && cu.getErrorName(r, &s) == CUDA_SUCCESS && s)
      return s;
    return "CUDA error " + std::to_string(r);
  }

  void init() {
    auto lib = openAndBind(cu, "MDL_CUDA_LIBRARY", {"libcuda.so.1", "libcuda.so"});
    if (!lib) {
      problem = "CUDA: " + llvm::toString(lib.takeError());
      return;
    }
    CUresult r = cu.init(0);
    if (r == CUDA_ERROR_STUB_LIBRARY) {
      problem = "CUDA: " + lib->name() + " is the toolkit's stub, not an NVIDIA driver";
      return;
    }
    if (r == CUDA_ERROR_NO_DEVICE) {
      problem = "CUDA: no NVIDIA GPU (cuInit: " + name(r) + ")";
      return;
    }
    if (r != CUDA_SUCCESS) {
      problem = "CUDA: cuInit failed: " + name(r);
      return;
    }
    cu.driverGetVersion(&version);
    if (cu.deviceGetCount(&count) != CUDA_SUCCESS || count == 0)
      problem = "CUDA: no NVIDIA GPU";
  }
};

Error cudaError(const std::string &what, CUresult r) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " failed: " + Cuda::get().name(r));
}

// The CUDA driver for DriverDevice (DriverDevice.h).
struct CudaDriver {
  using Library = CudaLibrary;
  using Result = CUresult;
  using Stream = CUstream;
  using Event = CUevent;
  using Module = CUmodule;
  using Function = CUfunction;
  using DevicePtr = CUdeviceptr;
  using Device = CUdevice;
  using Context = CUcontext; // the device's primary context
  static constexpr Result kSuccess = CUDA_SUCCESS;
  static constexpr Result kNotReady = CUDA_ERROR_NOT_READY;
  static constexpr unsigned kEventDisableTiming = CU_EVENT_DISABLE_TIMING;
  static constexpr const char *kMemAlloc = "cuMemAlloc";
  static constexpr const char *kMemcpyHtoD = "cuMemcpyHtoDAsync";
  static constexpr const char *kMemcpyDtoH = "cuMemcpyDtoHAsync";
  static constexpr const char *kMemcpyDtoD = "cuMemcpyDtoDAsync";
  static constexpr const char *kMemcpyPeer = "cuMemcpyPeerAsync";
  static constexpr const char *kModuleGetFunction = "cuModuleGetFunction";
  static constexpr const char *kLaunchKernel = "cuLaunchKernel";
  static constexpr const char *kStreamSynchronize = "cuStreamSynchronize";
  static constexpr const char *kEventCreate = "cuEventCreate";

  static Error error(const std::string &what, Result r) { return cudaError(what, r); }

  // PTX, which the driver compiles for the GPU; its log is part of the error.
  static Expected<Module> loadModule(const Library &cu, const std::string &code) {
    std::string ptx = code;
    if (ptx.empty() || ptx.back() != '\0')
      ptx.push_back('\0');
    char log[4096] = {0};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof log))};
    CUmodule module = nullptr;
    CUresult r = cu.moduleLoadDataEx(&module, ptx.data(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      Error e = cudaError("cuModuleLoadDataEx", r);
      if (!log[0])
        return e;
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::toString(std::move(e)) + ": " + log);
    }
    return module;
  }

  static std::unique_ptr<VendorBlas> openBlas(Stream stream) { return openCublas(stream); }

  // The primary context, retained when the device was opened.
  static void releaseDevice(const Library &cu, Device device) { cu.primaryCtxRelease(device); }
};

// The PTX target for a compute capability: the newest target mdl compiles
// for that the GPU runs (PTX is compiled forward by the driver).
std::string ptxTarget(int major, int minor) {
  int cc = major * 10 + minor;
  if (cc >= 90)
    return "sm_90";
  if (cc >= 80)
    return "sm_80";
  return "";
}

} // namespace

Expected<std::unique_ptr<GpuDevice>> openCudaDevice(const GpuOpenOptions &options) {
  Cuda &cuda = Cuda::get();
  if (!cuda.problem.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), cuda.problem);
  const CudaLibrary &cu = cuda.cu;
  if (options.ordinal < 0 || options.ordinal >= cuda.count)
    return noSuchGpu("CUDA", cuda.count, options.ordinal);
  CUdevice device = 0;
  CUresult r = cu.deviceGet(&device, options.ordinal);
  if (r != CUDA_SUCCESS)
    return cudaError("cuDeviceGet", r);
  char name[256] = {0};
  cu.deviceGetName(name, sizeof name - 1, device);
  int major = 0, minor = 0, threads = 0, shared = 0;
  cu.deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  cu.deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  cu.deviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
  cu.deviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device);
  std::string sm = "sm_" + std::to_string(major * 10 + minor);
  std::string target = ptxTarget(major, minor);
  if (target.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "CUDA GPU " + std::to_string(options.ordinal) + " (" + name +
                                       ") is " + sm +
                                       ", older than sm_80, the oldest target mdl compiles for");
  CUcontext ctx = nullptr;
  r = cu.primaryCtxRetain(&ctx, device);
  if (r != CUDA_SUCCESS)
    return cudaError("cuDevicePrimaryCtxRetain", r);
  cu.makeCurrent(ctx);
  CUstream stream = nullptr;
  r = cu.streamCreate(&stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    cu.primaryCtxRelease(device);
    return cudaError("cuStreamCreate", r);
  }
  GpuDeviceInfo info;
  info.api = "CUDA";
  info.target = target;
  std::string version =
      std::to_string(cuda.version / 1000) + "." + std::to_string(cuda.version % 1000 / 10);
  info.description = std::string(name) + " (CUDA " + version + ", " + sm +
                     (sm == target ? "" : ", running " + target + " code") + ")";
  info.maxBlockThreads = uint64_t(threads);
  info.maxSharedBytes = uint64_t(shared);
  return std::make_unique<DriverDevice<CudaDriver>>(cu, device, ctx, stream, std::move(info));
}

} // namespace mdl::backend::hip
