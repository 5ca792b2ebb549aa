// What one GPU device did, for --timings: the kernels launched (and
// products run on the vendor BLAS), their time measured with the API's
// events, and the bytes copied in, out, from other devices (peer) and
// within the device. Printed when the device closes, as a table like the
// mpc device's, or as JSON lines under --diagnostics=json. A run whose
// hip devices launched no kernel has silently run elsewhere: the counts
// make that visible (the end-to-end tests check them).
#pragma once

#include "backend/hip/runtime/GpuApi.h"

#include <map>
#include <ostream>

namespace mdl::backend::hip {

class GpuStats {
public:
  /// The row of `kernel` computing `what`: the timing tag of its launches.
  int row(const std::string &kernel, const std::string &what);
  /// One more launch of row `tag`.
  void launched(int tag) { ++rows_[size_t(tag)].launches; }
  /// Adds measured kernel times (tag, milliseconds).
  void addTimes(const std::vector<std::pair<int, double>> &times);

  uint64_t bytesIn = 0, bytesOut = 0, bytesPeer = 0, bytesWithin = 0;

  /// Launches over all rows.
  uint64_t launches() const;
  /// The table (or with `json`, one object for the device and one per
  /// row), headed with GPU `ordinal` and its description.
  void print(std::ostream &os, int ordinal, const GpuDeviceInfo &info, bool json) const;

private:
  struct Row {
    std::string kernel, what;
    uint64_t launches = 0;
    double ms = 0;
  };
  std::vector<Row> rows_;
  std::map<std::pair<std::string, std::string>, int> index_;
};

} // namespace mdl::backend::hip
