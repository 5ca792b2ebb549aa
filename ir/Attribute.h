// Attributes: the compile-time parameters of an operation (`axis = 1`,
// `perm = [1, 0]`, `type = f32[4]`, `value = dense<...>`).
//
// An attribute is a small tagged value. Dense tensor data is shared, never
// copied, because constants move between passes unchanged; dense data is
// only ever small literal data written in a source file (weights are `load`
// operations that reference a file, never data in the IR).
#pragma once

#include "ir/Type.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace mdl::ir {

/// Literal tensor data owned by a constant.
struct DenseData {
  TensorType type; // static
  std::vector<uint8_t> bytes;
  /// Element i converted to double (for printing and folding).
  double elementAsDouble(int64_t i) const;
  int64_t elementAsInt(int64_t i) const;
};

/// A reference to a module-level symbol (`@w1`, `@gpu0`, `@dense`).
struct SymbolRef {
  std::string name;
  bool operator==(const SymbolRef &o) const { return name == o.name; }
};

class Attribute {
public:
  enum class Kind { Int, Float, Bool, String, IntList, DimList, DType, Type,
                    Dense, Symbol };

  Attribute() : v_(int64_t(0)) {}
  static Attribute integer(int64_t x) { return Attribute(Storage(x)); }
  static Attribute real(double x) { return Attribute(Storage(x)); }
  static Attribute boolean(bool x) { return Attribute(Storage(x)); }
  static Attribute string(std::string s) { return Attribute(Storage(std::move(s))); }
  static Attribute intList(std::vector<int64_t> v) { return Attribute(Storage(std::move(v))); }
  static Attribute dimList(Shape v) { return Attribute(Storage(std::move(v))); }
  static Attribute dtype(DType t) { return Attribute(Storage(t)); }
  static Attribute type(TensorType t) { return Attribute(Storage(std::move(t))); }
  static Attribute dense(std::shared_ptr<const DenseData> d) { return Attribute(Storage(std::move(d))); }
  static Attribute symbol(std::string name) { return Attribute(Storage(SymbolRef{std::move(name)})); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  int64_t asInt() const { return std::get<int64_t>(v_); }
  double asFloat() const { return std::get<double>(v_); }
  /// Int or Float as a double.
  double asNumber() const;
  bool asBool() const { return std::get<bool>(v_); }
  const std::string &asString() const { return std::get<std::string>(v_); }
  const std::vector<int64_t> &asIntList() const { return std::get<std::vector<int64_t>>(v_); }
  const Shape &asDimList() const { return std::get<Shape>(v_); }
  DType asDType() const { return std::get<DType>(v_); }
  const TensorType &asType() const { return std::get<TensorType>(v_); }
  const DenseData &asDense() const { return *std::get<std::shared_ptr<const DenseData>>(v_); }
  const std::shared_ptr<const DenseData> &denseRef() const { return std::get<std::shared_ptr<const DenseData>>(v_); }
  const std::string &asSymbol() const { return std::get<SymbolRef>(v_).name; }

  bool operator==(const Attribute &o) const;
  bool operator!=(const Attribute &o) const { return !(*this == o); }

private:
  using Storage = std::variant<int64_t, double, bool, std::string,
                               std::vector<int64_t>, Shape, DType, TensorType,
                               std::shared_ptr<const DenseData>, SymbolRef>;
  explicit Attribute(Storage v) : v_(std::move(v)) {}
  Storage v_;
};

struct NamedAttr {
  std::string name;
  Attribute value;
};

/// Formats a double so that parsing it back gives the same value
/// (shortest round-trip form, always with a '.', 'e', "inf" or "nan").
std::string formatReal(double x);
/// Same for a float: the shortest form that reads back as the same float.
std::string formatFloat(float x);

} // namespace mdl::ir
