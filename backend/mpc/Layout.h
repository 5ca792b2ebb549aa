// Data movement and reductions on row-major arrays of ring elements: the
// local half of the shape operations of the mpc device.
//
// Every function here is public-index work that a party applies to each of
// its two shares independently (moving shares around, or adding them up,
// commutes with the sharing), so none of them communicates. Arguments are
// checked and errors returned: these functions receive attributes from
// protocol programs, which may be wrong.
#pragma once

#include "backend/mpc/Ring.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <vector>

namespace mdl::backend::mpc {

/// A flat row-major array with its shape.
struct RingArray {
  Shape shape;
  std::vector<Ring> data;
};

/// The NumPy broadcast of two shapes, or an error naming both.
llvm::Expected<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// `x` broadcast to `shape` (NumPy rules); an error if it does not fit.
llvm::Expected<RingArray> broadcastTo(const RingArray &x, const Shape &shape);

/// Axes permuted: result dim i is input dim perm[i].
llvm::Expected<RingArray> transpose(const RingArray &x,
                                    const std::vector<int64_t> &perm);

/// x[starts[d] : stops[d] : steps[d]] along every axis d; steps are
/// positive and 0 <= start <= stop <= dim (stops beyond the dimension are
/// clamped, as in NumPy).
llvm::Expected<RingArray> slice(const RingArray &x,
                                const std::vector<int64_t> &starts,
                                const std::vector<int64_t> &stops,
                                const std::vector<int64_t> &steps);

/// The arrays joined along `axis` (negative counts from the end); all other
/// dimensions agree.
llvm::Expected<RingArray> concat(const std::vector<const RingArray *> &parts,
                                 int64_t axis);

/// Rows of x picked along `axis` by public `indices` of shape `indexShape`:
/// the result shape is x[:axis] + indexShape + x[axis+1:]. Indices lie in
/// [-dim, dim) (negative counts from the end).
llvm::Expected<RingArray> gather(const RingArray &x,
                                 const std::vector<int64_t> &indices,
                                 const Shape &indexShape, int64_t axis);

/// Sum (mod 2^64) over `axes` (empty: every axis), keeping them as size-1
/// dimensions when keepDims.
llvm::Expected<RingArray>
reduceSum(const RingArray &x, const std::vector<int64_t> &axes, bool keepDims);

/// `axis` in [0, rank), negative counting from the end; an error otherwise.
llvm::Expected<int64_t> normalizeAxis(int64_t axis, size_t rank);

} // namespace mdl::backend::mpc
