// A stand-in GPU driver for the runtime's tests (tests/unit/GpuDriverTest.cpp):
// one shared library with the entry points mdl binds from libamdhip64
// (HIP), libcuda (the CUDA driver), rocBLAS, hipBLAS and cuBLAS, declared
// as the vendors document them (independently of the runtime's own
// declarations), over two GPUs whose memory is host memory; this file has
// HIP, the CUDA driver and the test's controls, MockGpuBlas.cpp the BLAS
// libraries, MockGpuDriver.h their shared state. Work runs when it is
// enqueued. What a driver would refuse is refused with the vendor's error
// code: an address outside the current device's allocations, a stream of
// another device, a kernel of another device's module or of an unloaded
// one, a CUDA event recorded on a stream of another context, an unknown
// flag, a block too large; so a call whose arguments the runtime passes in
// the wrong order or to the wrong device fails the test. "Modules" are text
// naming kernels written here in C++ (iota_f32, add_f32, scale2_f32, mark).
// The mock_gpu_* functions let a test make the next call of an entry point
// fail, count what is still alive (streams, events, modules, allocations,
// BLAS handles, CUDA primary context references) and see the last launch's
// shape and which GPU may read which. Kernel time is a clock that advances
// 0.25 ms per launch and 0.5 ms per BLAS call, so that events measure
// something known.
#include "tests/gpuruntime/MockGpuDriver.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace mockgpu;

namespace {

// --- kernels ---

bool iotaF32(int device, const uint64_t *a) {
  if (!inside(device, a[0], a[1] * 4))
    return false;
  for (uint64_t i = 0; i < a[1]; ++i)
    at<float>(a[0])[i] = float(i);
  return true;
}

bool addF32(int device, const uint64_t *a) {
  for (int i = 0; i < 3; ++i)
    if (!inside(device, a[i], a[3] * 4))
      return false;
  for (uint64_t i = 0; i < a[3]; ++i)
    at<float>(a[2])[i] = at<float>(a[0])[i] + at<float>(a[1])[i];
  return true;
}

bool scale2F32(int device, const uint64_t *a) {
  if (!inside(device, a[0], a[1] * 4))
    return false;
  for (uint64_t i = 0; i < a[1]; ++i)
    at<float>(a[0])[i] *= 2;
  return true;
}

// Writes 0xdeadbeef at its argument: the test sees that it ran.
bool mark(int device, const uint64_t *a) {
  if (!inside(device, a[0], 4))
    return false;
  *at<uint32_t>(a[0]) = 0xdeadbeef;
  return true;
}

const Kernel kKernels[] = {{"iota_f32", 2, iotaF32},
                           {"add_f32", 4, addF32},
                           {"scale2_f32", 2, scale2F32},
                           {"mark", 1, mark}};

const char kModuleMagic[] = "mock-gpu-module";

int loadModule(const void *image, Module **out) {
  if (!image ||
      std::strncmp(static_cast<const char *>(image), kModuleMagic, sizeof kModuleMagic - 1) != 0)
    return kInvalidImage;
  *out = new Module{state().current, {}};
  for (const Kernel &k : kKernels)
    (*out)->functions.push_back({&k, *out});
  state().modules.insert(*out);
  return kSuccess;
}

int getFunction(const Function **out, Module *m, const char *name) {
  if (!name || !state().modules.count(m))
    return kInvalidHandle;
  for (const Function &f : m->functions)
    if (std::strcmp(f.kernel->name, name) == 0) {
      *out = &f;
      return kSuccess;
    }
  return kNotFound;
}

// A kernel launch on stream `s` (of the current device): the function must
// belong to a loaded module of the stream's device.
int launch(const Function *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
           Stream *s, void **params, void **extra) {
  if (!validStream(s) || s->device != state().current)
    return kInvalidContext;
  bool known = false;
  for (Module *m : state().modules)
    known = known || (f && f->module == m);
  if (!known || f->module->device != s->device)
    return kInvalidHandle;
  const Kernel *k = f->kernel;
  if (extra || (k->arity && !params))
    return kInvalidValue;
  for (int d = 0; d < 3; ++d)
    if (grid[d] == 0 || block[d] == 0)
      return kInvalidValue;
  // Both devices take 1024 threads per work-group and 48 KiB of dynamic
  // shared memory.
  if (uint64_t(block[0]) * block[1] * block[2] > 1024 || shared > 48 * 1024)
    return kInvalidValue;
  unsigned *last = state().lastShape;
  for (int d = 0; d < 3; ++d) {
    last[d] = grid[d];
    last[3 + d] = block[d];
  }
  last[6] = shared;
  uint64_t args[8] = {0};
  for (int i = 0; i < k->arity; ++i)
    std::memcpy(&args[i], params[i], sizeof args[i]);
  if (!k->run(s->device, args))
    return kLaunchFailure;
  ++state().launches;
  state().clockMs += 0.25;
  return kSuccess;
}

int allocate(void **p, size_t bytes) {
  if (bytes == 0)
    return kInvalidValue;
  void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!m)
    return kOutOfMemory;
  state().memory[uintptr_t(m)] = {state().current, bytes};
  *p = m;
  return kSuccess;
}

