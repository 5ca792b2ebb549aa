// Semantic analysis of calls: user functions (arguments against the
// signature, symbolic dimensions bound per call and the specialization
// this asks for) and standard library operations (positional and keyword
// arguments against the registry's signature, attributes, shape rules).
#include "frontend/SemaImpl.h"
#include "stdlib/Registry.h"

#include <algorithm>

namespace mdl::frontend {


bool Sema::checkCall(CallExpr &e) {
  auto fn = out_->fnByName.find(e.callee.name);
  if (fn != out_->fnByName.end())
    return checkUserCall(e, *fn->second);
  if (const stdlib::OpInfo *info = stdlib::lookupCallable(e.callee.name))
    return checkBuiltinCall(e, *info);
  const std::string &n = e.callee.name;
  if (n == "load" || n == "fill") {
    diags_.error("E0104", e.callee.loc,
                 "'" + n + "' is only allowed as a param initializer: param w : f32[4] = " +
                     n + "(...)");
    return false;
  }
  std::vector<std::string> candidates = stdlib::callableNames();
  for (auto &kv : out_->fnByName)
    candidates.push_back(kv.first);
  auto &d = diags_.error("E0104", e.callee.loc, "unknown function '" + n + "'" +
                                                    didYouMean(n, candidates));
  (void)d;
  // Check the arguments anyway so their own errors are reported.
  for (Arg &a : e.args)
    if (a.value->kind != ExprKind::Type && a.value->kind != ExprKind::StringLit)
      checkExpr(*a.value);
  return false;
}

bool Sema::checkUserCall(CallExpr &e, const FnItem &fn) {
  if (!currentFn_) {
    diags_.error("E0104", e.callee.loc, "consts and params cannot call functions");
    return false;
  }
  calls_[currentFn_].push_back({&fn, e.callee.loc});
  // Map arguments to parameters.
  std::vector<Expr *> bound(fn.params.size(), nullptr);
  size_t pos = 0;
  bool ok = true;
  for (Arg &a : e.args) {
    size_t idx;
    if (a.keyword) {
      auto it = std::find_if(fn.params.begin(), fn.params.end(),
                             [&](const FnParam &p) { return p.name.name == a.keyword->name; });
      if (it == fn.params.end()) {
        diags_.error("E0204", a.keyword->loc, "'" + fn.name.name + "' has no argument '" +
                                                  a.keyword->name + "'");
        ok = false;
        continue;
      }
      idx = size_t(it - fn.params.begin());
    } else {
      idx = pos++;
      if (idx >= fn.params.size()) {
        diags_.error("E0204", a.value->loc, "'" + fn.name.name + "' takes " +
                                                plural(fn.params.size(), "argument") +
                                                ", got " + std::to_string(e.args.size()));
        ok = false;
        break;
      }
    }
    if (bound[idx]) {
      diags_.error("E0204", a.value->loc, "argument '" + fn.params[idx].name.name +
                                              "' given twice");
      ok = false;
      continue;
    }
    bound[idx] = a.value.get();
  }
  for (size_t i = 0; i < fn.params.size(); ++i)
    if (!bound[i] && ok) {
      auto &d = diags_.error("E0204", e.close.valid() ? e.close : e.loc,
                             "missing argument '" + fn.params[i].name.name + "' of '" +
                                 fn.name.name + "'");
      d.notes.push_back({fn.loc, "'" + fn.name.name + "' is defined here"});
      ok = false;
    }
  for (Expr *arg : bound)
    if (arg && (!checkExpr(*arg) || !requireTensor(*arg, "an argument")))
      ok = false;
  if (!ok)
    return false;
  // Bind symbols and check each argument against its declared type.
  std::map<std::string, std::pair<Dim, std::string>> binding; // sym -> (dim, arg)
  CallInfo ci;
  ci.userFunction = true;
  ci.fn = &fn;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    Expr &arg = *bound[i];
    const FnParam &p = fn.params[i];
    if (arg.info.weak && !adopt(arg, p.type.dtype))
      return false;
    const TensorType &got = arg.info.types[0];
    std::string argName = "argument '" + p.name.name + "' of '" + fn.name.name + "'";
    if (got.dtype != p.type.dtype) {
      auto &d = diags_.error("E0201", arg.loc, argName + " is " + got.str() + ", expected " +
                                                   ir::dtypeName(p.type.dtype) +
                                                   " (use cast(x, " +
                                                   ir::dtypeName(p.type.dtype) + "))");
      d.notes.push_back({p.name.loc, "declared here"});
      ok = false;
      continue;
    }
    if (got.rank() != int(p.type.dims.size())) {
      auto &d = diags_.error("E0202", arg.loc,
                             argName + " has rank " + std::to_string(got.rank()) +
                                 ", expected rank " + std::to_string(p.type.dims.size()));
      d.notes.push_back({p.type.loc, "declared here"});
      ok = false;
      continue;
    }
    for (size_t k = 0; k < p.type.dims.size(); ++k) {
      const DimNode &pd = p.type.dims[k];
      const Dim &ad = got.dims[k];
      if (pd.size) {
        if (ad.isStatic() && ad.size != *pd.size) {
          auto &d = diags_.error("E0202", arg.loc,
                                 argName + " has size " + ad.str() + " in dimension " +
                                     std::to_string(k) + ", expected " +
                                     std::to_string(*pd.size));
          d.notes.push_back({pd.loc, "declared here"});
          ok = false;
        }
        continue;
      }
      auto b = binding.find(pd.sym);
      if (b == binding.end()) {
        binding[pd.sym] = {ad, p.name.name};
        continue;
      }
      const Dim &prev = b->second.first;
      bool conflict = (prev.isStatic() && ad.isStatic() && prev.size != ad.size) ||
                      (prev.isSymbol() && ad.isSymbol() && prev.sym != ad.sym) ||
                      (prev.isStatic() != ad.isStatic() && !prev.isUnknown() &&
                       !ad.isUnknown());
      if (conflict) {
        auto &d = diags_.error("E0205", e.loc,
                               "symbol '" + pd.sym + "' of '" + fn.name.name +
                                   "' is bound to " + prev.str() + " by argument '" +
                                   b->second.second + "' and to " + ad.str() +
                                   " by argument '" + p.name.name + "'");
        d.notes.push_back({fn.loc, "'" + fn.name.name + "' is defined here"});
        ok = false;
      }
    }
    ci.operands.push_back(&arg);
  }
  if (!ok)
    return false;
  // Results: declared, or inferred from the callee's body.
  auto res = out_->fnResults.find(&fn);
  if (res == out_->fnResults.end() && !fn.hasResults) {
    // Check the callee now, saving our own context.
    auto savedScopes = std::move(scopes_);
    auto savedSymbols = std::move(currentSymbols_);
    const FnItem *savedFn = currentFn_;
    int savedDepth = exprDepth_;
    if (!bodyState_.count(&fn)) {
      bodyState_[&fn] = 1;
      checkBody(fn);
      bodyState_[&fn] = 2;
    }
    scopes_ = std::move(savedScopes);
    currentSymbols_ = std::move(savedSymbols);
    currentFn_ = savedFn;
    exprDepth_ = savedDepth;
    res = out_->fnResults.find(&fn);
  }
  if (res == out_->fnResults.end())
    return false; // the callee had errors or is recursive (reported elsewhere)
  for (const TensorType &t : res->second) {
    TensorType r = t;
    for (Dim &d : r.dims)
      if (d.isSymbol()) {
        auto b = binding.find(d.sym);
        d = b == binding.end() ? Dim::unknown() : b->second.first;
      }
    e.info.types.push_back(r);
  }
  out_->calls[&e] = std::move(ci);
  return true;
}

