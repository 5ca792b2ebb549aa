// The operation registry: the operation table (Ops.def) as data. For every
// operation kind: its spelling, its user-facing signature (operands and
// attributes with their kinds and defaults), its class, dialect, traits,
// fusibility, cost and shape rule.
//
// Passes ask the registry what an operation is (a transfer, a view, host
// orchestration, fusible, ...) instead of switching on kinds; the frontend
// reads signatures to check calls; the specializer runs the shape rules.
// Which device kinds implement an operation is each device kind's own
// answer (DeviceKinds.h), not a fact of the table.
#pragma once

#include "ir/IR.h"
#include "stdlib/OpKind.h"

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

/// Broad families (the registry's grouping; documentation and messages).
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

/// Where an operation comes from: the language, or XLA's semantics that
/// `mdl import` needs.
enum class Dialect { Core, Hlo };

/// Facts about an operation that passes and backends ask about.
namespace trait {
enum : unsigned {
  Orchestration = 1u << 0, // host control flow: calls, branches, loops, print; never in a segment
  Terminator = 1u << 1,    // ends a region (yield, return)
  Transfer = 1u << 2,      // moves its operand to another device (to, reveal, transfer)
  View = 1u << 3,          // its result may share its operand's bytes (reshape, slice, ...)
  FusionLeaf = 1u << 4,    // constant-like: a fused loop computes it instead of reading it
  NoKernel = 1u << 5,      // no run-time kernel: the executor handles it
  RowReduction = 1u << 6,  // a reduction a fused loop can compute over trailing axes
  // Result i is operand i with some elements replaced (dynamic_update_slice,
  // scatter): it may be computed in operand i's buffer when nothing reads
  // that operand afterwards, writing only the replaced elements.
  UpdatesOperand = 1u << 7,
};
} // namespace trait

/// Whether a generated loop computes the operation per element.
enum class FusionKind {
  None,
  Any,     // always
  Float,   // when its result is floating point
  NonBool, // when its result is not bool
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

using RuleFn = InferResult (*)(const std::vector<ir::TensorType> &operands,
                               std::vector<ir::NamedAttr> &attrs);

struct OpInfo {
  ir::OpKind kind;
  /// The IR spelling (`add`).
  const char *name = nullptr;
  /// The name users call it by, or null for operators and internal
  /// operations.
  const char *callName = nullptr;
  OpClass cls = OpClass::Structural;
  Dialect dialect = Dialect::Core;
  unsigned traits = 0; // trait:: bits
  FusionKind fusion = FusionKind::None;
  /// Relative cost per element in a fused loop (1: an add).
  int cost = 1;
  /// Infers result types from operand types and attributes. Attributes are
  /// canonicalized in place (defaults filled in from `params` first,
  /// negative axes made non-negative) so the IR is explicit. Null for
  /// structural operations, whose types the frontend and specializer
  /// derive themselves.
  RuleFn infer = nullptr;
  std::vector<ParamSpec> params;
  /// How many operands it takes, or -1 for a list or variadic signature.
  int operandCount = 0;

  bool has(unsigned t) const { return (traits & t) != 0; }
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

// Questions passes and backends ask about a kind (all read the table).
inline bool hasTrait(ir::OpKind k, unsigned t) { return opInfo(k).has(t); }
inline bool isOrchestration(ir::OpKind k) { return hasTrait(k, trait::Orchestration); }
inline bool isTransfer(ir::OpKind k) { return hasTrait(k, trait::Transfer); }
inline bool isView(ir::OpKind k) { return hasTrait(k, trait::View); }
inline bool hasKernel(ir::OpKind k) { return !hasTrait(k, trait::NoKernel); }
inline bool isRowReduction(ir::OpKind k) { return hasTrait(k, trait::RowReduction); }
inline bool updatesOperand(ir::OpKind k) { return hasTrait(k, trait::UpdatesOperand); }
/// The operation that ends a region (its last one, when that is a
/// terminator), or null.
ir::Operation *terminatorOf(const ir::Region &r);
/// The functions no call refers to, in module order: the entry points when
/// none is named.
std::vector<const ir::Function *> uncalledFunctions(const ir::Module &m);

/// Whether a fused loop computes `op` per element (its kind's FusionKind
/// against the result's element type).
bool isFusibleKind(ir::OpKind k, ir::DType result);

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
