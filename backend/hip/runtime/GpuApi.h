// The GPU API layer under the hip kind's runtime: what GpuRuntime.cpp needs
// of a GPU, with one implementation per vendor API, each library opened
// with dlopen so that mdl runs where none is installed:
//   - HIP (libamdhip64.so, AMD GPUs): HipApi.cpp
//   - the CUDA driver API (libcuda.so.1, NVIDIA GPUs): CudaApi.cpp
//   - OpenCL (libOpenCL.so.1, any ICD; PoCL runs it on the CPU): OpenClApi.cpp
// A GpuDevice is one GPU with one stream (HIP, CUDA) or in-order queue
// (OpenCL): everything it is asked to do is enqueued there, in order, and
// only copyOut and synchronize wait. Memory is named by DeviceMemory: the
// device address (what the JIT does arithmetic on) and, on OpenCL, the
// buffer object behind it; AddressMap.h turns any address inside an
// allocation back into (allocation, offset).
#pragma once

#include <llvm/Support/Error.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mdl::backend::hip {

/// An allocation: its device address and its API object (the cl_mem on
/// OpenCL; null where the address is the object, HIP and CUDA).
struct DeviceMemory {
  uint64_t address = 0;
  void *handle = nullptr;
};

/// A place in device memory: an allocation and a byte offset into it.
/// `address()` is what HIP and CUDA kernels receive; OpenCL kernels receive
/// the handle and the offset.
struct DeviceRef {
  DeviceMemory memory;
  uint64_t offset = 0;
  uint64_t address() const { return memory.address + offset; }
};

/// One kernel argument: a buffer or an i64 scalar.
struct KernelArg {
  bool isBuffer = true;
  DeviceRef buffer;
  int64_t value = 0;
};

/// Where a kernel runs: work-groups in the grid, threads per work-group
/// (its work-group memory is static, declared by the kernel itself).
struct LaunchShape {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
};

/// C = A @ B, row-major (see GpuGemm in GpuProgram.h), on device memory.
struct BlasGemm {
  int32_t dtype = 0; // mdl_dtype
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
  uint64_t a = 0, b = 0, c = 0; // device addresses
};

/// What a device is and what it runs, found when it is opened.
struct GpuDeviceInfo {
  std::string api;              // "HIP", "CUDA", "OpenCL"
  std::string description;      // "NVIDIA H100 80GB HBM3 (CUDA 13.0, sm_90)"
  std::string target;           // the code it runs: "gfx90a", "sm_90", "spir64"
  uint64_t maxBlockThreads = 0; // 0: unknown (the launch reports it)
  uint64_t maxSharedBytes = 0;  // 0: unknown
};

/// A loaded module (code object, PTX, OpenCL program) and its kernels.
class GpuModule {
public:
  virtual ~GpuModule() = default;
  /// The kernel named `name`: an API handle the module owns.
  virtual llvm::Expected<void *> kernel(const std::string &name) = 0;
};

/// One opened GPU with its one stream or queue.
class GpuDevice {
public:
  virtual ~GpuDevice() = default;
  virtual const GpuDeviceInfo &info() const = 0;

  /// Device memory of at least `bytes` (and at least one byte).
  virtual llvm::Expected<DeviceMemory> alloc(uint64_t bytes) = 0;
  /// Frees an allocation once the work enqueued before has finished with it.
  virtual void release(const DeviceMemory &memory) = 0;

  /// Host to device, enqueued; `src` may be reused as soon as it returns.
  virtual llvm::Error copyIn(const DeviceRef &dst, const void *src, uint64_t bytes) = 0;
  /// Device to host: waits for the work enqueued before, then for the copy.
  virtual llvm::Error copyOut(void *dst, const DeviceRef &src, uint64_t bytes) = 0;
  /// Within the device, enqueued.
  virtual llvm::Error copy(const DeviceRef &dst, const DeviceRef &src, uint64_t bytes) = 0;
  /// From another device of the same API (`from`), without the host where
  /// the API can: ordered after the work enqueued on both devices, and
  /// before anything enqueued on either afterwards.
  virtual llvm::Error copyFromPeer(const DeviceRef &dst, GpuDevice &from, const DeviceRef &src,
                                   uint64_t bytes) = 0;

  /// Loads code of the format the device's target names.
  virtual llvm::Expected<std::unique_ptr<GpuModule>> loadModule(const std::string &code) = 0;
  /// Enqueues a kernel. With `timingTag` >= 0 its time is measured
  /// (events) and later reported by takeKernelTimes under that tag.
  virtual llvm::Error launch(void *kernel, const LaunchShape &shape,
                             const std::vector<KernelArg> &args, int timingTag) = 0;
  /// Waits for everything enqueued; reports a failure of that work.
  virtual llvm::Error synchronize() = 0;
  /// Kernel times (tag, milliseconds) measured since the last call, for
  /// the launches that have finished (all of them after synchronize).
  virtual void takeKernelTimes(std::vector<std::pair<int, double>> &out) = 0;
  /// Enqueues C = A @ B on the device's vendor BLAS (rocBLAS, hipBLAS,
  /// cuBLAS; timed like a launch). False, with nothing enqueued, when there
  /// is none (OpenCL, none installed) or it does not take this product:
  /// the caller then launches mdl's own kernel.
  virtual llvm::Expected<bool> vendorGemm(const BlasGemm &gemm, int timingTag) = 0;
  /// The vendor BLAS the device uses for products, opened on the first
  /// call ("cuBLAS"), or "" when there is none.
  virtual std::string blasName() = 0;
};

/// With timing on, the launches whose times are not yet read are bounded:
/// beyond this many, a device waits for its work and reads them.
inline constexpr size_t kMaxTimedInFlight = 4096;

/// What opening a device needs.
struct GpuOpenOptions {
  int ordinal = 0;
  bool timings = false; // measure kernel times with events
};

/// Opens GPU `ordinal` through one API. The error says what was missing
/// (the library, a device, a symbol) without naming the ordinal where it
/// does not depend on it, so that the devices that fall back for one
/// reason share one note (N0803).
llvm::Expected<std::unique_ptr<GpuDevice>> openHipDevice(const GpuOpenOptions &options);
llvm::Expected<std::unique_ptr<GpuDevice>> openCudaDevice(const GpuOpenOptions &options);
llvm::Expected<std::unique_ptr<GpuDevice>> openOpenClDevice(const GpuOpenOptions &options);

} // namespace mdl::backend::hip
