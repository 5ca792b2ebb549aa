// Private to the shape rules (ShapeRules*.cpp): building a rule's result
// and reading or canonicalizing its attributes.
#pragma once

#include "stdlib/Registry.h"

#include <string>
#include <utility>
#include <vector>

namespace mdl::stdlib {

inline InferResult fail(std::string code, std::string msg, int operand = -1) {
  InferResult r;
  r.error = RuleError{std::move(code), std::move(msg), operand};
  return r;
}

inline InferResult ok(std::vector<ir::TensorType> types) {
  InferResult r;
  r.types = std::move(types);
  return r;
}

inline ir::Attribute *findAttr(std::vector<ir::NamedAttr> &attrs, const char *name) {
  for (ir::NamedAttr &a : attrs)
    if (a.name == name)
      return &a.value;
  return nullptr;
}

/// Sets `name` (replacing its value, or appending it).
inline void setAttr(std::vector<ir::NamedAttr> &attrs, const char *name, ir::Attribute v) {
  if (ir::Attribute *a = findAttr(attrs, name))
    *a = std::move(v);
  else
    attrs.push_back({name, std::move(v)});
}

} // namespace mdl::stdlib
