// One opened hip device as the runtime keeps it: the GPU (through the API
// layer), its allocations by address, what it did (--timings), and the
// last error. GpuRuntime.cpp's C functions and the loaded programs
// (LoadedProgram.h) work on it; every allocation, the programs' scratch
// and constants included, goes through alloc() so that any address mdl
// passes back can be resolved.
#pragma once

#include "backend/hip/runtime/AddressMap.h"
#include "backend/hip/runtime/GpuApi.h"
#include "backend/hip/runtime/GpuStats.h"
#include "backend/runtime/DeviceInterface.h"

namespace mdl::backend::hip {

struct DeviceState {
  std::unique_ptr<GpuDevice> gpu;
  AddressMap memory;
  GpuStats stats;
  int ordinal = 0;
  int timings = 0; // 1: table at close, 2: JSON lines
  std::string error;

  /// Device memory, recorded in `memory`.
  llvm::Expected<DeviceMemory> alloc(uint64_t bytes);
  /// Frees an allocation made by alloc(); false when `address` is none.
  bool release(uint64_t address);
  /// The device memory a buffer descriptor names: contiguous (null or
  /// row-major strides), all of its bytes inside one allocation. `bytes`
  /// receives its size.
  llvm::Expected<DeviceRef> resolve(const mdl_buffer &b, uint64_t &bytes) const;
  /// Moves the kernel times measured so far into `stats`.
  void collectTimes();
};

} // namespace mdl::backend::hip
