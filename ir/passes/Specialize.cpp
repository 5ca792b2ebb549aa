// Specialization of generic functions.
//
// 1. Start from the entries with their argument types.
// 2. For an instance (function, argument types): bind the symbols, copy the
//    body while re-deriving every result type (shape rules for library
//    operations, instances for calls, yields for control flow), and check
//    the results against the declared, substituted result types.
// 3. Calls instantiate their callees on demand, memoized by argument types.
// 4. Name instances: a function with one instance keeps its name, others
//    become name.1, name.2, ... in creation order (deterministic).
#include "ir/passes/Specialize.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace mdl::passes {

using namespace ir;

bool bindSymbols(const std::vector<TensorType> &params, const std::vector<TensorType> &args,
                 std::vector<std::pair<std::string, Dim>> &binding, std::string &error) {
  auto find = [&](const std::string &s) -> Dim * {
    for (auto &b : binding)
      if (b.first == s)
        return &b.second;
    return nullptr;
  };
  if (params.size() != args.size()) {
    error = "expected " + std::to_string(params.size()) + " arguments, got " +
            std::to_string(args.size());
    return false;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const TensorType &p = params[i], &a = args[i];
    if (p.dtype != a.dtype || p.rank() != a.rank()) {
      error = "argument " + std::to_string(i) + " is " + a.str() + ", expected " + p.str();
      return false;
    }
    for (int k = 0; k < p.rank(); ++k) {
      const Dim &pd = p.dims[k], &ad = a.dims[k];
      if (pd.isStatic()) {
        if (ad.isStatic() && ad.size != pd.size) {
          error = "argument " + std::to_string(i) + " is " + a.str() + ", expected " + p.str();
          return false;
        }
        continue;
      }
      if (!pd.isSymbol())
        continue;
      Dim *prev = find(pd.sym);
      if (!prev) {
        binding.push_back({pd.sym, ad});
        continue;
      }
      if (prev->isStatic() && ad.isStatic() && prev->size != ad.size) {
        error = "symbol '" + pd.sym + "' is bound to " + prev->str() + " and to " + ad.str();
        return false;
      }
      if (prev->isUnknown() && !ad.isUnknown())
        *prev = ad;
    }
  }
  return true;
}

namespace {

using Binding = std::vector<std::pair<std::string, Dim>>;

Dim substDim(const Dim &d, const Binding &b) {
  if (!d.isSymbol())
    return d;
  for (auto &kv : b)
    if (kv.first == d.sym)
      return kv.second;
  return d;
}

TensorType subst(const TensorType &t, const Binding &b) {
  TensorType out = t;
  for (Dim &d : out.dims)
    d = substDim(d, b);
  return out;
}

std::string bindingStr(const Binding &b) {
  std::string s;
  for (auto &kv : b)
    s += (s.empty() ? "" : ", ") + kv.first + "=" + kv.second.str();
  return s;
}

std::string typesKey(const std::vector<TensorType> &ts) {
  std::string s;
  for (auto &t : ts)
    s += t.str() + ";";
  return s;
}

struct Instance {
  const Function *generic;
  std::vector<TensorType> args;
  Function *fn = nullptr; // in the output module
  Binding binding;
  bool ok = true;
};

class Specializer {
public:
  Specializer(const Module &in, DiagnosticEngine &diags) : in_(in), diags_(diags) {}

