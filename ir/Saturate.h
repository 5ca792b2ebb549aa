// Float to integer the way mdl's casts convert: toward zero, saturated to
// the integer's range, NaN to 0 (a plain C++ conversion of an out-of-range
// value is undefined behaviour).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace mdl::ir {

inline int64_t saturateToInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775807.0) // 2^63: the first double above the range
    return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

} // namespace mdl::ir