int release(void *p) {
  auto it = state().memory.find(uintptr_t(p));
  if (it == state().memory.end())
    return kInvalidValue;
  state().memory.erase(it);
  std::free(p);
  return kSuccess;
}

// A copy enqueued on `s`: `dst` and `src` are on `dstDevice` / `srcDevice`
// (-1: host memory).
int copyOn(Stream *s, int dstDevice, uint64_t dst, int srcDevice, uint64_t src, size_t bytes) {
  if (!validStream(s) || s->device != state().current)
    return kInvalidContext;
  if ((dstDevice >= 0 && !inside(dstDevice, dst, bytes)) ||
      (srcDevice >= 0 && !inside(srcDevice, src, bytes)))
    return kInvalidValue;
  std::memmove(at<void>(dst), at<void>(src), bytes);
  return kSuccess;
}

int createStream(Stream **s, unsigned flags) {
  if (flags > 1) // default or non-blocking
    return kInvalidValue;
  *s = new Stream{state().current};
  state().streams.insert(*s);
  return kSuccess;
}

int destroyStream(Stream *s) {
  if (!state().streams.erase(s))
    return kInvalidHandle;
  delete s;
  return kSuccess;
}

int createEvent(Event **e, unsigned flags) {
  if (flags != 0 && flags != 2) // default, or without timing
    return kInvalidValue;
  *e = new Event{state().current, flags};
  state().events.insert(*e);
  return kSuccess;
}

// CUDA documents that the event and the stream must be of one context
// (CUDA_ERROR_INVALID_HANDLE otherwise); HIP's documentation says nothing,
// so HIP's events are not held to it.
int recordEvent(Event *e, Stream *s, bool sameDevice) {
  if (!validEvent(e) || !validStream(s) || (sameDevice && e->device != s->device))
    return kInvalidHandle;
  e->recorded = true;
  e->stamp = state().clockMs;
  return kSuccess;
}

int elapsed(float *ms, Event *start, Event *end) {
  if (!validEvent(start) || !validEvent(end) || (start->flags | end->flags) & 2)
    return kInvalidHandle;
  if (!start->recorded || !end->recorded)
    return kInvalidHandle;
  *ms = float(end->stamp - start->stamp);
  return kSuccess;
}

int destroyEvent(Event *e) {
  if (!state().events.erase(e))
    return kInvalidHandle;
  delete e;
  return kSuccess;
}

// The event may be of another device than the stream (both APIs).
int waitEvent(Stream *s, Event *e, unsigned flags) {
  if (!validStream(s) || !validEvent(e))
    return kInvalidHandle;
  return flags == 0 ? kSuccess : kInvalidValue;
}

