// Construction, lookup and cloning of IR objects.
#include "ir/IR.h"

#include <cassert>
#include <cstring>

namespace mdl::ir {

Value *Region::addArg(TensorType t) {
  args.push_back(std::make_unique<Value>(std::move(t)));
  Value *v = args.back().get();
  v->region = this;
  v->index = static_cast<unsigned>(args.size() - 1);
  return v;
}

Operation *Region::push(std::unique_ptr<Operation> op) {
  op->parent = this;
  ops.push_back(std::move(op));
  return ops.back().get();
}

Value *Operation::addResult(TensorType t) {
  results.push_back(std::make_unique<Value>(std::move(t)));
  Value *v = results.back().get();
  v->def = this;
  v->index = static_cast<unsigned>(results.size() - 1);
  return v;
}

Region *Operation::addRegion() {
  regions.push_back(std::make_unique<Region>());
  regions.back()->parent = this;
  return regions.back().get();
}

const Attribute *Operation::attr(const std::string &name) const {
  for (const NamedAttr &a : attrs)
    if (a.name == name)
      return &a.value;
  return nullptr;
}

void Operation::setAttr(const std::string &name, Attribute value) {
  for (NamedAttr &a : attrs)
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  attrs.push_back({name, std::move(value)});
}

int64_t Operation::intAttr(const std::string &name, int64_t dflt) const {
  const Attribute *a = attr(name);
  return a && a->kind() == Attribute::Kind::Int ? a->asInt() : dflt;
}

double Operation::floatAttr(const std::string &name, double dflt) const {
  const Attribute *a = attr(name);
  if (!a)
    return dflt;
  if (a->kind() == Attribute::Kind::Int || a->kind() == Attribute::Kind::Float ||
      a->kind() == Attribute::Kind::Bool)
    return a->asNumber();
  return dflt;
}

bool Operation::boolAttr(const std::string &name, bool dflt) const {
  const Attribute *a = attr(name);
  return a && a->kind() == Attribute::Kind::Bool ? a->asBool() : dflt;
}

const std::vector<int64_t> &Operation::intListAttr(const std::string &name) const {
  static const std::vector<int64_t> empty;
  const Attribute *a = attr(name);
  return a && a->kind() == Attribute::Kind::IntList ? a->asIntList() : empty;
}

std::string Operation::stringAttr(const std::string &name) const {
  const Attribute *a = attr(name);
  if (!a)
    return {};
  if (a->kind() == Attribute::Kind::String)
    return a->asString();
  if (a->kind() == Attribute::Kind::Symbol)
    return a->asSymbol();
  return {};
}

int64_t Device::intArg(const std::string &n, int64_t dflt) const {
  for (const NamedAttr &a : args)
    if (a.name == n && a.value.kind() == Attribute::Kind::Int)
      return a.value.asInt();
  return dflt;
}

std::string Device::stringArg(const std::string &n,
                              const std::string &dflt) const {
  for (const NamedAttr &a : args)
    if (a.name == n && a.value.kind() == Attribute::Kind::String)
      return a.value.asString();
  return dflt;
}

std::vector<Value *> Function::args() const {
  std::vector<Value *> out;
  for (auto &a : body->args)
    out.push_back(a.get());
  return out;
}

std::unique_ptr<Function> Function::cloneHeader() const {
  auto f = std::make_unique<Function>();
  f->name = name;
  f->symbols = symbols;
  f->resultTypes = resultTypes;
  f->resultDevices = resultDevices;
  f->argNames = argNames;
  f->loc = loc;
  f->attrs = attrs;
  return f;
}

int Module::findDevice(const std::string &name) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int Module::findGlobal(const std::string &name) const {
  for (size_t i = 0; i < globals.size(); ++i)
    if (globals[i].name == name)
      return static_cast<int>(i);
  return -1;
}

Function *Module::findFunction(const std::string &name) const {
  auto it = fnIndex_.find(name);
  return it == fnIndex_.end() ? nullptr : it->second;
}

Function *Module::addFunction(std::unique_ptr<Function> f) {
  functions.push_back(std::move(f));
  Function *fn = functions.back().get();
  fnIndex_[fn->name] = fn;
  return fn;
}

void Module::reindex() {
  fnIndex_.clear();
  for (auto &f : functions)
    fnIndex_[f->name] = f.get();
}

std::unique_ptr<Operation> cloneOp(const Operation &op, ValueMap &map) {
  auto copy = std::make_unique<Operation>(op.kind, op.loc);
  copy->attrs = op.attrs;
  copy->device = op.device;
  copy->placement = op.placement;
  for (Value *v : op.operands) {
    auto it = map.find(v);
    copy->operands.push_back(it == map.end() ? v : it->second);
  }
  for (auto &r : op.regions)
    cloneRegionInto(*r, *copy->addRegion(), map);
  for (auto &res : op.results) {
    Value *nv = copy->addResult(res->type);
    nv->device = res->device;
    nv->secret = res->secret;
    map[res.get()] = nv;
  }
  return copy;
}

Global cloneGlobal(const Global &g) {
  Global c;
  c.name = g.name;
  c.isParam = g.isParam;
  c.type = g.type;
  c.pinnedDevice = g.pinnedDevice;
  c.loc = g.loc;
  c.init = std::make_unique<Region>();
  ValueMap map;
  cloneRegionInto(*g.init, *c.init, map);
  return c;
}

void remapOperands(Operation &op, const ValueMap &map) {
  if (map.empty())
    return;
  for (Value *&v : op.operands)
    if (auto it = map.find(v); it != map.end())
      v = it->second;
  for (auto &r : op.regions)
    for (auto &inner : r->ops)
      remapOperands(*inner, map);
}

void cloneRegionInto(const Region &src, Region &dst, ValueMap &map) {
  assert(dst.args.empty() && dst.ops.empty() && "clone into a fresh region");
  for (auto &a : src.args) {
    Value *na = dst.addArg(a->type);
    na->device = a->device;
    na->secret = a->secret;
    map[a.get()] = na;
  }
  for (auto &op : src.ops)
    dst.push(cloneOp(*op, map));
}

} // namespace mdl::ir
