// Internal to canonicalize (Canonicalize.cpp and the files of its rules:
// CanonicalizeHlo.cpp, SegmentMerge.cpp, ViewSimplify.cpp): the builder of
// the operations that replace one operation (each with the original's
// device, placement and location, its type from the operation table's
// shape rule), and the rules' entry points.
#pragma once

#include "ir/IR.h"

#include <memory>
#include <vector>

namespace mdl::passes {

class Expander {
public:
  explicit Expander(const ir::Operation &orig) : orig_(orig) {}

  const ir::Operation &original() const { return orig_; }

  /// A new operation of kind `k`; its one result.
  ir::Value *emit(ir::OpKind k, std::vector<ir::Value *> operands,
                  std::vector<ir::NamedAttr> attrs = {});
  /// A reduction of kind `k` over the last axis of `x`, keeping it.
  ir::Value *reduce(ir::OpKind k, ir::Value *x);
  /// A scalar constant of element type `t` (a float type: f32, f64, bf16 or
  /// f16, rounded to it).
  ir::Value *scalar(ir::DType t, double v);
  /// `x` as element type `t` (x itself when it already is).
  ir::Value *cast(ir::Value *x, ir::DType t);
  /// `x` transposed by `perm` (x itself for the identity).
  ir::Value *transpose(ir::Value *x, const std::vector<int64_t> &perm);
  /// `x` reshaped to `sizes` (x itself when it has that shape).
  ir::Value *reshape(ir::Value *x, const std::vector<int64_t> &sizes);

  /// The new operations, in order; the last one's result replaces the
  /// original's.
  std::vector<std::unique_ptr<ir::Operation>> ops;

private:
  const ir::Operation &orig_;
};

/// The HLO operations canonicalize rewrites (CanonicalizeHlo.cpp): a
/// `reduce` with a named add / max / min reducer and a neutral or constant
/// init, and a `dot_general` of floats, which becomes views and a
/// dot_general in matrix-product form (batch axes first, then rows and
/// contraction: what the JIT's matrix product reads in place).
bool rewritesHlo(const ir::Operation &op);
/// The replacement of such an operation (null when it turns out not to
/// apply).
ir::Value *expandHlo(Expander &ex);

/// In a region of the host program: cheap constant globals computed inside
/// the segments that read them, and neighbouring segments of one device
/// merged (SegmentMerge.cpp). Returns the number of changes.
int mergeSegments(const ir::Module &m, ir::Region &r);

/// In a segment's body: reshape chains collapsed, unit-axis reshapes
/// pushed into what they reshape (reductions keep their axes), broadcasts
/// left to element-wise broadcasting, dead operations dropped
/// (ViewSimplify.cpp). Returns the number of changes.
int simplifyViews(ir::Region &segmentBody);

} // namespace mdl::passes
