// The affinity pass: one forward walk per function instance.
//
// 1. Instances are keyed by (function, argument devices, context device);
//    the entry's arguments arrive on the default device (the first
//    declared) and it has no context.
// 2. Each operation, in order:
//    a. explicitly placed (`on DEV`, `to`, a pinned param) keeps its device;
//    b. otherwise the instance's context (`f(x) on DEV`) places it;
//    c. otherwise its placed operands decide: none -> floating (replicable),
//       one device -> that device, several -> E0301;
//    then every operand it consumes from elsewhere is checked: a secret one
//    leaving mpc is E0304, a placed one is an implicit transfer (N0801,
//    E0302 when strict), a floating global is a replication (N0802).
// 3. Control flow is host orchestration: conditions must be public (E0305);
//    a loop-carried value lives where its initial value lives, else where
//    the body explicitly places what it yields, else on the context or
//    default device, and must end each iteration there (E0306).
// 4. Calls instantiate their callee for the devices of their operands (a
//    floating operand is materialized on the callee's context or the
//    default device) and the call's own `on DEV`.
// Nothing iterates to a fixed point: each instance is walked once, and
// instances are memoized, so the pass is linear in the placed program.
#include "ir/passes/Affinity.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace mdl::passes {

using namespace ir;

Diagnostic *checkSupported(const Module &m, const Operation &op, int d, DiagnosticEngine &diags,
                           const std::string &where) {
  const stdlib::DeviceKindInfo &kind = stdlib::kindOf(m.devices[size_t(d)]);
  if (kind.supports && kind.supports(op.kind))
    return nullptr;
  auto &diag = diags.error("E0303", op.loc,
                           std::string("'") + opName(op.kind) + "' is not implemented for " +
                               kind.name + " devices ('" + m.devices[size_t(d)].name + "')" +
                               where);
  std::string list;
  for (const std::string &n : stdlib::supportedCallNames(kind))
    list += (list.empty() ? "" : ", ") + n;
  diag.notes.push_back({{}, kind.name + " devices implement: " +
                                (list.empty() ? std::string("no named operations") : list) +
                                " (and the operators of those)"});
  return &diag;
}

namespace {

constexpr int kFloat = -1;

struct Instance {
  const Function *src = nullptr;
  std::vector<int> argDev;
  int ctx = kFloat;
  bool entry = false;
  Function *fn = nullptr;
  std::vector<int> resultDev;
  /// Whether each result is a placed value (the callee places it
  /// explicitly, or the call's `on DEV` does): moving it elsewhere is an
  /// implicit transfer that --strict-placement refuses.
  std::vector<bool> resultPlaced;
  std::vector<Operation *> callers; // call ops to rename
};

class Affinity {
public:
  Affinity(const Module &in, const AffinityOptions &o, DiagnosticEngine &d)
      : in_(in), opts_(o), diags_(d) {}

  std::unique_ptr<Module> run() {
    out_ = std::make_unique<Module>();
    out_->devices = in_.devices;
    for (const Global &g : in_.globals)
      out_->globals.push_back(cloneGlobal(g));
    std::vector<const Function *> roots;
    if (const Function *e = in_.findFunction(opts_.entry))
      roots.push_back(e);
    else
      roots = stdlib::uncalledFunctions(in_);
    for (const Function *f : roots) {
      std::vector<int> args(f->body->args.size(), in_.defaultDevice());
      instantiate(*f, args, kFloat, true);
    }
    nameInstances();
    if (opts_.explain)
      noteReplications();
    out_->reindex();
    return std::move(out_);
  }

private:
  // --- small helpers ---
  const std::string &devName(int d) const {
    static const std::string none = "<floating>";
    return d >= 0 ? in_.devices[d].name : none;
  }
  bool isMpc(int d) const { return d >= 0 && stdlib::isSecret(in_.devices[size_t(d)]); }
  int home(int ctx) const { return ctx >= 0 ? ctx : in_.defaultDevice(); }

