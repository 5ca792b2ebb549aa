// Parsing of the HLO attribute values the translator understands, from the
// raw text the reader kept: integer lists `{1,2}`, windows
// `{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=... rhs_dilate=...}`, pad
// configurations `0_0x1_1_2`, slices `{[0:2], [1:5:2]}`, computation
// references `%name`, lists `{%a, %b}` and `sharding={maximal device=N}`.
//
// Each returns nullopt on text it cannot read; the translator reports that
// as malformed HLO (E0602) at the attribute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mdl::frontend::hlo {

using IntVec = std::vector<int64_t>;

/// `{1, 2, 3}` or `{}`.
std::optional<IntVec> parseIntList(std::string_view s);
/// A decimal integer.
std::optional<int64_t> parseInt(std::string_view s);
/// A floating-point number.
std::optional<double> parseReal(std::string_view s);
/// `true` / `false`.
std::optional<bool> parseBool(std::string_view s);
/// A computation reference without its `%`.
std::string parseName(std::string_view s);
/// `{%a, b}`: computation references.
std::optional<std::vector<std::string>> parseNameList(std::string_view s);
/// `"text"` without the quotes (escapes are kept).
std::string unquote(std::string_view s);

/// A convolution or reduce-window window, one entry per dimension.
struct HloWindow {
  IntVec size, stride, padLo, padHi, lhsDilate, rhsDilate;
  bool reversal = false; // some `rhs_reversal` entry is 1
  /// The padding as mdl's attributes write it: lo, hi per dimension.
  IntVec padding() const {
    IntVec pad;
    for (size_t i = 0; i < padLo.size(); ++i) {
      pad.push_back(padLo[i]);
      pad.push_back(padHi[i]);
    }
    return pad;
  }
};
/// Parses a window; `rank` fills defaults (stride 1, pad 0, dilation 1).
std::optional<HloWindow> parseWindow(std::string_view s);

/// `lo_hi[_interior]` per dimension, separated by `x`.
struct HloPadding {
  IntVec lo, hi, interior;
};
std::optional<HloPadding> parsePadding(std::string_view s);

/// `{[start:limit(:stride)], ...}`.
struct HloSlice {
  IntVec start, limit, stride;
};
std::optional<HloSlice> parseSlice(std::string_view s);

/// The device of `{maximal device=N}`, or nullopt for any other sharding.
std::optional<int64_t> parseMaximalDevice(std::string_view s);

} // namespace mdl::frontend::hlo
