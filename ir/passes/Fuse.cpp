// fuse, per segment region:
// 1. Walk the operations in order. Each fusible operation starts a cluster
//    and tries to join the clusters of the operations that produce its
//    operands. A merge is kept when the merged set still has a domain
//    (FusionDomain.h), stays under kMaxMembers, and creates no cycle: no
//    operation outside the set may both depend on the set and feed it.
// 2. Each cluster becomes a `fusion` operation: arguments for the values it
//    reads (constant-like operands are copied in instead), results for the
//    member values read outside it, the members moved into its region.
// 3. The segment is re-sorted topologically, each fusion taking the place
//    of its last member, everything else keeping its relative order; then
//    constant-like operations that nothing reads any more are dropped.
#include "ir/passes/Fuse.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"
#include "ir/passes/FusionDomain.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace mdl::passes {

using namespace ir;

namespace {

/// Larger clusters stop growing: the generated loop body stays of a size
/// LLVM optimizes quickly, and merge checks stay cheap.
constexpr size_t kMaxMembers = 256;
/// How far the cycle check searches before it assumes the worst.
constexpr int kMaxCycleVisits = 4096;

class SegmentFuser {
public:
  explicit SegmentFuser(Region &body) : body_(body) {
    for (size_t i = 0; i < body.ops.size(); ++i) {
      Operation *op = body.ops[i].get();
      ops_.push_back(op);
      pos_[op] = int(i);
      for (Value *v : op->operands)
        users_[v].push_back(int(i));
    }
    parent_.assign(ops_.size(), -1);
    members_.resize(ops_.size());
  }

  int run() {
    for (size_t i = 0; i < ops_.size(); ++i) {
      // A reduction over leading axes has no loop nest of its own.
      if (!isFusible(*ops_[i]) ||
          !analyzeFusion({ops_[i]}, {ops_[i]->results[0].get()}))
        continue;
      parent_[i] = int(i);
      members_[i] = {int(i)};
      for (Value *v : ops_[i]->operands) {
        int p = producer(v);
        if (p < 0 || parent_[size_t(p)] < 0)
          continue;
        int a = find(p), b = find(int(i));
        if (a != b)
          tryMerge(a, b);
      }
    }
    return wrap();
  }

private:
  int producer(const Value *v) const {
    if (!v->def || v->def->parent != &body_)
      return -1;
    return pos_.at(v->def);
  }

  int find(int i) {
    while (parent_[size_t(i)] != i)
      i = parent_[size_t(i)] = parent_[size_t(parent_[size_t(i)])];
    return i;
  }

  void tryMerge(int a, int b) {
    std::vector<int> merged;
    std::merge(members_[size_t(a)].begin(), members_[size_t(a)].end(),
               members_[size_t(b)].begin(), members_[size_t(b)].end(),
               std::back_inserter(merged));
    if (merged.size() > kMaxMembers)
      return;
    auto inSet = [&](int p) {
      return p >= 0 && parent_[size_t(p)] >= 0 && (find(p) == a || find(p) == b);
    };
    std::vector<const Operation *> memberOps;
    std::vector<const Value *> outputs;
    for (int m : merged) {
      memberOps.push_back(ops_[size_t(m)]);
      for (auto &r : ops_[size_t(m)]->results)
        for (int u : users_[r.get()])
          if (!inSet(u)) {
            outputs.push_back(r.get());
            break;
          }
    }
    if (!analyzeFusion(memberOps, outputs))
      return;
    // No outside operation may sit between two members of the set.
    std::unordered_set<int> seen;
    for (int m : merged)
      for (Value *v : ops_[size_t(m)]->operands) {
        int p = producer(v);
        if (p < 0 || inSet(p) || !seen.insert(p).second)
          continue;
        if (dependsOn(p, merged.front(), inSet))
          return;
      }
    parent_[size_t(b)] = a;
    members_[size_t(a)] = std::move(merged);
    members_[size_t(b)].clear();
  }

