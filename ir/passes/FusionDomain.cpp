// The iteration space of a fusion cluster.
// 1. D is the broadcast of every member's result shape and every reduction
//    input's shape (right-aligned, as NumPy broadcasts).
// 2. Every reduction reduces the trailing k axes of an input of rank(D)
//    that spans D on those axes; k is the same for all (the inner axes).
// 3. A member reading a reduction result needs it to be a row value: size 1
//    on the inner axes once right-aligned into D.
// 4. Each output has shape D, is a row value spanning the outer axes, or is
//    a reduction result without kept dimensions (shape = the outer axes).
#include "ir/passes/FusionDomain.h"
#include "stdlib/Registry.h"

#include <algorithm>

namespace mdl::passes {

using namespace ir;

namespace {

// Every element type fuses (the halves compute in f32 inside the loop);
// shapes must be static.
bool typesSupported(const Operation &op) {
  for (Value *v : op.operands)
    if (!v->type.isStatic())
      return false;
  for (auto &r : op.results)
    if (!r->type.isStatic())
      return false;
  return true;
}

bool isReduction(OpKind k) { return stdlib::isRowReduction(k); }

std::vector<int64_t> sizesOf(const TensorType &t) { return t.sizes(); }

// Broadcasts `s` into `d` (right-aligned); false when they do not broadcast.
bool broadcastInto(std::vector<int64_t> &d, const std::vector<int64_t> &s) {
  if (s.size() > d.size())
    d.insert(d.begin(), s.size() - d.size(), 1);
  size_t off = d.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t &a = d[off + i];
    if (s[i] == a || s[i] == 1)
      continue;
    if (a != 1)
      return false;
    a = s[i];
  }
  return true;
}

} // namespace