  void setDevice(Value *v, int d) {
    v->device = d;
    v->secret = isMpc(d);
  }

  /// Where a value comes from: its defining operation, or for a region
  /// argument the loop that carries it or the function that receives it.
  Location defLoc(const Value *v) const {
    if (v->def)
      return v->def->loc;
    if (v->region && v->region->parent)
      return v->region->parent->loc;
    if (!stack_.empty())
      return stack_.back()->src->loc;
    return {};
  }

  /// "is on 'gpu0', computed here", or what a region argument is.
  std::string whereComputed(const Value *v) const {
    const std::string dev = "'" + devName(v->device) + "'";
    if (v->def)
      return "the value is computed on " + dev + " here";
    if (v->region && v->region->parent)
      return "the value is carried by this loop, on " + dev +
             " (where its initial value lives, or where the body places what it yields, "
             "else the default device)";
    bool entry = !stack_.empty() && stack_.back()->entry;
    return "the value is an argument of '" + (stack_.empty() ? std::string("?") : stack_.back()->src->name) +
           "', which arrives on " + dev + (entry ? " (the default device)" : "");
  }

  static std::string bytesOf(const TensorType &t) {
    if (!t.isStatic())
      return t.str();
    return t.str() + " (" + std::to_string(t.byteSize()) + " bytes)";
  }

  // --- instances ---
  Instance *instantiate(const Function &f, const std::vector<int> &argDev, int ctx, bool entry) {
    std::string key = f.name + "(";
    for (int d : argDev)
      key += devName(d) + ",";
    key += ")@" + devName(ctx) + (entry ? "!" : "");
    auto it = memo_.find(key);
    if (it != memo_.end())
      return it->second.get();
    auto owned = std::make_unique<Instance>();
    Instance *I = owned.get();
    memo_[key] = std::move(owned);
    I->src = &f;
    I->argDev = argDev;
    I->ctx = ctx;
    I->entry = entry;
    instances_[f.name].push_back(I);
    std::unique_ptr<Function> fn = f.cloneHeader();
    fn->resultDevices.clear(); // decided by this instance's walk
    I->fn = fn.get();
    ValueMap map;
    for (size_t i = 0; i < f.body->args.size(); ++i) {
      Value *a = fn->body->addArg(f.body->args[i]->type);
      setDevice(a, argDev[i]);
      map[f.body->args[i].get()] = a;
    }
    I->resultDev.assign(f.resultTypes.size(), home(ctx));
    I->resultPlaced.assign(f.resultTypes.size(), false);
    stack_.push_back(I);
    copyRegion(*f.body, *fn->body, map, ctx);
    stack_.pop_back();
    fn->resultDevices = I->resultDev;
    std::string desc;
    for (size_t i = 0; i < argDev.size(); ++i)
      desc += (i ? ", " : "") + devName(argDev[i]);
    if (ctx >= 0 || !argDev.empty())
      fn->attrs.push_back({"placement", Attribute::string("args on (" + desc + ")" +
                                                          (ctx >= 0 ? ", body on " + devName(ctx) : ""))});
    out_->addFunction(std::move(fn));
    return I;
  }

  void nameInstances() {
    for (auto &[name, list] : instances_) {
      if (opts_.stableNames) {
        std::map<std::string, int> used;
        for (Instance *I : list) {
          std::string n = stableName(name, *I);
          if (used[n]++) // the entry and a call with the same placement
            n += "." + std::to_string(used[n]);
          I->fn->name = n;
        }
        continue;
      }
      if (list.size() == 1)
        continue;
      std::map<std::string, int> seen;
      for (Instance *I : list) {
        std::string n = name + "@" + (I->ctx >= 0 ? devName(I->ctx) : "default");
        if (seen[n]++)
          n += "." + std::to_string(seen[n]);
        I->fn->name = n;
      }
    }
    for (auto &[op, I] : calls_)
      op->setAttr("callee", Attribute::symbol(I->fn->name));
    for (auto &[op, name, I] : fnRefs_)
      op->setAttr(name, Attribute::symbol(I->fn->name));
  }

