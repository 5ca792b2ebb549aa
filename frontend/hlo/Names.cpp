// mdl identifiers for HLO names.
#include "frontend/hlo/Names.h"

#include "ir/Type.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

namespace mdl::frontend::hlo {

namespace {

bool reserved(const std::string &s) {
  static const std::set<std::string> words = {
      "import", "device", "param",  "const", "fn",    "let",  "return", "on",
      "if",     "else",   "for",    "while", "in",    "carry", "yield", "true",
      "false",  "load",   "zeros",  "ones",  "fill",  "random_normal", "random_uniform",
      "main"};
  return words.count(s) || ir::parseDType(s).has_value() || stdlib::lookupCallable(s) != nullptr ||
         stdlib::findDeviceKind(s) != nullptr;
}

} // namespace

std::string mdlIdentifier(const std::string &hloName) {
  std::string s;
  for (char c : hloName) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
    s = "v" + s;
  if (reserved(s))
    s += "_";
  return s;
}

std::string uniqueIn(const std::string &base, std::set<std::string> &used) {
  std::string name = base;
  for (int i = 2; used.count(name); ++i)
    name = base + "_" + std::to_string(i);
  used.insert(name);
  return name;
}

} // namespace mdl::frontend::hlo
