// The CUDA driver API implementation of the GPU API layer (GpuApi.h), for
// NVIDIA GPUs, through libcuda.so.1 (the driver) opened with dlopen. The
// few entry points and constants used are declared here: the toolkit's
// headers are not part of the build (../shared/TOOLCHAIN.md). Each device
// runs in its GPU's primary context (shared with anything else in the
// process that uses the GPU) on one non-blocking stream of its own; code
// is PTX, which the driver compiles for the GPU when the module is loaded,
// so sm_80 code also runs on later GPUs of the same generation line.
#include "backend/hip/runtime/DynamicLibrary.h"
#include "backend/hip/runtime/GpuApi.h"
#include "backend/hip/runtime/VendorBlas.h"

#include <mutex>
#include <set>

namespace mdl::backend::hip {

namespace {

using llvm::Error;
using llvm::Expected;

// --- the driver API, as far as mdl uses it ---------------------------------
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;

constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;
constexpr CUresult kStubLibrary = 34;
constexpr CUresult kNoDevice = 100;
constexpr int kAttrMaxThreadsPerBlock = 1;
constexpr int kAttrMaxSharedPerBlock = 8;
constexpr int kAttrComputeMajor = 75;
constexpr int kAttrComputeMinor = 76;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSize = 6;

struct CudaLibrary {
  CUresult (*init)(unsigned);
  CUresult (*driverGetVersion)(int *);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*deviceTotalMem)(size_t *, CUdevice);
  CUresult (*deviceCanAccessPeer)(int *, CUdevice, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*primaryCtxRelease)(CUdevice);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*ctxEnablePeerAccess)(CUcontext, unsigned);
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

  Error bindAll(const DynamicLibrary &lib) {
    // A later name first where an entry point was versioned.
    struct Entry {
      void **fn;
      const char *name, *older = nullptr;
    };
    const Entry entries[] = {
        {reinterpret_cast<void **>(&init), "cuInit"},
        {reinterpret_cast<void **>(&driverGetVersion), "cuDriverGetVersion"},
        {reinterpret_cast<void **>(&deviceGetCount), "cuDeviceGetCount"},
        {reinterpret_cast<void **>(&deviceGet), "cuDeviceGet"},
        {reinterpret_cast<void **>(&deviceGetName), "cuDeviceGetName"},
        {reinterpret_cast<void **>(&deviceGetAttribute), "cuDeviceGetAttribute"},
        {reinterpret_cast<void **>(&deviceTotalMem), "cuDeviceTotalMem_v2"},
        {reinterpret_cast<void **>(&deviceCanAccessPeer), "cuDeviceCanAccessPeer"},
        {reinterpret_cast<void **>(&primaryCtxRetain), "cuDevicePrimaryCtxRetain"},
        {reinterpret_cast<void **>(&primaryCtxRelease), "cuDevicePrimaryCtxRelease_v2",
         "cuDevicePrimaryCtxRelease"},
        {reinterpret_cast<void **>(&ctxSetCurrent), "cuCtxSetCurrent"},
        {reinterpret_cast<void **>(&ctxEnablePeerAccess), "cuCtxEnablePeerAccess"},
        {reinterpret_cast<void **>(&streamCreate), "cuStreamCreate"},
        {reinterpret_cast<void **>(&streamDestroy), "cuStreamDestroy_v2"},
        {reinterpret_cast<void **>(&streamSynchronize), "cuStreamSynchronize"},
        {reinterpret_cast<void **>(&streamWaitEvent), "cuStreamWaitEvent"},
        {reinterpret_cast<void **>(&memAlloc), "cuMemAlloc_v2"},
        {reinterpret_cast<void **>(&memFree), "cuMemFree_v2"},
        {reinterpret_cast<void **>(&memcpyHtoDAsync), "cuMemcpyHtoDAsync_v2"},
        {reinterpret_cast<void **>(&memcpyDtoHAsync), "cuMemcpyDtoHAsync_v2"},
        {reinterpret_cast<void **>(&memcpyDtoDAsync), "cuMemcpyDtoDAsync_v2"},
        {reinterpret_cast<void **>(&memcpyPeerAsync), "cuMemcpyPeerAsync"},
        {reinterpret_cast<void **>(&moduleLoadDataEx), "cuModuleLoadDataEx"},
        {reinterpret_cast<void **>(&moduleUnload), "cuModuleUnload"},
        {reinterpret_cast<void **>(&moduleGetFunction), "cuModuleGetFunction"},
        {reinterpret_cast<void **>(&launchKernel), "cuLaunchKernel"},
        {reinterpret_cast<void **>(&eventCreate), "cuEventCreate"},
        {reinterpret_cast<void **>(&eventRecord), "cuEventRecord"},
        {reinterpret_cast<void **>(&eventQuery), "cuEventQuery"},
        {reinterpret_cast<void **>(&eventElapsedTime), "cuEventElapsedTime_v2",
         "cuEventElapsedTime"},
        {reinterpret_cast<void **>(&eventDestroy), "cuEventDestroy_v2"},
        {reinterpret_cast<void **>(&getErrorName), "cuGetErrorName"}};
    for (const Entry &e : entries)
      if (Error err = e.older ? lib.bindAny(*e.fn, {e.name, e.older}) : lib.bind(*e.fn, e.name))
        return err;
    return Error::success();
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
    if (cu.getErrorName && cu.getErrorName(r, &s) == kSuccess && s)
      return s;
    return "CUDA error " + std::to_string(r);
  }

