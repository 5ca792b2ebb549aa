// The reference interpreter.
#include "backend/interp/Interpreter.h"
#include "backend/cpu/Kernels.h"
#include "backend/runtime/Interrupt.h"
#include "backend/runtime/Weights.h"
#include "ir/passes/Fuse.h"
#include "stdlib/Registry.h"

#include <cstring>
#include <functional>
#include <ostream>

namespace mdl::backend {

using namespace ir;

Interpreter::Interpreter(const Module &m, DiagnosticEngine &diags, std::ostream &out,
                         DeviceSet *devices)
    : m_(m), diags_(diags), out_(out), devices_(devices) {}

Interpreter::~Interpreter() = default;

bool Interpreter::fail(const std::string &code, const Location &loc, const std::string &msg) {
  diags_.error(code, loc, msg);
  return false;
}

bool Interpreter::loadGlobals() {
  if (globalsLoaded_)
    return true;
  globals_.assign(m_.globals.size(), Tensor());
  // Items may come in any order: a global is computed after the globals
  // its initializer reads (Sema refuses cycles, E0208).
  std::vector<int> state(m_.globals.size(), 0); // 1: being computed, 2: done
  std::function<bool(size_t)> compute = [&](size_t i) {
    if (state[i] != 0)
      return true;
    state[i] = 1;
    const Global &g = m_.globals[i];
    bool ok = true;
    walk(*g.init, [&](const Operation &op) {
      int d = op.kind == OpKind::Global ? m_.findGlobal(op.stringAttr("name")) : -1;
      if (ok && d >= 0)
        ok = compute(size_t(d));
    });
    Frame frame;
    std::vector<Tensor> vals;
    if (!ok || !runRegion(*g.init, frame, vals))
      return false;
    globals_[i] = vals.at(0);
    state[i] = 2;
    return true;
  };
  for (size_t i = 0; i < m_.globals.size(); ++i)
    if (!compute(i))
      return false;
  globalsLoaded_ = true;
  return true;
}

void Interpreter::bindRegion(const Region &r, const std::vector<Tensor> &args, Frame &frame) {
  for (size_t i = 0; i < r.args.size() && i < args.size(); ++i)
    frame[r.args[i].get()] = args[i];
}

namespace {
// For each operation of `r`, the values defined by operations of `r` that
// nothing reads after it (uses inside nested regions count as uses by the
// operation that holds them).
std::vector<std::vector<const Value *>> deadAfterOps(const Region &r) {
  std::unordered_map<const Value *, size_t> last;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    std::vector<const Operation *> stack = {r.ops[i].get()};
    while (!stack.empty()) {
      const Operation *op = stack.back();
      stack.pop_back();
      for (Value *v : op->operands)
        last[v] = i;
      for (auto &sub : op->regions)
        for (auto &inner : sub->ops)
          stack.push_back(inner.get());
    }
  }
  std::vector<std::vector<const Value *>> dead(r.ops.size());
  for (auto &[v, i] : last)
    if (v->def && v->def->parent == &r)
      dead[i].push_back(v);
  return dead;
}
} // namespace

bool Interpreter::runRegion(const Region &r, Frame &frame, std::vector<Tensor> &terminatorValues) {
  auto cached = deadAfter_.find(&r);
  if (cached == deadAfter_.end())
    cached = deadAfter_.emplace(&r, deadAfterOps(r)).first;
  const std::vector<std::vector<const Value *>> &dead = cached->second;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const Operation &op = *r.ops[i];
    if (op.kind == OpKind::Yield || op.kind == OpKind::Return) {
      terminatorValues.clear();
      for (Value *v : op.operands)
        terminatorValues.push_back(frame.at(v));
      return true;
    }
    if (!runOp(op, frame))
      return false;
    // Release tensors at their last use, so memory holds only live values.
    for (const Value *v : dead[i])
      frame.erase(v);
  }
  return true;
}

bool Interpreter::callFunction(const Function &f, const std::vector<Tensor> &args,
                               std::vector<Tensor> &results) {
  if (++depth_ > 100000) {
    --depth_;
    return fail("E0404", f.loc, "call depth exceeds 100000");
  }
  Frame frame;
  bindRegion(*f.body, args, frame);
  bool ok = runRegion(*f.body, frame, results);
  --depth_;
  return ok;
}

