// The HIP and CUDA devices of the GPU API layer (GpuApi.h), written once.
// Where mdl uses them, HIP's module API and the CUDA driver API are the
// same calls under other names: one non-blocking stream per device, events
// that time launches and order two streams, asynchronous copies, modules
// and their kernels, launches with a parameter array, peer copies. So
// HipApi.cpp and CudaApi.cpp each bind their entry points into a table
// whose members have the same names, and describe their API in a small
// struct (`Api` below); DriverDevice<Api> is the device over either. What
// really differs stays in those files, explicit: how a device is found and
// opened, how code is loaded (a code object; PTX with the JIT's log), which
// BLAS runs products, what a device's context is (HIP: its ordinal, the
// current device; CUDA: its primary context, released at close).
#pragma once

#include "backend/hip/runtime/GpuApi.h"
#include "backend/hip/runtime/VendorBlas.h"

#include <cstdint>
#include <set>
#include <type_traits>

namespace mdl::backend::hip {

// What DriverDevice needs of `Api`:
//   types    Result, Stream, Event, Module, Function; DevicePtr (device
//            memory as the calls take it: HIP void *, CUDA an integer);
//            Device (what deviceCanAccessPeer compares); Context (what
//            makeCurrent takes and peer copies name); Library (the table)
//   values   kSuccess, kNotReady (an event's query before it completes),
//            kEventDisableTiming (an event flag)
//   names    kMemAlloc, kMemcpyHtoD, kMemcpyDtoH, kMemcpyDtoD, kMemcpyPeer,
//            kModuleGetFunction, kLaunchKernel, kStreamSynchronize,
//            kEventCreate: the API's names of the calls, for messages
//   static Error error(const std::string &what, Result)
//            "WHAT failed: hipErrorOutOfMemory"
//   static Expected<Module> loadModule(const Library &, const std::string &code)
//            with the device current
//   static std::unique_ptr<VendorBlas> openBlas(Stream)
//            the BLAS for products on the stream, or null
//   static void releaseDevice(const Library &, Device)
//            after the stream is destroyed (CUDA: the primary context)
// and of `Api::Library`, members named as the calls of both APIs:
//   makeCurrent(Context), streamSynchronize, streamDestroy, streamWaitEvent,
//   eventCreate(Event *, flags), eventRecord, eventQuery, eventElapsedTime,
//   eventDestroy, memAlloc, memFree, memcpyHtoDAsync, memcpyDtoHAsync,
//   memcpyDtoDAsync, memcpyPeerAsync(dst, its Context, src, its Context,
//   bytes, Stream), moduleUnload, moduleGetFunction, launchKernel,
//   deviceCanAccessPeer(int *, Device, Device), enablePeerAccess(Context,
//   flags).

/// A device address as the API's pointer type (a pointer or an integer).
template <typename DevicePtr> DevicePtr toDevicePtr(uint64_t address) {
  if constexpr (std::is_pointer_v<DevicePtr>)
    return reinterpret_cast<DevicePtr>(uintptr_t(address));
  else
    return DevicePtr(address);
}

/// ...and back.
template <typename DevicePtr> uint64_t fromDevicePtr(DevicePtr p) {
  if constexpr (std::is_pointer_v<DevicePtr>)
    return uint64_t(uintptr_t(p));
  else
    return uint64_t(p);
}

/// "HIP has 2 GPUs, and no GPU 3": an ordinal past the API's devices.
inline llvm::Error noSuchGpu(const char *api, int count, int ordinal) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 std::string(api) + " has " + std::to_string(count) + " GPU" +
                                     (count == 1 ? "" : "s") + ", and no GPU " +
                                     std::to_string(ordinal));
}

/// A loaded code object or PTX module; unloaded with its device current.
template <typename Api> class DriverModule : public GpuModule {
public:
  using Library = typename Api::Library;
  DriverModule(const Library &lib, typename Api::Context context, typename Api::Module module)
      : lib_(lib), context_(context), module_(module) {}
  ~DriverModule() override {
    lib_.makeCurrent(context_);
    lib_.moduleUnload(module_);
  }
  llvm::Expected<void *> kernel(const std::string &name) override {
    typename Api::Function f = nullptr;
    typename Api::Result r = lib_.moduleGetFunction(&f, module_, name.c_str());
    if (r != Api::kSuccess)
      return Api::error("kernel '" + name + "': " + Api::kModuleGetFunction, r);
    return static_cast<void *>(f);
  }

private:
  const Library &lib_;
  typename Api::Context context_;
  typename Api::Module module_;
};

