// Buffer planning for the JIT: where every value of a function instance
// lives, decided before any code is generated.
//
// A value's bytes live in a root: a function argument, a caller's result
// buffer, a global, a constant of the compiled object, or a slot of the
// function's arena (one per memory space: the host, and each device whose
// memory is not host memory). Shape operations (reshape, transpose, slice,
// broadcast_to, ...) and transfers between host-memory devices make views
// (root, element offset, strides) instead of copies; a view is copied into
// a slot of its own only where a consumer needs contiguous data.
//
// Arena slots get live intervals over the function's operations in order
// (a value read inside a loop but defined outside it stays live until the
// loop ends) and share memory when the intervals do not overlap. A value
// that is yielded to a loop's carried slot, returned, or yielded by an `if`
// is computed directly into that destination when nothing reads the
// destination's old contents after the value is defined.
//
// An update of part of a tensor (dynamic_update_slice, scatter: the
// UpdatesOperand trait) is computed in its operand's buffer when that
// operand dies there: its arena root is read by nothing after the update
// (a loop's carried slot may be read after the loop: that reads the loop's
// result), no other operand of the update shares it, the update is not
// inside a loop the operand comes from, and it is not an argument, a
// global or a constant, which others still own.
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace mdl::backend::jit {

/// One block of storage.
struct Root {
  enum class Kind { Arena, Arg, Result, Global, Constant };
  Kind kind = Kind::Arena;
  int space = -1;          // -1: host memory; else the module device whose memory it is
  int64_t bytes = 0;
  int index = -1;          // Arg / Result number
  const ir::Value *value = nullptr;        // the value it was made for
  const ir::Operation *source = nullptr;   // Global / Constant: the defining op
  int start = 0, end = 0;                  // live interval (operation positions)
  int64_t offset = -1;                     // Arena: offset in its space's arena
};

/// Where a value's elements are: root + offset + index . strides (in
/// elements); contiguous when the strides are row-major for the value's
/// shape (size-1 dimensions aside).
struct ValueLoc {
  int root = -1;
  int64_t offset = 0;
  std::vector<int64_t> strides;
  bool contiguous = true;
};

struct FunctionPlan {
  std::vector<Root> roots;
  /// The live root a merged root now stands for.
  std::vector<int> rootRep;
  std::unordered_map<const ir::Value *, ValueLoc> locs;
  /// Values copied into a slot of their own where they are defined: the view
  /// they are copied from.
  std::unordered_map<const ir::Value *, ValueLoc> copyFrom;
  /// Operations that generated code refers to by handle (kernels run by the
  /// runtime, prints, segments launched on devices, loops: where an
  /// interrupt is reported), numbered in walk order.
  std::vector<const ir::Operation *> handles;
  std::unordered_map<const ir::Operation *, int> handleOf;
  /// A `for`: the slot its index is stored in (when something reads it).
  std::unordered_map<const ir::Operation *, int> indexRoot;
  /// A loop's yield: per operand, a temporary slot it goes through (when a
  /// yielded value is another carried value of the same loop), or -1.
  std::unordered_map<const ir::Operation *, std::vector<int>> yieldTemps;
  /// Operations the host code computes itself (InlineOps.h).
  std::unordered_set<const ir::Operation *> inlined;
  /// Updates computed in their operands' buffers: result i shares operand
  /// i's root (the update writes only the elements it replaces).
  std::unordered_set<const ir::Operation *> inPlace;
  /// Bytes of each space's arena, and what the slots would take without
  /// sharing (for --timings).
  std::map<int, int64_t> arenaBytes;
  int64_t unsharedBytes = 0;

  /// Per module device: whether its memory is host memory (as planned).
  std::vector<bool> hostMemory;
  /// Per module device: whether its segments are compiled into host code
  /// (else its runtime runs them, through a handle).
  std::vector<bool> inlineSegments;

  int rep(int root) const;
  /// The memory space of values on module device `d` (-1: host memory).
  int deviceSpace(int d) const {
    return d >= 0 && size_t(d) < hostMemory.size() && !hostMemory[size_t(d)] ? d : -1;
  }
  const ValueLoc &loc(const ir::Value *v) const { return locs.at(v); }
  const Root &rootOf(const ir::Value *v) const { return roots[size_t(rep(loc(v).root))]; }
};

/// Plans function `f` of `m`. `hostMemory[d]` says whether module device d
/// keeps its data in host memory (the CPU, the CPU fallback): its values
/// live in the host arena. `inlineSegments[d]` says whether the device's
/// compile-time half lets its segments be compiled into host code; the
/// others get a handle and run through the device's runtime. Empty vectors
/// mean host memory and inline segments everywhere.
FunctionPlan planBuffers(const ir::Module &m, const ir::Function &f,
                         const std::vector<bool> &hostMemory,
                         const std::vector<bool> &inlineSegments);

/// One block to place: size, live interval (inclusive), and the offset
/// chosen for it.
struct PlanInterval {
  int64_t bytes = 0;
  int start = 0, end = 0;
  int64_t offset = -1;
};

/// Places blocks in one arena (64-byte aligned), largest first, each at the
/// lowest offset free of every block whose interval overlaps its own.
/// Returns the arena's size.
int64_t assignOffsets(std::vector<PlanInterval> &items);

/// How BLAS reads the last two axes of a matmul operand view: stored as is
/// (row stride = ld) or transposed (column stride = ld).
struct MatrixLayout {
  bool trans = false;
  int64_t ld = 1;
};
/// The layout of a rows x cols matrix whose elements are `rowStride` and
/// `colStride` apart; nullopt when neither axis is unit-stride.
std::optional<MatrixLayout> matrixLayout(int64_t rows, int64_t cols, int64_t rowStride,
                                         int64_t colStride);

/// Row-major strides (in elements) of a shape.
std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape);
/// Whether strides describe row-major order for a shape (size-1 axes aside).
bool isContiguous(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides);

} // namespace mdl::backend::jit