std::optional<std::vector<Tensor>> Interpreter::call(const std::string &name,
                                                     const std::vector<Tensor> &args) {
  if (!loadGlobals())
    return std::nullopt;
  const Function *f = m_.findFunction(name);
  if (!f) {
    fail("E0101", {}, "no function '" + name + "'");
    return std::nullopt;
  }
  // Arguments arrive in host memory; move them to their devices.
  std::vector<Tensor> in;
  for (size_t i = 0; i < args.size(); ++i) {
    int d = i < f->body->args.size() ? f->body->args[i]->device : -1;
    Tensor t;
    if (!move(f->loc, args[i], -1, d, t))
      return std::nullopt;
    in.push_back(t);
  }
  std::vector<Tensor> results;
  if (!callFunction(*f, in, results))
    return std::nullopt;
  // Results are delivered to the caller on the host.
  for (size_t i = 0; i < results.size(); ++i) {
    int d = i < f->resultDevices.size() ? f->resultDevices[i] : -1;
    if (!toHost(results[i], d, results[i], f->loc))
      return std::nullopt;
  }
  return results;
}

bool Interpreter::allocate(int d, const TensorType &t, Tensor &out, const Location &loc) {
  if (!t.isStatic())
    return fail("E0402", loc, "shape " + t.str() + " is not known at run time (the entry's "
                                                   "symbolic dimensions must be bound by --input)");
  if (!devices_ || d < 0) {
    out = Tensor::empty(t);
    if (!out.valid())
      return fail("E0404", loc, "out of memory: cannot allocate " + t.str() + " (" +
                                    std::to_string(t.byteSize()) + " bytes)");
    return true;
  }
  DeviceRuntime &rt = devices_->runtime(d);
  size_t bytes = size_t(t.byteSize());
  void *p = rt.iface->alloc(rt.dev, bytes);
  if (!p)
    return fail("E0404", loc, "device '" + m_.devices[size_t(d)].name + "' is out of memory: " +
                                  "cannot allocate " + t.str() + " (" + std::to_string(bytes) +
                                  " bytes)");
  const mdl_device_interface *iface = rt.iface;
  mdl_device *dev = rt.dev;
  std::shared_ptr<void> owner(p, [iface, dev](void *q) { iface->release_memory(dev, q); });
  out = Tensor(t, std::make_shared<Buffer>(p, bytes, owner));
  return true;
}

bool Interpreter::toHost(const Tensor &t, int d, Tensor &out, const Location &loc) {
  if (!devices_ || d < 0 || devices_->runtime(d).iface->host_memory) {
    out = t;
    return true;
  }
  DeviceRuntime &rt = devices_->runtime(d);
  Tensor h = Tensor::empty(t.type());
  if (!h.valid())
    return fail("E0404", loc, "out of host memory reading " + t.type().str());
  BufferList src;
  src.add(t.raw(), t.type());
  if (rt.iface->copy_out(rt.dev, h.raw(), &src.buffers[0]) != 0)
    return fail("E0403", loc, "reading from '" + m_.devices[size_t(d)].name +
                                  "' failed: " + rt.iface->last_error(rt.dev));
  out = h;
  return true;
}

bool Interpreter::move(const Location &loc, const Tensor &src, int from, int to, Tensor &out) {
  if (!devices_ || to < 0 || from == to) {
    out = src;
    return true;
  }
  DeviceRuntime &dst = devices_->runtime(to);
  bool srcHost = from < 0 || devices_->runtime(from).iface->host_memory;
  if (srcHost && dst.iface->host_memory) {
    out = src; // values are immutable: host-memory devices share buffers
    return true;
  }
  if (!srcHost && devices_->runtime(from).iface == dst.iface && dst.iface->copy_peer) {
    // Two devices of one runtime (two GPUs): a peer copy, not through the host.
    if (!allocate(to, src.type(), out, loc))
      return false;
    BufferList a, b;
    a.add(out.raw(), out.type());
    b.add(src.raw(), src.type());
    DeviceRuntime &s = devices_->runtime(from);
    if (dst.iface->copy_peer(dst.dev, &a.buffers[0], s.dev, &b.buffers[0]) != 0)
      return fail("E0403", loc, "copying from '" + m_.devices[size_t(from)].name + "' to '" +
                                    m_.devices[size_t(to)].name +
                                    "' failed: " + dst.iface->last_error(dst.dev));
    return true;
  }
  Tensor host;
  if (!toHost(src, from, host, loc) || !allocate(to, src.type(), out, loc))
    return false;
  BufferList to_;
  to_.add(out.raw(), out.type());
  // An absent value is one another party of a multi-process device gives
  // (the driver has checked that only such a device reads it).
  if (dst.iface->copy_in(dst.dev, &to_.buffers[0], host.valid() ? host.raw() : nullptr) != 0)
    return fail("E0403", loc, "copying to '" + m_.devices[size_t(to)].name +
                                     "' failed: " + dst.iface->last_error(dst.dev));
  return true;
}

