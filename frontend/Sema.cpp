// Semantic analysis of items, function signatures and statements.
//
// 1. Collect every item of every file; duplicates are E0103.
// 2. Check device declarations (kind, arguments, ordinals).
// 3. Check consts (lazily, in dependency order, cycles rejected) and params.
// 4. Check each function signature (symbols are the identifiers in argument
//    dimensions), then each body statement by statement in nested scopes.
// 5. Reject recursion (E0208) on the call graph, iteratively.
#include "frontend/SemaImpl.h"
#include "stdlib/DeviceKinds.h"

#include <algorithm>
#include <functional>

namespace mdl::frontend {

using ir::DType;
using ir::TensorType;

std::string closestName(const std::string &name,
                        const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDist = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string &c : candidates) {
    if (c == name)
      continue;
    // Levenshtein distance, two rows.
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j)
      prev[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                           prev[j - 1] + (name[i - 1] == c[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    if (prev[c.size()] < bestDist) {
      bestDist = prev[c.size()];
      best = c;
    }
  }
  return best;
}

std::string didYouMean(const std::string &name,
                       const std::vector<std::string> &candidates) {
  std::string c = closestName(name, candidates);
  return c.empty() ? "" : "; did you mean '" + c + "'?";
}

LocalVar *Sema::lookupLocal(const std::string &name) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end())
      return &f->second;
  }
  return nullptr;
}

void Sema::bind(const Ident &name, const TensorType &t) {
  scopes_.back()[name.name] = LocalVar{t, name.loc, false};
}

void Sema::bindPoisoned(const Ident &name) {
  scopes_.back()[name.name] = LocalVar{TensorType(DType::F32, {}), name.loc, true};
}

