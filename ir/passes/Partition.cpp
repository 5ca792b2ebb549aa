// Partitioning, per function:
// 1. Number the segments: in each region, consecutive device operations on
//    the same device share a number; anything else ends the run.
// 2. For every operand whose definition and use are in different segments
//    (or outside any), record it as an output of the defining segment and
//    an input of the using one, in first-seen order (deterministic).
// 3. Rebuild each region, moving each run into a `segment` operation whose
//    arguments stand for its inputs, and record which segment result
//    replaces each output.
// 4. Rewrite the operands outside segments through those replacements.
#include "ir/passes/Partition.h"
#include "ir/passes/Affinity.h"
#include "ir/passes/InsertTransfers.h"
#include "stdlib/Registry.h"

#include <unordered_map>

namespace mdl::passes {

using namespace ir;

namespace {

// Reads of globals stay outside: the host program hands each segment the
// device's copy of the global as an argument, so segments are pure.
// Operations that apply a module function (`to_apply = @add`) also stay
// outside: the host calls the function for them.
bool appliesFunction(const Operation &op) {
  for (const std::string &name : stdlib::functionAttrs(op.kind))
    if (op.attr(name))
      return true;
  return false;
}

bool isDeviceOp(const Operation &op) {
  return op.device >= 0 && !stdlib::isOrchestration(op.kind) && !stdlib::isTransfer(op.kind) &&
         op.kind != OpKind::Global && !appliesFunction(op);
}

class Partitioner {
public:
  void run(Function &f) {
    segOf_.clear();
    segs_.clear();
    repl_.clear();
    number(*f.body);
    for (auto &op : f.body->ops)
      collect(*op);
    rebuild(*f.body);
    rewrite(*f.body);
  }

private:
  struct Seg {
    int device;
    std::vector<Value *> inputs, outputs;
    std::unordered_map<const Value *, bool> isInput, isOutput;
  };

  void number(Region &r) {
    int current = -1, device = -1;
    for (auto &op : r.ops) {
      if (isDeviceOp(*op)) {
        if (current < 0 || device != op->device) {
          current = int(segs_.size());
          device = op->device;
          segs_.push_back({device, {}, {}, {}, {}});
        }
        segOf_[op.get()] = current;
        continue;
      }
      current = -1;
      for (auto &sub : op->regions)
        number(*sub);
    }
  }

  int segOfValue(const Value *v) const {
    if (!v->def)
      return -1;
    auto it = segOf_.find(v->def);
    return it == segOf_.end() ? -1 : it->second;
  }

  void collect(Operation &op) {
    auto it = segOf_.find(&op);
    int su = it == segOf_.end() ? -1 : it->second;
    for (Value *v : op.operands) {
      int sd = segOfValue(v);
      if (sd == su)
        continue;
      if (sd >= 0 && !segs_[sd].isOutput[v]) {
        segs_[sd].isOutput[v] = true;
        segs_[sd].outputs.push_back(v);
      }
      if (su >= 0 && !segs_[su].isInput[v]) {
        segs_[su].isInput[v] = true;
        segs_[su].inputs.push_back(v);
      }
    }
    for (auto &sub : op.regions)
      for (auto &inner : sub->ops)
        collect(*inner);
  }

  void rebuild(Region &r) {
    std::vector<std::unique_ptr<Operation>> old = std::move(r.ops);
    std::vector<std::unique_ptr<Operation>> out;
    Operation *seg = nullptr;
    int segId = -1;
    ValueMap argOf;
    auto close = [&] {
      if (!seg)
        return;
      Seg &s = segs_[size_t(segId)];
      auto y = std::make_unique<Operation>(OpKind::Yield, seg->loc);
      for (Value *v : s.outputs) {
        y->operands.push_back(v);
        Value *res = seg->addResult(v->type);
        res->device = s.device;
        res->secret = v->secret;
        repl_[v] = res;
      }
      seg->regions[0]->push(std::move(y));
      seg = nullptr;
      segId = -1;
    };
    for (auto &op : old) {
      auto it = segOf_.find(op.get());
      int id = it == segOf_.end() ? -1 : it->second;
      if (id < 0) {
        close();
        for (auto &sub : op->regions)
          rebuild(*sub);
        op->parent = &r;
        out.push_back(std::move(op));
        continue;
      }
      if (id != segId) {
        close();
        segId = id;
        Seg &s = segs_[size_t(id)];
        auto sop = std::make_unique<Operation>(OpKind::Segment, op->loc);
        sop->device = s.device;
        sop->placement = PlacementKind::Explicit;
        Region *body = sop->addRegion();
        argOf.clear();
        for (Value *v : s.inputs) {
          sop->operands.push_back(v);
          Value *a = body->addArg(v->type);
          a->device = s.device;
          a->secret = v->secret;
          argOf[v] = a;
        }
        seg = sop.get();
        sop->parent = &r;
        out.push_back(std::move(sop));
      }
      for (Value *&v : op->operands) {
        auto a = argOf.find(v);
        if (a != argOf.end())
          v = a->second;
      }
      seg->regions[0]->push(std::move(op));
    }
    close();
    r.ops = std::move(out);
  }

  void rewrite(Region &r) {
    for (auto &op : r.ops) {
      for (Value *&v : op->operands) {
        auto it = repl_.find(v);
        if (it != repl_.end())
          v = it->second;
      }
      if (op->kind == OpKind::Segment)
        continue; // inside, values are local or arguments
      for (auto &sub : op->regions)
        rewrite(*sub);
    }
  }

  std::unordered_map<const Operation *, int> segOf_;
  std::vector<Seg> segs_;
  ValueMap repl_;
};

} // namespace

void partition(Module &m) {
  Partitioner p;
  for (auto &f : m.functions)
    p.run(*f);
}

void partition(Function &f) { Partitioner().run(f); }

} // namespace mdl::passes
