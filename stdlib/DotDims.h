// A dot_general's dimension numbers as a batched matrix product: which axes
// of each operand are free, the orders that bring the operands to
// [batch..., M, K] and [batch..., K, N], and the sizes (of static shapes).
// Read by the HLO canonicalization that rewrites it as a matmul and by its
// CPU kernel.
#pragma once

#include <cstdint>
#include <vector>

namespace mdl::stdlib {

struct DotDims {
  std::vector<int64_t> lhsFree, rhsFree;   // axes neither batch nor contracted, in order
  std::vector<int64_t> lhsOrder, rhsOrder; // batch, free, contracted / batch, contracted, free
  std::vector<int64_t> batch;              // the batch axes' sizes
  int64_t B = 1, M = 1, N = 1, K = 1;      // batch count, free sizes, contracted size
};

/// The layout of a dot_general of operands of shapes `lhs` and `rhs` with
/// batch axes `lb`/`rb` and contracted axes `lc`/`rc` (checked by the shape
/// rule: they pair up, are distinct and in range).
DotDims dotDims(const std::vector<int64_t> &lhs, const std::vector<int64_t> &rhs,
                const std::vector<int64_t> &lb, const std::vector<int64_t> &rb,
                const std::vector<int64_t> &lc, const std::vector<int64_t> &rc);

} // namespace mdl::stdlib