/// A HIP or CUDA GPU with its one stream.
template <typename Api> class DriverDevice final : public GpuDevice {
public:
  using Library = typename Api::Library;
  using Result = typename Api::Result;
  using Stream = typename Api::Stream;
  using Event = typename Api::Event;
  using Context = typename Api::Context;
  using Device = typename Api::Device;
  using DevicePtr = typename Api::DevicePtr;

  /// Takes over `stream`, made in `context`, and what `device` holds.
  DriverDevice(const Library &lib, Device device, Context context, Stream stream,
               GpuDeviceInfo info)
      : lib_(lib), device_(device), context_(context), stream_(stream), info_(std::move(info)) {}

  ~DriverDevice() override {
    makeCurrent();
    lib_.streamSynchronize(stream_);
    blas_.reset();
    for (Timed &t : timed_) {
      lib_.eventDestroy(t.start);
      lib_.eventDestroy(t.end);
    }
    for (Event e : spareEvents_)
      lib_.eventDestroy(e);
    lib_.streamDestroy(stream_);
    Api::releaseDevice(lib_, device_);
  }

  const GpuDeviceInfo &info() const override { return info_; }

  llvm::Expected<DeviceMemory> alloc(uint64_t bytes) override {
    makeCurrent();
    DevicePtr p{};
    Result r = lib_.memAlloc(&p, bytes ? bytes : 1);
    if (r != Api::kSuccess)
      return Api::error(std::string(Api::kMemAlloc) + " of " + std::to_string(bytes) + " bytes", r);
    return DeviceMemory{fromDevicePtr(p), nullptr};
  }

  void release(const DeviceMemory &m) override {
    makeCurrent();
    // Work enqueued before may still read it (peer copies from here are
    // ordered on this stream as well).
    lib_.streamSynchronize(stream_);
    lib_.memFree(ptr(m.address));
  }

  llvm::Error copyIn(const DeviceRef &dst, const void *src, uint64_t bytes) override {
    makeCurrent();
    // From pageable memory, the driver has taken the bytes when it returns.
    return check(Api::kMemcpyHtoD, lib_.memcpyHtoDAsync(ptr(dst.address()), src, bytes, stream_));
  }

  llvm::Error copyOut(void *dst, const DeviceRef &src, uint64_t bytes) override {
    makeCurrent();
    if (llvm::Error e =
            check(Api::kMemcpyDtoH, lib_.memcpyDtoHAsync(dst, ptr(src.address()), bytes, stream_)))
      return e;
    return synchronize();
  }

  llvm::Error copy(const DeviceRef &dst, const DeviceRef &src, uint64_t bytes) override {
    makeCurrent();
    return check(Api::kMemcpyDtoD,
                 lib_.memcpyDtoDAsync(ptr(dst.address()), ptr(src.address()), bytes, stream_));
  }

  llvm::Error copyFromPeer(const DeviceRef &dst, GpuDevice &fromDevice, const DeviceRef &src,
                           uint64_t bytes) override {
    auto *from = dynamic_cast<DriverDevice *>(&fromDevice);
    if (!from) {
      std::vector<char> staging(bytes);
      if (llvm::Error e = fromDevice.copyOut(staging.data(), src, bytes))
        return e;
      return copyIn(dst, staging.data(), bytes);
    }
    makeCurrent();
    enablePeer(*from);
    // After the source's stream has produced the bytes; the source's
    // stream waits for the copy before it may overwrite them.
    if (llvm::Error e = wait(*from, *this))
      return e;
    if (llvm::Error e = check(Api::kMemcpyPeer,
                              lib_.memcpyPeerAsync(ptr(dst.address()), context_, ptr(src.address()),
                                                   from->context_, bytes, stream_)))
      return e;
    return wait(*this, *from);
  }

  llvm::Expected<std::unique_ptr<GpuModule>> loadModule(const std::string &code) override {
    makeCurrent();
    auto module = Api::loadModule(lib_, code);
    if (!module)
      return module.takeError();
    return std::make_unique<DriverModule<Api>>(lib_, context_, *module);
  }

  llvm::Error launch(void *kernel, const LaunchShape &shape, const std::vector<KernelArg> &args,
                     int timingTag) override {
    makeCurrent();
    // One pointer parameter per buffer (its address), i64 scalars.
    std::vector<uint64_t> values(args.size());
    std::vector<void *> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      values[i] = args[i].isBuffer ? args[i].buffer.address() : uint64_t(args[i].value);
      params[i] = &values[i];
    }
    return timed(timingTag, [&] {
      return check(Api::kLaunchKernel,
                   lib_.launchKernel(static_cast<typename Api::Function>(kernel), shape.grid[0],
                                     shape.grid[1], shape.grid[2], shape.block[0], shape.block[1],
                                     shape.block[2], 0, stream_, params.data(), nullptr));
    });
  }

  llvm::Error synchronize() override {
    makeCurrent();
    Result r = lib_.streamSynchronize(stream_);
    if (r == Api::kSuccess)
      return llvm::Error::success();
    // A failure of any of the work enqueued.
    return Api::error(std::string("the GPU's work (") + Api::kStreamSynchronize + ")", r);
  }

  void takeKernelTimes(std::vector<std::pair<int, double>> &out) override {
    out.insert(out.end(), measured_.begin(), measured_.end());
    measured_.clear();
    harvest(out);
  }

  llvm::Expected<bool> vendorGemm(const BlasGemm &g, int timingTag) override {
    // A product the BLAS declines is not timed: nothing would run.
    if (blasName().empty() || !blas_->takes(g))
      return false;
    makeCurrent();
    bool taken = false;
    if (llvm::Error e = timed(timingTag, [&]() -> llvm::Error {
          auto r = blas_->gemm(g);
          if (!r)
            return r.takeError();
          taken = *r;
          return llvm::Error::success();
        }))
      return e;
    return taken;
  }

  std::string blasName() override {
    if (!blasTried_) {
      blasTried_ = true;
      makeCurrent();
      blas_ = Api::openBlas(stream_);
    }
    return blas_ ? blas_->name() : "";
  }

