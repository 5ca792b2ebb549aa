// Scratch memory of a GPU program: every intermediate a segment
// materializes gets a slot of one scratch area, allocated once at load.
// Slots whose lives do not overlap share bytes, as the JIT's buffer plan
// shares arena slots: a slot lives from the first step that touches it to
// the last; slots are placed largest first at the lowest offset free of
// every slot live at the same time (256-byte aligned, which every GPU
// API's buffers are).
#pragma once

#include <cstdint>
#include <vector>

namespace mdl::backend::hip {

class ScratchPlan {
public:
  /// A new slot of `bytes` bytes; returns its number.
  uint32_t add(uint64_t bytes);
  /// Step `step` reads or writes slot `slot`.
  void touch(uint32_t slot, uint32_t step);
  /// Places the slots; returns the scratch area's size. offset(slot) is
  /// valid afterwards.
  uint64_t place();
  uint64_t offset(uint32_t slot) const { return slots_.at(slot).offset; }

private:
  struct Slot {
    uint64_t bytes = 0, offset = 0;
    uint32_t first = UINT32_MAX, last = 0;
  };
  std::vector<Slot> slots_;
};

} // namespace mdl::backend::hip
