// Element types, dimensions and tensor types of the mdl IR.
//
// Every value in the IR is a tensor: an element type and a shape. A shape is
// a list of dimensions, each a static size, a named symbol (`B`, bound per
// call when a generic function is specialized) or unknown (`?`, produced by a
// shape rule that cannot name the size before specialization). After
// specialization every dimension of a run-time program is static.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mdl::ir {

/// The element types of LANGUAGE.md, in promotion-free order.
enum class DType : uint8_t { Bool, I8, U8, I32, I64, F16, BF16, F32, F64 };

constexpr int kNumDTypes = 9;

/// Size in bytes of one element.
size_t dtypeSize(DType t);
/// The keyword spelling (`f32`).
const char *dtypeName(DType t);
/// Parses a keyword spelling; nullopt for anything else.
std::optional<DType> parseDType(std::string_view s);
bool isFloat(DType t);
bool isInteger(DType t); // signed or unsigned, not bool
bool isSigned(DType t);

/// The most bytes a tensor may hold: 2^47 (128 TiB), all the address space a
/// user process has on x86-64 (and on AArch64 with 48-bit addresses). A type
/// above it can never be allocated, so it is refused when the program is
/// checked (E0212) instead of failing when it runs.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 47;

/// One dimension: a static size, a symbol, or unknown.
struct Dim {
  int64_t size = 0;  // valid when sym is empty
  std::string sym;   // symbol name, or "?" for unknown

  static Dim of(int64_t n) { return Dim{n, {}}; }
  static Dim symbol(std::string name) { return Dim{0, std::move(name)}; }
  static Dim unknown() { return Dim{0, "?"}; }
  bool isStatic() const { return sym.empty(); }
  bool isSymbol() const { return !sym.empty() && sym != "?"; }
  bool isUnknown() const { return sym == "?"; }
  std::string str() const;
  bool operator==(const Dim &o) const { return size == o.size && sym == o.sym; }
  bool operator!=(const Dim &o) const { return !(*this == o); }
};

using Shape = std::vector<Dim>;

/// A tensor type: element type plus shape (rank 0 is a scalar).
struct TensorType {
  DType dtype = DType::F32;
  Shape dims;

  TensorType() = default;
  TensorType(DType t, Shape s) : dtype(t), dims(std::move(s)) {}
  static TensorType scalar(DType t) { return TensorType(t, {}); }
  static TensorType of(DType t, const std::vector<int64_t> &sizes);

  int rank() const { return static_cast<int>(dims.size()); }
  bool isScalar() const { return dims.empty(); }
  /// True when every dimension is a static size.
  bool isStatic() const;
  /// Number of elements; only meaningful when isStatic().
  int64_t numElements() const;
  int64_t byteSize() const { return numElements() * int64_t(dtypeSize(dtype)); }
  /// True when the type is static and its bytes fit kMaxTensorBytes (the
  /// product of its sizes neither overflows nor exceeds the limit).
  bool fitsInMemory() const;
  /// The exact byte size in decimal, even where it exceeds int64.
  std::string byteSizeText() const;
  std::vector<int64_t> sizes() const; // static sizes; asserts isStatic()
  /// `f32[4, B]`, or `f32` for a scalar.
  std::string str() const;
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && dims == o.dims;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// True when two dims may denote the same size (unknowns match anything).
bool dimsCompatible(const Dim &a, const Dim &b);
/// True when the types may be equal once every symbol is bound.
bool typesCompatible(const TensorType &a, const TensorType &b);

} // namespace mdl::ir