  void init() {
    auto lib = DynamicLibrary::open("MDL_CUDA_LIBRARY", {"libcuda.so.1", "libcuda.so"});
    if (!lib) {
      problem = "CUDA: " + llvm::toString(lib.takeError());
      return;
    }
    if (Error e = cu.bindAll(*lib)) {
      problem = "CUDA: " + llvm::toString(std::move(e));
      return;
    }
    CUresult r = cu.init(0);
    if (r == kStubLibrary) {
      problem = "CUDA: " + lib->name() + " is the toolkit's stub, not an NVIDIA driver";
      return;
    }
    if (r == kNoDevice) {
      problem = "CUDA: no NVIDIA GPU (cuInit: " + name(r) + ")";
      return;
    }
    if (r != kSuccess) {
      problem = "CUDA: cuInit failed: " + name(r);
      return;
    }
    cu.driverGetVersion(&version);
    if (cu.deviceGetCount(&count) != kSuccess || count == 0)
      problem = "CUDA: no NVIDIA GPU";
  }
};

Error cudaError(const std::string &what, CUresult r) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " failed: " + Cuda::get().name(r));
}

class CudaModule : public GpuModule {
public:
  CudaModule(const CudaLibrary &cu, CUcontext ctx, CUmodule module)
      : cu_(cu), ctx_(ctx), module_(module) {}
  ~CudaModule() override {
    cu_.ctxSetCurrent(ctx_);
    cu_.moduleUnload(module_);
  }
  Expected<void *> kernel(const std::string &name) override {
    CUfunction f = nullptr;
    CUresult r = cu_.moduleGetFunction(&f, module_, name.c_str());
    if (r != kSuccess)
      return cudaError("kernel '" + name + "': cuModuleGetFunction", r);
    return static_cast<void *>(f);
  }

private:
  const CudaLibrary &cu_;
  CUcontext ctx_;
  CUmodule module_;
};

class CudaDevice : public GpuDevice {
public:
  CudaDevice(Cuda &cuda, CUdevice device, CUcontext ctx, CUstream stream, GpuDeviceInfo info)
      : cuda_(cuda), cu_(cuda.cu), device_(device), ctx_(ctx), stream_(stream),
        info_(std::move(info)) {}

  ~CudaDevice() override {
    current();
    cu_.streamSynchronize(stream_);
    blas_.reset();
    for (auto &t : timed_) {
      cu_.eventDestroy(t.start);
      cu_.eventDestroy(t.end);
    }
    for (CUevent e : spareEvents_)
      cu_.eventDestroy(e);
    cu_.streamDestroy(stream_);
    cu_.primaryCtxRelease(device_);
  }

  const GpuDeviceInfo &info() const override { return info_; }

  Expected<DeviceMemory> alloc(uint64_t bytes) override {
    current();
    CUdeviceptr p = 0;
    CUresult r = cu_.memAlloc(&p, bytes ? bytes : 1);
    if (r != kSuccess)
      return cudaError("cuMemAlloc of " + std::to_string(bytes) + " bytes", r);
    return DeviceMemory{uint64_t(p), nullptr};
  }

  void release(const DeviceMemory &m) override {
    current();
    // Work enqueued before may still read it (peer copies from here are
    // ordered on this stream as well).
    cu_.streamSynchronize(stream_);
    cu_.memFree(CUdeviceptr(m.address));
  }

