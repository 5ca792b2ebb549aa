// The reference interpreter.
#include "backend/interp/Interpreter.h"
#include "backend/cpu/Kernels.h"
#include "backend/runtime/Weights.h"

#include <cstring>
#include <ostream>

namespace mdl::backend {

using namespace ir;

Interpreter::Interpreter(const Module &m, DiagnosticEngine &diags, std::ostream &out)
    : m_(m), diags_(diags), out_(out) {}

bool Interpreter::fail(const std::string &code, const Location &loc, const std::string &msg) {
  diags_.error(code, loc, msg);
  return false;
}

bool Interpreter::loadGlobals() {
  if (globalsLoaded_)
    return true;
  globals_.assign(m_.globals.size(), Tensor());
  for (size_t i = 0; i < m_.globals.size(); ++i) {
    const Global &g = m_.globals[i];
    Frame frame;
    std::vector<Tensor> vals;
    if (!runRegion(*g.init, frame, vals))
      return false;
    globals_[i] = vals.at(0);
  }
  globalsLoaded_ = true;
  return true;
}

bool Interpreter::bindRegion(const Region &r, const std::vector<Tensor> &args, Frame &frame) {
  for (size_t i = 0; i < r.args.size() && i < args.size(); ++i)
    frame[r.args[i].get()] = args[i];
  return true;
}

bool Interpreter::runRegion(const Region &r, Frame &frame, std::vector<Tensor> &terminatorValues) {
  for (auto &op : r.ops) {
    if (op->kind == OpKind::Yield || op->kind == OpKind::Return) {
      terminatorValues.clear();
      for (Value *v : op->operands)
        terminatorValues.push_back(frame.at(v));
      return true;
    }
    if (!runOp(*op, frame))
      return false;
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
  std::vector<Tensor> results;
  if (!callFunction(*f, args, results))
    return std::nullopt;
  return results;
}

namespace {
int64_t scalarInt(const Tensor &t) { return t.getInt(0); }
} // namespace

bool Interpreter::runOp(const Operation &op, Frame &frame) {
  std::vector<Tensor> in;
  in.reserve(op.operands.size());
  for (Value *v : op.operands)
    in.push_back(frame.at(v));
  auto setResults = [&](const std::vector<Tensor> &vals) {
    for (size_t i = 0; i < op.results.size() && i < vals.size(); ++i)
      frame[op.results[i].get()] = vals[i];
  };
  if (op.device >= 0 && m_.devices[op.device].kind == DeviceKind::Mpc)
    return fail("E0406", op.loc,
                "'" + m_.devices[op.device].name +
                    "' is an mpc device, and this build has no MPC runtime yet: "
                    "secret-shared execution is not available (nothing was run in plaintext)");
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
    setResults({globals_.at(size_t(g))});
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
    const Region &r = *op.regions[in[0].getInt(0) ? 0 : 1];
    std::vector<Tensor> vals;
    if (!runRegion(r, frame, vals))
      return false;
    setResults(vals);
    return true;
  }
  case OpKind::For: {
    int64_t lo = scalarInt(in[0]), hi = scalarInt(in[1]);
    std::vector<Tensor> carried(in.begin() + 2, in.end());
    const Region &body = *op.regions[0];
    for (int64_t i = lo; i < hi; ++i) {
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
      bindRegion(cond, carried, frame);
      std::vector<Tensor> c;
      if (!runRegion(cond, frame, c))
        return false;
      if (!c.at(0).getInt(0))
        break;
      bindRegion(body, carried, frame);
      if (!runRegion(body, frame, carried))
        return false;
    }
    setResults(carried);
    return true;
  }
  case OpKind::Print: {
    for (size_t i = 0; i < in.size(); ++i)
      out_ << (i ? " " : "") << formatTensor(in[i]);
    out_ << "\n";
    out_.flush();
    return true;
  }
  case OpKind::Segment: {
    std::vector<Tensor> vals;
    const Region &r = *op.regions[0];
    bindRegion(r, in, frame);
    if (!runRegion(r, frame, vals))
      return false;
    setResults(vals);
    return true;
  }
  default:
    break;
  }
  if (!cpu::hasKernel(op.kind))
    return fail("E0303", op.loc, std::string("operation '") + opName(op.kind) +
                                     "' has no CPU implementation");
  std::vector<Tensor> outs;
  for (auto &r : op.results) {
    if (!r->type.isStatic())
      return fail("E0402", op.loc, "shape " + r->type.str() +
                                       " is not known at run time (the entry's symbolic "
                                       "dimensions must be bound by --input)");
    Tensor t = Tensor::empty(r->type);
    if (!t.valid())
      return fail("E0404", op.loc, "out of memory: cannot allocate " + r->type.str() + " (" +
                                       std::to_string(r->type.byteSize()) + " bytes)");
    outs.push_back(std::move(t));
  }
  if (auto err = cpu::runKernel(op, in, outs))
    return fail("E0405", op.loc, *err);
  setResults(outs);
  return true;
}

} // namespace mdl::backend
