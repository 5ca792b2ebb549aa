// Stopping a running program at the next loop iteration (Ctrl-C in the
// REPL). The REPL's SIGINT handler sets a flag; the interpreter reads it at
// each iteration of a `for` or `while` loop, and JIT-compiled code at each
// back-edge (one load and one branch), and both stop with E0409 at the
// loop. Nothing else polls it: a long single operation (a large matrix
// product) finishes first.
#pragma once

#include "ir/Diagnostics.h"

#include <atomic>
#include <cstdint>

namespace mdl::backend {

/// The flag that asks running programs to stop (non-zero: stop). The JIT
/// library holds its own copy of this code, so JIT-compiled code reads the
/// flag whose address JitOptions::interrupt gives it, which is this one.
/// Lock-free: a signal handler may set it.
std::atomic<int32_t> &interruptFlag();

/// Whether a stop was asked for.
inline bool interruptRequested() { return interruptFlag().load(std::memory_order_relaxed) != 0; }

/// The diagnostic of a stopped program (E0409), at the loop that stopped.
void reportInterrupted(ir::DiagnosticEngine &diags, const ir::Location &loop);

} // namespace mdl::backend
