// Conversions between float and the 16-bit float formats f16 and bf16.
//
// f16 conversions are exact, inline integer and float arithmetic (round to
// nearest even, subnormals included; every NaN becomes the quiet NaN
// 0x7e00), so they need no F16C instructions, no libgcc routine and no
// compiler _Float16 support; bf16 is the upper half of a binary32 with
// round-to-nearest-even.
#pragma once

#include <cstdint>
#include <cstring>

namespace mdl::ir {

/// The bits of a float.
inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
/// The float with these bits.
inline float floatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, em = h & 0x7fffu;
  // Exponent and mantissa moved into float position read as a float are the
  // value times 2^-112 (subnormal halves included); scale back exactly.
  float f = floatFromBits(em << 13) * 0x1p112f;
  if (em >= 0x7c00u) // inf / NaN keep an all-ones exponent
    f = floatFromBits((em << 13) | 0x7f800000u);
  return floatFromBits(floatBits(f) | sign);
}

inline uint16_t floatToHalf(float x) {
  uint32_t f = floatBits(x), sign = (f >> 16) & 0x8000u;
  f &= 0x7fffffffu;
  uint32_t out;
  if (f >= (127u + 16u) << 23) { // at least 65536: inf, or NaN
    out = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (f < (127u - 14u) << 23) {
    // Below the smallest normal half: adding 0.5 aligns the half's
    // subnormal grid with the float's last mantissa bit, and the float
    // addition rounds to nearest even.
    out = floatBits(floatFromBits(f) + 0.5f) - floatBits(0.5f);
  } else {
    // Rebias the exponent and round the 13 dropped bits to nearest even.
    uint32_t odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu + odd;
    out = f >> 13;
  }
  return uint16_t(out | sign);
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
