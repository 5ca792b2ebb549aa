// The HLO-to-IR translator: functions, computations in dependency order,
// constants, placement hints, and the emission helpers the per-opcode
// translation (HloTranslateOps.cpp) is built on.
#include "frontend/hlo/HloTranslator.h"
#include "stdlib/DeviceKinds.h"

#include "frontend/hlo/HloAttrs.h"
#include "frontend/hlo/Names.h"
#include "ir/Half.h"
#include "stdlib/Registry.h"

#include <cstring>

namespace mdl::frontend::hlo {

using namespace ir;

namespace {

/// Attributes that name computations.
const char *const kComputationAttrs[] = {"to_apply", "calls", "condition", "body",
                                         "true_computation", "false_computation",
                                         "select", "scatter"};

constexpr size_t kMaxInlineDepth = 200;

} // namespace

Translator::Translator(const HloModule &m, uint32_t fileId, const TranslateOptions &opts,
                       DiagnosticEngine &diags)
    : m_(m), file_(fileId), opts_(opts), diags_(diags) {}

void Translator::unsupported(const std::string &construct, const std::string &why) {
  ++errors_;
  diags_.error("E0601", loc_, "unsupported HLO construct '" + construct + "': " + why);
}

void Translator::malformed(const std::string &msg, const HloAttr *at) {
  ++errors_;
  Location l = loc_;
  if (at) {
    l.line = at->pos.line;
    l.col = at->pos.col;
  }
  std::string where = cur_ ? " (instruction '" + cur_->name + "')" : "";
  diags_.error("E0602", l, "malformed HLO: " + msg + where);
}

const HloAttr *Translator::need(const char *name) {
  const HloAttr *a = cur_->attr(name);
  if (!a)
    malformed(std::string("'") + cur_->opcode + "' needs the attribute '" + name + "'");
  return a;
}

const HloComputation *Translator::computationAttr(const char *name) {
  const HloAttr *a = need(name);
  if (!a)
    return nullptr;
  auto it = comps_.find(parseName(a->value));
  if (it == comps_.end()) {
    malformed("no computation named '" + parseName(a->value) + "'", a);
    return nullptr;
  }
  return it->second;
}

std::optional<TensorType> Translator::typeOf(const HloShape &s) {
  if (s.isTuple) {
    malformed("expected an array shape, found the tuple " + s.str());
    return std::nullopt;
  }
  if (s.buffer) {
    unsupported("buffer-shape", "the buffer shape b(" + s.str() + ") has no mdl equivalent");
    return std::nullopt;
  }
  if (s.dynamic) {
    unsupported("dynamic-shape", "dynamic dimensions (" + s.type + "[" +
                                     (s.dims.empty() ? "" : "<=...") +
                                     "]) are not supported; mdl shapes are static");
    return std::nullopt;
  }
  auto dt = storageType(s.type);
  if (!dt) {
    unsupported("type:" + s.type, "element type " + s.type + " has no mdl equivalent");
    return std::nullopt;
  }
  return TensorType::of(*dt, s.dims);
}

Operation *Translator::emit(OpKind kind, const std::vector<Value *> &operands,
                            std::vector<NamedAttr> attrs, const std::vector<TensorType> &types) {
  for (Value *v : operands)
    if (!v)
      return nullptr;
  const stdlib::OpInfo &info = stdlib::opInfo(kind);
  if (info.infer) {
    std::vector<TensorType> in;
    for (Value *v : operands)
      in.push_back(v->type);
    stdlib::InferResult r = info.infer(in, attrs);
    if (!r.ok()) {
      malformed(std::string(opName(kind)) + ": " + r.error->message);
      return nullptr;
    }
    if (r.types != types) {
      std::string got, want;
      for (auto &t : r.types)
        got += (got.empty() ? "" : ", ") + t.str();
      for (auto &t : types)
        want += (want.empty() ? "" : ", ") + t.str();
      malformed("the instruction's shape says (" + want + "), but '" + opName(kind) +
                "' of its operands gives (" + got + ")");
      return nullptr;
    }
  }
  auto op = std::make_unique<Operation>(kind, loc_);
  op->operands = operands;
  op->attrs = std::move(attrs);
  for (const TensorType &t : types)
    op->addResult(t);
  return region_->push(std::move(op));
}

Value *Translator::scalarConstant(DType t, double v) {
  auto d = std::make_shared<DenseData>();
  d->type = TensorType::scalar(t);
  d->bytes.assign(dtypeSize(t), 0);
  switch (t) {
  case DType::Bool: d->bytes[0] = v != 0; break;
  case DType::I8: case DType::U8: case DType::I32: case DType::I64: {
    int64_t i = int64_t(v);
    std::memcpy(d->bytes.data(), &i, dtypeSize(t));
    break;
  }
  case DType::F16: case DType::BF16: {
    uint16_t h = t == DType::F16 ? floatToHalf(float(v)) : floatToBf16(float(v));
    std::memcpy(d->bytes.data(), &h, 2);
    break;
  }
  case DType::F32: {
    float f = float(v);
    std::memcpy(d->bytes.data(), &f, 4);
    break;
  }
  case DType::F64: std::memcpy(d->bytes.data(), &v, 8); break;
  }
  Value *r = emit1(OpKind::Constant, {}, {{"value", Attribute::dense(d)}}, d->type);
  if (r)
    scalarConstants_[r] = v;
  return r;
}

std::optional<double> Translator::constantScalar(const HVal &v) {
  if (v.leaves.size() != 1)
    return std::nullopt;
  auto it = scalarConstants_.find(v.leaves[0]);
  if (it == scalarConstants_.end())
    return std::nullopt;
  return it->second;
}

int Translator::deviceFor(int64_t ordinal) {
  const stdlib::DeviceKindInfo *kind = stdlib::acceleratorDeviceKind();
  if (!kind)
    return -1; // no kind with ordinals registered: the sharding stays a hint
  Module &m = *module_;
  m.devices[0].implicit = false; // declared, now that there are others
  std::string name = "gpu" + std::to_string(ordinal);
  int d = m.findDevice(name);
  if (d >= 0)
    return d;
  // XLA's device N becomes device N of the first kind with an ordinal (a
  // GPU kind), its other arguments at their defaults.
  Device g;
  g.name = name;
  g.kind = kind->name;
  for (const stdlib::ParamSpec &p : kind->args)
    if (p.name == kind->ordinalArg)
      g.args.push_back({p.name, Attribute::integer(ordinal)});
    else if (p.dflt)
      g.args.push_back({p.name, *p.dflt});
  g.loc = loc_;
  m.devices.push_back(g);
  return int(m.devices.size()) - 1;
}

std::string Translator::uniqueFunctionName(const std::string &hloName) {
  return uniqueIn(mdlIdentifier(hloName), fnNames_);
}

std::string Translator::uniqueGlobalName(const std::string &key) {
  std::string base = mdlIdentifier(key);
  // Globals share the namespace of functions in mdl source.
  std::string name = base;
  for (int i = 2; globalNames_.count(name) || fnNames_.count(name); ++i)
    name = base + "_" + std::to_string(i);
  globalNames_.insert(name);
  return name;
}

Function *Translator::functionFor(const HloComputation &c) {
  auto it = functions_.find(&c);
  if (it != functions_.end())
    return it->second;
  auto f = std::make_unique<Function>();
  bool isEntry = &c == &m_.computations[size_t(m_.entry)];
  f->name = isEntry ? "main" : uniqueFunctionName(c.name);
  f->loc = Location{file_, c.pos.line, c.pos.col, 0};
  std::vector<const HloInstruction *> params;
  for (const HloInstruction &inst : c.instructions)
    if (inst.opcode == "parameter") {
      size_t k = size_t(inst.parameterNumber);
      if (k >= c.instructions.size())
        continue; // reported when the body is translated
      if (params.size() <= k)
        params.resize(k + 1, nullptr);
      params[k] = &inst;
    }
  for (const HloInstruction *p : params) {
    if (!p)
      continue;
    std::vector<const HloShape *> leaves;
    p->shape.leaves(leaves);
    for (size_t i = 0; i < leaves.size(); ++i) {
      auto dt = leaves[i]->isTuple || leaves[i]->dynamic || leaves[i]->buffer
                    ? std::nullopt
                    : storageType(leaves[i]->type);
      f->body->addArg(dt ? TensorType::of(*dt, leaves[i]->dims) : TensorType::scalar(DType::F32));
      f->argNames.push_back(leaves.size() == 1 ? p->name : p->name + "." + std::to_string(i));
    }
  }
  std::vector<const HloShape *> results;
  c.rootInstruction().shape.leaves(results);
  for (const HloShape *s : results) {
    auto dt = s->dynamic || s->buffer ? std::nullopt : storageType(s->type);
    f->resultTypes.push_back(dt ? TensorType::of(*dt, s->dims) : TensorType::scalar(DType::F32));
  }
  Function *fn = module_->addFunction(std::move(f));
  if (isEntry)
    fnNames_.insert("main");
  functions_[&c] = fn;
  pending_.push_back({&c, fn});
  return fn;
}

void Translator::translateFunction(const HloComputation &c, Function &f) {
  region_ = f.body.get();
  std::vector<Value *> params = f.args();
  for (size_t i = 0; i < params.size() && i < f.argNames.size(); ++i)
    names_[params[i]] = f.argNames[i];
  HVal root = translateComputation(c, params);
  if (root.poisoned)
    return;
  loc_ = Location{file_, c.rootInstruction().pos.line, c.rootInstruction().pos.col, 0};
  auto ret = std::make_unique<Operation>(OpKind::Return, loc_);
  ret->operands = root.leaves;
  region_->push(std::move(ret));
}

HVal Translator::inlineComputation(const HloComputation &c, const std::vector<Value *> &params) {
  for (const HloComputation *x : inlining_)
    if (x == &c) {
      malformed("computation '" + c.name + "' is used inside itself");
      HVal p;
      p.poisoned = true;
      return p;
    }
  if (inlining_.size() >= kMaxInlineDepth) {
    unsupported("nesting", "control flow nested more than " + std::to_string(kMaxInlineDepth) +
                               " levels deep");
    HVal p;
    p.poisoned = true;
    return p;
  }
  const HloInstruction *savedCur = cur_;
  Location savedLoc = loc_;
  inlining_.push_back(&c);
  HVal out = translateComputation(c, params);
  inlining_.pop_back();
  cur_ = savedCur;
  loc_ = savedLoc;
  return out;
}

HVal Translator::translateComputation(const HloComputation &c, const std::vector<Value *> &params) {
  visited_.insert(&c);
  HVal poison;
  poison.poisoned = true;
  size_t n = c.instructions.size();
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i)
    index.emplace(c.instructions[i].name, i);
  // Parameter leaves by parameter number.
  std::vector<const HloInstruction *> byNumber;
  for (const HloInstruction &inst : c.instructions)
    if (inst.opcode == "parameter") {
      size_t k = size_t(inst.parameterNumber);
      cur_ = &inst;
      loc_ = Location{file_, inst.pos.line, inst.pos.col, 0};
      if (k >= n) {
        malformed("parameter number " + std::to_string(k) + " is out of range");
        return poison;
      }
      if (byNumber.size() <= k)
        byNumber.resize(k + 1, nullptr);
      if (byNumber[k]) {
        malformed("parameter " + std::to_string(k) + " is declared twice");
        return poison;
      }
      byNumber[k] = &inst;
    }
  std::unordered_map<const HloInstruction *, size_t> offset;
  size_t total = 0;
  for (size_t k = 0; k < byNumber.size(); ++k) {
    if (!byNumber[k]) {
      loc_ = Location{file_, c.pos.line, c.pos.col, 0};
      cur_ = nullptr;
      malformed("computation '" + c.name + "' has no parameter " + std::to_string(k));
      return poison;
    }
    offset[byNumber[k]] = total;
    total += byNumber[k]->shape.leafCount();
  }
  if (total != params.size()) {
    loc_ = Location{file_, c.pos.line, c.pos.col, 0};
    cur_ = nullptr;
    malformed("computation '" + c.name + "' takes " + std::to_string(total) + " values, but " +
              std::to_string(params.size()) + " are passed");
    return poison;
  }
  // Dependency order (iterative depth-first search; a cycle is malformed).
  std::vector<int> state(n, 0); // 0 new, 1 on the stack, 2 done
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t start = 0; start < n; ++start) {
    if (state[start])
      continue;
    std::vector<std::pair<size_t, size_t>> stack = {{start, 0}};
    state[start] = 1;
    while (!stack.empty()) {
      auto &[i, next] = stack.back();
      const HloInstruction &inst = c.instructions[i];
      if (next < inst.operands.size()) {
        const HloOperand &o = inst.operands[next++];
        auto it = index.find(o.name);
        if (it == index.end()) {
          cur_ = &inst;
          loc_ = Location{file_, o.pos.line, o.pos.col, 0};
          malformed("unknown operand '" + o.name + "' in computation '" + c.name + "'");
          return poison;
        }
        if (state[it->second] == 1) {
          cur_ = &inst;
          loc_ = Location{file_, inst.pos.line, inst.pos.col, 0};
          malformed("instruction '" + inst.name + "' depends on itself");
          return poison;
        }
        if (state[it->second] == 0) {
          state[it->second] = 1;
          stack.push_back({it->second, 0});
        }
        continue;
      }
      state[i] = 2;
      order.push_back(i);
      stack.pop_back();
    }
  }
  std::vector<HVal> vals(n);
  for (size_t i : order) {
    const HloInstruction &inst = c.instructions[i];
    cur_ = &inst;
    loc_ = Location{file_, inst.pos.line, inst.pos.col, uint32_t(inst.name.size())};
    HVal &v = vals[i];
    v.shape = &inst.shape;
    if (inst.opcode == "parameter") {
      size_t off = offset[&inst], cnt = inst.shape.leafCount();
      v.leaves.assign(params.begin() + long(off), params.begin() + long(off + cnt));
      std::vector<const HloShape *> leaves;
      inst.shape.leaves(leaves);
      for (size_t k = 0; k < cnt; ++k) {
        auto t = typeOf(*leaves[k]);
        if (!t) {
          v.poisoned = true;
          break;
        }
        if (v.leaves[k]->type != *t) {
          malformed("parameter " + std::to_string(inst.parameterNumber) + " is " + t->str() +
                    ", but " + v.leaves[k]->type.str() + " is passed");
          v.poisoned = true;
          break;
        }
      }
      continue;
    }
    std::vector<const HVal *> ops;
    bool poisoned = false;
    for (const HloOperand &o : inst.operands) {
      const HVal &ov = vals[index[o.name]];
      poisoned |= ov.poisoned;
      ops.push_back(&ov);
    }
    if (poisoned) {
      // Still name what is unsupported here, so one run lists it all.
      scanUnsupported(inst);
      v.poisoned = true;
      continue;
    }
    size_t before = region_->ops.size();
    unsigned errorsBefore = errors_;
    HVal out = inst.opcode == "constant" ? translateConstant(inst) : translateOp(inst, ops);
    out.shape = &inst.shape;
    if (!out.poisoned && out.leaves.size() != inst.shape.leafCount()) {
      if (errors_ == errorsBefore)
        malformed("'" + inst.opcode + "' gives " + std::to_string(out.leaves.size()) +
                  " values, but its shape " + inst.shape.str() + " has " +
                  std::to_string(inst.shape.leafCount()));
      out.poisoned = true;
    }
    for (Value *l : out.leaves)
      if (!l)
        out.poisoned = true;
    if (!out.poisoned) {
      // Whatever the operation, its values must have the declared shape.
      std::vector<const HloShape *> declared;
      inst.shape.leaves(declared);
      for (size_t k = 0; k < declared.size() && !out.poisoned; ++k) {
        auto dt = declared[k]->dynamic || declared[k]->buffer ? std::nullopt
                                                              : storageType(declared[k]->type);
        if (!dt) {
          (void)typeOf(*declared[k]); // reports the type, dynamic or buffer shape
          out.poisoned = true;
          break;
        }
        TensorType want = TensorType::of(*dt, declared[k]->dims);
        if (out.leaves[k]->type != want) {
          malformed("'" + inst.opcode + "' gives " + out.leaves[k]->type.str() + " where its shape " +
                    inst.shape.str() + " says " + want.str());
          out.poisoned = true;
        }
      }
    }
    if (out.poisoned && errors_ == errorsBefore)
      malformed("'" + inst.opcode + "' could not be translated");
    v = std::move(out);
    v.shape = &inst.shape;
    if (v.poisoned)
      continue;
    for (size_t k = 0; k < v.leaves.size(); ++k)
      if (!names_.count(v.leaves[k]))
        names_[v.leaves[k]] = v.leaves.size() == 1 ? inst.name : inst.name + "." + std::to_string(k);
    if (const HloAttr *sh = inst.attr("sharding"))
      if (auto dev = parseMaximalDevice(sh->value)) {
        int d = deviceFor(*dev);
        for (size_t k = before; d >= 0 && k < region_->ops.size(); ++k) {
          Operation &op = *region_->ops[k];
          if (stdlib::opInfo(op.kind).cls == stdlib::OpClass::Structural)
            continue;
          op.device = d;
          op.placement = PlacementKind::Explicit;
        }
      }
  }
  return vals[size_t(c.root)];
}