  /// The name of an instance that says its placement: the plain name in
  /// the default context with every argument on the default device (or
  /// floating), else `f@CTX` and, for other argument devices,
  /// `.args_D1_D2`.
  std::string stableName(const std::string &name, const Instance &I) const {
    bool plainArgs = true;
    std::string args;
    for (int d : I.argDev) {
      plainArgs &= d < 0 || d == in_.defaultDevice();
      args += "_" + (d >= 0 ? in_.devices[size_t(d)].name : std::string("floating"));
    }
    if (I.ctx < 0 && plainArgs)
      return name;
    return name + "@" + (I.ctx >= 0 ? devName(I.ctx) : std::string("default")) +
           (plainArgs ? "" : ".args" + args);
  }

  // --- consumption checks ---

  /// `consumer` (placed on `d`, or host orchestration when d is -1 and
  /// `host` is set) reads `v`.
  void consume(Value *v, int d, const Operation &consumer) {
    if (d < 0 || v->device == d)
      return;
    if (v->device == kFloat) {
      auto g = globalsOf_.find(v);
      if (g != globalsOf_.end())
        for (const std::string &name : g->second)
          replicated_[name].insert(d);
      return;
    }
    // A secret value stays on its device: another mpc device has other
    // shares, so moving there would go through the host in the clear.
    if (v->secret) {
      auto &diag = diags_.error("E0304", consumer.loc,
                                "secret value leaves mpc device '" + devName(v->device) +
                                    "' without reveal: it is used on '" + devName(d) + "'" +
                                    (isMpc(d) ? " (secret values do not move between mpc "
                                                "devices)"
                                              : ""));
      diag.notes.push_back({defLoc(v), "the value is computed secret-shared on '" +
                                           devName(v->device) + "' here"});
      diag.notes.push_back({{}, "make it public explicitly with reveal(x) where it may be seen"});
      addCallContext(diag);
      return;
    }
    if (opts_.strictPlacement && explicit_.count(v)) {
      auto &diag = diags_.error("E0302", consumer.loc,
                                "implicit transfer of a placed value from '" + devName(v->device) +
                                    "' to '" + devName(d) + "' under --strict-placement");
      diag.notes.push_back({defLoc(v), "the value is placed on '" + devName(v->device) + "' here"});
      diag.notes.push_back({{}, "move it explicitly: to(x, " + devName(d) + ")"});
      addCallContext(diag);
      return;
    }
    if (opts_.explain && noted_.insert({v, d}).second) {
      auto &n = diags_.note("N0801", consumer.loc,
                            "implicit transfer inserted: " + bytesOf(v->type) + " from '" +
                                devName(v->device) + "' to '" + devName(d) + "'");
      n.notes.push_back({defLoc(v), whereComputed(v)});
    }
  }

  /// A value the host reads (a condition, a loop bound) must be public.
  void consumeOnHost(Value *v, const Operation &consumer, const char *what) {
    if (!v->secret)
      return;
    auto &diag = diags_.error("E0305", consumer.loc,
                              std::string(what) + " depends on a secret value on '" +
                                  devName(v->device) + "'");
    diag.notes.push_back({defLoc(v), "the secret value is computed here"});
    diag.notes.push_back({{}, "control flow cannot branch on secret data: compute both sides "
                              "and use select(cond, a, b), or reveal(x) the condition"});
  }

  bool supported(const Operation &op, int d) {
    Diagnostic *diag = checkSupported(in_, op, d, diags_);
    if (!diag)
      return true;
    diag->notes.push_back({{}, "place it on another device (`on DEV`) and move the data with "
                               "to(x, DEV)" +
                                   std::string(isMpc(d) ? " or reveal(x)" : "")});
    addCallContext(*diag);
    return false;
  }

  // --- the walk ---

