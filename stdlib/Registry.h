// The operation registry: for every operation kind, its user-facing
// signature (positional and keyword parameters with defaults), its shape and
// element-type rule, and the device kinds that implement it.
//
// The frontend reads signatures to check calls, the IR passes and the
// specializer read shape rules, the affinity pass reads device kinds, and
// the backends dispatch on the kind. Adding an operation means adding an
// entry to Ops.def, an entry here, and kernels: nothing else.
#pragma once

#include "ir/IR.h"

#include <optional>
#include <string>
#include <vector>

namespace mdl::stdlib {

/// What a parameter of a user-callable operation accepts.
enum class ParamKind {
  Tensor,     // an operand
  TensorList, // a list literal of operands: concat([a, b])
  Variadic,   // every remaining positional argument is an operand (print)
  Int,        // a compile-time integer
  Axes,       // an integer or a list of integers (reduction axes)
  IntPair,    // an integer or [h, w] (conv stride, pool size)
  IntList,    // a list of integers (perm)
  IntPairs,   // a list of [lo, hi] pairs (pad widths), stored flattened
  DimList,    // a shape: integers, -1 or symbols (reshape, broadcast_to)
  DimValue,   // one dimension: an integer or a symbol (arange)
  Number,     // a compile-time number
  Bool,
  DType,      // a bare element type: cast(x, f16)
  Type,       // a tensor type: zeros(f32[3, 4])
  Device,     // a declared device name: to(x, gpu0)
  String,
  Function,   // the name of a function of the program: reduce(..., to_apply = add_fn)
};

struct ParamSpec {
  const char *name;
  ParamKind kind;
  /// Default for an optional non-tensor parameter; absent attributes with no
  /// default and required == false stay absent (e.g. axis = all).
  std::optional<ir::Attribute> dflt;
  bool required = true;
};

/// Broad families, used by passes (fusion, folding) and kernels.
enum class OpClass {
  Structural,
  Placement,
  ElementwiseUnary,
  ElementwiseBinary,
  Comparison,
  Logic,
  ElementwiseOther, // clip, select, cast
  Reduction,
  LinearAlgebra,
  Shape,
  Neural,
  Creation,
};

/// Device kinds as a bit mask.
enum DeviceMask : unsigned {
  kCpu = 1u << 0,
  kHip = 1u << 1,
  kMpc = 1u << 2,
  kAllDevices = kCpu | kHip | kMpc,
};

/// Why a shape or type rule rejected its inputs.
struct RuleError {
  std::string code; // E0201, E0202, E0203, E0204, E0210
  std::string message;
  int operand = -1; // the operand the message is about, if one
};

struct InferResult {
  std::vector<ir::TensorType> types;
  std::optional<RuleError> error;
  bool ok() const { return !error.has_value(); }
};

struct OpInfo {
  ir::OpKind kind;
  /// The name users call it by, or null for internal operations.
  const char *callName = nullptr;
  OpClass cls = OpClass::Structural;
  std::vector<ParamSpec> params;
  unsigned devices = kCpu | kHip;
  /// Infers result types from operand types and attributes. Attributes are
  /// canonicalized in place (defaults filled in, negative axes made
  /// non-negative) so the IR is explicit. Null for structural operations,
  /// whose types the frontend and specializer derive themselves.
  InferResult (*infer)(const std::vector<ir::TensorType> &operands,
                       std::vector<ir::NamedAttr> &attrs) = nullptr;
};

/// The entry for an operation kind.
const OpInfo &opInfo(ir::OpKind kind);
/// The user-callable operation with this name, or null.
const OpInfo *lookupCallable(const std::string &name);
/// All user-callable names, sorted (for "did you mean" suggestions).
std::vector<std::string> callableNames();

/// The names of the attributes through which an operation applies a
/// function of the module (its ParamKind::Function parameters, such as
/// `to_apply`); the passes keep those functions alive and placed.
const std::vector<std::string> &functionAttrs(ir::OpKind kind);

/// Runs the shape rule of `kind`.
InferResult inferTypes(ir::OpKind kind,
                       const std::vector<ir::TensorType> &operands,
                       std::vector<ir::NamedAttr> &attrs);

/// NumPy broadcasting of two shapes, symbol-aware. On failure returns false
/// and sets `badAxis` to the (right-aligned, result-indexed) axis.
bool broadcastShapes(const ir::Shape &a, const ir::Shape &b, ir::Shape &out,
                     int &badAxis);

/// One dimension of a Python-style slice, resolved against a size:
/// elements start, start + step, ... (len of them). INT64_MAX in `b` or `e`
/// means the bound was omitted.
struct SliceDim {
  int64_t start, step, len;
};
SliceDim normalizeSliceDim(int64_t n, int64_t b, int64_t e, int64_t k);

/// Normalizes an axis against a rank; false when out of range.
bool normalizeAxis(int64_t &axis, int rank);

} // namespace mdl::stdlib