const char *errorName(bool hip, int code) {
  struct Name {
    int code;
    const char *hip, *cuda;
  };
  static const Name names[] = {
      {kSuccess, "hipSuccess", "CUDA_SUCCESS"},
      {kInvalidValue, "hipErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE"},
      {kOutOfMemory, "hipErrorOutOfMemory", "CUDA_ERROR_OUT_OF_MEMORY"},
      {kInvalidDevice, "hipErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE"},
      {kInvalidImage, "hipErrorInvalidImage", "CUDA_ERROR_INVALID_IMAGE"},
      {kInvalidContext, "hipErrorInvalidContext", "CUDA_ERROR_INVALID_CONTEXT"},
      {kInvalidPtx, "hipErrorInvalidKernelFile", "CUDA_ERROR_INVALID_PTX"},
      {kInvalidHandle, "hipErrorInvalidHandle", "CUDA_ERROR_INVALID_HANDLE"},
      {kNotFound, "hipErrorNotFound", "CUDA_ERROR_NOT_FOUND"},
      {kNotReady, "hipErrorNotReady", "CUDA_ERROR_NOT_READY"},
      {kPeerAccessAlreadyEnabled, "hipErrorPeerAccessAlreadyEnabled",
       "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
      {kLaunchFailure, "hipErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED"},
  };
  for (const Name &n : names)
    if (n.code == code)
      return hip ? n.hip : n.cuda;
  return nullptr;
}

} // namespace

// --- control ---

/// The next call of entry point `call` ("hipMalloc", "cuMemAlloc_v2",
/// "rocblas_create_handle") returns `code`.
MOCK_API void mock_gpu_fail_next(const char *call, int code) { state().failNext[call] = code; }
/// How many kernels and BLAS calls ran.
MOCK_API int mock_gpu_launches() { return state().launches; }
MOCK_API int mock_gpu_blas_calls() { return state().blasCalls; }
/// Whether `device` was given access to `peer`'s memory.
MOCK_API int mock_gpu_peer_access(int device, int peer) {
  return int(state().peerAccess.count({device, peer}));
}
/// The last launch's shape: grid x, y, z, block x, y, z, dynamic shared
/// bytes.
MOCK_API void mock_gpu_last_launch(unsigned shape[7]) {
  std::memcpy(shape, state().lastShape, sizeof state().lastShape);
}
/// How many of each are alive: "streams", "events", "modules", "memory",
/// "blas handles", "contexts" (CUDA primary context references),
/// "peer access" (pairs of devices).
MOCK_API int mock_gpu_live(const char *what) {
  State &s = state();
  std::string w = what;
  if (w == "streams")
    return int(s.streams.size());
  if (w == "events")
    return int(s.events.size());
  if (w == "modules")
    return int(s.modules.size());
  if (w == "memory")
    return int(s.memory.size());
  if (w == "blas handles")
    return int(s.handles.size());
  if (w == "contexts")
    return s.contexts[0].references + s.contexts[1].references;
  if (w == "peer access")
    return int(s.peerAccess.size());
  return -1;
}

// --- HIP ---

using hipStream_t = Stream *;
using hipEvent_t = Event *;
using hipModule_t = Module *;
using hipFunction_t = const Function *;