bool Interpreter::globalOn(int g, int d, Tensor &out, const Location &loc) {
  auto key = std::make_pair(g, d);
  auto it = globalOnDevice_.find(key);
  if (it != globalOnDevice_.end()) {
    out = it->second;
    return true;
  }
  if (!move(loc, globals_.at(size_t(g)), -1, d, out))
    return false;
  globalOnDevice_[key] = out;
  return true;
}

bool Interpreter::runSegment(const Operation &op, const std::vector<Tensor> &in,
                             std::vector<Tensor> &out) {
  if (!devices_) {
    Frame frame;
    bindRegion(*op.regions[0], in, frame);
    return runRegion(*op.regions[0], frame, out);
  }
  DeviceRuntime &rt = devices_->runtime(op.device);
  LoadedSegment &seg = prepared_[&op];
  std::string error;
  // The device's compile-time half makes the artifact its runtime runs.
  if (!seg.loaded() && !seg.load(rt, op, error))
    return fail("E0403", op.loc, "device '" + m_.devices[size_t(op.device)].name +
                                     "' cannot run this segment: " + error);
  const Operation *y = stdlib::terminatorOf(*op.regions[0]);
  out.clear();
  BufferList inputs, outputs;
  for (const Tensor &t : in)
    inputs.add(t.raw(), t.type());
  for (Value *v : y->operands) {
    Tensor t;
    if (!allocate(op.device, v->type, t, op.loc))
      return false;
    outputs.add(t.raw(), t.type());
    out.push_back(t);
  }
  return seg.run(inputs, outputs, op.loc, diags_);
}

bool Interpreter::runOp(const Operation &op, Frame &frame) {
  std::vector<Tensor> in;
  in.reserve(op.operands.size());
  for (Value *v : op.operands)
    in.push_back(frame.at(v));
  auto setResults = [&](const std::vector<Tensor> &vals) {
    for (size_t i = 0; i < op.results.size() && i < vals.size(); ++i)
      frame[op.results[i].get()] = vals[i];
  };
  // Reads a host scalar (a condition or a bound) from wherever it lives.
  auto hostScalar = [&](size_t i, int64_t &v) {
    Tensor h;
    if (!toHost(in[i], op.operands[i]->device, h, op.loc))
      return false;
    v = h.getInt(0);
    return true;
  };
  switch (op.kind) {
  case OpKind::Constant: {
    const DenseData &d = op.attr("value")->asDense();
    Tensor t = Tensor::empty(d.type);
    if (!t.valid())
      return fail("E0404", op.loc, "out of memory allocating a constant");
    std::memcpy(t.raw(), d.bytes.data(), d.bytes.size());
    setResults({t});
    return true;
  }
  case OpKind::Global: {
    int g = m_.findGlobal(op.stringAttr("name"));
    Tensor t;
    if (op.device >= 0 && devices_) {
      if (!globalOn(g, op.device, t, op.loc))
        return false;
    } else {
      t = globals_.at(size_t(g));
    }
    setResults({t});
    return true;
  }
  case OpKind::Load: {
    auto t = loadWeight(op.stringAttr("file"), op.stringAttr("key"), &op.results[0]->type);
    if (!t)
      return fail("E0401", op.loc, llvm::toString(t.takeError()));
    setResults({*t});
    return true;
  }
  case OpKind::Call: {
    const Function *f = m_.findFunction(op.stringAttr("callee"));
    std::vector<Tensor> results;
    if (!callFunction(*f, in, results))
      return false;
    setResults(results);
    return true;
  }
  case OpKind::If: {
    int64_t c;
    if (!hostScalar(0, c))
      return false;
    std::vector<Tensor> vals;
    if (!runRegion(*op.regions[c ? 0 : 1], frame, vals))
      return false;
    setResults(vals);
    return true;
  }
  case OpKind::For: {
    int64_t lo, hi;
    if (!hostScalar(0, lo) || !hostScalar(1, hi))
      return false;
    std::vector<Tensor> carried(in.begin() + 2, in.end());
    const Region &body = *op.regions[0];
    for (int64_t i = lo; i < hi; ++i) {
      if (interruptRequested()) {
        reportInterrupted(diags_, op.loc);
        return false;
      }
      Tensor iv = Tensor::empty(TensorType::scalar(DType::I64));
      *iv.data<int64_t>() = i;
      std::vector<Tensor> args = {iv};
      args.insert(args.end(), carried.begin(), carried.end());
      bindRegion(body, args, frame);
      if (!runRegion(body, frame, carried))
        return false;
    }
    setResults(carried);
    return true;
  }
  case OpKind::While: {
    std::vector<Tensor> carried = in;
    const Region &cond = *op.regions[0], &body = *op.regions[1];
    while (true) {
      if (interruptRequested()) {
        reportInterrupted(diags_, op.loc);
        return false;
      }
      bindRegion(cond, carried, frame);
      std::vector<Tensor> c;
      if (!runRegion(cond, frame, c))
        return false;
      Tensor h;
      if (!toHost(c.at(0), stdlib::terminatorOf(cond)->operands[0]->device, h, op.loc))
        return false;
      if (!h.getInt(0))
        break;
      bindRegion(body, carried, frame);
      if (!runRegion(body, frame, carried))
        return false;
    }
    setResults(carried);
    return true;
  }
  case OpKind::Print: {
    for (size_t i = 0; i < in.size(); ++i) {
      Tensor h;
      if (!toHost(in[i], op.operands[i]->device, h, op.loc))
        return false;
      out_ << (i ? " " : "") << formatTensor(h);
    }
    out_ << "\n";
    out_.flush();
    return true;
  }
  case OpKind::Segment: {
    std::vector<Tensor> vals;
    if (!runSegment(op, in, vals))
      return false;
    setResults(vals);
    return true;
  }
  case OpKind::Transfer:
  case OpKind::To:
  case OpKind::Reveal:
    if (devices_) {
      Tensor t;
      if (!move(op.loc, in[0], op.operands[0]->device, op.device, t))
        return false;
      setResults({t});
      return true;
    }
    break;
  default:
    break;
  }
  if (!stdlib::hasKernel(op.kind))
    return fail("E0303", op.loc, std::string("operation '") + opName(op.kind) +
                                     "' has no CPU implementation");
  std::vector<Tensor> outs;
  for (auto &r : op.results) {
    Tensor t;
    if (!allocate(-1, r->type, t, op.loc))
      return false;
    outs.push_back(std::move(t));
  }
  cpu::FunctionCaller caller = [this](const std::string &fn, const std::vector<Tensor> &args,
                                      std::vector<Tensor> &results) -> std::optional<std::string> {
    const Function *f = m_.findFunction(fn);
    if (!f)
      return "no function @" + fn;
    if (!callFunction(*f, args, results))
      return std::string("call of @") + fn + " failed";
    return std::nullopt;
  };
  if (auto err = cpu::runKernel(op, in, outs, &caller))
    return fail("E0405", op.loc, *err);
  setResults(outs);
  return true;
}