  /// Device of the value a loop body yields at position i, when the body
  /// places it explicitly (a look at one operation, not an iteration).
  int yieldedPlacement(const Region &body, size_t i) {
    const Operation *y = stdlib::terminatorOf(body);
    if (!y || i >= y->operands.size() || !y->operands[i]->def)
      return kFloat;
    const Operation *def = y->operands[i]->def;
    if (def->kind == OpKind::To)
      return in_.findDevice(def->stringAttr("device"));
    return def->placement == PlacementKind::Explicit ? def->device : kFloat;
  }

  void copyRegion(const Region &src, Region &dst, ValueMap &map, int ctx) {
    for (auto &op : src.ops)
      copyOp(*op, dst, map, ctx);
  }

  Value *mapped(ValueMap &map, Value *v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  }

  void copyOp(const Operation &op, Region &dst, ValueMap &map, int ctx) {
    auto nop = std::make_unique<Operation>(op.kind, op.loc);
    nop->attrs = op.attrs;
    for (Value *v : op.operands)
      nop->operands.push_back(mapped(map, v));
    Operation *n = nop.get();
    for (auto &r : op.results)
      map[r.get()] = n->addResult(r->type);
    switch (op.kind) {
    case OpKind::Yield:
    case OpKind::Return:
      dst.push(std::move(nop));
      if (op.kind == OpKind::Return)
        placeReturn(*n);
      return;
    case OpKind::Print:
      for (Value *v : n->operands)
        if (v->secret)
          consume(v, in_.defaultDevice(), *n); // reports E0304
      dst.push(std::move(nop));
      return;
    case OpKind::Call:
      placeCall(op, *n, ctx);
      dst.push(std::move(nop));
      return;
    case OpKind::If:
      placeIf(op, *n, map, ctx);
      dst.push(std::move(nop));
      return;
    case OpKind::For:
    case OpKind::While:
      placeLoop(op, *n, map, ctx);
      dst.push(std::move(nop));
      return;
    case OpKind::Global: {
      const Global &g = in_.globals[size_t(in_.findGlobal(op.stringAttr("name")))];
      if (g.pinnedDevice >= 0) {
        n->device = g.pinnedDevice;
        n->placement = PlacementKind::Explicit;
        setDevice(n->result(), g.pinnedDevice);
        explicit_.insert(n->result());
      } else {
        setDevice(n->result(), kFloat);
        hoistable_.insert(n->result());
        globalsOf_[n->result()] = {g.name};
        globalLoc_.emplace(g.name, g.loc);
      }
      dst.push(std::move(nop));
      return;
    }
    case OpKind::Reveal: {
      Value *x = n->operands[0];
      if (x->secret) {
        setDevice(n->result(), kFloat); // public, materialized where consumed
        dst.push(std::move(nop));
        return;
      }
      break; // revealing a public value: an ordinary operation
    }
    case OpKind::To: {
      int d = in_.findDevice(op.stringAttr("device"));
      Value *x = n->operands[0];
      n->device = d;
      n->placement = PlacementKind::Explicit;
      if (x->secret && d != x->device) {
        auto &diag = diags_.error("E0304", op.loc, "secret value leaves mpc device '" +
                                                       devName(x->device) + "' through to(); "
                                                       "use reveal(x) to make it public");
        diag.notes.push_back({defLoc(x), "the value is computed secret-shared here"});
      }
      setDevice(n->result(), d);
      explicit_.insert(n->result());
      dst.push(std::move(nop));
      return;
    }
    default:
      break;
    }
    // A computation.
    int d = kFloat;
    PlacementKind how = PlacementKind::None;
    if (op.placement == PlacementKind::Explicit && op.device >= 0) {
      d = op.device;
      how = PlacementKind::Explicit;
    } else if (ctx >= 0) {
      d = ctx;
      how = PlacementKind::Explicit;
    } else {
      std::vector<int> devs;
      for (Value *v : n->operands)
        if (v->device >= 0 && std::find(devs.begin(), devs.end(), v->device) == devs.end())
          devs.push_back(v->device);
      if (devs.size() == 1) {
        d = devs[0];
        how = PlacementKind::Inferred;
      } else if (devs.size() > 1) {
        reportAmbiguous(*n, devs);
        d = devs[0]; // keep going; the error stops the pipeline
        how = PlacementKind::Inferred;
      }
    }
    if (d >= 0) {
      n->device = d;
      n->placement = how;
      supported(*n, d);
      for (Value *v : n->operands)
        consume(v, d, *n);
    }
    // Functions it applies (`to_apply = @add`) run where it runs.
    for (const std::string &name : stdlib::functionAttrs(n->kind)) {
      const Attribute *a = n->attr(name);
      const Function *fn = a && a->kind() == Attribute::Kind::Symbol ? in_.findFunction(a->asSymbol())
                                                                     : nullptr;
      if (!fn)
        continue;
      int fd = d >= 0 ? d : in_.defaultDevice();
      Instance *I = instantiate(*fn, std::vector<int>(fn->body->args.size(), fd), fd, false);
      fnRefs_.push_back({n, name, I});
    }
    bool allHoistable = true;
    for (Value *v : n->operands)
      allHoistable &= hoistable_.count(v) > 0;
    for (auto &r : n->results) {
      setDevice(r.get(), d);
      if (how == PlacementKind::Explicit)
        explicit_.insert(r.get());
      if (d == kFloat && allHoistable)
        hoistable_.insert(r.get());
      if (d == kFloat) {
        // Remember which globals a floating value derives from, for N0802.
        std::vector<std::string> from;
        for (Value *v : n->operands) {
          auto g = globalsOf_.find(v);
          if (g == globalsOf_.end())
            continue;
          for (const std::string &name : g->second)
            if (std::find(from.begin(), from.end(), name) == from.end())
              from.push_back(name);
        }
        if (!from.empty())
          globalsOf_[r.get()] = std::move(from);
      }
    }
    dst.push(std::move(nop));
  }