  Error copyIn(const DeviceRef &dst, const void *src, uint64_t bytes) override {
    current();
    // From pageable memory, the driver has taken the bytes when it returns.
    return check("cuMemcpyHtoDAsync", cu_.memcpyHtoDAsync(dst.address(), src, bytes, stream_));
  }

  Error copyOut(void *dst, const DeviceRef &src, uint64_t bytes) override {
    current();
    if (Error e =
            check("cuMemcpyDtoHAsync", cu_.memcpyDtoHAsync(dst, src.address(), bytes, stream_)))
      return e;
    return synchronize();
  }

  Error copy(const DeviceRef &dst, const DeviceRef &src, uint64_t bytes) override {
    current();
    return check("cuMemcpyDtoDAsync",
                 cu_.memcpyDtoDAsync(dst.address(), src.address(), bytes, stream_));
  }

  Error copyFromPeer(const DeviceRef &dst, GpuDevice &fromDevice, const DeviceRef &src,
                     uint64_t bytes) override {
    auto *from = dynamic_cast<CudaDevice *>(&fromDevice);
    if (!from) {
      std::vector<char> staging(bytes);
      if (Error e = fromDevice.copyOut(staging.data(), src, bytes))
        return e;
      return copyIn(dst, staging.data(), bytes);
    }
    current();
    enablePeer(*from);
    // After the source's stream has produced the bytes; the source's
    // stream waits for the copy before it may overwrite them.
    if (Error e = wait(*from, *this))
      return e;
    if (Error e = check("cuMemcpyPeerAsync", cu_.memcpyPeerAsync(dst.address(), ctx_, src.address(),
                                                                 from->ctx_, bytes, stream_)))
      return e;
    return wait(*this, *from);
  }

  Expected<std::unique_ptr<GpuModule>> loadModule(const std::string &code) override {
    current();
    std::string ptx = code;
    if (ptx.empty() || ptx.back() != '\0')
      ptx.push_back('\0');
    char log[4096] = {0};
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof log))};
    CUmodule module = nullptr;
    CUresult r = cu_.moduleLoadDataEx(&module, ptx.data(), 2, options, values);
    if (r != kSuccess) {
      Error e = cudaError("cuModuleLoadDataEx", r);
      if (!log[0])
        return e;
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::toString(std::move(e)) + ": " + log);
    }
    return std::make_unique<CudaModule>(cu_, ctx_, module);
  }

  Error launch(void *kernel, const LaunchShape &shape, const std::vector<KernelArg> &args,
               int timingTag) override {
    current();
    // One pointer parameter per buffer (its address), i64 scalars.
    std::vector<uint64_t> values(args.size());
    std::vector<void *> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      values[i] = args[i].isBuffer ? args[i].buffer.address() : uint64_t(args[i].value);
      params[i] = &values[i];
    }
    return timed(timingTag, [&] {
      return check("cuLaunchKernel",
                   cu_.launchKernel(static_cast<CUfunction>(kernel), shape.grid[0], shape.grid[1],
                                    shape.grid[2], shape.block[0], shape.block[1], shape.block[2],
                                    0, stream_, params.data(), nullptr));
    });
  }

  Error synchronize() override {
    current();
    return check("the GPU's work (cuStreamSynchronize)", cu_.streamSynchronize(stream_));
  }

  void takeKernelTimes(std::vector<std::pair<int, double>> &out) override {
    out.insert(out.end(), measured_.begin(), measured_.end());
    measured_.clear();
    harvest(out);
  }

private:
  // Moves the times of the finished timed launches to `out`.
  void harvest(std::vector<std::pair<int, double>> &out) {
    std::vector<Timed> waiting;
    for (Timed &t : timed_) {
      if (cu_.eventQuery(t.end) == kNotReady) {
        waiting.push_back(t);
        continue;
      }
      float ms = 0;
      if (cu_.eventElapsedTime(&ms, t.start, t.end) == kSuccess)
        out.push_back({t.tag, double(ms)});
      spareEvents_.push_back(t.start); // reused by later launches
      spareEvents_.push_back(t.end);
    }
    timed_ = std::move(waiting);
  }

public:
  Expected<bool> vendorGemm(const BlasGemm &g, int timingTag) override {
    if (blasName().empty())
      return false;
    current();
    bool taken = false;
    if (Error e = timed(timingTag, [&]() -> Error {
          auto r = blas_->gemm(g);
          if (!r)
            return r.takeError();
          taken = *r;
          return Error::success();
        }))
      return e;
    return taken;
  }

  std::string blasName() override {
    if (!blasTried_) {
      blasTried_ = true;
      current();
      blas_ = openCublas(stream_);
    }
    return blas_ ? blas_->name() : "";
  }