  std::unique_ptr<Module> run(const SpecializeOptions &opts) {
    stableNames_ = opts.stableNames;
    out_ = std::make_unique<Module>();
    out_->devices = in_.devices;
    for (const Global &g : in_.globals) {
      checkSize(g.type, g.loc);
      out_->globals.push_back(cloneGlobal(g));
    }
    std::vector<std::string> entries = opts.entries;
    if (entries.empty()) {
      if (in_.findFunction("main")) {
        entries.push_back("main");
      } else {
        for (const Function *f : stdlib::uncalledFunctions(in_))
          entries.push_back(f->name);
      }
    }
    for (const std::string &e : entries) {
      const Function *f = in_.findFunction(e);
      if (!f) {
        diags_.error("E0101", {}, "no function '" + e + "' to run");
        return nullptr;
      }
      std::vector<TensorType> args;
      if (entries.size() == 1 && !opts.entryArgs.empty())
        args = opts.entryArgs;
      else
        for (auto &a : f->body->args)
          args.push_back(a->type);
      instantiate(*f, args, {}, "");
    }
    nameInstances();
    out_->reindex();
    return std::move(out_);
  }

private:
  Instance *instantiate(const Function &g, const std::vector<TensorType> &args,
                        const Location &callLoc, const std::string &caller) {
    std::string key = g.name + "(" + typesKey(args) + ")";
    auto it = memo_.find(key);
    if (it != memo_.end())
      return it->second.get();
    auto inst = std::make_unique<Instance>();
    Instance *I = inst.get();
    memo_[key] = std::move(inst);
    order_.push_back(I);
    I->generic = &g;
    I->args = args;
    std::vector<TensorType> params;
    for (auto &a : g.body->args)
      params.push_back(a->type);
    std::string err;
    if (!bindSymbols(params, args, I->binding, err)) {
      auto &d = diags_.error("E0205", callLoc.valid() ? callLoc : g.loc,
                             "cannot call '" + g.name + "': " + err);
      d.notes.push_back({g.loc, "'" + g.name + "' is defined here"});
      I->ok = false;
      return I;
    }
    auto fn = std::make_unique<Function>();
    fn->name = g.name;
    fn->loc = g.loc;
    fn->argNames = g.argNames;
    for (auto &kv : I->binding)
      if (kv.second.isSymbol() && std::find(fn->symbols.begin(), fn->symbols.end(),
                                            kv.second.sym) == fn->symbols.end())
        fn->symbols.push_back(kv.second.sym);
    if (!I->binding.empty() && !g.symbols.empty()) {
      fn->attrs.push_back({"generic", Attribute::symbol(g.name)});
      fn->attrs.push_back({"binding", Attribute::string(bindingStr(I->binding))});
    }
    I->fn = fn.get();
    context_.push_back({I, callLoc, caller});
    ValueMap map;
    for (size_t i = 0; i < g.body->args.size(); ++i) {
      Value *a = fn->body->addArg(args[i]);
      map[g.body->args[i].get()] = a;
    }
    std::vector<TensorType> declared;
    for (auto &t : g.resultTypes)
      declared.push_back(subst(t, I->binding));
    std::vector<TensorType> returned;
    I->ok = copyRegionOps(*g.body, *fn->body, map, I->binding, &returned);
    fn->resultTypes = declared;
    if (I->ok && returned.size() == declared.size())
      for (size_t i = 0; i < declared.size(); ++i) {
        if (!typesCompatible(returned[i], declared[i])) {
          const Operation *ret = stdlib::terminatorOf(*g.body);
          error("E0209", ret ? ret->loc : g.loc,
                "'" + g.name + "' returns " + returned[i].str() + " but declares " +
                    declared[i].str());
          I->ok = false;
        } else {
          // The computed type is at least as precise as the declared one.
          for (int k = 0; k < declared[i].rank(); ++k)
            if (!declared[i].dims[k].isStatic() && returned[i].dims[k].isStatic())
              fn->resultTypes[i].dims[k] = returned[i].dims[k];
        }
      }
    context_.pop_back();
    out_->addFunction(std::move(fn));
    return I;
  }

  /// A static type too large for any memory is refused here, where every
  /// shape is known, rather than when the program runs (E0212).
  bool checkSize(const TensorType &t, const Location &loc) {
    if (!t.isStatic() || t.fitsInMemory())
      return true;
    error("E0212", loc,
          "tensor too large: " + t.str() + " is " + t.byteSizeText() + " bytes, more than the " +
              std::to_string(kMaxTensorBytes) + " bytes (128 TiB) a process can address");
    return false;
  }

  // Reports an error with the chain of instances that led to it.
  void error(const std::string &code, const Location &loc, const std::string &msg) {
    auto &d = diags_.error(code, loc, msg);
    for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
      if (it->instance->binding.empty() && !it->callLoc.valid())
        continue;
      std::string b = bindingStr(it->instance->binding);
      d.notes.push_back({it->callLoc, "in '" + it->instance->generic->name + "'" +
                                          (b.empty() ? "" : " with " + b) +
                                          (it->callLoc.valid() ? ", called here" : "")});
    }
  }

