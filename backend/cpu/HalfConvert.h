// Fast f16 <-> f32 conversions for the CPU kernels, in plain integer and
// float arithmetic. Without F16C in the compile flags, _Float16 conversions
// (ir/Half.h) are libgcc calls of about 10 ns each; these are exact (round
// to nearest even, subnormals included) and inline. Only NaN payloads
// differ from ir/Half.h: every NaN becomes the quiet NaN 0x7e00.
#pragma once

#include <cstdint>
#include <cstring>

namespace mdl::backend::cpu {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float halfToFloatFast(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, em = h & 0x7fffu;
  // Exponent and mantissa moved into float position read as a float are the
  // value times 2^-112 (subnormal halves included); scale back exactly.
  float f = floatOf(em << 13) * 0x1p112f;
  if (em >= 0x7c00u) // inf / NaN keep an all-ones exponent
    f = floatOf((em << 13) | 0x7f800000u);
  return floatOf(bitsOf(f) | sign);
}

inline uint16_t floatToHalfFast(float x) {
  uint32_t f = bitsOf(x), sign = (f >> 16) & 0x8000u;
  f &= 0x7fffffffu;
  uint32_t out;
  if (f >= (127u + 16u) << 23) { // at least 65536: inf, or NaN
    out = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (f < (127u - 14u) << 23) {
    // Below the smallest normal half: adding 0.5 aligns the half's
    // subnormal grid with the float's last mantissa bit, and the float
    // addition rounds to nearest even.
    out = bitsOf(floatOf(f) + 0.5f) - bitsOf(0.5f);
  } else {
    // Rebias the exponent and round the 13 dropped bits to nearest even.
    uint32_t odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu + odd;
    out = f >> 13;
  }
  return uint16_t(out | sign);
}

} // namespace mdl::backend::cpu