std::vector<std::string> Sema::visibleNames() const {
  std::vector<std::string> names;
  for (auto &s : scopes_)
    for (auto &kv : s)
      names.push_back(kv.first);
  for (auto &kv : items_)
    names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

bool Sema::deviceDeclared(const Ident &dev) {
  if (out_->deviceByName.count(dev.name))
    return true;
  auto &d = diags_.error("E0102", dev.loc, "device '" + dev.name + "' is not declared");
  std::string list;
  for (const DeviceItem *di : out_->devices)
    list += (list.empty() ? "" : ", ") + di->name.name;
  if (out_->devices.empty()) {
    // An example declaration, of a kind with an ordinal when one exists.
    const stdlib::DeviceKindInfo *k = stdlib::acceleratorDeviceKind();
    if (!k)
      k = stdlib::hostDeviceKind();
    std::string example = k ? k->name + (k->ordinalArg.empty() ? "()" : "(0)") : "KIND()";
    d.notes.push_back({{}, "no devices are declared; add e.g. `device " + dev.name + " = " +
                               example + "`"});
  } else
    d.notes.push_back({{}, "declared devices: " + list});
  return false;
}

void Sema::collectItems() {
  std::map<std::string, Location> fnSeen, valueSeen, deviceSeen;
  auto dup = [&](std::map<std::string, Location> &seen, const Item &it,
                 const char *what) {
    auto [pos, fresh] = seen.emplace(it.name.name, it.name.loc);
    if (fresh)
      return false;
    auto &d = diags_.error("E0103", it.name.loc,
                           std::string(what) + " '" + it.name.name +
                               "' is already defined");
    d.notes.push_back({pos->second, "first definition is here"});
    return true;
  };
  for (auto &file : prog_.files) {
    for (auto &item : file->items) {
      switch (item->kind) {
      case ItemKind::Import:
        break;
      case ItemKind::Device:
        if (!dup(deviceSeen, *item, "device")) {
          auto *d = static_cast<const DeviceItem *>(item.get());
          out_->devices.push_back(d);
          out_->deviceByName[d->name.name] = d;
        }
        break;
      case ItemKind::Const:
      case ItemKind::Param:
        if (!dup(valueSeen, *item, item->kind == ItemKind::Const ? "const" : "param")) {
          out_->globals.push_back(item.get());
          out_->globalByName[item->name.name] = item.get();
          items_[item->name.name] = item.get();
        }
        break;
      case ItemKind::Fn:
        if (!dup(fnSeen, *item, "function")) {
          auto *f = static_cast<const FnItem *>(item.get());
          out_->functions.push_back(f);
          out_->fnByName[f->name.name] = f;
        }
        break;
      }
    }
  }
}

void Sema::checkDevice(const DeviceItem &d) {
  const std::string &kindName = d.deviceKind.name;
  const stdlib::DeviceKindInfo *kind = stdlib::findDeviceKind(kindName);
  if (!kind) {
    std::string list;
    for (const std::string &k : stdlib::deviceKindNames())
      list += (list.empty() ? "" : ", ") + k;
    diags_.error("E0204", d.deviceKind.loc,
                 "unknown device kind '" + kindName + "'; expected one of: " + list);
    return;
  }
  const std::vector<stdlib::ParamSpec> &allowed = kind->args;
  size_t positional = 0;
  std::map<std::string, ir::Attribute> given;
  for (const Arg &a : d.args) {
    std::string name;
    if (a.keyword) {
      name = a.keyword->name;
    } else if (positional < allowed.size()) {
      name = allowed[positional++].name;
    } else {
      diags_.error("E0204", a.value->loc, kindName + "() takes at most " +
                                              std::to_string(allowed.size()) +
                                              " arguments");
      continue;
    }
    auto spec = std::find_if(allowed.begin(), allowed.end(),
                             [&](const stdlib::ParamSpec &s) { return name == s.name; });
    Location at = a.keyword ? a.keyword->loc : a.value->loc;
    if (spec == allowed.end()) {
      std::string list;
      for (auto &s : allowed)
        list += (list.empty() ? "" : ", ") + std::string(s.name);
      diags_.error("E0204", at, "unknown argument '" + name + "' for a " + kindName +
                                    " device (expected: " + (list.empty() ? "none" : list) +
                                    ")");
      continue;
    }
    if (given.count(name)) {
      diags_.error("E0204", at, "argument '" + name + "' given twice");
      continue;
    }
    ir::Attribute value;
    if (spec->kind == stdlib::ParamKind::String) {
      if (a.value->kind != ExprKind::StringLit) {
        diags_.error("E0204", a.value->loc, "'" + name + "' must be a string");
        continue;
      }
      value = ir::Attribute::string(static_cast<const StringLit &>(*a.value).value);
    } else {
      std::optional<int64_t> v = evalInt(*a.value);
      if (!v) {
        diags_.error("E0204", a.value->loc, "'" + name + "' must be an integer constant");
        continue;
      }
      value = ir::Attribute::integer(*v);
    }
    std::string why = kind->checkArg ? kind->checkArg(name, value) : std::string();
    if (!why.empty()) {
      std::string shown = value.kind() == ir::Attribute::Kind::String
                              ? "\"" + value.asString() + "\""
                              : std::to_string(value.asInt());
      diags_.error("E0204", a.value->loc,
                   "bad value " + shown + " for '" + name + "' (" + why + ")");
      continue;
    }
    given[name] = value;
  }
  // The device, with every argument of its kind in the kind's order.
  ir::Device dev;
  dev.name = d.name.name;
  dev.kind = kind->name;
  dev.loc = d.loc;
  for (const stdlib::ParamSpec &p : allowed) {
    auto it = given.find(p.name);
    if (it != given.end())
      dev.args.push_back({p.name, it->second});
    else if (p.dflt)
      dev.args.push_back({p.name, *p.dflt});
    else if (p.required)
      diags_.error("E0204", d.loc, "a " + kindName + " device needs '" + p.name + "': " +
                                       kindName + "(" + p.name + " = ...)");
  }
  out_->irDevices.push_back(std::move(dev));
}

bool Sema::resolveType(const TypeNode &t, TensorType &out, bool declareSymbols) {
  out = TensorType(t.dtype, {});
  for (const DimNode &d : t.dims) {
    if (d.size) {
      if (*d.size < 0) {
        diags_.error("E0204", d.loc, "a dimension cannot be negative");
        return false;
      }
      out.dims.push_back(ir::Dim::of(*d.size));
      continue;
    }
    if (declareSymbols) {
      currentSymbols_.insert(d.sym);
    } else if (!currentSymbols_.count(d.sym)) {
      diags_.error("E0101", d.loc,
                   "unknown dimension '" + d.sym + "'" +
                       (currentFn_ ? " (symbols are bound by the arguments of '" +
                                         currentFn_->name.name + "')"
                                   : " (symbols are only allowed in function signatures)"));
      return false;
    }
    out.dims.push_back(ir::Dim::symbol(d.sym));
  }
  return true;
}

void Sema::checkConst(const ConstItem &c) {
  ConstState &st = constState_[c.name.name];
  if (st == ConstState::Done || st == ConstState::Failed)
    return;
  if (st == ConstState::InProgress) {
    diags_.error("E0208", c.name.loc,
                 "const '" + c.name.name + "' is defined in terms of itself");
    st = ConstState::Failed;
    return;
  }
  st = ConstState::InProgress;
  // A const is checked outside any function: no locals, no symbols.
  auto savedScopes = std::move(scopes_);
  auto savedSymbols = std::move(currentSymbols_);
  const FnItem *savedFn = currentFn_;
  scopes_.clear();
  scopes_.emplace_back();
  currentSymbols_.clear();
  currentFn_ = nullptr;
  Expr &e = *const_cast<ConstItem &>(c).value;
  bool ok = checkExpr(e);
  if (ok && e.info.types.size() != 1) {
    diags_.error("E0204", e.loc, "a const must be one tensor value");
    ok = false;
  }
  if (ok) {
    commitDefault(e);
    out_->globalTypes[c.name.name] = e.info.types[0];
  }
  scopes_ = std::move(savedScopes);
  currentSymbols_ = std::move(savedSymbols);
  currentFn_ = savedFn;
  constState_[c.name.name] = ok ? ConstState::Done : ConstState::Failed;
}

void Sema::checkParam(const ParamItem &p) {
  TensorType t;
  currentSymbols_.clear();
  if (!resolveType(p.type, t, false))
    return;
  out_->globalTypes[p.name.name] = t;
  if (p.device)
    deviceDeclared(*p.device);
  Expr &init = *p.init;
  // zeros / ones as bare names.
  ParamInit &resolved = out_->paramInits[&p];
  if (init.kind == ExprKind::Name) {
    const std::string &n = static_cast<NameExpr &>(init).name;
    if (n == "zeros" || n == "ones") {
      resolved.kind = n == "zeros" ? ir::OpKind::Zeros : ir::OpKind::Ones;
      resolved.attrs = {{"type", ir::Attribute::type(t)}};
      return;
    }
    diags_.error("E0204", init.loc, "unknown initializer '" + n +
                                        "'; expected load(...), zeros, ones, fill(v), "
                                        "random_normal(...), random_uniform(...) or a literal");
    return;
  }
  if (init.kind == ExprKind::Call) {
    auto &call = static_cast<CallExpr &>(init);
    const std::string &n = call.callee.name;
    auto needString = [&](const Arg &a, const char *what) {
      if (a.value->kind != ExprKind::StringLit) {
        diags_.error("E0204", a.value->loc, std::string(what) + " must be a string");
        return false;
      }
      return true;
    };
    if (n == "load") {
      if (call.args.empty() || call.args.size() > 2) {
        diags_.error("E0204", call.loc, "load takes a file and, for safetensors, a key: "
                                        "load(\"w.safetensors\", \"w1\")");
        return;
      }
      for (const Arg &a : call.args)
        if (a.keyword) {
          diags_.error("E0204", a.keyword->loc, "load takes positional arguments only");
          return;
        }
      if (!needString(call.args[0], "the weight file") ||
          (call.args.size() == 2 && !needString(call.args[1], "the key")))
        return;
      // A relative path is relative to the file that declares the param.
      std::string file = static_cast<const StringLit &>(*call.args[0].value).value;
      if (!file.empty() && file[0] != '/') {
        const std::string &decl = ir::fileName(p.loc.file);
        size_t slash = decl.rfind('/');
        file = (slash == std::string::npos ? "" : decl.substr(0, slash + 1)) + file;
      }
      resolved.kind = ir::OpKind::Load;
      resolved.attrs = {{"file", ir::Attribute::string(file)}};
      if (call.args.size() == 2)
        resolved.attrs.push_back(
            {"key", ir::Attribute::string(static_cast<const StringLit &>(*call.args[1].value).value)});
      return;
    }
    if (n == "fill" || n == "random_normal" || n == "random_uniform") {
      std::vector<const char *> names =
          n == "fill" ? std::vector<const char *>{"value"}
          : n == "random_normal" ? std::vector<const char *>{"seed", "mean", "std"}
                                 : std::vector<const char *>{"seed", "lo", "hi"};
      size_t pos = 0;
      bool haveFirst = false;
      std::map<std::string, ir::Attribute> values;
      for (const Arg &a : call.args) {
        std::string an = a.keyword ? a.keyword->name : (pos < names.size() ? names[pos++] : "");
        if (an.empty() ||
            std::find_if(names.begin(), names.end(), [&](const char *s) { return an == s; }) == names.end()) {
          diags_.error("E0204", a.keyword ? a.keyword->loc : a.value->loc,
                       "unexpected argument for " + n + " (expected: " +
                           [&] { std::string s; for (auto x : names) s += (s.empty() ? "" : ", ") + std::string(x); return s; }() + ")");
          continue;
        }
        haveFirst |= an == names[0];
        if (an == "seed") {
          if (auto v = evalInt(*a.value))
            values[an] = ir::Attribute::integer(*v);
        } else if (auto v = evalNumber(*a.value)) {
          values[an] = ir::Attribute::real(*v);
        }
        if (!values.count(an))
          diags_.error("E0204", a.value->loc, "'" + an + "' must be a number constant");
      }
      if (!haveFirst)
        diags_.error("E0204", call.loc, n + " needs '" + names[0] + "'");
      if (n != "fill" && !ir::isFloat(t.dtype))
        diags_.error("E0201", p.type.loc, "random initializers need a floating-point type");
      // The operation, with the table's defaults for what was not given.
      resolved.kind = n == "fill"            ? ir::OpKind::Full
                      : n == "random_normal" ? ir::OpKind::RandomNormal
                                             : ir::OpKind::RandomUniform;
      resolved.attrs = {{"type", ir::Attribute::type(t)}};
      for (const stdlib::ParamSpec &ps : stdlib::opInfo(resolved.kind).params) {
        if (ps.kind == stdlib::ParamKind::Type)
          continue;
        auto it = values.find(ps.name);
        if (it != values.end())
          resolved.attrs.push_back({ps.name, it->second});
        else if (ps.dflt)
          resolved.attrs.push_back({ps.name, *ps.dflt});
      }
      return;
    }
  }
  // A tensor literal (or any constant expression) of the declared type.
  resolved.fromExpr = true;
  auto savedScopes = std::move(scopes_);
  scopes_.clear();
  scopes_.emplace_back();
  if (checkExpr(init)) {
    if (init.info.types.size() != 1)
      diags_.error("E0204", init.loc, "a param initializer must be one tensor");
    else if (!init.info.weak && init.info.types[0].dtype != t.dtype)
      diags_.error("E0201", init.loc, "initializer is " + init.info.types[0].str() +
                                          " but the param is declared " + t.str());
    else if (adopt(init, t.dtype) && !ir::typesCompatible(init.info.types[0], t))
      diags_.error("E0202", init.loc, "initializer is " + init.info.types[0].str() +
                                          " but the param is declared " + t.str());
  }
  scopes_ = std::move(savedScopes);
}

void Sema::checkSignature(const FnItem &f) {
  currentFn_ = &f;
  currentSymbols_.clear();
  std::set<std::string> argNames;
  for (const FnParam &p : f.params) {
    TensorType t;
    resolveType(p.type, t, true);
    if (!argNames.insert(p.name.name).second)
      diags_.error("E0103", p.name.loc, "argument '" + p.name.name + "' is already defined");
  }
  std::vector<TensorType> results;
  for (const TypeNode &r : f.results) {
    TensorType t;
    if (resolveType(r, t, false))
      results.push_back(t);
  }
  if (f.hasResults)
    out_->fnResults[&f] = results;
}

void Sema::checkBody(const FnItem &f) {
  currentFn_ = &f;
  currentSymbols_.clear();
  scopes_.clear();
  scopes_.emplace_back();
  for (const FnParam &p : f.params) {
    TensorType t;
    resolveType(p.type, t, true);
    bind(p.name, t);
  }
  bool sawTerminator = false;
  checkStatements(f.body, true, nullptr, nullptr, sawTerminator);
  if (!sawTerminator && f.hasResults && !f.results.empty())
    diags_.error("E0209", f.body.close.valid() ? f.body.close : f.loc,
                 "function '" + f.name.name + "' must end with 'return'");
  if (!f.hasResults && !out_->fnResults.count(&f))
    out_->fnResults[&f] = {};
  scopes_.clear();
  currentFn_ = nullptr;
}

void Sema::checkStatements(const Block &b, bool fnBody,
                           std::vector<TensorType> *yielded,
                           std::vector<Expr *> *yieldExprs, bool &sawTerminator) {
  for (size_t i = 0; i < b.stmts.size(); ++i) {
    if (sawTerminator) {
      diags_.error("E0211", b.stmts[i]->loc,
                   std::string("statement after '") + (fnBody ? "return" : "yield") +
                       "' is never reached");
      return;
    }
    checkStmt(*b.stmts[i], i + 1 == b.stmts.size(), fnBody, yielded, yieldExprs,
              sawTerminator);
  }
}

void Sema::checkStmt(Stmt &s, bool isLast, bool fnBody,
                     std::vector<TensorType> *yielded,
                     std::vector<Expr *> *yieldExprs, bool &sawTerminator) {
  switch (s.kind) {
  case StmtKind::Let: {
    auto &let = static_cast<LetStmt &>(s);
    TensorType ann;
    bool annOk = !let.annotation || resolveType(*let.annotation, ann, false);
    if (!checkExpr(*let.value) || !annOk) {
      // Bind the names anyway, poisoned, to avoid cascades of errors.
      for (const Ident &n : let.names)
        bindPoisoned(n);
      return;
    }
    Expr &v = *let.value;
    if (v.info.types.size() != let.names.size()) {
      diags_.error("E0204", let.loc,
                   "let binds " + std::to_string(let.names.size()) + " name" +
                       (let.names.size() == 1 ? "" : "s") + " but the expression gives " +
                       std::to_string(v.info.types.size()) + " value" +
                       (v.info.types.size() == 1 ? "" : "s"));
      for (const Ident &n : let.names)
        bindPoisoned(n);
      return;
    }
    if (let.annotation) {
      if (v.info.weak && !adopt(v, ann.dtype))
        return;
      const TensorType &got = v.info.types[0];
      if (got.dtype != ann.dtype)
        diags_.error("E0201", let.value->loc, "value is " + got.str() +
                                                  " but the annotation says " + ann.str());
      else if (!ir::typesCompatible(got, ann))
        diags_.error("E0202", let.value->loc, "value is " + got.str() +
                                                  " but the annotation says " + ann.str());
    }
    commitDefault(v);
    for (size_t i = 0; i < let.names.size(); ++i)
      bind(let.names[i], v.info.types[i]);
    return;
  }
  case StmtKind::On: {
    auto &on = static_cast<OnStmt &>(s);
    deviceDeclared(on.device);
    // Names bound inside stay visible after the block: same scope.
    for (size_t i = 0; i < on.body.stmts.size(); ++i) {
      if (sawTerminator) {
        diags_.error("E0211", on.body.stmts[i]->loc, "statement is never reached");
        return;
      }
      checkStmt(*on.body.stmts[i], isLast && i + 1 == on.body.stmts.size(), fnBody,
                yielded, yieldExprs, sawTerminator);
    }
    return;
  }
  case StmtKind::Return:
  case StmtKind::Yield: {
    auto &vs = static_cast<ValuesStmt &>(s);
    bool isReturn = s.kind == StmtKind::Return;
    if (isReturn != fnBody) {
      diags_.error("E0211", s.loc,
                   isReturn ? "'return' is only allowed at the end of a function body "
                              "(use 'yield' inside if/for/while)"
                            : "'yield' is only allowed at the end of an if/for/while body");
      return;
    }
    if (!isLast) {
      diags_.error("E0211", s.loc, std::string("'") + (isReturn ? "return" : "yield") +
                                       "' must be the last statement of its block");
    }
    sawTerminator = true;
    std::vector<TensorType> types;
    std::vector<Expr *> exprs;
    bool ok = true;
    for (auto &v : vs.values) {
      if (!checkExpr(*v)) {
        ok = false;
        continue;
      }
      if (v->info.types.size() != 1 && vs.values.size() != 1) {
        diags_.error("E0204", v->loc, "a multi-value expression must be returned alone");
        ok = false;
        continue;
      }
      for (auto &t : v->info.types)
        types.push_back(t);
      exprs.push_back(v.get());
    }
    if (!ok)
      return;
    if (!isReturn) {
      if (yielded)
        *yielded = types;
      if (yieldExprs)
        *yieldExprs = exprs;
      return;
    }
    const FnItem &f = *currentFn_;
    auto declared = out_->fnResults.find(&f);
    if (!f.hasResults) {
      for (Expr *e : exprs)
        commitDefault(*e);
      types.clear();
      for (Expr *e : exprs)
        for (auto &t : e->info.types)
          types.push_back(t);
      out_->fnResults[&f] = types;
      return;
    }
    if (declared == out_->fnResults.end())
      return; // the signature had an error
    const std::vector<TensorType> &want = declared->second;
    if (types.size() != want.size()) {
      diags_.error("E0209", s.loc, "function '" + f.name.name + "' returns " +
                                       std::to_string(want.size()) + " value" +
                                       (want.size() == 1 ? "" : "s") + " but this returns " +
                                       std::to_string(types.size()));
      return;
    }
    if (exprs.size() == want.size()) {
      for (size_t i = 0; i < exprs.size(); ++i) {
        Expr &e = *exprs[i];
        if (e.info.weak && !adopt(e, want[i].dtype))
          return;
        const TensorType &got = e.info.types[0];
        if (!ir::typesCompatible(got, want[i])) {
          auto &d = diags_.error("E0209", e.loc,
                                 "result " + std::to_string(i) + " is " + got.str() +
                                     " but '" + f.name.name + "' declares " + want[i].str());
          d.notes.push_back({f.loc, "declared here"});
        }
      }
    } else {
      for (size_t i = 0; i < types.size(); ++i)
        if (!ir::typesCompatible(types[i], want[i])) {
          auto &d = diags_.error("E0209", s.loc,
                                 "result " + std::to_string(i) + " is " + types[i].str() +
                                     " but '" + f.name.name + "' declares " + want[i].str());
          d.notes.push_back({f.loc, "declared here"});
        }
    }
    return;
  }
  case StmtKind::Expr: {
    auto &es = static_cast<ExprStmt &>(s);
    if (checkExpr(*es.expr))
      commitDefault(*es.expr);
    return;
  }
  }
}

void Sema::checkRecursion() {
  // Iterative DFS with colors, so deep call chains cannot overflow the stack.
  enum Color { White, Grey, Black };
  std::map<const FnItem *, Color> color;
  for (const FnItem *root : out_->functions) {
    if (color[root] != White)
      continue;
    struct Frame {
      const FnItem *fn;
      size_t next;
    };
    std::vector<Frame> stack{{root, 0}};
    color[root] = Grey;
    while (!stack.empty()) {
      Frame &fr = stack.back();
      auto &edges = calls_[fr.fn];
      if (fr.next == edges.size()) {
        color[fr.fn] = Black;
        stack.pop_back();
        continue;
      }
      auto [callee, loc] = edges[fr.next++];
      if (color[callee] == Grey) {
        std::string cycle = callee->name.name;
        bool in = false;
        for (const Frame &f : stack) {
          if (f.fn == callee)
            in = true;
          else if (in)
            cycle += " -> " + f.fn->name.name;
        }
        cycle += " -> " + callee->name.name;
        auto &d = diags_.error("E0208", loc,
                               "recursive call to '" + callee->name.name +
                                   "' (call graphs must be acyclic)");
        d.notes.push_back({{}, "cycle: " + cycle});
        d.notes.push_back({{}, "use a 'for' or 'while' loop instead of recursion"});
      } else if (color[callee] == White) {
        color[callee] = Grey;
        stack.push_back({callee, 0});
      }
    }
  }
}

std::unique_ptr<CheckedProgram> Sema::run() {
  out_ = std::make_unique<CheckedProgram>();
  out_->program = &prog_;
  collectItems();
  for (const DeviceItem *d : out_->devices)
    checkDevice(*d);
  if (out_->devices.empty()) {
    // A program that declares no device runs on an implicit host device.
    if (const stdlib::DeviceKindInfo *host = stdlib::hostDeviceKind()) {
      ir::Device dev;
      dev.name = "host";
      dev.kind = host->name;
      dev.implicit = true;
      for (const stdlib::ParamSpec &p : host->args)
        if (p.dflt)
          dev.args.push_back({p.name, *p.dflt});
      out_->irDevices.push_back(std::move(dev));
    }
  }
  for (const Item *g : out_->globals) {
    if (g->kind == ItemKind::Const)
      checkConst(static_cast<const ConstItem &>(*g));
    else
      checkParam(static_cast<const ParamItem &>(*g));
  }
  for (const FnItem *f : out_->functions)
    checkSignature(*f);
  // A body that calls a function without declared results checks that
  // callee first, on demand (see checkUserCall).
  for (const FnItem *f : out_->functions)
    if (!bodyState_.count(f)) {
      bodyState_[f] = 1;
      checkBody(*f);
      bodyState_[f] = 2;
    }
  checkRecursion();
  if (diags_.hasErrors())
    return nullptr;
  return std::move(out_);
}

std::unique_ptr<CheckedProgram> checkProgram(Program &program,
                                             ir::DiagnosticEngine &diags) {
  Sema s(program, diags);
  return s.run();
}

} // namespace mdl::frontend