  /// Notes naming the calls that led to the instance being walked, the
  /// innermost first: a function called from several sites is walked once
  /// per placement, and the error belongs to the call that made this one.
  void addCallContext(Diagnostic &diag) const {
    size_t first = callSites_.size();
    for (size_t k = callSites_.size(); k-- > 0;) {
      const CallSite &site = callSites_[k];
      std::string devs;
      for (const Value *v : site.call->operands)
        devs += (devs.empty() ? "" : ", ") + devName(v->device);
      std::string on = site.on >= 0 ? ", on '" + devName(site.on) + "'" : "";
      diag.notes.push_back({site.call->loc,
                            std::string(k + 1 == first ? "in '" : "within '") +
                                site.callee->name + "' called here with arguments on (" + devs +
                                ")" + on});
    }
  }

  void reportAmbiguous(const Operation &op, const std::vector<int> &devs) {
    std::string list;
    for (int d : devs)
      list += (list.empty() ? "'" : ", '") + devName(d) + "'";
    auto &diag = diags_.error("E0301", op.loc,
                              std::string("ambiguous placement: the operands of '") + opName(op.kind) +
                                  "' are on different devices (" + list + ")");
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Value *v = op.operands[i];
      if (v->device < 0)
        continue;
      std::string where = whereComputed(v); // "the value is ..."
      diag.notes.push_back({defLoc(v), "operand " + std::to_string(i + 1) + " (" + v->type.str() +
                                           ") " + where.substr(where.find("is "))});
    }
    diag.notes.push_back({{}, "place the operation with `... on " + devName(devs[0]) +
                                  "` or move an operand with to(x, " + devName(devs[0]) + ")"});
    addCallContext(diag);
  }