std::vector<int64_t> alignShape(const std::vector<int64_t> &s, size_t rank) {
  std::vector<int64_t> out(rank > s.size() ? rank - s.size() : 0, 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

bool isFusible(const Operation &op) {
  if (op.device < 0 || op.results.size() != 1 || !typesSupported(op))
    return false;
  return stdlib::isFusibleKind(op.kind, op.results[0]->type.dtype);
}

bool isFusionLeaf(const Operation &op) {
  if (op.device < 0 || op.results.size() != 1 || !typesSupported(op) ||
      !stdlib::hasTrait(op.kind, stdlib::trait::FusionLeaf))
    return false;
  // A constant is copied into the loop only while it is small.
  return op.kind != OpKind::Constant || op.results[0]->type.numElements() <= 4096;
}

std::optional<FusionDomain> analyzeFusion(const std::vector<const Operation *> &members,
                                          const std::vector<const Value *> &outputs) {
  FusionDomain fd;
  int inner = -1;
  size_t redRank = 0;
  for (const Operation *op : members) {
    if (isReduction(op->kind)) {
      const TensorType &x = op->operands[0]->type;
      const std::vector<int64_t> &axes = op->intListAttr("axis");
      int r = x.rank(), k = int(axes.size());
      if (k == 0)
        return std::nullopt;
      for (int i = 0; i < k; ++i)
        if (axes[size_t(i)] != r - k + i)
          return std::nullopt;
      if (inner >= 0 && (inner != k || size_t(r) != redRank))
        return std::nullopt;
      inner = k;
      redRank = size_t(r);
      fd.hasReductions = true;
      if (!broadcastInto(fd.dims, sizesOf(x)))
        return std::nullopt;
      if (op->boolAttr("keepdims") && !broadcastInto(fd.dims, sizesOf(op->results[0]->type)))
        return std::nullopt;
      continue;
    }
    if (!broadcastInto(fd.dims, sizesOf(op->results[0]->type)))
      return std::nullopt;
  }
  fd.innerRank = inner < 0 ? 0 : inner;
  size_t rank = fd.dims.size();
  if (fd.hasReductions && redRank != rank)
    return std::nullopt;
  // Reduction inputs span D on the inner axes.
  auto isMember = [&](const Operation *d) {
    return d && std::find(members.begin(), members.end(), d) != members.end();
  };
  std::vector<int64_t> rowShape = fd.dims;
  for (size_t a = rank - size_t(fd.innerRank); a < rank; ++a)
    rowShape[a] = 1;
  // A row value: broadcasts into rowShape, i.e. size 1 on the inner axes.
  auto isRow = [&](const TensorType &t) {
    if (size_t(t.rank()) > rank)
      return false;
    std::vector<int64_t> s = alignShape(t.sizes(), rank);
    for (size_t a = 0; a < rank; ++a)
      if (s[a] != 1 && s[a] != rowShape[a])
        return false;
    return true;
  };
  for (const Operation *op : members) {
    if (isReduction(op->kind)) {
      std::vector<int64_t> x = sizesOf(op->operands[0]->type);
      for (size_t a = rank - size_t(fd.innerRank); a < rank; ++a)
        if (x[a] != fd.dims[a])
          return std::nullopt;
    }
    for (Value *v : op->operands)
      if (isMember(v->def) && isReduction(v->def->kind) && !isRow(v->type))
        return std::nullopt;
  }
  for (const Value *v : outputs) {
    std::vector<int64_t> s = sizesOf(v->type);
    if (s == fd.dims)
      continue;
    if (!fd.hasReductions)
      return std::nullopt;
    // A row value stored once per outer point: it must span the outer axes
    // (a broadcast one would be written by several points).
    if (s.size() <= rank && alignShape(s, rank) == rowShape)
      continue;
    std::vector<int64_t> outer(fd.dims.begin(), fd.dims.end() - fd.innerRank);
    if (v->def && isReduction(v->def->kind) && s == outer)
      continue;
    return std::nullopt;
  }
  return fd;
}

std::optional<FusionDomain> fusionDomain(const Operation &fusion) {
  if (fusion.regions.size() != 1)
    return std::nullopt;
  const Region &r = *fusion.regions[0];
  std::vector<const Operation *> members;
  for (auto &op : r.ops)
    if (op->kind != OpKind::Yield && !isFusionLeaf(*op))
      members.push_back(op.get());
  std::vector<const Value *> outputs;
  if (const Operation *y = stdlib::terminatorOf(r))
    for (Value *v : y->operands)
      outputs.push_back(v);
  return analyzeFusion(members, outputs);
}

namespace {
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}
} // namespace

std::vector<int64_t> FusionAccesses::aligned(const std::vector<int64_t> &shape,
                                             const std::vector<int64_t> &st) const {
  size_t rank = domain.dims.size(), off = rank - shape.size();
  std::vector<int64_t> out(rank, 0);
  for (size_t i = 0; i < shape.size(); ++i)
    out[off + i] = shape[i] == 1 ? 0 : st[i];
  return out;
}

int FusionAccesses::add(std::vector<int64_t> st) {
  strides.push_back(std::move(st));
  return int(strides.size() - 1);
}

std::optional<FusionAccesses>
FusionAccesses::of(const Operation &fusion, const FusionDomain &domain,
                   const std::vector<std::vector<int64_t>> &inputStrides, std::string &error) {
  FusionAccesses fa;
  fa.domain = domain;
  const std::vector<int64_t> &dims = domain.dims;
  size_t rank = dims.size();
  const Region &region = *fusion.regions.at(0);
  for (size_t j = 0; j < region.args.size(); ++j) {
    std::vector<int64_t> s = region.args[j]->type.sizes();
    if (s.size() > rank || j >= inputStrides.size() || inputStrides[j].size() != s.size()) {
      error = "fusion input " + std::to_string(j) + " does not fit the domain";
      return std::nullopt;
    }
    fa.inputs.push_back(fa.add(fa.aligned(s, inputStrides[j])));
  }
  for (auto &op : region.ops) {
    if ((op->kind == OpKind::Constant && op->results[0]->type.numElements() > 1) ||
        op->kind == OpKind::Arange) {
      std::vector<int64_t> s = op->results[0]->type.sizes();
      fa.leaves[op.get()] = fa.add(fa.aligned(s, rowMajorStrides(s)));
    }
  }
  std::vector<int64_t> rowShape = dims;
  for (size_t a = rank - size_t(domain.innerRank); a < rank; ++a)
    rowShape[a] = 1;
  for (Value *v : stdlib::terminatorOf(region)->operands) {
    std::vector<int64_t> s = v->type.sizes();
    if (s == dims) {
      fa.full.push_back(true);
      fa.outputs.push_back(fa.add(rowMajorStrides(dims)));
    } else if (s.size() <= rank && alignShape(s, rank) == rowShape) {
      fa.full.push_back(false);
      fa.outputs.push_back(fa.add(fa.aligned(s, rowMajorStrides(s))));
    } else {
      // A reduction result without kept axes: the outer axes of the domain.
      if (s.size() != rank - size_t(domain.innerRank)) {
        error = "fusion output " + v->type.str() + " does not fit the domain";
        return std::nullopt;
      }
      std::vector<int64_t> st(rank, 0), rm = rowMajorStrides(s);
      for (size_t a = 0; a < s.size(); ++a)
        st[a] = s[a] == 1 ? 0 : rm[a];
      fa.full.push_back(false);
      fa.outputs.push_back(fa.add(st));
    }
  }
  return fa;
}

void FusionAccesses::collapse() {
  const std::vector<int64_t> &d = domain.dims;
  size_t rank = d.size(), firstInner = rank - size_t(domain.innerRank);
  std::vector<bool> groupInner;
  std::vector<std::vector<int64_t>> cs(strides.size());
  dims.clear();
  for (size_t a = 0; a < rank; ++a) {
    if (d[a] == 1)
      continue;
    bool in = a >= firstInner;
    bool merge = !dims.empty() && groupInner.back() == in;
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = cs[k].back() == strides[k][a] * d[a];
    if (merge) {
      dims.back() *= d[a];
      for (size_t k = 0; k < strides.size(); ++k)
        cs[k].back() = strides[k][a];
      continue;
    }
    dims.push_back(d[a]);
    groupInner.push_back(in);
    for (size_t k = 0; k < strides.size(); ++k)
      cs[k].push_back(strides[k][a]);
  }
  strides = std::move(cs);
  outer = inner = 0;
  for (bool in : groupInner)
    (in ? inner : outer) += 1;
}

} // namespace mdl::passes