MOCK_API int hipInit(unsigned flags) { return flags == 0 ? kSuccess : kInvalidValue; }
MOCK_API int hipRuntimeGetVersion(int *v) {
  *v = 60241134; // ROCm 6.2
  return kSuccess;
}
MOCK_API int hipGetDeviceCount(int *n) {
  *n = kGpus;
  return kSuccess;
}
MOCK_API int hipSetDevice(int d) {
  if (d < 0 || d >= kGpus)
    return kInvalidDevice;
  state().current = d;
  return kSuccess;
}
MOCK_API int hipDeviceGetName(char *name, int len, int d) {
  if (d < 0 || d >= kGpus || len <= 0)
    return kInvalidValue;
  std::snprintf(name, size_t(len), "Mock AMD Instinct %d", d);
  return kSuccess;
}
// hipDeviceProp_t begins with the name; the architecture's name comes later.
MOCK_API int hipGetDeviceProperties(void *props, int d) {
  if (d < 0 || d >= kGpus)
    return kInvalidDevice;
  char *p = static_cast<char *>(props);
  std::snprintf(p, 256, "Mock AMD Instinct %d", d);
  std::strcpy(p + 396, "gfx90a:sramecc+:xnack-");
  return kSuccess;
}
MOCK_API int hipDeviceCanAccessPeer(int *can, int d, int peer) {
  if (d < 0 || d >= kGpus || peer < 0 || peer >= kGpus)
    return kInvalidDevice;
  *can = d != peer;
  return kSuccess;
}
MOCK_API int hipDeviceEnablePeerAccess(int peer, unsigned flags) {
  if (peer < 0 || peer >= kGpus || peer == state().current || flags != 0)
    return kInvalidValue;
  if (!state().peerAccess.insert({state().current, peer}).second)
    return kPeerAccessAlreadyEnabled;
  return kSuccess;
}
MOCK_API int hipStreamCreateWithFlags(hipStream_t *s, unsigned flags) {
  MOCK_FAIL_IF_TOLD("hipStreamCreateWithFlags");
  return createStream(s, flags);
}
MOCK_API int hipStreamDestroy(hipStream_t s) { return destroyStream(s); }
MOCK_API int hipStreamSynchronize(hipStream_t s) {
  MOCK_FAIL_IF_TOLD("hipStreamSynchronize");
  return validStream(s) ? kSuccess : kInvalidHandle;
}
MOCK_API int hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags) {
  return waitEvent(s, e, flags);
}
MOCK_API int hipMalloc(void **p, size_t bytes) {
  MOCK_FAIL_IF_TOLD("hipMalloc");
  return allocate(p, bytes);
}
MOCK_API int hipFree(void *p) { return release(p); }
MOCK_API int hipMemcpyHtoDAsync(void *dst, const void *src, size_t bytes, hipStream_t s) {
  MOCK_FAIL_IF_TOLD("hipMemcpyHtoDAsync");
  return copyOn(s, state().current, uintptr_t(dst), -1, uintptr_t(src), bytes);
}
MOCK_API int hipMemcpyDtoHAsync(void *dst, void *src, size_t bytes, hipStream_t s) {
  return copyOn(s, -1, uintptr_t(dst), state().current, uintptr_t(src), bytes);
}
MOCK_API int hipMemcpyDtoDAsync(void *dst, void *src, size_t bytes, hipStream_t s) {
  return copyOn(s, state().current, uintptr_t(dst), state().current, uintptr_t(src), bytes);
}
MOCK_API int hipMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                size_t bytes, hipStream_t s) {
  MOCK_FAIL_IF_TOLD("hipMemcpyPeerAsync");
  return copyOn(s, dstDevice, uintptr_t(dst), srcDevice, uintptr_t(src), bytes);
}
MOCK_API int hipModuleLoadData(hipModule_t *m, const void *image) {
  MOCK_FAIL_IF_TOLD("hipModuleLoadData");
  return loadModule(image, m);
}
MOCK_API int hipModuleUnload(hipModule_t m) {
  if (!state().modules.erase(m))
    return kInvalidHandle;
  delete m;
  return kSuccess;
}
MOCK_API int hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *name) {
  MOCK_FAIL_IF_TOLD("hipModuleGetFunction");
  return getFunction(f, m, name);
}
MOCK_API int hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                   hipStream_t s, void **params, void **extra) {
  MOCK_FAIL_IF_TOLD("hipModuleLaunchKernel");
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(f, grid, block, shared, s, params, extra);
}
MOCK_API int hipEventCreateWithFlags(hipEvent_t *e, unsigned flags) {
  MOCK_FAIL_IF_TOLD("hipEventCreateWithFlags");
  return createEvent(e, flags);
}
MOCK_API int hipEventRecord(hipEvent_t e, hipStream_t s) {
  MOCK_FAIL_IF_TOLD("hipEventRecord");
  return recordEvent(e, s, false);
}
MOCK_API int hipEventQuery(hipEvent_t e) {
  MOCK_FAIL_IF_TOLD("hipEventQuery");
  return validEvent(e) ? kSuccess : kInvalidHandle;
}
MOCK_API int hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t end) {
  return elapsed(ms, start, end);
}
MOCK_API int hipEventDestroy(hipEvent_t e) { return destroyEvent(e); }
MOCK_API const char *hipGetErrorName(int code) {
  const char *n = errorName(true, code);
  return n ? n : "hipErrorUnknown";
}

