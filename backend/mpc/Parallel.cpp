// Fork-join over std::thread (Parallel.h).
#include "backend/mpc/Parallel.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace mdl::backend::mpc {

int hardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

void parallelFor(int64_t n, int threads, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = (n + grain - 1) / grain;
  int t = int(std::min<int64_t>(std::max(threads, 1), chunks));
  if (t <= 1) {
    fn(0, n);
    return;
  }
  // Split whole grains as evenly as possible.
  std::vector<int64_t> bounds(t + 1);
  for (int i = 0; i <= t; ++i)
    bounds[i] = std::min(n, (chunks * i / t) * grain);
  std::vector<std::thread> workers;
  workers.reserve(t - 1);
  for (int i = 1; i < t; ++i)
    workers.emplace_back([&fn, &bounds, i] { fn(bounds[i], bounds[i + 1]); });
  fn(bounds[0], bounds[1]);
  for (std::thread &w : workers)
    w.join();
}

} // namespace mdl::backend::mpc
