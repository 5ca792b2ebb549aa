// insertTransfers, in two steps over each function:
// 1. (backward in spirit) visit every consumer in order and ask for each
//    operand on the consumer's device: need(v, D) returns v itself, a
//    transfer of v, or a materialized copy of a floating v; new operations
//    are recorded as pending insertions after the definition of what they
//    copy (or at the start of the region for region arguments).
// 2. Rebuild each region: drop the floating originals, splice the pending
//    operations in.
// Memoizing need() per (value, device) keeps it linear, and anchoring every
// copy at the definition makes it dominate all later uses.
#include "ir/passes/InsertTransfers.h"
#include "ir/passes/Affinity.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

#include <map>
#include <tuple>
#include <unordered_map>

namespace mdl::passes {

using namespace ir;

namespace {

constexpr int kFloat = -1;

class Materializer {
public:
  Materializer(Module &m, DiagnosticEngine &d) : m_(m), diags_(d) {}

  bool run() {
    unsigned before = diags_.errorCount();
    for (auto &f : m_.functions) {
      fn_ = f.get();
      processRegion(*f->body, nullptr);
      rebuild(*f->body);
      after_.clear();
      atStart_.clear();
      memo_.clear();
      hoistedReads_.clear();
    }
    return diags_.errorCount() == before;
  }

private:
  // Floating: computations and reveals that affinity left without a
  // device; they are replaced by copies on their consumers' devices.
  bool isFloatingComputation(const Operation &op) const {
    return op.device < 0 && !stdlib::isOrchestration(op.kind) && op.kind != OpKind::Transfer &&
           op.kind != OpKind::To;
  }

  int defaultDevice() const { return m_.defaultDevice(); }

  void pendAfter(const Value *v, std::unique_ptr<Operation> op) {
    if (v->def)
      after_[v->def].push_back(std::move(op));
    else
      atStart_[v->region].push_back(std::move(op));
  }

  Value *transfer(Value *v, int d, const Location &at) {
    auto op = std::make_unique<Operation>(OpKind::Transfer, at);
    op->operands = {v};
    if (v->device >= 0)
      op->setAttr("from", Attribute::symbol(m_.devices[v->device].name));
    op->device = d;
    op->placement = PlacementKind::Inferred;
    Value *r = op->addResult(v->type);
    r->device = d;
    r->secret = stdlib::isSecret(m_.devices[size_t(d)]);
    pendAfter(v, std::move(op));
    return r;
  }

  bool hoistable(const Value *v) {
    auto it = hoistable_.find(v);
    if (it != hoistable_.end())
      return it->second;
    bool h = false;
    if (const Operation *def = v->def) {
      if (def->kind == OpKind::Global || def->kind == OpKind::Constant) {
        h = true;
      } else if (isFloatingComputation(*def) && def->regions.empty()) {
        h = true;
        for (const Value *o : def->operands)
          h &= o->device < 0 && hoistable(o);
      }
    }
    hoistable_[v] = h;
    return h;
  }

  /// A view (broadcast, reshape, ...) of constants only: as cheap to repeat
  /// at each use as the constant itself, where a hoisted global would hold
  /// it in full (a broadcast zero the size of an activation: ResNet-50 had
  /// 13 MB of them, read by its fused loops in every call).
  bool viewOfConstants(const Value *v) const {
    const Operation *def = v->def;
    if (!def || !def->regions.empty())
      return false;
    if (def->kind == OpKind::Constant)
      return true;
    if (!stdlib::isView(def->kind))
      return false;
    for (const Value *o : def->operands)
      if (!viewOfConstants(o))
        return false;
    return true;
  }

  // A broadcast to more elements than it reads: hoisted, it would become a
  // global of the large shape (a batch norm's per-channel scale broadcast
  // to a whole activation); copied to its consumer's device instead, it
  // stays a view of the small hoisted operand.
  static bool expandsBroadcast(const Operation &def) {
    return def.kind == OpKind::BroadcastTo && def.operands.size() == 1 &&
           def.results[0]->type.isStatic() && def.operands[0]->type.isStatic() &&
           def.results[0]->type.numElements() > def.operands[0]->type.numElements();
  }

  // Copies the floating chain that computes `v` into `r`.
  Value *cloneChain(const Value *v, Region &r, ValueMap &map) {
    auto it = map.find(v);
    if (it != map.end())
      return it->second;
    const Operation *def = v->def;
    auto op = std::make_unique<Operation>(def->kind, def->loc);
    op->attrs = def->attrs;
    for (const Value *o : def->operands)
      op->operands.push_back(cloneChain(o, r, map));
    for (auto &each : def->results) // every result, for multi-result ops
      map[each.get()] = op->addResult(each->type);
    Value *res = map[v];
    r.push(std::move(op));
    return res;
  }