  // Copies the operations of `src` into `dst` (whose arguments are mapped
  // already), re-deriving types. `terminatorTypes` receives the operand
  // types of the final yield/return.
  bool copyRegionOps(const Region &src, Region &dst, ValueMap &map, const Binding &b,
                     std::vector<TensorType> *terminatorTypes) {
    bool ok = true;
    for (auto &op : src.ops) {
      auto nop = std::make_unique<Operation>(op->kind, op->loc);
      nop->device = op->device;
      nop->placement = op->placement;
      for (Value *v : op->operands) {
        auto it = map.find(v);
        nop->operands.push_back(it == map.end() ? v : it->second);
      }
      for (const NamedAttr &a : op->attrs)
        nop->attrs.push_back({a.name, substAttr(a.value, b)});
      std::vector<TensorType> operandTypes;
      for (Value *v : nop->operands)
        operandTypes.push_back(v->type);
      std::vector<TensorType> results;
      bool opOk = deriveTypes(*op, *nop, operandTypes, map, b, results);
      ok &= opOk;
      if (!opOk) // keep going with the declared types to find more errors
        for (auto &r : op->results)
          results.push_back(subst(r->type, b));
      for (size_t i = 0; i < op->results.size(); ++i) {
        Value *nv = nop->addResult(i < results.size() ? results[i] : subst(op->results[i]->type, b));
        if (opOk && !checkSize(nv->type, op->loc))
          ok = opOk = false;
        nv->device = op->results[i]->device;
        map[op->results[i].get()] = nv;
      }
      if ((op->kind == OpKind::Yield || op->kind == OpKind::Return) && terminatorTypes)
        *terminatorTypes = operandTypes;
      dst.push(std::move(nop));
    }
    return ok;
  }

  static Attribute substAttr(const Attribute &a, const Binding &b) {
    if (a.kind() == Attribute::Kind::Type)
      return Attribute::type(subst(a.asType(), b));
    if (a.kind() == Attribute::Kind::DimList) {
      Shape s = a.asDimList();
      for (Dim &d : s)
        d = substDim(d, b);
      return Attribute::dimList(s);
    }
    return a;
  }

  // Copies a nested region with the given argument types.
  bool copyRegion(const Region &src, Region &dst, const std::vector<TensorType> &argTypes,
                  ValueMap &map, const Binding &b, std::vector<TensorType> &yielded) {
    for (size_t i = 0; i < src.args.size(); ++i) {
      Value *a = dst.addArg(i < argTypes.size() ? argTypes[i] : subst(src.args[i]->type, b));
      a->device = src.args[i]->device;
      map[src.args[i].get()] = a;
    }
    return copyRegionOps(src, dst, map, b, &yielded);
  }