// On a module holding only the globals (and the functions they apply).
bool materializeGlobals(const Module &m, DiagnosticEngine &diags, std::ostream &out,
                        std::vector<Tensor> &values) {
  values.assign(m.globals.size(), Tensor());
  if (m.globals.empty())
    return true;
  Module tmp;
  tmp.devices = m.devices;
  for (const Global &g : m.globals)
    tmp.globals.push_back(cloneGlobal(g));
  // Initializers may apply functions (an HLO reduce's reducer): they come
  // along, with their fusions spliced back for the interpreter.
  bool appliesFunctions = false;
  for (const Global &g : m.globals)
    walk(*g.init, [&](const Operation &op) {
      for (const std::string &a : stdlib::functionAttrs(op.kind))
        appliesFunctions |= op.attr(a) != nullptr;
    });
  for (size_t i = 0; appliesFunctions && i < m.functions.size(); ++i) {
    const Function &src = *m.functions[i];
    std::unique_ptr<Function> f = src.cloneHeader();
    ValueMap map;
    cloneRegionInto(*src.body, *f->body, map);
    passes::unfuse(*f->body);
    tmp.addFunction(std::move(f));
  }
  for (size_t i = 0; i < m.globals.size(); ++i) {
    auto f = std::make_unique<Function>();
    f->name = "global." + std::to_string(i);
    auto read = std::make_unique<Operation>(OpKind::Global, m.globals[i].loc);
    read->setAttr("name", Attribute::symbol(m.globals[i].name));
    Value *v = read->addResult(m.globals[i].type);
    f->body->push(std::move(read));
    auto ret = std::make_unique<Operation>(OpKind::Return, m.globals[i].loc);
    ret->operands = {v};
    f->body->push(std::move(ret));
    f->resultTypes = {m.globals[i].type};
    tmp.addFunction(std::move(f));
  }
  Interpreter interp(tmp, diags, out, nullptr);
  for (size_t i = 0; i < m.globals.size(); ++i) {
    auto r = interp.call("global." + std::to_string(i), {});
    if (!r)
      return false;
    values[i] = (*r)[0];
  }
  return true;
}


} // namespace mdl::backend