  void placeReturn(Operation &ret) {
    Instance *I = stack_.back();
    for (size_t i = 0; i < ret.operands.size(); ++i) {
      Value *v = ret.operands[i];
      if (I->entry && v->secret) {
        auto &diag = diags_.error("E0304", ret.loc,
                                  "the entry function returns a secret value from '" +
                                      devName(v->device) + "'");
        diag.notes.push_back({defLoc(v), "the value is computed secret-shared here"});
        diag.notes.push_back({{}, "return reveal(x) to deliver it in the clear"});
        continue;
      }
      int d = v->device >= 0 ? v->device : home(I->ctx);
      if (i < I->resultDev.size()) {
        I->resultDev[i] = d;
        I->resultPlaced[i] = explicit_.count(v) > 0;
      }
    }
  }

  void placeCall(const Operation &op, Operation &n, int ctx) {
    int callCtx = op.placement == PlacementKind::Explicit && op.device >= 0 ? op.device : ctx;
    const Function *callee = in_.findFunction(op.stringAttr("callee"));
    // A call placed `on DEV` runs its callee on DEV: the arguments move
    // there. Otherwise they stay where they are (floating ones go to the
    // default device).
    std::vector<int> args;
    for (Value *v : n.operands) {
      int d = callCtx >= 0 ? callCtx : v->device >= 0 ? v->device : home(callCtx);
      consume(v, d, n);
      args.push_back(d);
    }
    callSites_.push_back({&n, callee, op.placement == PlacementKind::Explicit ? op.device : kFloat});
    Instance *I = instantiate(*callee, args, callCtx, false);
    callSites_.pop_back();
    calls_.push_back({&n, I});
    for (size_t i = 0; i < n.results.size(); ++i) {
      setDevice(n.result(unsigned(i)), I->resultDev[i]);
      if (I->resultPlaced[i])
        explicit_.insert(n.result(unsigned(i)));
    }
  }

  void placeIf(const Operation &op, Operation &n, ValueMap &map, int ctx) {
    consumeOnHost(n.operands[0], n, "an 'if' condition");
    Region *r0 = n.addRegion(), *r1 = n.addRegion();
    copyRegion(*op.regions[0], *r0, map, ctx);
    copyRegion(*op.regions[1], *r1, map, ctx);
    Operation *y0 = stdlib::terminatorOf(*r0), *y1 = stdlib::terminatorOf(*r1);
    for (size_t i = 0; i < n.results.size(); ++i) {
      Value *a = y0->operands[i], *b = y1->operands[i];
      int d;
      if (a->device >= 0 && b->device >= 0 && a->device != b->device) {
        auto &diag = diags_.error("E0301", op.loc,
                                  "ambiguous placement: the branches of 'if' yield value " +
                                      std::to_string(i + 1) + " on different devices ('" +
                                      devName(a->device) + "' and '" + devName(b->device) + "')");
        diag.notes.push_back({defLoc(a), "the then branch computes it on '" + devName(a->device) + "'"});
        diag.notes.push_back({defLoc(b), "the else branch computes it on '" + devName(b->device) + "'"});
        diag.notes.push_back({{}, "move one of them with to(x, " + devName(a->device) + ")"});
        addCallContext(diag);
        d = a->device;
      } else {
        d = a->device >= 0 ? a->device : b->device >= 0 ? b->device : home(ctx);
      }
      setDevice(n.result(unsigned(i)), d);
      consume(a, d, *y0);
      consume(b, d, *y1);
    }
  }