private:
  struct Timed {
    int tag;
    CUevent start, end;
  };

  void current() const { cu_.ctxSetCurrent(ctx_); }

  Error check(const char *what, CUresult r) const {
    return r == kSuccess ? Error::success() : cudaError(what, r);
  }

  // Encloses what `enqueue` puts on the stream in two events.
  template <typename F> Error timed(int tag, F enqueue) {
    if (tag < 0)
      return enqueue();
    if (timed_.size() >= kMaxTimedInFlight) {
      cu_.streamSynchronize(stream_);
      harvest(measured_);
    }
    Timed t{tag, nullptr, nullptr};
    if (!timingEvent(t.start) || !timingEvent(t.end))
      return enqueue();
    cu_.eventRecord(t.start, stream_);
    Error e = enqueue();
    cu_.eventRecord(t.end, stream_);
    timed_.push_back(t);
    return e;
  }

  // An event that records times: a spare one, or a new one.
  bool timingEvent(CUevent &e) {
    if (!spareEvents_.empty()) {
      e = spareEvents_.back();
      spareEvents_.pop_back();
      return true;
    }
    return cu_.eventCreate(&e, 0) == kSuccess;
  }

  // `later`'s stream waits for what `first`'s stream has been given.
  Error wait(CudaDevice &first, CudaDevice &later) {
    CUevent ev = nullptr;
    CUresult r = cu_.eventCreate(&ev, kEventDisableTiming);
    if (r != kSuccess)
      return cudaError("cuEventCreate", r);
    r = cu_.eventRecord(ev, first.stream_);
    if (r == kSuccess)
      r = cu_.streamWaitEvent(later.stream_, ev, 0);
    cu_.eventDestroy(ev); // released once it has completed
    return check("ordering a copy between GPUs", r);
  }

  void enablePeer(CudaDevice &from) {
    if (from.ctx_ == ctx_ || !peers_.insert(from.ctx_).second)
      return;
    int can = 0;
    // Without peer access the driver stages the copy through the host.
    if (cu_.deviceCanAccessPeer(&can, device_, from.device_) == kSuccess && can)
      cu_.ctxEnablePeerAccess(from.ctx_, 0);
  }

  Cuda &cuda_;
  const CudaLibrary &cu_;
  CUdevice device_;
  CUcontext ctx_;
  CUstream stream_;
  GpuDeviceInfo info_;
  std::vector<Timed> timed_;
  std::vector<std::pair<int, double>> measured_; // read, not yet taken
  std::vector<CUevent> spareEvents_;
  std::set<CUcontext> peers_;
  bool blasTried_ = false;
  std::unique_ptr<VendorBlas> blas_;
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
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "CUDA has " + std::to_string(cuda.count) + " GPU" +
                                       (cuda.count == 1 ? "" : "s") + ", and no GPU " +
                                       std::to_string(options.ordinal));
  CUdevice device = 0;
  CUresult r = cu.deviceGet(&device, options.ordinal);
  if (r != kSuccess)
    return cudaError("cuDeviceGet", r);
  char name[256] = {0};
  cu.deviceGetName(name, sizeof name - 1, device);
  int major = 0, minor = 0, threads = 0, shared = 0;
  cu.deviceGetAttribute(&major, kAttrComputeMajor, device);
  cu.deviceGetAttribute(&minor, kAttrComputeMinor, device);
  cu.deviceGetAttribute(&threads, kAttrMaxThreadsPerBlock, device);
  cu.deviceGetAttribute(&shared, kAttrMaxSharedPerBlock, device);
  std::string sm = "sm_" + std::to_string(major * 10 + minor);
  std::string target = ptxTarget(major, minor);
  if (target.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "CUDA GPU " + std::to_string(options.ordinal) + " (" + name +
                                       ") is " + sm +
                                       ", older than sm_80, the oldest target mdl compiles for");
  CUcontext ctx = nullptr;
  r = cu.primaryCtxRetain(&ctx, device);
  if (r != kSuccess)
    return cudaError("cuDevicePrimaryCtxRetain", r);
  cu.ctxSetCurrent(ctx);
  CUstream stream = nullptr;
  r = cu.streamCreate(&stream, kStreamNonBlocking);
  if (r != kSuccess) {
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
  return std::make_unique<CudaDevice>(cuda, device, ctx, stream, std::move(info));
}

} // namespace mdl::backend::hip
