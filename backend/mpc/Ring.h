// The ring Z_2^64 and the fixed-point encoding of reals in it, the base of
// every protocol of the mpc device (backend/mpc).
//
// Ring elements are uint64_t: C++ unsigned arithmetic wraps modulo 2^64,
// which is exactly the ring. A real r is encoded as round(r * 2^f) in two's
// complement, f = frac_bits (18 by default): the representable range is
// [-2^(63-f), 2^(63-f)) with a resolution of 2^-f. Shapes are row-major
// vectors of non-negative dimensions, as everywhere in mdl.
#pragma once

#include <llvm/Support/Error.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mdl::backend::mpc {

/// An error of the mpc device with `message` (every part of backend/mpc
/// reports its failures this way).
llvm::Error mpcError(const std::string &message);

/// One element of Z_2^64.
using Ring = uint64_t;

/// A row-major tensor shape; {} is a scalar.
using Shape = std::vector<int64_t>;

/// How the ring elements of a tensor are to be read.
enum class EncodingKind {
  Fixed,   ///< fixed point with the engine's frac_bits
  Integer, ///< plain two's complement integers (bits, indices, counts)
};

/// Number of elements of `shape` (1 for a scalar); -1 when a dimension is
/// negative or the product does not fit in int64.
int64_t numElements(const Shape &shape);

/// "[2, 3]"; "[]" for a scalar.
std::string shapeToString(const Shape &shape);

/// Row-major strides of `shape` in elements.
std::vector<int64_t> stridesOf(const Shape &shape);

/// Default number of fractional bits.
constexpr int kDefaultFracBits = 18;

/// Largest magnitude encodable with `fracBits` fractional bits (2^(63-f)).
inline double fixedRange(int fracBits) {
  return std::ldexp(1.0, 63 - fracBits);
}

/// round(v * 2^f) in two's complement; values beyond the range saturate,
/// NaN encodes as 0 (never undefined behaviour on bad input).
Ring encodeFixed(double v, int fracBits);

/// The signed value of `x` divided by 2^f.
inline double decodeFixed(Ring x, int fracBits) {
  return std::ldexp(double(int64_t(x)), -fracBits);
}

/// `v` rounded to the nearest integer as a ring element (saturating).
Ring encodeInteger(double v);

/// The signed value of `x`.
inline double decodeInteger(Ring x) { return double(int64_t(x)); }

/// Arithmetic (sign-extending) shift right of a ring element by `bits`.
inline Ring shiftRightSigned(Ring x, int bits) {
  return Ring(int64_t(x) >> bits);
}

} // namespace mdl::backend::mpc