  void placeLoop(const Operation &op, Operation &n, ValueMap &map, int ctx) {
    bool isFor = op.kind == OpKind::For;
    size_t first = isFor ? 2 : 0;
    if (isFor) {
      consumeOnHost(n.operands[0], n, "a loop bound");
      consumeOnHost(n.operands[1], n, "a loop bound");
    }
    const Region &srcBody = *op.regions.back();
    std::vector<int> carried;
    for (size_t i = first; i < n.operands.size(); ++i) {
      Value *init = n.operands[i];
      int d = init->device;
      if (d < 0)
        d = yieldedPlacement(srcBody, i - first);
      if (d < 0)
        d = home(ctx);
      consume(init, d, n);
      carried.push_back(d);
    }
    auto bindArgs = [&](const Region &src, Region &dst) {
      size_t k = 0;
      for (auto &a : src.args) {
        Value *na = dst.addArg(a->type);
        if (isFor && k == 0)
          setDevice(na, kFloat); // the loop index: a host scalar
        else
          setDevice(na, carried[k - (isFor ? 1 : 0)]);
        map[a.get()] = na;
        ++k;
      }
    };
    if (!isFor) {
      Region *cond = n.addRegion();
      bindArgs(*op.regions[0], *cond);
      copyRegion(*op.regions[0], *cond, map, ctx);
      if (Operation *y = stdlib::terminatorOf(*cond); y && !y->operands.empty())
        consumeOnHost(y->operands[0], *y, "a 'while' condition");
    }
    Region *body = n.addRegion();
    bindArgs(srcBody, *body);
    copyRegion(srcBody, *body, map, ctx);
    Operation *y = stdlib::terminatorOf(*body);
    for (size_t i = 0; y && i < y->operands.size() && i < carried.size(); ++i) {
      Value *v = y->operands[i];
      if (v->device >= 0 && v->device != carried[i]) {
        auto &diag = diags_.error("E0306", y->loc,
                                  "loop-carried value " + std::to_string(i + 1) + " starts on '" +
                                      devName(carried[i]) + "' but this iteration yields it on '" +
                                      devName(v->device) + "'");
        diag.notes.push_back({defLoc(v), "the yielded value is computed on '" +
                                             devName(v->device) + "' here"});
        diag.notes.push_back({{}, "a carried value must end each iteration on the device it "
                                  "started on: yield to(x, " + devName(carried[i]) +
                                      ") or place the initial value on '" + devName(v->device) +
                                      "'"});
        addCallContext(diag);
        continue;
      }
      consume(v, carried[i], *y);
    }
    for (size_t i = 0; i < n.results.size(); ++i)
      setDevice(n.result(unsigned(i)), carried[i]);
  }

  void noteReplications() {
    for (auto &[name, devs] : replicated_) {
      if (devs.size() < 2)
        continue;
      std::string list;
      for (int d : devs)
        list += (list.empty() ? "'" : ", '") + devName(d) + "'";
      const Global &g = in_.globals[size_t(in_.findGlobal(name))];
      diags_.note("N0802", globalLoc_[name],
                  std::string(g.isParam ? "param" : "const") + " '" + name +
                      "' is replicated to " + list + ": " + bytesOf(g.type) +
                      " each, materialized once per device at load time");
    }
  }

  const Module &in_;
  const AffinityOptions &opts_;
  DiagnosticEngine &diags_;
  std::unique_ptr<Module> out_;
  std::map<std::string, std::unique_ptr<Instance>> memo_;
  std::map<std::string, std::vector<Instance *>> instances_;
  std::vector<Instance *> stack_;
  /// The calls being walked, outermost first (for addCallContext).
  struct CallSite {
    const Operation *call; // the copied call: its operands have devices
    const Function *callee;
    int on;                // the call's own `on DEV`, or kFloat
  };
  std::vector<CallSite> callSites_;
  std::vector<std::pair<Operation *, Instance *>> calls_;
  std::vector<std::tuple<Operation *, std::string, Instance *>> fnRefs_;
  std::unordered_set<const Value *> explicit_, hoistable_;
  std::unordered_map<const Value *, std::vector<std::string>> globalsOf_;
  std::map<std::string, std::set<int>> replicated_;
  std::map<std::string, Location> globalLoc_;
  std::set<std::pair<const Value *, int>> noted_;
};

} // namespace

std::unique_ptr<Module> affinity(const Module &m, const AffinityOptions &opts,
                                 DiagnosticEngine &diags) {
  unsigned before = diags.errorCount();
  Affinity a(m, opts, diags);
  auto out = a.run();
  if (diags.errorCount() != before)
    return nullptr;
  return out;
}

} // namespace mdl::passes
