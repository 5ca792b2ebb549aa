// Scratch slots placed by liveness (see ScratchPlan.h).
#include "backend/hip/codegen/ScratchPlan.h"

#include <algorithm>
#include <numeric>

namespace mdl::backend::hip {

namespace {
constexpr uint64_t kAlign = 256;
uint64_t alignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
} // namespace

uint32_t ScratchPlan::add(uint64_t bytes) {
  Slot s;
  s.bytes = alignUp(std::max<uint64_t>(bytes, 1));
  slots_.push_back(s);
  return uint32_t(slots_.size() - 1);
}

void ScratchPlan::touch(uint32_t slot, uint32_t step) {
  Slot &s = slots_.at(slot);
  s.first = std::min(s.first, step);
  s.last = std::max(s.last, step);
}

uint64_t ScratchPlan::place() {
  std::vector<size_t> order(slots_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return slots_[a].bytes > slots_[b].bytes; });
  std::vector<size_t> placed;
  uint64_t total = 0;
  for (size_t i : order) {
    Slot &s = slots_[i];
    if (s.first == UINT32_MAX) // never used: no bytes needed
      s.first = s.last = 0;
    // Intervals taken by placed slots live at the same time, by offset.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t j : placed) {
      const Slot &o = slots_[j];
      if (o.first <= s.last && s.first <= o.last)
        busy.push_back({o.offset, o.offset + o.bytes});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [lo, hi] : busy) {
      if (at + s.bytes <= lo)
        break;
      at = std::max(at, hi);
    }
    s.offset = at;
    total = std::max(total, at + s.bytes);
    placed.push_back(i);
  }
  return total;
}

} // namespace mdl::backend::hip
