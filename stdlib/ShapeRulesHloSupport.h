// Internal to the HLO import shape rules (ShapeRulesHlo*.cpp): result
// helpers, attribute access with canonicalization, and the rules defined in
// ShapeRulesHloStructured.cpp.
#pragma once

#include "stdlib/RuleSupport.h"
#include "stdlib/ShapeRules.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace mdl::stdlib::hlorules {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::NamedAttr;
using ir::Shape;
using ir::TensorType;
using Ops = std::vector<TensorType>;
using Attrs = std::vector<NamedAttr>;
using Ints = std::vector<int64_t>;

inline InferResult bad(std::string msg) { return fail("E0204", std::move(msg)); }

// An integer list attribute; `dflt` (and canonicalized into the attributes)
// when absent or empty. False when the attribute has another kind.
inline bool intList(Attrs &attrs, const char *name, const Ints &dflt, Ints &out) {
  Attribute *a = findAttr(attrs, name);
  if (a && a->kind() == Attribute::Kind::Int)
    out = {a->asInt()};
  else if (a && a->kind() == Attribute::Kind::IntList)
    out = a->asIntList();
  else if (a)
    return false;
  else
    out.clear();
  if (out.empty())
    out = dflt;
  setAttr(attrs, name, Attribute::intList(out));
  return true;
}
inline int64_t intOf(Attrs &attrs, const char *name, int64_t d) {
  Attribute *a = findAttr(attrs, name);
  return a && a->kind() == Attribute::Kind::Int ? a->asInt() : d;
}
inline std::string strOf(Attrs &attrs, const char *name, const std::string &d = "") {
  Attribute *a = findAttr(attrs, name);
  if (!a) {
    setAttr(attrs, name, Attribute::string(d));
    return d;
  }
  return a->kind() == Attribute::Kind::String ? a->asString() : d;
}
inline bool boolOf(Attrs &attrs, const char *name) {
  Attribute *a = findAttr(attrs, name);
  if (!a) {
    setAttr(attrs, name, Attribute::boolean(false));
    return false;
  }
  return a->kind() == Attribute::Kind::Bool && a->asBool();
}
inline std::string dt(DType t) { return ir::dtypeName(t); }

// Checks that `v` holds distinct axes of a rank-`rank` tensor.
inline bool axesOk(const Ints &v, int rank) {
  std::set<int64_t> seen;
  for (int64_t a : v)
    if (a < 0 || a >= rank || !seen.insert(a).second)
      return false;
  return true;
}
inline bool contains(const Ints &v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// A window output size, or `?` for a symbolic input.
inline Dim windowDim(const Dim &in, int64_t win, int64_t stride, int64_t lo, int64_t hi,
              int64_t inDil = 1, int64_t winDil = 1) {
  if (!in.isStatic())
    return Dim::unknown();
  int64_t padded = (in.size == 0 ? 0 : (in.size - 1) * inDil + 1) + lo + hi;
  int64_t w = (win - 1) * winDil + 1;
  return Dim::of(padded < w || padded < 0 ? 0 : (padded - w) / stride + 1);
}

inline bool sameSize(const Dim &a, const Dim &b) { return ir::dimsCompatible(a, b); }

InferResult gatherRule(const Ops &ops, Attrs &attrs);
InferResult scatterRule(const Ops &ops, Attrs &attrs);
InferResult sortRule(const Ops &ops, Attrs &attrs);
InferResult mapRule(const Ops &ops, Attrs &attrs);
InferResult dotRule(const Ops &ops, Attrs &attrs);
InferResult convRule(const Ops &ops, Attrs &attrs);
InferResult fusedConvRule(const Ops &ops, Attrs &attrs); // ConvEpilogue.cpp
InferResult reduceRule(const Ops &ops, Attrs &attrs);
InferResult reduceWindowRule(const Ops &ops, Attrs &attrs);
InferResult selectAndScatterRule(const Ops &ops, Attrs &attrs);
InferResult batchNormTrainingRule(const Ops &ops, Attrs &attrs);
InferResult batchNormInferenceRule(const Ops &ops, Attrs &attrs);
InferResult batchNormGradRule(const Ops &ops, Attrs &attrs);

} // namespace mdl::stdlib::hlorules
