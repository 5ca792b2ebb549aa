// The hip kind's run-time half: the device ABI (DeviceInterface.h) over the
// GPU API layer (GpuApi.h). open() reads the device's arguments (ordinal;
// the run's hip_runtime and timings) and picks the API:
//   auto    a HIP GPU, else an NVIDIA GPU through the CUDA driver; without
//           either, open fails with what was tried, and the device runs on
//           the CPU (N0803)
//   hip, cuda, opencl   that API only (OpenCL runs on any ICD: PoCL on the
//           CPU is how the tests run GPU code on machines without a GPU)
// Every call enqueues on the device's one stream and returns; copy_out
// and synchronize wait. Segments on different devices therefore run at the
// same time, and a peer copy orders the two devices' streams.
#include "backend/hip/runtime/GpuRuntime.h"
#include "backend/hip/GpuProgram.h"
#include "backend/hip/runtime/DeviceState.h"
#include "backend/hip/runtime/LoadedProgram.h"

#include <cstring>
#include <iostream>

// The ABI's opaque device is the runtime's state; its opaque program is a
// LoadedProgram (never defined as a type of its own).
struct mdl_device : mdl::backend::hip::DeviceState {};

namespace mdl::backend::hip {

namespace {

using llvm::Error;

int fails(mdl_device *d, Error e) {
  d->error = llvm::toString(std::move(e));
  return 1;
}

// Opens through `runtime`; `why` receives the reason when it cannot.
std::unique_ptr<GpuDevice> openGpu(const std::string &runtime, const GpuOpenOptions &options,
                                   std::string &why) {
  auto attempt = [&](auto open) -> std::unique_ptr<GpuDevice> {
    auto dev = open(options);
    if (dev)
      return std::move(*dev);
    why += (why.empty() ? "" : "; ") + llvm::toString(dev.takeError());
    return nullptr;
  };
  if (runtime == "hip")
    return attempt(openHipDevice);
  if (runtime == "cuda")
    return attempt(openCudaDevice);
  if (runtime == "opencl")
    return attempt(openOpenClDevice);
  if (runtime != "auto") {
    why = "unknown GPU runtime '" + runtime + "' (auto, hip, cuda or opencl)";
    return nullptr;
  }
  if (auto dev = attempt(openHipDevice))
    return dev;
  if (auto dev = attempt(openCudaDevice))
    return dev;
  why = "no GPU found (" + why + ")";
  return nullptr;
}

mdl_device *openDevice(const mdl_device_arg *args, uint32_t n, const char **error) {
  GpuOpenOptions options;
  std::string runtime = "auto";
  int timings = 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::string name = args[i].name ? args[i].name : "";
    if (name == "ordinal")
      options.ordinal = int(args[i].int_value);
    else if (name == "hip_runtime" && args[i].string_value)
      runtime = args[i].string_value;
    else if (name == "timings")
      timings = int(args[i].int_value);
  }
  options.timings = timings != 0;
  // The reason must outlive this call; DeviceSet opens devices one at a
  // time and copies it at once.
  static std::string why;
  why.clear();
  std::unique_ptr<GpuDevice> gpu = openGpu(runtime, options, why);
  if (!gpu) {
    *error = why.c_str();
    return nullptr;
  }
  auto *d = new mdl_device;
  d->gpu = std::move(gpu);
  d->ordinal = options.ordinal;
  d->timings = timings;
  return d;
}

void closeDevice(mdl_device *d) {
  if (Error e = d->gpu->synchronize())
    llvm::consumeError(std::move(e));
  d->collectTimes();
  if (d->timings)
    d->stats.print(std::cerr, d->ordinal, d->gpu->info(), d->timings == 2);
  // Whatever mdl did not release (a run that stopped at an error).
  for (const DeviceMemory &m : d->memory.all())
    d->release(m.address);
  delete d;
}

const char *describeDevice(mdl_device *d) { return d->gpu->info().description.c_str(); }

void *allocDevice(mdl_device *d, uint64_t bytes) {
  auto m = d->alloc(bytes);
  if (!m) {
    d->error = llvm::toString(m.takeError());
    return nullptr;
  }
  return reinterpret_cast<void *>(uintptr_t(m->address));
}

void releaseDevice(mdl_device *d, void *p) {
  if (p)
    d->release(uint64_t(uintptr_t(p)));
}

int copyIn(mdl_device *d, const mdl_buffer *dst, const void *src) {
  if (!src)
    return fails(
        d, llvm::createStringError(llvm::inconvertibleErrorCode(), "a GPU needs the value itself"));
  uint64_t bytes = 0;
  auto to = d->resolve(*dst, bytes);
  if (!to)
    return fails(d, to.takeError());
  if (Error e = d->gpu->copyIn(*to, src, bytes))
    return fails(d, std::move(e));
  d->stats.bytesIn += bytes;
  return 0;
}

int copyOut(mdl_device *d, void *dst, const mdl_buffer *src) {
  uint64_t bytes = 0;
  auto from = d->resolve(*src, bytes);
  if (!from)
    return fails(d, from.takeError());
  if (Error e = d->gpu->copyOut(dst, *from, bytes))
    return fails(d, std::move(e));
  d->stats.bytesOut += bytes;
  d->collectTimes();
  return 0;
}

// Copies `src` of device `from` into `dst` of `d` (within `d`, or from a
// peer), which must be as large; `bytes` counts what was copied.
int copyBuffer(mdl_device *d, const mdl_buffer *dst, mdl_device *from, const mdl_buffer *src,
               bool peer, uint64_t &bytes) {
  uint64_t dstBytes = 0, srcBytes = 0;
  auto to = d->resolve(*dst, dstBytes);
  if (!to)
    return fails(d, to.takeError());
  auto at = from->resolve(*src, srcBytes);
  if (!at)
    return fails(d, at.takeError());
  if (dstBytes != srcBytes)
    return fails(d, llvm::createStringError(llvm::inconvertibleErrorCode(),
                                            "a copy of " + std::to_string(srcBytes) +
                                                " bytes into " + std::to_string(dstBytes)));
  Error e = peer ? d->gpu->copyFromPeer(*to, *from->gpu, *at, srcBytes)
                 : d->gpu->copy(*to, *at, srcBytes);
  if (e)
    return fails(d, std::move(e));
  bytes += srcBytes;
  return 0;
}

int copyWithin(mdl_device *d, const mdl_buffer *dst, const mdl_buffer *src) {
  return copyBuffer(d, dst, d, src, false, d->stats.bytesWithin);
}

int copyPeer(mdl_device *d, const mdl_buffer *dst, mdl_device *from, const mdl_buffer *src) {
  return copyBuffer(d, dst, from, src, true, d->stats.bytesPeer);
}

mdl_program *loadProgram(mdl_device *d, const mdl_artifact *a) {
  if (!a || !a->format || std::strcmp(a->format, kGpuProgramFormat) != 0) {
    d->error = std::string("the GPU runtime runs '") + kGpuProgramFormat + "' artifacts, not '" +
               (a && a->format ? a->format : "") + "'";
    return nullptr;
  }
  auto p = LoadedProgram::load(*d, a->data, size_t(a->size));
  if (!p) {
    d->error = llvm::toString(p.takeError());
    return nullptr;
  }
  return reinterpret_cast<mdl_program *>(p->release());
}

int runProgram(mdl_device *d, mdl_program *p, const mdl_buffer *in, uint32_t nIn,
               const mdl_buffer *out, uint32_t nOut) {
  if (Error e = reinterpret_cast<LoadedProgram *>(p)->run(in, nIn, out, nOut))
    return fails(d, std::move(e));
  return 0;
}

void unloadProgram(mdl_device *, mdl_program *p) { delete reinterpret_cast<LoadedProgram *>(p); }

int synchronizeDevice(mdl_device *d) {
  if (Error e = d->gpu->synchronize())
    return fails(d, std::move(e));
  d->collectTimes();
  return 0;
}

const char *lastError(mdl_device *d) { return d->error.c_str(); }
const char *targetOf(mdl_device *d) { return d->gpu->info().target.c_str(); }

mdl_device_interface makeRuntime() {
  mdl_device_interface i{};
  i.abi_version = MDL_DEVICE_ABI_VERSION;
  i.name = "GPU";
  i.host_memory = 0;
  i.open = openDevice;
  i.close = closeDevice;
  i.describe = describeDevice;
  i.alloc = allocDevice;
  i.release_memory = releaseDevice;
  i.copy_in = copyIn;
  i.copy_out = copyOut;
  i.copy = copyWithin;
  i.load = loadProgram;
  i.run = runProgram;
  i.unload = unloadProgram;
  i.synchronize = synchronizeDevice;
  i.last_error = lastError;
  i.target = targetOf;
  i.copy_peer = copyPeer;
  return i;
}

const mdl_device_interface kRuntime = makeRuntime();

} // namespace

const mdl_device_interface *gpuRuntime() { return &kRuntime; }

} // namespace mdl::backend::hip
