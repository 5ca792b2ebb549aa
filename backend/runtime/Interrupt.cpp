// The interrupt flag (see Interrupt.h).
#include "backend/runtime/Interrupt.h"

namespace mdl::backend {

static_assert(std::atomic<int32_t>::is_always_lock_free,
              "a signal handler sets the flag, and generated code loads it as an i32");
static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t), "generated code loads an i32");

std::atomic<int32_t> &interruptFlag() {
  static std::atomic<int32_t> flag{0};
  return flag;
}

void reportInterrupted(ir::DiagnosticEngine &diags, const ir::Location &loop) {
  auto &d = diags.error("E0409", loop, "interrupted: stopped at an iteration of this loop");
  d.notes.push_back({{},
                     "Ctrl-C stops a running computation at the next loop iteration; "
                     "nothing it computed is kept"});
}

} // namespace mdl::backend
