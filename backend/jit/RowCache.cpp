// Which values of a fused loop nest are kept in a row buffer instead of
// being recomputed (LoopCodegen.cpp's phases; see Codegen.h).
//
// A fusion with reductions runs, per outer point, one inner loop per
// reduction and then one loop for its outputs. A value computed in one of
// those loops and read again in a later one used to be computed again
// there: softmax's exp(x - max) feeds the sum and then the division, so
// every element was exponentiated twice. Now:
// 1. Phases are walked in order; each walks its roots' expressions from the
//    top, stopping at inputs, constants, reduction results (row values) and
//    values already kept.
// 2. A value met again in a later phase than the reduction loop that first
//    computed it is kept when it varies along the inner axes (a row value
//    is loop-invariant there anyway), costs at least kMinCost to compute
//    (a transcendental, or a few operations: more than the load that
//    replaces it), is a float, and the row buffers stay under the budget.
//    Walking from the top keeps the largest such expression, not its parts.
// 3. The first phase stores it as it computes it; later phases load it.
// The buffers are the kernel's own (stack) memory, one row of the inner
// axes each in the compute type: small enough to stay in the L1 cache
// between the phases (softmax rows of a few hundred to a few thousand).
#include "backend/jit/Codegen.h"
#include "stdlib/Registry.h"

#include <unordered_set>

namespace mdl::backend::jit {

using namespace ir;

namespace {

/// Operation costs (the table's: 8 for a transcendental) at which a value
/// is worth a store and a load.
constexpr int kMinCost = 4;

class Planner {
public:
  Planner(const Region &region, const std::vector<int64_t> &dims, int innerRank, int64_t budget)
      : region_(region), dims_(dims), inner_(innerRank), budget_(budget) {
    for (int64_t a = int64_t(dims.size()) - innerRank; a < int64_t(dims.size()); ++a)
      points_ *= dims[size_t(a)];
  }

  std::unordered_map<const Value *, RowCacheSlot> run() {
    int phase = 0;
    for (auto &op : region_.ops)
      if (stdlib::isRowReduction(op->kind))
        walk(op->operands[0], phase++);
    if (const Operation *y = stdlib::terminatorOf(region_))
      for (const Value *v : y->operands)
        walk(v, phase);
    return std::move(kept_);
  }

private:
  bool isReductionResult(const Value *v) const {
    return v->def && stdlib::isRowReduction(v->def->kind);
  }

  bool isComputed(const Value *v) const {
    if (!v->def || isReductionResult(v))
      return false;
    return !stdlib::hasTrait(v->def->kind, stdlib::trait::FusionLeaf);
  }

  /// Whether v changes along the inner axes (right-aligned into the domain).
  bool variesInside(const Value *v) const {
    std::vector<int64_t> s = v->type.sizes();
    size_t rank = dims_.size();
    if (s.size() > rank)
      return false;
    size_t off = rank - s.size();
    for (size_t a = rank - size_t(inner_); a < rank; ++a)
      if (a >= off && s[a - off] > 1)
        return true;
    return false;
  }

  int cost(const Value *v) {
    if (!isComputed(v) || kept_.count(v))
      return 0;
    if (auto it = cost_.find(v); it != cost_.end())
      return it->second;
    int c = stdlib::opInfo(v->def->kind).cost;
    for (const Value *o : v->def->operands)
      c += cost(o);
    cost_[v] = c;
    return c;
  }

  void walk(const Value *v, int phase) {
    if (!isComputed(v) || kept_.count(v) || !seenIn_[phase].insert(v).second)
      return;
    auto first = firstPhase_.find(v);
    if (first != firstPhase_.end() && first->second < phase) {
      int64_t bytes =
          points_ * int64_t(dtypeSize(v->type.dtype == DType::F64 ? DType::F64 : DType::F32));
      if (isFloat(v->type.dtype) && variesInside(v) && cost(v) >= kMinCost &&
          used_ + bytes <= budget_) {
        int index = int(kept_.size());
        kept_[v] = {first->second, index};
        used_ += bytes;
        return;
      }
    }
    if (first == firstPhase_.end())
      firstPhase_[v] = phase;
    for (const Value *o : v->def->operands)
      walk(o, phase);
  }

  const Region &region_;
  const std::vector<int64_t> &dims_;
  int inner_;
  int64_t budget_, points_ = 1, used_ = 0;
  std::unordered_map<const Value *, int> firstPhase_, cost_;
  std::unordered_map<int, std::unordered_set<const Value *>> seenIn_;
  std::unordered_map<const Value *, RowCacheSlot> kept_;
};

} // namespace

std::unordered_map<const Value *, RowCacheSlot> planRowCache(const Region &region,
                                                             const std::vector<int64_t> &dims,
                                                             int innerRank, int64_t budgetBytes) {
  if (innerRank <= 0)
    return {};
  return Planner(region, dims, innerRank, budgetBytes).run();
}

} // namespace mdl::backend::jit
