// A minimal fork-join helper for the local work of one party (the integer
// GEMMs, large element-wise loops).
//
// std::thread rather than OpenMP: in thread mode three parties share the
// machine, and OpenMP teams started from three threads spin-wait against
// each other; plain threads started per call (only for work large enough
// to pay for them) behave predictably.
#pragma once

#include <cstdint>
#include <functional>

namespace mdl::backend::mpc {

/// Hardware threads of this machine (at least 1).
int hardwareThreads();

/// Runs fn(begin, end) on `threads` contiguous chunks of [0, n) (the calling
/// thread takes the first chunk). With threads <= 1 or n small it is a
/// plain call. Chunk boundaries are multiples of `grain`.
void parallelFor(int64_t n, int threads, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn);

} // namespace mdl::backend::mpc