  // Whether operation `p` (outside the set) reads, directly or not, a
  // member. A member of another cluster stands for its whole cluster (it
  // becomes one operation: a path through any of its members is a path
  // through it); an operation before `first` in no cluster cannot read the
  // set. Gives up (true) past a budget.
  template <typename InSet> bool dependsOn(int p, int first, InSet &inSet) {
    std::vector<int> stack = {p};
    std::unordered_set<int> visited = {p};
    int budget = kMaxCycleVisits;
    auto reach = [&](int d) {
      if (inSet(d))
        return true;
      if (visited.insert(d).second)
        stack.push_back(d);
      return false;
    };
    while (!stack.empty()) {
      int q = stack.back();
      stack.pop_back();
      if (--budget < 0)
        return true;
      if (parent_[size_t(q)] >= 0)
        for (int m : members_[size_t(find(q))])
          if (reach(m))
            return true;
      for (Value *v : ops_[size_t(q)]->operands) {
        int d = producer(v);
        if (d < 0 || (d < first && parent_[size_t(d)] < 0))
          continue;
        if (reach(d))
          return true;
      }
    }
    return false;
  }

  int wrap() {
    int made = 0;
    // The operation that replaces each original one in the new order.
    std::unordered_map<const Operation *, Operation *> unitOf;
    std::unordered_map<const Operation *, int> key;
    ValueMap outside; // member results read outside -> fusion results
    std::vector<std::unique_ptr<Operation>> fusions;
    std::vector<bool> moved(ops_.size(), false);
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (parent_[i] < 0 || find(int(i)) != int(i) || members_[i].empty())
        continue;
      fusions.push_back(makeFusion(members_[i], outside));
      Operation *f = fusions.back().get();
      key[f] = members_[i].back();
      for (int m : members_[i])
        moved[size_t(m)] = true;
      ++made;
    }
    if (!made)
      return 0;
    // Everything still outside (other fusions included) reads fusion
    // results instead of members.
    auto remap = [&](Operation &op) {
      for (Value *&v : op.operands)
        if (auto it = outside.find(v); it != outside.end())
          v = it->second;
    };
    for (size_t i = 0; i < ops_.size(); ++i)
      if (!moved[i])
        remap(*ops_[i]);
    for (auto &f : fusions)
      remap(*f);
    // Units in their new order: a stable topological sort keyed by the
    // original position (a fusion: its last member's).
    std::vector<std::unique_ptr<Operation>> units;
    for (size_t i = 0; i < ops_.size(); ++i)
      if (!moved[i]) {
        key[ops_[i]] = int(i);
        units.push_back(std::move(body_.ops[i]));
      }
    for (auto &f : fusions)
      units.push_back(std::move(f));
    std::unordered_map<const Value *, size_t> definedBy;
    for (size_t u = 0; u < units.size(); ++u)
      for (auto &r : units[u]->results)
        definedBy[r.get()] = u;
    std::vector<int> pending(units.size(), 0);
    std::vector<std::vector<size_t>> dependents(units.size());
    for (size_t u = 0; u < units.size(); ++u) {
      std::unordered_set<size_t> deps;
      for (Value *v : units[u]->operands)
        if (auto it = definedBy.find(v); it != definedBy.end() && it->second != u)
          deps.insert(it->second);
      pending[u] = int(deps.size());
      for (size_t d : deps)
        dependents[d].push_back(u);
    }
    using Item = std::pair<int, size_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    for (size_t u = 0; u < units.size(); ++u)
      if (!pending[u])
        ready.push({key[units[u].get()], u});
    std::vector<std::unique_ptr<Operation>> order;
    while (!ready.empty()) {
      size_t u = ready.top().second;
      ready.pop();
      for (size_t d : dependents[u])
        if (--pending[d] == 0)
          ready.push({key[units[d].get()], d});
      order.push_back(std::move(units[u]));
    }
    body_.ops.clear();
    // Constant-like operations nobody reads any more are dropped.
    std::unordered_set<const Value *> read;
    for (auto &op : order)
      for (Value *v : op->operands)
        read.insert(v);
    for (auto &op : order) {
      if (isFusionLeaf(*op) && !read.count(op->results[0].get()))
        continue;
      body_.push(std::move(op));
    }
    return made;
  }

