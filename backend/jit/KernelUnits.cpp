// Shared kernels and kernel units (see KernelUnits.h):
// 1. Walk each function as the host code generator does (segments that a
//    device runs itself are not host code) and describe every large fusion:
//    its region with values numbered locally, types, attributes and
//    constants, then its input strides.
// 2. Fusions with the same description share a kernel named after its hash;
//    each distinct kernel is emitted once for the whole module.
// 3. The distinct kernels, in order of first use, are cut into units of a
//    few; a unit's cache key hashes the salt and its kernels' hashes.
#include "backend/jit/KernelUnits.h"
#include "backend/jit/Codegen.h"
#include "ir/text/Printer.h"
#include "stdlib/Registry.h"

#include <llvm/Support/xxhash.h>

#include <cstdio>
#include <sstream>

namespace mdl::backend::jit {

using namespace ir;

std::vector<std::vector<int64_t>> fusionStrides(const Operation &fusion, const FunctionPlan &plan) {
  std::vector<std::vector<int64_t>> strides;
  for (const Value *v : fusion.operands)
    strides.push_back(plan.loc(v).strides);
  return strides;
}

namespace {

/// Everything a fusion's kernel is generated from.
std::string describe(const Operation &fusion, const std::vector<std::vector<int64_t>> &strides) {
  std::ostringstream os;
  std::unordered_map<const Value *, size_t> id;
  const Region &r = *fusion.regions[0];
  for (auto &a : r.args) {
    os << "arg " << a->type.str() << "\n";
    id[a.get()] = id.size();
  }
  for (auto &op : r.ops) {
    os << opName(op->kind);
    for (const Value *v : op->operands)
      os << " %" << id.at(v);
    for (const NamedAttr &a : op->attrs)
      os << " " << a.name << "=" << printAttribute(a.value);
    for (auto &res : op->results) {
      os << " : " << res->type.str();
      id[res.get()] = id.size();
    }
    os << "\n";
  }
  for (const std::vector<int64_t> &s : strides) {
    os << "strides";
    for (int64_t n : s)
      os << " " << n;
    os << "\n";
  }
  return os.str();
}

int64_t points(const Operation &fusion) {
  int64_t n = 0;
  for (const Value *v : fusion.operands)
    n = std::max(n, v->type.numElements());
  for (auto &r : fusion.results)
    n = std::max(n, r->type.numElements());
  return n;
}

/// Calls fn(fusion) for each fusion the host code of `r` runs.
template <typename Fn> void hostFusions(const Region &r, const FunctionPlan &plan, Fn &&fn) {
  for (auto &op : r.ops) {
    if (op->kind == OpKind::Fusion) {
      fn(*op);
      continue;
    }
    if (op->kind == OpKind::Segment && plan.handleOf.count(op.get()))
      continue; // its device runs it
    for (auto &sub : op->regions)
      hostFusions(*sub, plan, fn);
  }
}

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

} // namespace

KernelTable planKernels(const Module &m, const std::vector<FunctionPlan> &plans,
                        const std::string &salt, size_t perUnit) {
  KernelTable t;
  std::unordered_map<uint64_t, size_t> byHash;
  for (size_t f = 0; f < m.functions.size(); ++f) {
    t.shared.emplace_back();
    hostFusions(*m.functions[f]->body, plans[f], [&](const Operation &fusion) {
      if (points(fusion) < kSharedKernelPoints)
        return;
      std::vector<std::vector<int64_t>> strides = fusionStrides(fusion, plans[f]);
      uint64_t h = llvm::xxh3_64bits(llvm::StringRef(describe(fusion, strides)));
      auto [it, fresh] = byHash.emplace(h, t.kernels.size());
      if (fresh) {
        KernelSpec k;
        k.fusion = &fusion;
        k.strides = std::move(strides);
        k.hash = h;
        k.symbol = "mdl.k." + hex(h);
        k.cost = int(fusion.regions[0]->ops.size());
        t.kernels.push_back(std::move(k));
      }
      t.shared.back()[&fusion] = t.kernels[it->second].symbol;
      ++t.sharedFusions;
    });
  }
  for (size_t i = 0; i < t.kernels.size(); i += perUnit) {
    KernelUnit u;
    std::string text = salt + "\nkernel unit";
    for (size_t k = i; k < std::min(t.kernels.size(), i + perUnit); ++k) {
      u.kernels.push_back(k);
      u.cost += t.kernels[k].cost;
      text += " " + hex(t.kernels[k].hash);
    }
    u.key = llvm::xxh3_64bits(llvm::StringRef(text));
    t.units.push_back(std::move(u));
  }
  return t;
}

bool emitKernelUnit(llvm::Module &mod, const KernelTable &table, const KernelUnit &u,
                    std::string &error) {
  for (size_t k : u.kernels) {
    const KernelSpec &spec = table.kernels[k];
    if (!emitFusionKernel(mod, *spec.fusion, spec.strides, spec.symbol, error,
                          KernelLinkage::Shared)
             .fn)
      return false;
  }
  return true;
}

} // namespace mdl::backend::jit
