// The epilogue of a fused convolution (Ops.def: fused_convolution): the
// steps applied, in order, to the convolution's result before it is stored,
// as the `epilogue` attribute spells them ("mul,add,residual,relu"). Read
// by the operation's shape rule (defined here), its CPU kernel (the
// reference), the pass that makes it (ir/passes/ConvEpilogue.cpp) and the
// JIT's oneDNN call (backend/jit/ConvPrimitive.cpp).
#pragma once

#include "ir/Type.h"

#include <optional>
#include <string>
#include <vector>

namespace mdl::stdlib {

/// What one step does to the value y computed so far.
enum class EpilogueKind {
  Add,      // y + v, v a scalar or per output channel
  Sub,      // y - v
  Mul,      // y * v
  Residual, // y + r, r of the result's type
  Relu,     // y < 0 ? 0 : y (NaN stays NaN)
  Clip,     // clip(y, clip_lo, clip_hi) (NaN stays NaN)
};

struct EpilogueStep {
  EpilogueKind kind;
  /// The index of its operand among the epilogue operands (the operands
  /// after x and w) for Add, Sub, Mul and Residual; -1 otherwise.
  int operand = -1;
};

/// Whether a step of this kind reads an operand.
bool takesOperand(EpilogueKind k);
/// The spelling of a step ("add", "residual", ...).
const char *epilogueName(EpilogueKind k);

/// Parses "step,step,..." (the empty string: no step), numbering operands
/// in order. nullopt on an unknown step.
std::optional<std::vector<EpilogueStep>> parseEpilogue(const std::string &spec);

/// How an Add, Sub or Mul operand of type `v` applies to a convolution
/// result of type `result` whose output feature dimension is `feature`.
enum class ChannelOperand {
  Scalar,     // one element
  PerChannel, // NumPy broadcasting (right-aligned): every dimension 1 but the feature one
  Invalid,
};
ChannelOperand classifyChannelOperand(const ir::TensorType &v, const ir::TensorType &result,
                                      int feature);

} // namespace mdl::stdlib
