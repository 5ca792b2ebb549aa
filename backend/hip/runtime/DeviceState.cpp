// One opened hip device (see DeviceState.h).
#include "backend/hip/runtime/DeviceState.h"
#include "backend/runtime/DeviceBackend.h"

namespace mdl::backend::hip {

llvm::Expected<DeviceMemory> DeviceState::alloc(uint64_t bytes) {
  auto m = gpu->alloc(bytes);
  if (m)
    memory.insert(*m, bytes);
  return m;
}

bool DeviceState::release(uint64_t address) {
  std::optional<DeviceMemory> m = memory.erase(address);
  if (!m)
    return false;
  gpu->release(*m);
  return true;
}

llvm::Expected<DeviceRef> DeviceState::resolve(const mdl_buffer &b, uint64_t &bytes) const {
  if (b.dtype < MDL_BOOL || b.dtype > MDL_F64 || b.rank < 0 || (b.rank > 0 && !b.shape))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "a buffer of unknown type or shape");
  ir::TensorType type = bufferType(b);
  if (b.strides) {
    // Strided views are made contiguous by mdl before they reach a device;
    // explicit row-major strides are the same thing.
    int64_t expect = 1;
    for (int32_t d = b.rank - 1; d >= 0; --d) {
      if (b.shape[d] != 1 && b.strides[d] != expect)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "the GPU runtime copies contiguous buffers only, and this "
                                       "one of " +
                                           type.str() + " has strides");
      expect *= b.shape[d];
    }
  }
  bytes = uint64_t(type.byteSize());
  return memory.resolve(uint64_t(uintptr_t(b.data)), bytes);
}

void DeviceState::collectTimes() {
  std::vector<std::pair<int, double>> times;
  gpu->takeKernelTimes(times);
  stats.addTimes(times);
}

} // namespace mdl::backend::hip
