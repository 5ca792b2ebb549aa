#include "stdlib/ConvLabels.h"

namespace mdl::stdlib {
namespace {

bool parsePart(const std::string &s, char first, char second, DimLabels &out) {
  int64_t n = int64_t(s.size());
  out.spatial.assign(size_t(n >= 2 ? n - 2 : 0), -1);
  for (int64_t i = 0; i < n; ++i) {
    char c = s[size_t(i)];
    if (c == first && out.a < 0)
      out.a = i;
    else if (c == second && out.b < 0)
      out.b = i;
    else if (c >= '0' && c <= '9' && c - '0' < n - 2 && out.spatial[size_t(c - '0')] < 0)
      out.spatial[size_t(c - '0')] = i;
    else
      return false;
  }
  return n >= 2 && out.a >= 0 && out.b >= 0;
}

} // namespace

std::optional<ConvDimLabels> parseConvDimLabels(const std::string &labels) {
  size_t us = labels.find('_'), ar = labels.find("->");
  ConvDimLabels l;
  if (us == std::string::npos || ar == std::string::npos || ar < us ||
      !parsePart(labels.substr(0, us), 'b', 'f', l.input) ||
      !parsePart(labels.substr(us + 1, ar - us - 1), 'i', 'o', l.kernel) ||
      !parsePart(labels.substr(ar + 2), 'b', 'f', l.output) ||
      l.input.spatial.size() != l.kernel.spatial.size() ||
      l.input.spatial.size() != l.output.spatial.size())
    return std::nullopt;
  return l;
}

} // namespace mdl::stdlib
