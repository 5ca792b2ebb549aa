#include "stdlib/DotDims.h"

#include <algorithm>

namespace mdl::stdlib {

namespace {
using Ints = std::vector<int64_t>;
bool contains(const Ints &v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }
Ints freeAxes(size_t rank, const Ints &batch, const Ints &contract) {
  Ints free;
  for (int64_t d = 0; d < int64_t(rank); ++d)
    if (!contains(batch, d) && !contains(contract, d))
      free.push_back(d);
  return free;
}
} // namespace

DotDims dotDims(const Ints &lhs, const Ints &rhs, const Ints &lb, const Ints &rb, const Ints &lc,
                const Ints &rc) {
  DotDims d;
  d.lhsFree = freeAxes(lhs.size(), lb, lc);
  d.rhsFree = freeAxes(rhs.size(), rb, rc);
  for (int64_t a : lb) {
    d.batch.push_back(lhs[size_t(a)]);
    d.B *= lhs[size_t(a)];
  }
  for (int64_t a : d.lhsFree)
    d.M *= lhs[size_t(a)];
  for (int64_t a : d.rhsFree)
    d.N *= rhs[size_t(a)];
  for (int64_t a : lc)
    d.K *= lhs[size_t(a)];
  d.lhsOrder = lb;
  d.lhsOrder.insert(d.lhsOrder.end(), d.lhsFree.begin(), d.lhsFree.end());
  d.lhsOrder.insert(d.lhsOrder.end(), lc.begin(), lc.end());
  d.rhsOrder = rb;
  d.rhsOrder.insert(d.rhsOrder.end(), rc.begin(), rc.end());
  d.rhsOrder.insert(d.rhsOrder.end(), d.rhsFree.begin(), d.rhsFree.end());
  return d;
}

} // namespace mdl::stdlib
