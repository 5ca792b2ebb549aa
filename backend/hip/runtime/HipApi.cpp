// The HIP implementation of the GPU API layer (GpuApi.h), for AMD GPUs,
// through ROCm's libamdhip64.so opened with dlopen. The entry points used
// are declared here (ROCm's headers are not part of the build, and their
// device-attribute enumeration changed between releases, so only
// functions whose signatures never changed are used). Each device runs on
// one non-blocking stream of its own; code is an AMDGPU code object for
// exactly the GPU's architecture (no forward compatibility, unlike PTX).
#include "backend/hip/GpuProgram.h"
#include "backend/hip/runtime/DynamicLibrary.h"
#include "backend/hip/runtime/GpuApi.h"
#include "backend/hip/runtime/VendorBlas.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace mdl::backend::hip {

namespace {

using llvm::Error;
using llvm::Expected;

// --- HIP, as far as mdl uses it
// -----------------------------------------------
using hipError_t = int;
using hipStream_t = struct ihipStream_t *;
using hipEvent_t = struct ihipEvent_t *;
using hipModule_t = struct ihipModule_t *;
using hipFunction_t = struct ihipModuleSymbol_t *;

constexpr hipError_t kSuccess = 0;
constexpr hipError_t kNotReady = 600;
constexpr hipError_t kNoDevice = 100;
constexpr hipError_t kInvalidDevice = 101; // hipInit's answer where ROCm finds no GPU
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;
// hipGetDeviceProperties writes a structure whose layout changed between
// ROCm releases; it is given room enough for any of them.
constexpr size_t kPropertiesRoom = 64 * 1024;

struct HipLibrary {
  hipError_t (*init)(unsigned);
  hipError_t (*runtimeGetVersion)(int *);
  hipError_t (*getDeviceCount)(int *);
  hipError_t (*setDevice)(int);
  hipError_t (*deviceGetName)(char *, int, int);
  hipError_t (*deviceTotalMem)(size_t *, int);
  hipError_t (*getDeviceProperties)(void *, int);
  hipError_t (*deviceCanAccessPeer)(int *, int, int);
  hipError_t (*deviceEnablePeerAccess)(int, unsigned);
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
  hipError_t (*moduleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, hipStream_t, void **, void **);
  hipError_t (*eventCreateWithFlags)(hipEvent_t *, unsigned);
  hipError_t (*eventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*eventQuery)(hipEvent_t);
  hipError_t (*eventElapsedTime)(float *, hipEvent_t, hipEvent_t);
  hipError_t (*eventDestroy)(hipEvent_t);
  const char *(*getErrorName)(hipError_t);

