// Run-time tensors: aligned buffer allocation and element access by index.
//
// Kernels work on typed pointers; the accessors here (getDouble, setInt...)
// are the slow, dtype-generic path used by the interpreter for scalars, by
// printing and by tests. Conversions follow the `cast` rules of
// LANGUAGE.md: float to integer truncates toward zero (saturating, NaN gives
// 0), to bool is `x != 0`.
#include "backend/runtime/Tensor.h"

#include "ir/Half.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace mdl::backend {

using ir::DType;

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  constexpr size_t kAlign = 64;
  // Round up so the block is a whole number of cache lines; a request so
  // large that rounding overflows cannot be satisfied anyway.
  if (bytes > std::numeric_limits<size_t>::max() - kAlign)
    return nullptr;
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (rounded == 0)
    rounded = kAlign; // a zero-element tensor still has a valid pointer
  void *p = nullptr;
  if (posix_memalign(&p, kAlign, rounded) != 0 || !p)
    return nullptr;
  std::shared_ptr<void> owner(p, [](void *q) { std::free(q); });
  return std::make_shared<Buffer>(p, bytes, std::move(owner));
}

namespace {
// Byte size of a static type, or false when a dimension is negative, symbolic
// or the product overflows.
bool staticByteSize(const ir::TensorType &type, size_t &out) {
  uint64_t n = ir::dtypeSize(type.dtype);
  for (const ir::Dim &d : type.dims) {
    if (!d.isStatic() || d.size < 0)
      return false;
    if (__builtin_mul_overflow(n, uint64_t(d.size), &n))
      return false;
  }
  if (n > uint64_t(std::numeric_limits<int64_t>::max()))
    return false;
  out = size_t(n);
  return true;
}
} // namespace

Tensor Tensor::empty(const ir::TensorType &type) {
  size_t bytes;
  if (!staticByteSize(type, bytes))
    return Tensor();
  std::shared_ptr<Buffer> buf = Buffer::allocate(bytes);
  if (!buf)
    return Tensor();
  return Tensor(type, std::move(buf));
}

Tensor Tensor::zeros(const ir::TensorType &type) {
  Tensor t = empty(type);
  if (t.valid())
    std::memset(t.raw(), 0, t.byteSize());
  return t;
}

Tensor Tensor::clone() const {
  if (!valid())
    return Tensor();
  Tensor t = empty(type_);
  if (t.valid())
    std::memcpy(t.raw(), raw(), byteSize());
  return t;
}

namespace {
template <typename T> T loadAt(const void *base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char *>(base) + i * int64_t(sizeof(T)),
              sizeof(T));
  return v;
}

template <typename T> void storeAt(void *base, int64_t i, T v) {
  std::memcpy(static_cast<char *>(base) + i * int64_t(sizeof(T)), &v,
              sizeof(T));
}

// Truncates toward zero and saturates to I's range; NaN becomes 0. This is
// the one float-to-integer conversion of the runtime (C++'s own conversion
// is undefined out of range).
template <typename I> I saturatingFromDouble(double v) {
  if (std::isnan(v))
    return 0;
  constexpr double lo = double(std::numeric_limits<I>::min());
  // 2^63 for i64: the smallest double that does not fit.
  constexpr double hiExcl = double(std::numeric_limits<I>::max()) + 1.0;
  if (v <= lo)
    return std::numeric_limits<I>::min();
  if (v >= hiExcl)
    return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}
} // namespace

double Tensor::getDouble(int64_t i) const {
  const void *p = raw();
  switch (dtype()) {
  case DType::Bool:
    return loadAt<uint8_t>(p, i) ? 1.0 : 0.0;
  case DType::I8:
    return loadAt<int8_t>(p, i);
  case DType::U8:
    return loadAt<uint8_t>(p, i);
  case DType::I32:
    return loadAt<int32_t>(p, i);
  case DType::I64:
    return double(loadAt<int64_t>(p, i));
  case DType::F16:
    return ir::halfToFloat(loadAt<uint16_t>(p, i));
  case DType::BF16:
    return ir::bf16ToFloat(loadAt<uint16_t>(p, i));
  case DType::F32:
    return loadAt<float>(p, i);
  case DType::F64:
    return loadAt<double>(p, i);
  }
  return 0;
}

int64_t Tensor::getInt(int64_t i) const {
  const void *p = raw();
  switch (dtype()) {
  case DType::Bool:
    return loadAt<uint8_t>(p, i) ? 1 : 0;
  case DType::I8:
    return loadAt<int8_t>(p, i);
  case DType::U8:
    return loadAt<uint8_t>(p, i);
  case DType::I32:
    return loadAt<int32_t>(p, i);
  case DType::I64:
    return loadAt<int64_t>(p, i);
  default:
    return saturatingFromDouble<int64_t>(getDouble(i));
  }
}

void Tensor::setDouble(int64_t i, double v) const {
  void *p = raw();
  switch (dtype()) {
  case DType::Bool:
    storeAt<uint8_t>(p, i, v != 0 ? 1 : 0);
    break;
  case DType::I8:
    storeAt(p, i, saturatingFromDouble<int8_t>(v));
    break;
  case DType::U8:
    storeAt(p, i, saturatingFromDouble<uint8_t>(v));
    break;
  case DType::I32:
    storeAt(p, i, saturatingFromDouble<int32_t>(v));
    break;
  case DType::I64:
    storeAt(p, i, saturatingFromDouble<int64_t>(v));
    break;
  case DType::F16:
    storeAt(p, i, ir::floatToHalf(float(v)));
    break;
  case DType::BF16:
    storeAt(p, i, ir::floatToBf16(float(v)));
    break;
  case DType::F32:
    storeAt(p, i, float(v));
    break;
  case DType::F64:
    storeAt(p, i, v);
    break;
  }
}

void Tensor::setInt(int64_t i, int64_t v) const {
  void *p = raw();
  // Integer to integer wraps (two's complement), as integer casts do.
  switch (dtype()) {
  case DType::Bool:
    storeAt<uint8_t>(p, i, v != 0 ? 1 : 0);
    break;
  case DType::I8:
    storeAt(p, i, static_cast<int8_t>(uint8_t(uint64_t(v))));
    break;
  case DType::U8:
    storeAt(p, i, static_cast<uint8_t>(uint64_t(v)));
    break;
  case DType::I32:
    storeAt(p, i, static_cast<int32_t>(uint32_t(uint64_t(v))));
    break;
  case DType::I64:
    storeAt(p, i, v);
    break;
  default:
    setDouble(i, double(v));
    break;
  }
}

} // namespace mdl::backend
