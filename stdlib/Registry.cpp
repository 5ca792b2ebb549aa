// The registry: the operation table (Ops.def) expanded into one OpInfo per
// kind, the spelling of each kind, and the questions passes ask of it.
#include "stdlib/Registry.h"
#include "stdlib/ShapeRules.h"

#include <algorithm>
#include <cassert>
#include <set>
#include <unordered_map>

namespace mdl::ir {

namespace {
const char *const kOpNames[] = {
#define MDL_OP(E, N, ...) N,
#include "stdlib/Ops.def"
#undef MDL_OP
};
} // namespace

const char *opName(OpKind k) { return kOpNames[static_cast<int>(k)]; }

bool parseOpName(const std::string &s, OpKind &out) {
  static const std::unordered_map<std::string, OpKind> byName = [] {
    std::unordered_map<std::string, OpKind> m;
    for (int k = 0; k < kNumOpKinds; ++k)
      m.emplace(kOpNames[k], static_cast<OpKind>(k));
    return m;
  }();
  auto it = byName.find(s);
  if (it == byName.end())
    return false;
  out = it->second;
  return true;
}

} // namespace mdl::ir

namespace mdl::stdlib {

using ir::Attribute;
using ir::OpKind;
using PK = ParamKind;

namespace {

// Defaults of the table's DFLT(name, Kind, value) parameters, by kind.
Attribute defaultBool(bool v) { return Attribute::boolean(v); }
Attribute defaultInt(int64_t v) { return Attribute::integer(v); }
Attribute defaultIntPair(int64_t v) { return Attribute::integer(v); }
Attribute defaultNumber(double v) { return Attribute::real(v); }
Attribute defaultString(const char *v) { return Attribute::string(v); }
Attribute defaultIntList(std::vector<int64_t> v) { return Attribute::intList(std::move(v)); }

struct Table {
  std::vector<OpInfo> infos;
  std::unordered_map<std::string, const OpInfo *> callable;
  std::vector<std::vector<std::string>> functionAttrs;
};

std::vector<OpInfo> buildInfos() {
  using namespace trait;
  using namespace rules;
  using namespace hlorules;
  std::vector<OpInfo> infos = {
#define IN(n) ParamSpec{#n, PK::Tensor, std::nullopt, true},
#define LIST(n) ParamSpec{#n, PK::TensorList, std::nullopt, true},
#define VARIADIC(n) ParamSpec{#n, PK::Variadic, std::nullopt, true},
#define REQ(n, K) ParamSpec{#n, PK::K, std::nullopt, true},
#define OPT(n, K) ParamSpec{#n, PK::K, std::nullopt, false},
#define DFLT(n, K, v) ParamSpec{#n, PK::K, default##K(v), false},
#define TRAIT(x) (x)
#define MDL_OP(E, N, CALL, CLS, D, TR, F, COST, RULE, ...)                                     \
  OpInfo{OpKind::E, N, CALL, OpClass::CLS, Dialect::D, TR, FusionKind::F, COST, RULE,         \
         {__VA_ARGS__}},
#include "stdlib/Ops.def"
#undef MDL_OP
#undef TRAIT
#undef DFLT
#undef OPT
#undef REQ
#undef VARIADIC
#undef LIST
#undef IN
  };
  for (OpInfo &info : infos) {
    int n = 0;
    for (const ParamSpec &p : info.params) {
      if (p.kind == PK::TensorList || p.kind == PK::Variadic)
        n = -1;
      else if (p.kind == PK::Tensor && n >= 0)
        ++n;
    }
    info.operandCount = n;
  }
  return infos;
}

const Table &table() {
  static const Table t = [] {
    Table tb;
    tb.infos = buildInfos();
    tb.functionAttrs.resize(tb.infos.size());
    for (size_t k = 0; k < tb.infos.size(); ++k) {
      const OpInfo &info = tb.infos[k];
      assert(static_cast<size_t>(info.kind) == k && "Ops.def expands out of order");
      if (info.callName)
        tb.callable.emplace(info.callName, &info);
      for (const ParamSpec &p : info.params)
        if (p.kind == PK::Function)
          tb.functionAttrs[k].push_back(p.name);
    }
    return tb;
  }();
  return t;
}

} // namespace

const OpInfo &opInfo(OpKind kind) { return table().infos[static_cast<size_t>(kind)]; }

const OpInfo *lookupCallable(const std::string &name) {
  auto it = table().callable.find(name);
  return it == table().callable.end() ? nullptr : it->second;
}

std::vector<std::string> callableNames() {
  std::vector<std::string> names;
  for (auto &kv : table().callable)
    names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string> &functionAttrs(OpKind kind) {
  return table().functionAttrs[static_cast<size_t>(kind)];
}

ir::Operation *terminatorOf(const ir::Region &r) {
  if (r.ops.empty())
    return nullptr;
  ir::Operation *last = r.ops.back().get();
  return hasTrait(last->kind, trait::Terminator) ? last : nullptr;
}

std::vector<const ir::Function *> uncalledFunctions(const ir::Module &m) {
  std::set<std::string> called;
  for (auto &f : m.functions)
    ir::walk(*f->body, [&](const ir::Operation &op) {
      if (op.kind == OpKind::Call)
        called.insert(op.stringAttr("callee"));
    });
  std::vector<const ir::Function *> out;
  for (auto &f : m.functions)
    if (!called.count(f->name))
      out.push_back(f.get());
  return out;
}

bool isFusibleKind(OpKind k, ir::DType result) {
  switch (opInfo(k).fusion) {
  case FusionKind::None: return false;
  case FusionKind::Any: return true;
  case FusionKind::Float: return ir::isFloat(result);
  case FusionKind::NonBool: return result != ir::DType::Bool;
  }
  return false;
}

InferResult inferTypes(OpKind kind, const std::vector<ir::TensorType> &operands,
                       std::vector<ir::NamedAttr> &attrs) {
  const OpInfo &info = opInfo(kind);
  assert(info.infer && "inferTypes on a structural operation");
  InferResult r = info.infer(operands, attrs);
  // Defaults the rule did not need are filled in from the table, so the IR
  // states every attribute.
  if (r.ok())
    for (const ParamSpec &p : info.params)
      if (p.dflt && std::none_of(attrs.begin(), attrs.end(),
                                 [&](const ir::NamedAttr &a) { return a.name == p.name; }))
        attrs.push_back({p.name, *p.dflt});
  return r;
}

} // namespace mdl::stdlib