bool Sema::checkBuiltinCall(CallExpr &e, const stdlib::OpInfo &info) {
  const std::string callee = std::string(info.callName) + "()";
  const auto &params = info.params;
  std::vector<Expr *> bound(params.size(), nullptr);
  std::vector<Expr *> variadic;
  size_t pos = 0;
  bool ok = true;
  auto paramList = [&] {
    std::string s;
    for (auto &p : params)
      s += (s.empty() ? "" : ", ") + std::string(p.name);
    return s;
  };
  for (Arg &a : e.args) {
    if (a.keyword) {
      auto it = std::find_if(params.begin(), params.end(), [&](const stdlib::ParamSpec &p) {
        return a.keyword->name == p.name && p.kind != ParamKind::Variadic;
      });
      if (it == params.end()) {
        diags_.error("E0204", a.keyword->loc, "unknown keyword '" + a.keyword->name +
                                                  "' for " + callee + " (expected: " +
                                                  paramList() + ")");
        ok = false;
        continue;
      }
      size_t idx = size_t(it - params.begin());
      if (bound[idx]) {
        diags_.error("E0204", a.keyword->loc, "argument '" + a.keyword->name + "' given twice");
        ok = false;
        continue;
      }
      bound[idx] = a.value.get();
      continue;
    }
    if (pos < params.size() && params[pos].kind == ParamKind::Variadic) {
      variadic.push_back(a.value.get());
      continue;
    }
    if (pos >= params.size()) {
      diags_.error("E0204", a.value->loc, callee + " takes " +
                                              plural(params.size(), "argument") + " (" +
                                              paramList() + "), got " +
                                              std::to_string(e.args.size()));
      ok = false;
      break;
    }
    bound[pos++] = a.value.get();
  }
  for (size_t i = 0; i < params.size() && ok; ++i)
    if (!bound[i] && params[i].required && params[i].kind != ParamKind::Variadic) {
      diags_.error("E0204", e.close.valid() ? e.close : e.loc,
                   callee + " is missing argument '" + params[i].name + "' (" +
                       paramList() + ")");
      ok = false;
    }
  CallInfo ci;
  ci.kind = info.kind;
  std::vector<Expr *> operands;
  for (size_t i = 0; i < params.size(); ++i) {
    const stdlib::ParamSpec &p = params[i];
    if (p.kind == ParamKind::Tensor) {
      if (bound[i]) {
        if (!checkExpr(*bound[i]) || !requireTensor(*bound[i], "an argument"))
          ok = false;
        operands.push_back(bound[i]);
      }
    } else if (p.kind == ParamKind::TensorList) {
      if (!bound[i])
        continue;
      if (bound[i]->kind != ExprKind::TensorLit) {
        diags_.error("E0204", bound[i]->loc, callee + " expects a list of tensors: " +
                                                 info.callName + "([a, b])");
        ok = false;
        continue;
      }
      for (auto &el : static_cast<TensorLit &>(*bound[i]).elements) {
        if (!checkExpr(*el) || !requireTensor(*el, "a list element"))
          ok = false;
        operands.push_back(el.get());
      }
    } else if (p.kind == ParamKind::Variadic) {
      for (Expr *v : variadic) {
        if (!checkExpr(*v) || !requireTensor(*v, "an argument"))
          ok = false;
        operands.push_back(v);
      }
    } else if (bound[i]) {
      Attribute a;
      if (evalAttr(*bound[i], p, a, callee))
        ci.attrs.push_back({p.name, std::move(a)});
      else
        ok = false;
    } else if (p.dflt) {
      ci.attrs.push_back({p.name, *p.dflt});
    }
  }
  if (!ok)
    return false;
  // Weak literals take the element type of their strong partners.
  using stdlib::OpClass;
  switch (info.cls) {
  case OpClass::ElementwiseBinary:
  case OpClass::Comparison:
  case OpClass::LinearAlgebra:
    ok = unifyWeak(operands);
    break;
  case OpClass::ElementwiseOther:
    if (info.kind == ir::OpKind::Select)
      ok = unifyWeak({operands[1], operands[2]});
    else if (info.kind == ir::OpKind::Clip)
      ok = unifyWeak(operands);
    break;
  case OpClass::Neural:
    if (info.kind == ir::OpKind::Layernorm)
      ok = unifyWeak(operands);
    break;
  case OpClass::Shape:
    if (info.kind == ir::OpKind::Concat || info.kind == ir::OpKind::Stack)
      ok = unifyWeak(operands);
    break;
  default:
    break;
  }
  if (!ok)
    return false;
  bool allWeak = !operands.empty();
  for (Expr *o : operands)
    allWeak &= o->info.weak;
  bool keepWeak = allWeak && (info.cls == OpClass::ElementwiseBinary ||
                              info.kind == ir::OpKind::Neg ||
                              info.kind == ir::OpKind::Abs);
  if (!keepWeak)
    for (Expr *o : operands)
      commitDefault(*o);
  std::vector<TensorType> types;
  for (Expr *o : operands)
    types.push_back(o->info.types[0]);
  auto r = stdlib::inferTypes(info.kind, types, ci.attrs);
  if (!r.ok()) {
    reportRule(*r.error, e.loc, operands);
    return false;
  }
  e.info.types = r.types;
  e.info.weak = keepWeak;
  ci.operands.assign(operands.begin(), operands.end());
  out_->calls[&e] = std::move(ci);
  return true;
}

} // namespace mdl::frontend