std::unique_ptr<Module> Translator::run() {
  module_ = std::make_unique<Module>();
  // Like an mdl program that declares no device: an implicit `host = cpu()`.
  const stdlib::DeviceKindInfo *hostKind = stdlib::hostDeviceKind();
  Device host;
  host.name = "host";
  host.kind = hostKind ? hostKind->name : "";
  host.implicit = true;
  for (const stdlib::ParamSpec &p : hostKind ? hostKind->args : std::vector<stdlib::ParamSpec>{})
    if (p.dflt)
      host.args.push_back({p.name, *p.dflt});
  module_->devices.push_back(host);
  std::set<std::string> seen;
  for (const HloComputation &c : m_.computations) {
    if (!comps_.emplace(c.name, &c).second) {
      loc_ = Location{file_, c.pos.line, c.pos.col, 0};
      malformed("a second computation named '" + c.name + "'");
    }
  }
  std::set<std::string> referenced;
  for (const HloComputation &c : m_.computations)
    for (const HloInstruction &inst : c.instructions)
      for (const HloAttr &a : inst.attrs) {
        for (const char *k : kComputationAttrs)
          if (a.name == k)
            referenced.insert(parseName(a.value));
        if (a.name == "branch_computations")
          if (auto l = parseNameList(a.value))
            referenced.insert(l->begin(), l->end());
      }
  functionFor(m_.computations[size_t(m_.entry)]);
  for (const HloComputation &c : m_.computations)
    if (!referenced.count(c.name))
      functionFor(c);
  while (!pending_.empty()) {
    auto [c, f] = pending_.front();
    pending_.erase(pending_.begin());
    inlining_ = {c};
    translateFunction(*c, *f);
  }
  // Computations only used by operations that could not be translated:
  // list what they hold that mdl does not support, too.
  for (const HloComputation &c : m_.computations)
    if (!visited_.count(&c))
      for (const HloInstruction &inst : c.instructions) {
        cur_ = &inst;
        loc_ = Location{file_, inst.pos.line, inst.pos.col, uint32_t(inst.name.size())};
        scanUnsupported(inst);
      }
  if (errors_)
    return nullptr;
  module_->reindex();
  return std::move(module_);
}

} // namespace mdl::frontend::hlo