// --- the CUDA driver ---

using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = Context *;
using CUstream = Stream *;
using CUevent = Event *;
using CUmodule = Module *;
using CUfunction = const Function *;

namespace {
// CUDA's calls need a current context (the runtime makes one current
// before each); HIP's current device is always set.
bool cudaCurrent() { return state().cudaContextCurrent; }
} // namespace

MOCK_API int cuInit(unsigned flags) { return flags == 0 ? kSuccess : kInvalidValue; }
MOCK_API int cuDriverGetVersion(int *v) {
  *v = 12040; // CUDA 12.4
  return kSuccess;
}
MOCK_API int cuDeviceGetCount(int *n) {
  *n = kGpus;
  return kSuccess;
}
MOCK_API int cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal < 0 || ordinal >= kGpus)
    return kInvalidDevice;
  *d = ordinal;
  return kSuccess;
}
MOCK_API int cuDeviceGetName(char *name, int len, CUdevice d) {
  if (d < 0 || d >= kGpus || len <= 0)
    return kInvalidValue;
  std::snprintf(name, size_t(len), "Mock NVIDIA %s", d == 0 ? "H100" : "A40");
  return kSuccess;
}
// GPU 0 is sm_90, GPU 1 sm_86 (it runs sm_80 code).
MOCK_API int cuDeviceGetAttribute(int *v, int attribute, CUdevice d) {
  if (d < 0 || d >= kGpus)
    return kInvalidDevice;
  switch (attribute) {
  case 1: // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    *v = 1024;
    return kSuccess;
  case 8: // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
    *v = 48 * 1024;
    return kSuccess;
  case 75: // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    *v = d == 0 ? 9 : 8;
    return kSuccess;
  case 76: // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    *v = d == 0 ? 0 : 6;
    return kSuccess;
  }
  return kInvalidValue;
}
MOCK_API int cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
  if (d < 0 || d >= kGpus || peer < 0 || peer >= kGpus)
    return kInvalidDevice;
  *can = d != peer;
  return kSuccess;
}
MOCK_API int cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
  MOCK_FAIL_IF_TOLD("cuDevicePrimaryCtxRetain");
  if (d < 0 || d >= kGpus)
    return kInvalidDevice;
  ++state().contexts[d].references;
  *ctx = &state().contexts[d];
  return kSuccess;
}
// Only the name before CUDA 11 (cuDevicePrimaryCtxRelease_v2 is absent):
// the runtime falls back to it.
MOCK_API int cuDevicePrimaryCtxRelease(CUdevice d) {
  if (d < 0 || d >= kGpus || state().contexts[d].references == 0)
    return kInvalidContext;
  --state().contexts[d].references;
  return kSuccess;
}
MOCK_API int cuCtxSetCurrent(CUcontext ctx) {
  if (ctx != &state().contexts[0] && ctx != &state().contexts[1])
    return kInvalidContext;
  if (ctx->references == 0)
    return kInvalidContext;
  state().current = ctx->device;
  state().cudaContextCurrent = true;
  return kSuccess;
}
MOCK_API int cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  if (!cudaCurrent() || (peer != &state().contexts[0] && peer != &state().contexts[1]) ||
      peer->device == state().current || flags != 0)
    return kInvalidValue;
  if (!state().peerAccess.insert({state().current, peer->device}).second)
    return kPeerAccessAlreadyEnabled;
  return kSuccess;
}
MOCK_API int cuStreamCreate(CUstream *s, unsigned flags) {
  MOCK_FAIL_IF_TOLD("cuStreamCreate");
  return cudaCurrent() ? createStream(s, flags) : kInvalidContext;
}
MOCK_API int cuStreamDestroy_v2(CUstream s) { return destroyStream(s); }
MOCK_API int cuStreamSynchronize(CUstream s) {
  MOCK_FAIL_IF_TOLD("cuStreamSynchronize");
  return validStream(s) ? kSuccess : kInvalidHandle;
}
MOCK_API int cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  return waitEvent(s, e, flags);
}
MOCK_API int cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  MOCK_FAIL_IF_TOLD("cuMemAlloc_v2");
  if (!cudaCurrent())
    return kInvalidContext;
  void *m = nullptr;
  int r = allocate(&m, bytes);
  *p = CUdeviceptr(uintptr_t(m));
  return r;
}
MOCK_API int cuMemFree_v2(CUdeviceptr p) { return release(reinterpret_cast<void *>(uintptr_t(p))); }
MOCK_API int cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
  MOCK_FAIL_IF_TOLD("cuMemcpyHtoDAsync_v2");
  return copyOn(s, state().current, dst, -1, uintptr_t(src), bytes);
}
MOCK_API int cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return copyOn(s, -1, uintptr_t(dst), state().current, src, bytes);
}
MOCK_API int cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return copyOn(s, state().current, dst, state().current, src, bytes);
}
MOCK_API int cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx,
                               size_t bytes, CUstream s) {
  MOCK_FAIL_IF_TOLD("cuMemcpyPeerAsync");
  if (!dstCtx || !srcCtx)
    return kInvalidContext;
  return copyOn(s, dstCtx->device, dst, srcCtx->device, src, bytes);
}
// PTX is text ending in a NUL; the JIT's log goes to the buffer options 5
// and 6 name (CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES).
MOCK_API int cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *options,
                                void **values) {
  MOCK_FAIL_IF_TOLD("cuModuleLoadDataEx");
  if (!cudaCurrent())
    return kInvalidContext;
  if (loadModule(image, m) == kSuccess)
    return kSuccess;
  char *log = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == 5)
      log = static_cast<char *>(values[i]);
    else if (options[i] == 6)
      size = size_t(uintptr_t(values[i]));
  }
  if (log && size)
    std::snprintf(log, size, "mock ptxas: line 1: not a mock module");
  return kInvalidPtx;
}
MOCK_API int cuModuleUnload(CUmodule m) { return hipModuleUnload(m); }
MOCK_API int cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  MOCK_FAIL_IF_TOLD("cuModuleGetFunction");
  return getFunction(f, m, name);
}
MOCK_API int cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
                            void **extra) {
  MOCK_FAIL_IF_TOLD("cuLaunchKernel");
  if (!cudaCurrent())
    return kInvalidContext;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(f, grid, block, shared, s, params, extra);
}
MOCK_API int cuEventCreate(CUevent *e, unsigned flags) {
  MOCK_FAIL_IF_TOLD("cuEventCreate");
  return cudaCurrent() ? createEvent(e, flags) : kInvalidContext;
}
MOCK_API int cuEventRecord(CUevent e, CUstream s) {
  MOCK_FAIL_IF_TOLD("cuEventRecord");
  return recordEvent(e, s, true);
}
MOCK_API int cuEventQuery(CUevent e) {
  MOCK_FAIL_IF_TOLD("cuEventQuery");
  return validEvent(e) ? kSuccess : kInvalidHandle;
}
// Only the CUDA 12.8 name (cuEventElapsedTime is absent): the runtime
// takes the versioned one first.
MOCK_API int cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
  return elapsed(ms, start, end);
}
MOCK_API int cuEventDestroy_v2(CUevent e) { return destroyEvent(e); }
MOCK_API int cuGetErrorName(int code, const char **name) {
  *name = errorName(false, code);
  return *name ? kSuccess : kInvalidValue;
}