  Error bindAll(const DynamicLibrary &lib) {
    for (auto [fn, name] : std::initializer_list<std::pair<void **, const char *>>{
             {reinterpret_cast<void **>(&init), "hipInit"},
             {reinterpret_cast<void **>(&runtimeGetVersion), "hipRuntimeGetVersion"},
             {reinterpret_cast<void **>(&getDeviceCount), "hipGetDeviceCount"},
             {reinterpret_cast<void **>(&setDevice), "hipSetDevice"},
             {reinterpret_cast<void **>(&deviceGetName), "hipDeviceGetName"},
             {reinterpret_cast<void **>(&deviceTotalMem), "hipDeviceTotalMem"},
             {reinterpret_cast<void **>(&getDeviceProperties), "hipGetDeviceProperties"},
             {reinterpret_cast<void **>(&deviceCanAccessPeer), "hipDeviceCanAccessPeer"},
             {reinterpret_cast<void **>(&deviceEnablePeerAccess), "hipDeviceEnablePeerAccess"},
             {reinterpret_cast<void **>(&streamCreateWithFlags), "hipStreamCreateWithFlags"},
             {reinterpret_cast<void **>(&streamDestroy), "hipStreamDestroy"},
             {reinterpret_cast<void **>(&streamSynchronize), "hipStreamSynchronize"},
             {reinterpret_cast<void **>(&streamWaitEvent), "hipStreamWaitEvent"},
             {reinterpret_cast<void **>(&memAlloc), "hipMalloc"},
             {reinterpret_cast<void **>(&memFree), "hipFree"},
             {reinterpret_cast<void **>(&memcpyHtoDAsync), "hipMemcpyHtoDAsync"},
             {reinterpret_cast<void **>(&memcpyDtoHAsync), "hipMemcpyDtoHAsync"},
             {reinterpret_cast<void **>(&memcpyDtoDAsync), "hipMemcpyDtoDAsync"},
             {reinterpret_cast<void **>(&memcpyPeerAsync), "hipMemcpyPeerAsync"},
             {reinterpret_cast<void **>(&moduleLoadData), "hipModuleLoadData"},
             {reinterpret_cast<void **>(&moduleUnload), "hipModuleUnload"},
             {reinterpret_cast<void **>(&moduleGetFunction), "hipModuleGetFunction"},
             {reinterpret_cast<void **>(&moduleLaunchKernel), "hipModuleLaunchKernel"},
             {reinterpret_cast<void **>(&eventCreateWithFlags), "hipEventCreateWithFlags"},
             {reinterpret_cast<void **>(&eventRecord), "hipEventRecord"},
             {reinterpret_cast<void **>(&eventQuery), "hipEventQuery"},
             {reinterpret_cast<void **>(&eventElapsedTime), "hipEventElapsedTime"},
             {reinterpret_cast<void **>(&eventDestroy), "hipEventDestroy"},
             {reinterpret_cast<void **>(&getErrorName), "hipGetErrorName"}})
      if (Error e = lib.bind(*fn, name))
        return e;
    return Error::success();
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
    auto lib = DynamicLibrary::open("MDL_AMDHIP_LIBRARY",
                                    {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"});
    if (!lib) {
      problem = "HIP: " + llvm::toString(lib.takeError());
      return;
    }
    if (Error e = hip.bindAll(*lib)) {
      problem = "HIP: " + llvm::toString(std::move(e));
      return;
    }
    hipError_t r = hip.init(0);
    const char *call = "hipInit";
    if (r == kSuccess) {
      r = hip.getDeviceCount(&count);
      call = "hipGetDeviceCount";
    }
    if (r == kNoDevice || r == kInvalidDevice) {
      problem = "HIP: no AMD GPU (" + std::string(call) + ": " + name(r) + ")";
      count = 0;
      return;
    }
    if (r == kSuccess && count == 0) {
      problem = "HIP: no AMD GPU";
      return;
    }
    if (r != kSuccess) {
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

class HipModule : public GpuModule {
public:
  HipModule(const HipLibrary &hip, int ordinal, hipModule_t module)
      : hip_(hip), ordinal_(ordinal), module_(module) {}
  ~HipModule() override {
    hip_.setDevice(ordinal_);
    hip_.moduleUnload(module_);
  }
  Expected<void *> kernel(const std::string &name) override {
    hipFunction_t f = nullptr;
    hipError_t r = hip_.moduleGetFunction(&f, module_, name.c_str());
    if (r != kSuccess)
      return hipError("kernel '" + name + "': hipModuleGetFunction", r);
    return static_cast<void *>(f);
  }

private:
  const HipLibrary &hip_;
  int ordinal_;
  hipModule_t module_;
};

class HipDevice : public GpuDevice {
public:
  HipDevice(const HipLibrary &hip, int ordinal, hipStream_t stream, GpuDeviceInfo info)
      : hip_(hip), ordinal_(ordinal), stream_(stream), info_(std::move(info)) {}

  ~HipDevice() override {
    current();
    hip_.streamSynchronize(stream_);
    blas_.reset();
    for (Timed &t : timed_) {
      hip_.eventDestroy(t.start);
      hip_.eventDestroy(t.end);
    }
    for (hipEvent_t e : spareEvents_)
      hip_.eventDestroy(e);
    hip_.streamDestroy(stream_);
  }

  const GpuDeviceInfo &info() const override { return info_; }

  Expected<DeviceMemory> alloc(uint64_t bytes) override {
    current();
    void *p = nullptr;
    hipError_t r = hip_.memAlloc(&p, bytes ? bytes : 1);
    if (r != kSuccess)
      return hipError("hipMalloc of " + std::to_string(bytes) + " bytes", r);
    return DeviceMemory{uint64_t(uintptr_t(p)), nullptr};
  }

  void release(const DeviceMemory &m) override {
    current();
    hip_.streamSynchronize(stream_); // work enqueued before may still use it
    hip_.memFree(ptr(m.address));
  }

  Error copyIn(const DeviceRef &dst, const void *src, uint64_t bytes) override {
    current();
    return check("hipMemcpyHtoDAsync",
                 hip_.memcpyHtoDAsync(ptr(dst.address()), src, bytes, stream_));
  }

  Error copyOut(void *dst, const DeviceRef &src, uint64_t bytes) override {
    current();
    if (Error e = check("hipMemcpyDtoHAsync",
                        hip_.memcpyDtoHAsync(dst, ptr(src.address()), bytes, stream_)))
      return e;
    return synchronize();
  }

  Error copy(const DeviceRef &dst, const DeviceRef &src, uint64_t bytes) override {
    current();
    return check("hipMemcpyDtoDAsync",
                 hip_.memcpyDtoDAsync(ptr(dst.address()), ptr(src.address()), bytes, stream_));
  }

  Error copyFromPeer(const DeviceRef &dst, GpuDevice &fromDevice, const DeviceRef &src,
                     uint64_t bytes) override {
    auto *from = dynamic_cast<HipDevice *>(&fromDevice);
    if (!from) {
      std::vector<char> staging(bytes);
      if (Error e = fromDevice.copyOut(staging.data(), src, bytes))
        return e;
      return copyIn(dst, staging.data(), bytes);
    }
    current();
    enablePeer(*from);
    if (Error e = wait(*from, *this))
      return e;
    if (Error e = check("hipMemcpyPeerAsync",
                        hip_.memcpyPeerAsync(ptr(dst.address()), ordinal_, ptr(src.address()),
                                             from->ordinal_, bytes, stream_)))
      return e;
    return wait(*this, *from);
  }

  Expected<std::unique_ptr<GpuModule>> loadModule(const std::string &code) override {
    current();
    hipModule_t module = nullptr;
    hipError_t r = hip_.moduleLoadData(&module, code.data());
    if (r != kSuccess)
      return hipError("hipModuleLoadData", r);
    return std::make_unique<HipModule>(hip_, ordinal_, module);
  }

  Error launch(void *kernel, const LaunchShape &shape, const std::vector<KernelArg> &args,
               int timingTag) override {
    current();
    std::vector<uint64_t> values(args.size());
    std::vector<void *> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      values[i] = args[i].isBuffer ? args[i].buffer.address() : uint64_t(args[i].value);
      params[i] = &values[i];
    }
    return timed(timingTag, [&] {
      return check("hipModuleLaunchKernel",
                   hip_.moduleLaunchKernel(static_cast<hipFunction_t>(kernel), shape.grid[0],
                                           shape.grid[1], shape.grid[2], shape.block[0],
                                           shape.block[1], shape.block[2], 0, stream_,
                                           params.data(), nullptr));
    });
  }

  Error synchronize() override {
    current();
    return check("the GPU's work (hipStreamSynchronize)", hip_.streamSynchronize(stream_));
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
      if (hip_.eventQuery(t.end) == kNotReady) {
        waiting.push_back(t);
        continue;
      }
      float ms = 0;
      if (hip_.eventElapsedTime(&ms, t.start, t.end) == kSuccess)
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
      blas_ = openRocblas(stream_);
    }
    return blas_ ? blas_->name() : "";
  }

private:
  struct Timed {
    int tag;
    hipEvent_t start, end;
  };

  static void *ptr(uint64_t address) { return reinterpret_cast<void *>(uintptr_t(address)); }
  void current() const { hip_.setDevice(ordinal_); }
  Error check(const char *what, hipError_t r) const {
    return r == kSuccess ? Error::success() : hipError(what, r);
  }

  template <typename F> Error timed(int tag, F enqueue) {
    if (tag < 0)
      return enqueue();
    if (timed_.size() >= kMaxTimedInFlight) {
      hip_.streamSynchronize(stream_);
      harvest(measured_);
    }
    Timed t{tag, nullptr, nullptr};
    if (!timingEvent(t.start) || !timingEvent(t.end))
      return enqueue();
    hip_.eventRecord(t.start, stream_);
    Error e = enqueue();
    hip_.eventRecord(t.end, stream_);
    timed_.push_back(t);
    return e;
  }

  // An event that records times: a spare one, or a new one.
  bool timingEvent(hipEvent_t &e) {
    if (!spareEvents_.empty()) {
      e = spareEvents_.back();
      spareEvents_.pop_back();
      return true;
    }
    return hip_.eventCreateWithFlags(&e, 0) == kSuccess;
  }

  // `later`'s stream waits for what `first`'s stream has been given.
  Error wait(HipDevice &first, HipDevice &later) {
    hipEvent_t ev = nullptr;
    hipError_t r = hip_.eventCreateWithFlags(&ev, kEventDisableTiming);
    if (r != kSuccess)
      return hipError("hipEventCreateWithFlags", r);
    r = hip_.eventRecord(ev, first.stream_);
    if (r == kSuccess)
      r = hip_.streamWaitEvent(later.stream_, ev, 0);
    hip_.eventDestroy(ev);
    return check("ordering a copy between GPUs", r);
  }

  void enablePeer(HipDevice &from) {
    if (from.ordinal_ == ordinal_ || !peers_.insert(from.ordinal_).second)
      return;
    int can = 0;
    if (hip_.deviceCanAccessPeer(&can, ordinal_, from.ordinal_) == kSuccess && can)
      hip_.deviceEnablePeerAccess(from.ordinal_, 0);
  }

  const HipLibrary &hip_;
  int ordinal_;
  hipStream_t stream_;
  GpuDeviceInfo info_;
  std::vector<Timed> timed_;
  std::vector<std::pair<int, double>> measured_; // read, not yet taken
  std::vector<hipEvent_t> spareEvents_;
  std::set<int> peers_;
  bool blasTried_ = false;
  std::unique_ptr<VendorBlas> blas_;
};

} // namespace

Expected<std::unique_ptr<GpuDevice>> openHipDevice(const GpuOpenOptions &options) {
  Hip &h = Hip::get();
  if (!h.problem.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), h.problem);
  const HipLibrary &hip = h.hip;
  if (options.ordinal < 0 || options.ordinal >= h.count)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "HIP has " + std::to_string(h.count) + " GPU" +
                                       (h.count == 1 ? "" : "s") + ", and no GPU " +
                                       std::to_string(options.ordinal));
  hipError_t r = hip.setDevice(options.ordinal);
  if (r != kSuccess)
    return hipError("hipSetDevice", r);
  char name[256] = {0};
  hip.deviceGetName(name, sizeof name - 1, options.ordinal);
  std::vector<char> props(kPropertiesRoom, '\0');
  r = hip.getDeviceProperties(props.data(), options.ordinal);
  if (r != kSuccess)
    return hipError("hipGetDeviceProperties", r);
  std::string arch = archName(props);
  const std::vector<std::string> &known = knownGpuTargets();
  if (std::find(known.begin(), known.end(), arch) == known.end() || !codeFormatOf(arch) ||
      *codeFormatOf(arch) != GpuCodeFormat::AmdgpuCodeObject) {
    std::string list;
    for (const std::string &t : known)
      if (codeFormatOf(t) == GpuCodeFormat::AmdgpuCodeObject)
        list += (list.empty() ? "" : ", ") + t;
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "HIP GPU " + std::to_string(options.ordinal) + " (" + name +
                                       ") is " +
                                       (arch.empty() ? "of an unknown architecture" : arch) +
                                       ", and mdl compiles for " + list);
  }
  hipStream_t stream = nullptr;
  r = hip.streamCreateWithFlags(&stream, kStreamNonBlocking);
  if (r != kSuccess)
    return hipError("hipStreamCreateWithFlags", r);
  GpuDeviceInfo info;
  info.api = "HIP";
  info.target = arch;
  int major = h.version / 10000000, minor = h.version / 100000 % 100;
  info.description = std::string(name) + " (HIP " + std::to_string(major) + "." +
                     std::to_string(minor) + ", " + arch + ")";
  return std::make_unique<HipDevice>(hip, options.ordinal, stream, std::move(info));
}

} // namespace mdl::backend::hip
