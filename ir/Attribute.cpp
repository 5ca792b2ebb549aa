// Attribute comparison, dense element access and round-trip number printing.
#include "ir/Attribute.h"
#include "ir/Saturate.h"
#include "ir/Half.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace mdl::ir {

namespace {
template <typename T> T loadAt(const std::vector<uint8_t> &b, int64_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}
} // namespace

double DenseData::elementAsDouble(int64_t i) const {
  switch (type.dtype) {
  case DType::Bool: return loadAt<uint8_t>(bytes, i) ? 1.0 : 0.0;
  case DType::I8: return loadAt<int8_t>(bytes, i);
  case DType::U8: return loadAt<uint8_t>(bytes, i);
  case DType::I32: return loadAt<int32_t>(bytes, i);
  case DType::I64: return double(loadAt<int64_t>(bytes, i));
  case DType::F16: return halfToFloat(loadAt<uint16_t>(bytes, i));
  case DType::BF16: return bf16ToFloat(loadAt<uint16_t>(bytes, i));
  case DType::F32: return loadAt<float>(bytes, i);
  case DType::F64: return loadAt<double>(bytes, i);
  }
  return 0;
}

int64_t DenseData::elementAsInt(int64_t i) const {
  switch (type.dtype) {
  case DType::Bool: return loadAt<uint8_t>(bytes, i) ? 1 : 0;
  case DType::I8: return loadAt<int8_t>(bytes, i);
  case DType::U8: return loadAt<uint8_t>(bytes, i);
  case DType::I32: return loadAt<int32_t>(bytes, i);
  case DType::I64: return loadAt<int64_t>(bytes, i);
  default: return saturateToInt64(elementAsDouble(i));
  }
}

double Attribute::asNumber() const {
  if (kind() == Kind::Int)
    return double(asInt());
  if (kind() == Kind::Bool)
    return asBool() ? 1.0 : 0.0;
  return asFloat();
}

bool Attribute::operator==(const Attribute &o) const {
  if (kind() != o.kind())
    return false;
  if (kind() == Kind::Dense) {
    const DenseData &a = asDense(), &b = o.asDense();
    return a.type == b.type && a.bytes == b.bytes;
  }
  if (kind() == Kind::Float) // bitwise, so that NaN equals itself
    return std::memcmp(&std::get<double>(v_), &std::get<double>(o.v_), 8) == 0;
  return v_ == o.v_;
}

namespace {
std::string finishReal(std::string s) {
  if (s == "inf" || s == "-inf" || s == "nan" || s == "-nan")
    return s[0] == '-' && s[1] == 'n' ? "nan" : s;
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}
} // namespace

std::string formatReal(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return finishReal(std::string(buf, r.ptr));
}

std::string formatFloat(float x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return finishReal(std::string(buf, r.ptr));
}

} // namespace mdl::ir