  // A global computing the hoistable chain of `v` at load time.
  std::string hoist(const Value *v) {
    auto it = hoisted_.find(v);
    if (it != hoisted_.end())
      return it->second;
    Global g;
    g.name = "__hoisted." + std::to_string(m_.globals.size());
    g.type = v->type;
    g.loc = v->def->loc;
    g.init = std::make_unique<Region>();
    ValueMap map;
    Value *res = cloneChain(v, *g.init, map);
    auto y = std::make_unique<Operation>(OpKind::Yield, v->def->loc);
    y->operands = {res};
    g.init->push(std::move(y));
    std::string name = g.name;
    m_.globals.push_back(std::move(g));
    hoisted_[v] = name;
    return name;
  }

  bool supportedOn(const Operation &op, int d) {
    Diagnostic *diag = checkSupported(m_, op, d, diags_, ", where its result is needed");
    if (!diag)
      return true;
    diag->notes.push_back({{}, "compute it on another device and move the result with to(x, " +
                                   m_.devices[size_t(d)].name + ")"});
    return false;
  }

  /// For the read of a pinned param inside a loop, the region that holds
  /// the outermost such loop: the param is the same in every iteration, so
  /// its transfer belongs there, once per call. Null for anything else.
  Region *loopInvariantHome(const Value *v) const {
    const Operation *def = v->def;
    if (!def || def->kind != OpKind::Global || v->device < 0)
      return nullptr;
    Region *home = nullptr;
    for (Region *r = def->parent; r && r->parent; r = r->parent->parent)
      if (r->parent->kind == OpKind::For || r->parent->kind == OpKind::While)
        home = r->parent->parent;
    return home;
  }

  /// A read of the param `global` on its own device, moved to `d`, at the
  /// start of `home` (one per param, region and device).
  Value *hoistedTransfer(const Operation &global, Region &home, int d, const Location &at) {
    auto key = std::make_tuple(global.stringAttr("name"), &home, d);
    auto it = hoistedReads_.find(key);
    if (it != hoistedReads_.end())
      return it->second;
    auto read = std::make_unique<Operation>(OpKind::Global, global.loc);
    read->attrs = global.attrs;
    read->device = global.device;
    read->placement = global.placement;
    Value *r = read->addResult(global.results[0]->type);
    r->device = global.results[0]->device;
    atStart_[&home].push_back(std::move(read));
    Value *moved = transfer(r, d, at);
    hoistedReads_[key] = moved;
    return moved;
  }

  /// The value `v` as seen on device `d`, for a consumer at `at`.
  Value *need(Value *v, int d, const Location &at) {
    if (d < 0 || v->device == d)
      return v;
    auto key = std::make_pair(static_cast<const Value *>(v), d);
    auto it = memo_.find(key);
    if (it != memo_.end())
      return it->second;
    Value *out;
    if (Region *outside = loopInvariantHome(v)) {
      out = hoistedTransfer(*v->def, *outside, d, at);
    } else if (v->device >= 0 || !v->def) {
      out = transfer(v, d, at); // a placed value, or a host scalar (loop index)
    } else {
      const Operation *def = v->def;
      if (def->kind == OpKind::Reveal) {
        auto op = std::make_unique<Operation>(OpKind::Reveal, def->loc);
        op->operands = def->operands;
        op->device = d;
        op->placement = PlacementKind::Inferred;
        out = op->addResult(v->type);
        pendAfter(v, std::move(op));
      } else if (hoistable(v) && def->kind != OpKind::Constant && !viewOfConstants(v) &&
                 !expandsBroadcast(*def)) {
        std::string name = def->kind == OpKind::Global ? def->stringAttr("name") : hoist(v);
        auto op = std::make_unique<Operation>(OpKind::Global, def->loc);
        op->setAttr("name", Attribute::symbol(name));
        op->device = d;
        op->placement = PlacementKind::Replicated;
        out = op->addResult(v->type);
        pendAfter(v, std::move(op));
      } else {
        supportedOn(*def, d);
        auto op = std::make_unique<Operation>(def->kind, def->loc);
        op->attrs = def->attrs;
        for (Value *o : def->operands)
          op->operands.push_back(need(o, d, at));
        op->device = d;
        op->placement = PlacementKind::Replicated;
        for (auto &each : def->results) { // every result, for multi-result ops
          Value *r = op->addResult(each->type);
          r->device = d;
          memo_[std::make_pair(static_cast<const Value *>(each.get()), d)] = r;
        }
        out = op->result(v->index);
        pendAfter(v, std::move(op));
      }
      out->device = d;
    }
    out->secret = stdlib::isSecret(m_.devices[size_t(d)]);
    memo_[key] = out;
    return out;
  }

  /// A value the host reads: a placed one as it is, a floating one computed
  /// on the default device.
  Value *needOnHost(Value *v, const Location &at) {
    return v->device >= 0 ? v : need(v, defaultDevice(), at);
  }

