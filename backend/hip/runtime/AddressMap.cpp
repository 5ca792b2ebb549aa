// Allocations by address (see AddressMap.h).
#include "backend/hip/runtime/AddressMap.h"

#include <cstdio>

namespace mdl::backend::hip {

namespace {
std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
  return buf;
}
} // namespace

void AddressMap::insert(const DeviceMemory &memory, uint64_t bytes) {
  allocations_[memory.address] = {memory, bytes ? bytes : 1};
}

std::optional<DeviceMemory> AddressMap::erase(uint64_t address) {
  auto it = allocations_.find(address);
  if (it == allocations_.end())
    return std::nullopt;
  DeviceMemory m = it->second.memory;
  allocations_.erase(it);
  return m;
}

llvm::Expected<DeviceRef> AddressMap::resolve(uint64_t address, uint64_t bytes) const {
  auto it = allocations_.upper_bound(address);
  if (it != allocations_.begin()) {
    --it;
    const Allocation &a = it->second;
    uint64_t offset = address - it->first;
    if (offset < a.bytes) {
      if (bytes > a.bytes - offset)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       std::to_string(bytes) + " bytes at " + hex(address) +
                                           " run past the end of its " + std::to_string(a.bytes) +
                                           "-byte allocation (at offset " + std::to_string(offset) +
                                           ")");
      return DeviceRef{a.memory, offset};
    }
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "address " + hex(address) + " is not memory of this device");
}

std::vector<DeviceMemory> AddressMap::all() const {
  std::vector<DeviceMemory> out;
  for (const auto &[address, a] : allocations_)
    out.push_back(a.memory);
  return out;
}

} // namespace mdl::backend::hip
