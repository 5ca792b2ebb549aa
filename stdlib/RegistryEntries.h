// Internal: the shape of a registry table entry, and the helpers that build
// parameter lists, shared by the files that contribute entries.
#pragma once

#include "stdlib/Registry.h"

#include <vector>

namespace mdl::stdlib {

struct Entry {
  ir::OpKind kind;
  const char *call; // user-callable name, or null
  OpClass cls;
  std::vector<ParamSpec> params;
  unsigned devices;
};

inline ParamSpec tensor(const char *n) { return ParamSpec{n, ParamKind::Tensor, std::nullopt, true}; }
inline ParamSpec opt(const char *n, ParamKind k) { return ParamSpec{n, k, std::nullopt, false}; }
inline ParamSpec req(const char *n, ParamKind k) { return ParamSpec{n, k, std::nullopt, true}; }
inline ParamSpec dflt(const char *n, ParamKind k, ir::Attribute v) {
  return ParamSpec{n, k, std::move(v), false};
}

/// Entries of the operations that exist for HLO import (RegistryHlo.cpp).
void appendHloEntries(std::vector<Entry> &entries);

} // namespace mdl::stdlib
