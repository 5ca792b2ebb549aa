// A byte count as people read it ("512 B", "1.5 KiB", "3.2 MiB",
// "1.25 GiB"): the --timings tables of the GPU and MPC devices. Header
// only, so that the MPC core (also the standalone party program) uses it
// without the runtime library.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace mdl::backend {

inline std::string formatBytes(uint64_t bytes) {
  char buf[32];
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)bytes);
  else if (bytes < 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  else if (bytes < 1024ull * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

} // namespace mdl::backend