  /// `parent`: the operation owning this region (null for a function body).
  void processRegion(Region &r, Operation *parent) {
    std::vector<Operation *> ops;
    for (auto &op : r.ops)
      ops.push_back(op.get());
    for (Operation *op : ops) {
      if (isFloatingComputation(*op))
        continue;
      switch (op->kind) {
      case OpKind::Transfer:
        break;
      case OpKind::To:
      case OpKind::Reveal:
        if (op->operands[0]->device < 0 && op->operands[0]->def &&
            op->operands[0]->def->kind != OpKind::Reveal)
          op->operands[0] = need(op->operands[0], op->device, op->loc);
        break;
      case OpKind::Print:
        for (Value *&v : op->operands)
          v = needOnHost(v, op->loc);
        break;
      case OpKind::Call: {
        Function *callee = m_.findFunction(op->stringAttr("callee"));
        for (size_t i = 0; i < op->operands.size(); ++i)
          op->operands[i] = need(op->operands[i], callee->body->args[i]->device, op->loc);
        break;
      }
      case OpKind::If:
        op->operands[0] = needOnHost(op->operands[0], op->loc);
        break;
      case OpKind::For:
        op->operands[0] = needOnHost(op->operands[0], op->loc);
        op->operands[1] = needOnHost(op->operands[1], op->loc);
        for (size_t i = 2; i < op->operands.size(); ++i)
          op->operands[i] = need(op->operands[i], op->results[i - 2]->device, op->loc);
        break;
      case OpKind::While:
        for (size_t i = 0; i < op->operands.size(); ++i)
          op->operands[i] = need(op->operands[i], op->results[i]->device, op->loc);
        break;
      case OpKind::Yield:
        for (size_t i = 0; i < op->operands.size(); ++i) {
          if (parent && parent->kind == OpKind::While && &r == parent->regions[0].get())
            op->operands[i] = needOnHost(op->operands[i], op->loc); // the loop condition
          else if (parent && i < parent->results.size())
            op->operands[i] = need(op->operands[i], parent->results[i]->device, op->loc);
        }
        break;
      case OpKind::Return:
        for (size_t i = 0; i < op->operands.size(); ++i) {
          int d = i < fn_->resultDevices.size() ? fn_->resultDevices[i] : defaultDevice();
          op->operands[i] = need(op->operands[i], d, op->loc);
        }
        break;
      default:
        for (Value *&v : op->operands)
          v = need(v, op->device, op->loc);
        break;
      }
      for (auto &sub : op->regions)
        processRegion(*sub, op);
    }
  }

  void emitWithPending(std::unique_ptr<Operation> op, std::vector<std::unique_ptr<Operation>> &out,
                       Region &r) {
    Operation *raw = op.get();
    bool keep = !isFloatingComputation(*raw);
    if (keep) {
      raw->parent = &r;
      out.push_back(std::move(op));
    }
    auto it = after_.find(raw);
    if (it == after_.end())
      return;
    std::vector<std::unique_ptr<Operation>> pending = std::move(it->second);
    after_.erase(it);
    for (auto &p : pending)
      emitWithPending(std::move(p), out, r);
    // The floating original is dropped only after its copies took their
    // place (they may be anchored on it).
    if (!keep)
      graveyard_.push_back(std::move(op));
  }

  void rebuild(Region &r) {
    std::vector<std::unique_ptr<Operation>> out;
    auto start = atStart_.find(&r);
    if (start != atStart_.end()) {
      std::vector<std::unique_ptr<Operation>> pending = std::move(start->second);
      atStart_.erase(start);
      for (auto &p : pending)
        emitWithPending(std::move(p), out, r);
    }
    std::vector<std::unique_ptr<Operation>> old = std::move(r.ops);
    for (auto &op : old)
      emitWithPending(std::move(op), out, r);
    r.ops = std::move(out);
    for (auto &op : r.ops)
      for (auto &sub : op->regions)
        rebuild(*sub);
  }

  Module &m_;
  DiagnosticEngine &diags_;
  Function *fn_ = nullptr;
  std::unordered_map<const Operation *, std::vector<std::unique_ptr<Operation>>> after_;
  std::unordered_map<const Region *, std::vector<std::unique_ptr<Operation>>> atStart_;
  std::map<std::pair<const Value *, int>, Value *> memo_;
  std::unordered_map<const Value *, bool> hoistable_;
  std::unordered_map<const Value *, std::string> hoisted_;
  std::map<std::tuple<std::string, const Region *, int>, Value *> hoistedReads_;
  std::vector<std::unique_ptr<Operation>> graveyard_;
};

} // namespace

bool insertTransfers(Module &m, DiagnosticEngine &diags) {
  Materializer mat(m, diags);
  return mat.run();
}

} // namespace mdl::passes
