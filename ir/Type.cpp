// Element types, dimensions and tensor types: spelling and arithmetic.
#include "ir/Type.h"

#include <cassert>

namespace mdl::ir {

namespace {
struct DTypeInfo {
  const char *name;
  size_t size;
};
constexpr DTypeInfo kInfo[kNumDTypes] = {
    {"bool", 1}, {"i8", 1},  {"u8", 1},   {"i32", 4}, {"i64", 8},
    {"f16", 2},  {"bf16", 2}, {"f32", 4}, {"f64", 8},
};
} // namespace

size_t dtypeSize(DType t) { return kInfo[static_cast<int>(t)].size; }
const char *dtypeName(DType t) { return kInfo[static_cast<int>(t)].name; }

std::optional<DType> parseDType(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (s == kInfo[i].name)
      return static_cast<DType>(i);
  return std::nullopt;
}

bool isFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 ||
         t == DType::F64;
}
bool isInteger(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I32 || t == DType::I64;
}
bool isSigned(DType t) { return isFloat(t) || (isInteger(t) && t != DType::U8); }

std::string Dim::str() const {
  return isStatic() ? std::to_string(size) : sym;
}

TensorType TensorType::of(DType t, const std::vector<int64_t> &sizes) {
  Shape s;
  s.reserve(sizes.size());
  for (int64_t n : sizes)
    s.push_back(Dim::of(n));
  return TensorType(t, std::move(s));
}

bool TensorType::isStatic() const {
  for (const Dim &d : dims)
    if (!d.isStatic())
      return false;
  return true;
}

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (const Dim &d : dims)
    n *= d.isStatic() ? d.size : 0;
  return n;
}

bool TensorType::fitsInMemory() const {
  if (!isStatic())
    return false;
  unsigned __int128 bytes = dtypeSize(dtype);
  for (const Dim &d : dims) {
    if (d.size < 0)
      return false;
    bytes *= uint64_t(d.size);
    if (bytes > uint64_t(kMaxTensorBytes))
      return false;
  }
  return true;
}

std::string TensorType::byteSizeText() const {
  unsigned __int128 bytes = dtypeSize(dtype);
  bool overflow = false;
  for (const Dim &d : dims) {
    unsigned __int128 next = bytes * uint64_t(d.isStatic() && d.size > 0 ? d.size : 0);
    if (d.size > 0 && next / uint64_t(d.size) != bytes)
      overflow = true;
    bytes = next;
  }
  if (overflow)
    return "more than 10^38";
  std::string digits;
  do {
    digits.insert(digits.begin(), char('0' + int(bytes % 10)));
    bytes /= 10;
  } while (bytes != 0);
  return digits;
}

std::vector<int64_t> TensorType::sizes() const {
  assert(isStatic() && "sizes() of a type with symbolic dimensions");
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim &d : dims)
    out.push_back(d.size);
  return out;
}

std::string TensorType::str() const {
  std::string s = dtypeName(dtype);
  if (dims.empty())
    return s;
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ", ";
    s += dims[i].str();
  }
  s += ']';
  return s;
}

bool dimsCompatible(const Dim &a, const Dim &b) {
  if (a.isUnknown() || b.isUnknown())
    return true;
  if (a.isStatic() && b.isStatic())
    return a.size == b.size;
  if (a.isSymbol() && b.isSymbol())
    return a.sym == b.sym;
  return true; // a symbol may be bound to the static size
}

bool typesCompatible(const TensorType &a, const TensorType &b) {
  if (a.dtype != b.dtype || a.rank() != b.rank())
    return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!dimsCompatible(a.dims[i], b.dims[i]))
      return false;
  return true;
}

} // namespace mdl::ir
