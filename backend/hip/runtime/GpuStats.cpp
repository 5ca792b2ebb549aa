// Printing a GPU device's statistics (see GpuStats.h).
#include "backend/hip/runtime/GpuStats.h"
#include "backend/runtime/FormatBytes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace mdl::backend::hip {

int GpuStats::row(const std::string &kernel, const std::string &what) {
  auto [it, added] = index_.insert({{kernel, what}, int(rows_.size())});
  if (added)
    rows_.push_back({kernel, what});
  return it->second;
}

void GpuStats::addTimes(const std::vector<std::pair<int, double>> &times) {
  for (auto [tag, ms] : times)
    if (tag >= 0 && size_t(tag) < rows_.size())
      rows_[size_t(tag)].ms += ms;
}

uint64_t GpuStats::launches() const {
  uint64_t n = 0;
  for (const Row &r : rows_)
    n += r.launches;
  return n;
}

void GpuStats::print(std::ostream &os, int ordinal, const GpuDeviceInfo &info, bool json) const {
  double total = 0;
  for (const Row &r : rows_)
    total += r.ms;
  uint64_t kernels = 0;
  for (const Row &r : rows_)
    kernels += r.launches > 0;
  if (json) {
    os << nlohmann::json{{"gpu", ordinal},
                         {"device", info.description},
                         {"api", info.api},
                         {"target", info.target},
                         {"launches", launches()},
                         {"kernels", kernels},
                         {"kernel_ms", total},
                         {"bytes_in", bytesIn},
                         {"bytes_out", bytesOut},
                         {"bytes_peer", bytesPeer},
                         {"bytes_within", bytesWithin}}
              .dump()
       << "\n";
    for (const Row &r : rows_)
      if (r.launches)
        os << nlohmann::json{{"gpu", ordinal},
                             {"kernel", r.kernel},
                             {"what", r.what},
                             {"launches", r.launches},
                             {"ms", r.ms}}
                  .dump()
           << "\n";
    return;
  }
  char line[256];
  os << "gpu " << ordinal << ": " << info.description << "\n";
  std::snprintf(line, sizeof line,
                "  %llu launches of %llu kernels, %.3f ms in kernels; copied "
                "in %s, out %s, "
                "from peers %s, within %s\n",
                (unsigned long long)launches(), (unsigned long long)kernels, total,
                formatBytes(bytesIn).c_str(), formatBytes(bytesOut).c_str(),
                formatBytes(bytesPeer).c_str(), formatBytes(bytesWithin).c_str());
  os << line;
  // The costliest first (kernels loaded but never launched are left out);
  // a long program's table stops after 20 rows.
  std::vector<const Row *> order;
  for (const Row &r : rows_)
    if (r.launches)
      order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const Row *a, const Row *b) { return a->ms > b->ms; });
  std::snprintf(line, sizeof line, "  %-28s %9s %11s  %s\n", "kernel", "launches", "time ms",
                "computes");
  os << line;
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < order.size() && i < kShown; ++i) {
    const Row &r = *order[i];
    std::snprintf(line, sizeof line, "  %-28s %9llu %11.3f  %s\n", r.kernel.c_str(),
                  (unsigned long long)r.launches, r.ms, r.what.c_str());
    os << line;
  }
  if (order.size() > kShown)
    os << "  ... " << order.size() - kShown << " more kernels\n";
}

} // namespace mdl::backend::hip