  bool deriveTypes(const Operation &op, Operation &nop, const std::vector<TensorType> &operands,
                   ValueMap &map, const Binding &b, std::vector<TensorType> &results) {
    switch (op.kind) {
    case OpKind::Constant:
    case OpKind::Global:
    case OpKind::Load:
      for (auto &r : op.results)
        results.push_back(subst(r->type, b));
      return true;
    case OpKind::Yield:
    case OpKind::Return:
      return true;
    case OpKind::Call: {
      const Function *callee = in_.findFunction(op.stringAttr("callee"));
      Instance *inst = instantiate(*callee, operands, op.loc, context_.back().instance->generic->name);
      if (!inst->ok)
        return false;
      calls_.push_back({&nop, inst});
      results = inst->fn->resultTypes;
      return true;
    }
    case OpKind::If: {
      std::vector<TensorType> t1, t2;
      bool ok = copyRegion(*op.regions[0], *nop.addRegion(), {}, map, b, t1);
      ok &= copyRegion(*op.regions[1], *nop.addRegion(), {}, map, b, t2);
      if (!ok)
        return false;
      for (size_t i = 0; i < t1.size() && i < t2.size(); ++i)
        if (!typesCompatible(t1[i], t2[i])) {
          error("E0206", op.loc, "branches yield different types: " + t1[i].str() + " and " +
                                     t2[i].str());
          return false;
        }
      results = t1;
      return true;
    }
    case OpKind::For:
    case OpKind::While: {
      size_t first = op.kind == OpKind::For ? 2 : 0;
      std::vector<TensorType> carried(operands.begin() + first, operands.end());
      std::vector<TensorType> args = carried;
      if (op.kind == OpKind::For)
        args.insert(args.begin(), TensorType::scalar(DType::I64));
      bool ok = true;
      if (op.kind == OpKind::While) {
        std::vector<TensorType> cond;
        ok &= copyRegion(*op.regions[0], *nop.addRegion(), carried, map, b, cond);
      }
      std::vector<TensorType> yielded;
      ok &= copyRegion(*op.regions.back(), *nop.addRegion(), args, map, b, yielded);
      if (!ok)
        return false;
      for (size_t i = 0; i < yielded.size() && i < carried.size(); ++i)
        if (!typesCompatible(yielded[i], carried[i])) {
          error("E0206", op.loc, "each iteration must yield the carried types: value " +
                                     std::to_string(i) + " starts as " + carried[i].str() +
                                     " but the body yields " + yielded[i].str());
          return false;
        }
      results = carried;
      return true;
    }
    default:
      break;
    }
    const stdlib::OpInfo &info = stdlib::opInfo(op.kind);
    if (!info.infer) {
      for (auto &r : op.results)
        results.push_back(subst(r->type, b));
      return true;
    }
    stdlib::InferResult r = stdlib::inferTypes(op.kind, operands, nop.attrs);
    if (!r.ok()) {
      error(r.error->code, op.loc, r.error->message);
      return false;
    }
    results = r.types;
    // Functions the operation applies (`to_apply = @add`) are instantiated
    // with their declared argument types.
    for (const std::string &name : stdlib::functionAttrs(op.kind)) {
      const Attribute *a = nop.attr(name);
      const Function *fn = a && a->kind() == Attribute::Kind::Symbol ? in_.findFunction(a->asSymbol())
                                                                     : nullptr;
      if (!fn)
        continue;
      std::vector<TensorType> args;
      for (auto &x : fn->body->args)
        args.push_back(x->type);
      Instance *inst = instantiate(*fn, args, op.loc, context_.back().instance->generic->name);
      if (!inst->ok)
        return false;
      fnRefs_.push_back({&nop, name, inst});
    }
    return true;
  }

  void nameInstances() {
    std::map<const Function *, std::vector<Instance *>> byGeneric;
    std::vector<const Function *> generics;
    for (Instance *I : order_) {
      if (!I->fn)
        continue;
      if (!byGeneric.count(I->generic))
        generics.push_back(I->generic);
      byGeneric[I->generic].push_back(I);
    }
    for (const Function *g : generics) {
      auto &list = byGeneric[g];
      if (stableNames_) {
        for (Instance *I : list)
          if (!g->symbols.empty() && !I->binding.empty())
            I->fn->name = g->name + "." + stableSuffix(I->binding);
        continue;
      }
      if (list.size() == 1)
        continue;
      for (size_t i = 0; i < list.size(); ++i)
        list[i]->fn->name = g->name + "." + std::to_string(i + 1);
    }
    for (auto &[op, inst] : calls_)
      op->setAttr("callee", Attribute::symbol(inst->fn->name));
    for (auto &[op, name, inst] : fnRefs_)
      op->setAttr(name, Attribute::symbol(inst->fn->name));
    // Functions appear callee-first (creation order); keep the entry order
    // stable by sorting on the order instances were started.
  }

  struct Context {
    Instance *instance;
    Location callLoc;
    std::string caller;
  };

  /// `N3`, `B1_N3_M2`: each symbol with its size (or the symbol it stays).
  static std::string stableSuffix(const Binding &b) {
    std::string s;
    for (auto &[sym, d] : b)
      s += (s.empty() ? "" : "_") + sym +
           (d.isStatic() ? std::to_string(d.size) : d.isSymbol() ? d.sym : std::string("X"));
    return s;
  }

  const Module &in_;
  DiagnosticEngine &diags_;
  bool stableNames_ = false;
  std::unique_ptr<Module> out_;
  std::map<std::string, std::unique_ptr<Instance>> memo_;
  std::vector<Instance *> order_;
  std::vector<Context> context_;
  std::vector<std::pair<Operation *, Instance *>> calls_;
  std::vector<std::tuple<Operation *, std::string, Instance *>> fnRefs_;
};

} // namespace

std::unique_ptr<Module> specialize(const Module &m, const SpecializeOptions &opts,
                                   DiagnosticEngine &diags) {
  unsigned before = diags.errorCount();
  Specializer s(m, diags);
  auto out = s.run(opts);
  if (diags.errorCount() != before)
    return nullptr;
  return out;
}

} // namespace mdl::passes