  std::unique_ptr<Operation> makeFusion(const std::vector<int> &members, ValueMap &outside) {
    std::unordered_set<const Operation *> inCluster;
    for (int m : members)
      inCluster.insert(ops_[size_t(m)]);
    Operation *last = ops_[size_t(members.back())];
    auto f = std::make_unique<Operation>(OpKind::Fusion, last->loc);
    f->device = last->device;
    f->placement = PlacementKind::Inferred;
    Region *r = f->addRegion();
    ValueMap inner; // values read by members -> region arguments or copies
    auto valueIn = [&](Value *v) -> Value * {
      if (v->def && inCluster.count(v->def))
        return v;
      if (auto it = inner.find(v); it != inner.end())
        return it->second;
      Value *nv;
      if (v->def && v->def->parent == &body_ && isFusionLeaf(*v->def)) {
        ValueMap none;
        nv = r->push(cloneOp(*v->def, none))->result(0);
      } else {
        f->operands.push_back(v);
        nv = r->addArg(v->type);
        nv->device = v->device;
      }
      inner[v] = nv;
      return nv;
    };
    std::vector<Value *> outputs;
    for (int m : members) {
      Operation *op = ops_[size_t(m)];
      for (Value *&v : op->operands)
        v = valueIn(v);
      for (auto &res : op->results)
        for (int u : users_[res.get()])
          if (!inCluster.count(ops_[size_t(u)])) {
            outputs.push_back(res.get());
            break;
          }
    }
    // Region arguments come first in the text: clones were pushed as found,
    // so move the members after them, in order.
    for (int m : members)
      r->push(std::move(body_.ops[size_t(m)]));
    auto y = std::make_unique<Operation>(OpKind::Yield, last->loc);
    for (Value *v : outputs) {
      y->operands.push_back(v);
      Value *res = f->addResult(v->type);
      res->device = v->device;
      outside[v] = res;
    }
    r->push(std::move(y));
    return f;
  }

  Region &body_;
  std::vector<Operation *> ops_;
  std::unordered_map<const Operation *, int> pos_;
  std::unordered_map<const Value *, std::vector<int>> users_;
  std::vector<int> parent_;
  std::vector<std::vector<int>> members_;
};

int fuseRegion(const Module &m, Region &r) {
  int made = 0;
  for (auto &op : r.ops) {
    if (op->kind == OpKind::Segment) {
      // Segments of kinds that take them as written are not fused.
      if (stdlib::jitPreparesSegments(m, op->device))
        made += SegmentFuser(*op->regions[0]).run();
    } else {
      for (auto &sub : op->regions)
        made += fuseRegion(m, *sub);
    }
  }
  return made;
}

} // namespace

int fuse(Module &m) {
  int made = 0;
  for (auto &f : m.functions)
    made += fuseRegion(m, *f->body);
  return made;
}

void unfuse(Region &r) {
  std::vector<std::unique_ptr<Operation>> out;
  ValueMap map;
  auto remap = [&](Operation &op) {
    for (Value *&v : op.operands)
      if (auto it = map.find(v); it != map.end())
        v = it->second;
  };
  for (auto &op : r.ops) {
    remap(*op);
    if (op->kind != OpKind::Fusion) {
      for (auto &sub : op->regions)
        unfuse(*sub);
      out.push_back(std::move(op));
      continue;
    }
    Region &fr = *op->regions[0];
    ValueMap args;
    for (size_t i = 0; i < fr.args.size(); ++i)
      args[fr.args[i].get()] = op->operands[i];
    Operation *y = stdlib::terminatorOf(fr);
    for (auto &inner : fr.ops) {
      if (inner.get() == y)
        break;
      for (Value *&v : inner->operands)
        if (auto it = args.find(v); it != args.end())
          v = it->second;
      out.push_back(std::move(inner));
    }
    for (size_t i = 0; i < op->results.size(); ++i) {
      Value *v = y->operands[i];
      if (auto it = args.find(v); it != args.end())
        v = it->second;
      map[op->results[i].get()] = v;
    }
  }
  r.ops.clear();
  for (auto &op : out)
    r.push(std::move(op));
}

} // namespace mdl::passes
