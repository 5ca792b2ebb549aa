// Shapes and the fixed-point encoding (Ring.h).
#include "backend/mpc/Ring.h"

#include <limits>

namespace mdl::backend::mpc {

llvm::Error mpcError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return -1;
    n *= d;
  }
  return n;
}

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Ring encodeInteger(double v) {
  if (std::isnan(v))
    return 0;
  // 2^63 is the first double beyond int64's range.
  constexpr double kLimit = 9223372036854775808.0;
  double r = std::nearbyint(v);
  if (r >= kLimit)
    return Ring(std::numeric_limits<int64_t>::max());
  if (r < -kLimit)
    return Ring(std::numeric_limits<int64_t>::min());
  return Ring(int64_t(r));
}

Ring encodeFixed(double v, int fracBits) {
  return encodeInteger(std::ldexp(v, fracBits));
}

} // namespace mdl::backend::mpc
