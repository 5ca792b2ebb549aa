// The allocations of one GPU device, by address. The JIT and the
// interpreter do arithmetic on device addresses (views, arena slots), so
// every address mdl hands a GPU runtime is some allocation's address plus
// an offset; resolve() finds that allocation and checks that a range stays
// inside it. On OpenCL, where memory objects are not addresses, this is
// what turns an address back into (cl_mem, offset); on HIP and CUDA it
// turns a stray address into an error instead of a fault on the GPU.
#pragma once

#include "backend/hip/runtime/GpuApi.h"

#include <map>
#include <optional>

namespace mdl::backend::hip {

class AddressMap {
public:
  /// Records an allocation of `bytes` bytes (at least one).
  void insert(const DeviceMemory &memory, uint64_t bytes);
  /// Forgets the allocation that starts at `address`; nullopt when none does.
  std::optional<DeviceMemory> erase(uint64_t address);
  /// The allocation holding [address, address + bytes) and the offset of
  /// `address` in it; an error when no one allocation holds all of it.
  llvm::Expected<DeviceRef> resolve(uint64_t address, uint64_t bytes) const;
  /// The allocations left (for close).
  std::vector<DeviceMemory> all() const;
  size_t size() const { return allocations_.size(); }

private:
  struct Allocation {
    DeviceMemory memory;
    uint64_t bytes = 0;
  };
  std::map<uint64_t, Allocation> allocations_; // by address
};

} // namespace mdl::backend::hip
