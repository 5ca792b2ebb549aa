// Conversions between float and the 16-bit float formats f16 and bf16.
//
// f16 uses the compiler's _Float16 (IEEE binary16, hardware conversions on
// x86-64 with F16C, a library routine otherwise); bf16 is the upper half of
// a binary32 with round-to-nearest-even.
#pragma once

#include <cstdint>
#include <cstring>

namespace mdl::ir {

inline float halfToFloat(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

inline uint16_t floatToHalf(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

inline float bf16ToFloat(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
    return uint16_t((u >> 16) | 0x40); // keep NaN a NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

} // namespace mdl::ir
