// Identifiers for imported HLO names: HLO allows `.`, `-` and a leading
// digit in names, mdl does not, and an imported name must not shadow an mdl
// keyword, element type or library operation.
#pragma once

#include <set>
#include <string>

namespace mdl::frontend::hlo {

/// `get-tuple-element.12` -> `get_tuple_element_12`; never empty, never a
/// keyword, element type or library operation name (a `_` is appended).
std::string mdlIdentifier(const std::string &hloName);

/// `base`, or `base_2`, `base_3`, ... whichever is not yet in `used`; the
/// chosen name is added to `used`.
std::string uniqueIn(const std::string &base, std::set<std::string> &used);

} // namespace mdl::frontend::hlo