private:
  struct Timed {
    int tag;
    Event start, end;
  };

  static DevicePtr ptr(uint64_t address) { return toDevicePtr<DevicePtr>(address); }
  void makeCurrent() const { lib_.makeCurrent(context_); }
  llvm::Error check(const char *what, Result r) const {
    return r == Api::kSuccess ? llvm::Error::success() : Api::error(what, r);
  }

  // Moves the times of the finished timed launches to `out`.
  void harvest(std::vector<std::pair<int, double>> &out) {
    std::vector<Timed> waiting;
    for (Timed &t : timed_) {
      if (lib_.eventQuery(t.end) == Api::kNotReady) {
        waiting.push_back(t);
        continue;
      }
      float ms = 0;
      if (lib_.eventElapsedTime(&ms, t.start, t.end) == Api::kSuccess)
        out.push_back({t.tag, double(ms)});
      spareEvents_.push_back(t.start); // reused by later launches
      spareEvents_.push_back(t.end);
    }
    timed_ = std::move(waiting);
  }

  // Encloses what `enqueue` puts on the stream in two events.
  template <typename F> llvm::Error timed(int tag, F enqueue) {
    if (tag < 0)
      return enqueue();
    if (timed_.size() >= kMaxTimedInFlight) {
      lib_.streamSynchronize(stream_);
      harvest(measured_);
    }
    Timed t{tag, nullptr, nullptr};
    if (!timingEvent(t.start))
      return enqueue();
    if (!timingEvent(t.end)) {
      spareEvents_.push_back(t.start);
      return enqueue();
    }
    lib_.eventRecord(t.start, stream_);
    llvm::Error e = enqueue();
    lib_.eventRecord(t.end, stream_);
    timed_.push_back(t);
    return e;
  }

  // An event that records times: a spare one, or a new one.
  bool timingEvent(Event &e) {
    if (!spareEvents_.empty()) {
      e = spareEvents_.back();
      spareEvents_.pop_back();
      return true;
    }
    return lib_.eventCreate(&e, 0) == Api::kSuccess;
  }

  // `later`'s stream waits for what `first`'s stream has been given. The
  // event is made with `first` current: CUDA records an event only on a
  // stream of the context it was made in (CUDA_ERROR_INVALID_HANDLE
  // otherwise), while a stream may wait for an event of any context.
  // This device is current again afterwards.
  llvm::Error wait(DriverDevice &first, DriverDevice &later) {
    first.makeCurrent();
    Event ev = nullptr;
    Result r = lib_.eventCreate(&ev, Api::kEventDisableTiming);
    if (r != Api::kSuccess) {
      makeCurrent();
      return Api::error(Api::kEventCreate, r);
    }
    r = lib_.eventRecord(ev, first.stream_);
    if (r == Api::kSuccess)
      r = lib_.streamWaitEvent(later.stream_, ev, 0);
    lib_.eventDestroy(ev); // released once it has completed
    makeCurrent();
    return check("ordering a copy between GPUs", r);
  }

  void enablePeer(DriverDevice &from) {
    if (from.context_ == context_ || !peers_.insert(from.context_).second)
      return;
    int can = 0;
    // Without peer access the driver stages the copy through the host.
    if (lib_.deviceCanAccessPeer(&can, device_, from.device_) == Api::kSuccess && can)
      lib_.enablePeerAccess(from.context_, 0);
  }

  const Library &lib_;
  Device device_;
  Context context_;
  Stream stream_;
  GpuDeviceInfo info_;
  std::vector<Timed> timed_;
  std::vector<std::pair<int, double>> measured_; // read, not yet taken
  std::vector<Event> spareEvents_;
  std::set<Context> peers_;
  bool blasTried_ = false;
  std::unique_ptr<VendorBlas> blas_;
};

} // namespace mdl::backend::hip
