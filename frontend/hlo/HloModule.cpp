// HLO shapes: leaves, spelling, element counts, and how each HLO element
// type is stored in mdl IR.
#include "frontend/hlo/HloModule.h"

namespace mdl::frontend::hlo {

std::optional<ir::DType> storageType(const std::string &t) {
  using ir::DType;
  if (t == "pred")
    return DType::Bool;
  if (t == "s8")
    return DType::I8;
  if (t == "u8")
    return DType::U8;
  if (t == "s32" || t == "u32")
    return DType::I32;
  if (t == "s64" || t == "u64")
    return DType::I64;
  if (t == "f16")
    return DType::F16;
  if (t == "bf16")
    return DType::BF16;
  if (t == "f32")
    return DType::F32;
  if (t == "f64")
    return DType::F64;
  return std::nullopt;
}

bool isSignlessUnsigned(const std::string &t) { return t == "u32" || t == "u64"; }

size_t HloShape::leafCount() const {
  if (!isTuple)
    return 1;
  size_t n = 0;
  for (const HloShape &e : elements)
    n += e.leafCount();
  return n;
}

void HloShape::leaves(std::vector<const HloShape *> &out) const {
  if (!isTuple) {
    out.push_back(this);
    return;
  }
  for (const HloShape &e : elements)
    e.leaves(out);
}

std::string HloShape::str() const {
  if (isTuple) {
    std::string s = "(";
    for (size_t i = 0; i < elements.size(); ++i)
      s += (i ? ", " : "") + elements[i].str();
    return s + ")";
  }
  std::string s = type + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

int64_t HloShape::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

} // namespace mdl::frontend::hlo
