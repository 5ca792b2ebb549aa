// Running a protocol program on one party's engine (Program.h).
//
// 1. Verify the program and the number of input values.
// 2. Secret-share the inputs in order (each a round from its owner).
// 3. Run the instructions in order; after each, check the result's shape
//    against the declared one and drop slots that are no longer needed.
// 4. Reveal all revealed outputs in one round; hand the others back shared.
#include "backend/mpc/Program.h"

#include <new>
#include <optional>

namespace mdl::backend::mpc {

namespace {

using K = ProgramOpKind;

// The message of `err` without a leading "party I: " (the caller's own
// prefix names the party once).
std::string messageOf(llvm::Error err, int party) {
  std::string msg = llvm::toString(std::move(err));
  std::string prefix = "party " + std::to_string(party) + ": ";
  return msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg;
}

int64_t intAttr(const Instruction &ins, const char *name, int64_t otherwise) {
  const ProgramAttr *a = ins.attr(name);
  return a && !a->ints.empty() ? a->ints[0] : otherwise;
}

const std::vector<int64_t> &intsAttr(const Instruction &ins, const char *name) {
  static const std::vector<int64_t> none;
  const ProgramAttr *a = ins.attr(name);
  return a ? a->ints : none;
}

llvm::Expected<double> floatAttr(const Instruction &ins, const char *name) {
  const ProgramAttr *a = ins.attr(name);
  if (!a || a->floats.size() != 1)
    return mpcError(std::string("attribute '") + name + "' must hold one real");
  return a->floats[0];
}

llvm::Expected<PlainTensor> tensorAttr(const Instruction &ins) {
  const ProgramAttr *v = ins.attr("value");
  PlainTensor t{intsAttr(ins, "value_shape"),
                v ? v->floats : std::vector<double>()};
  if (numElements(t.shape) != int64_t(t.values.size()))
    return mpcError("value of shape " + shapeToString(t.shape) + " has " +
                std::to_string(t.values.size()) + " numbers");
  return t;
}

llvm::Expected<SharedTensor>
step(Rep3Engine &e, const Instruction &ins,
     const std::vector<std::optional<SharedTensor>> &slots) {
  auto op = [&](size_t k) -> const SharedTensor & {
    return *slots[ins.operands[k]];
  };
  auto optionalOp = [&](size_t k) -> const SharedTensor * {
    return k < ins.operands.size() && ins.operands[k] >= 0
               ? &*slots[ins.operands[k]]
               : nullptr;
  };
  bool keep = intAttr(ins, "keepdims", 0) != 0;
  int64_t axis = intAttr(ins, "axis", -1);
  switch (ins.op) {
  case K::Constant: {
    auto t = tensorAttr(ins);
    if (!t)
      return t.takeError();
    return e.constant(*t, intAttr(ins, "integer", 0) ? EncodingKind::Integer
                                                     : EncodingKind::Fixed);
  }
  case K::Add:
    return e.add(op(0), op(1));
  case K::Sub:
    return e.sub(op(0), op(1));
  case K::Neg:
    return e.neg(op(0));
  case K::AddPublic:
  case K::MulPublic: {
    auto t = tensorAttr(ins);
    if (!t)
      return t.takeError();
    return ins.op == K::AddPublic ? e.addPublic(op(0), *t)
                                  : e.mulPublic(op(0), *t);
  }
  case K::Mul:
    return e.mul(op(0), op(1));
  case K::MatMul:
    return e.matmul(op(0), op(1));
  case K::Truncate:
    return e.truncate(op(0), int(intAttr(ins, "bits", 0)));
  case K::Lt:
    return e.compare(CompareKind::Lt, op(0), op(1));
  case K::Le:
    return e.compare(CompareKind::Le, op(0), op(1));
  case K::Gt:
    return e.compare(CompareKind::Gt, op(0), op(1));
  case K::Ge:
    return e.compare(CompareKind::Ge, op(0), op(1));
  case K::Eq:
    return e.compare(CompareKind::Eq, op(0), op(1));
  case K::Ne:
    return e.compare(CompareKind::Ne, op(0), op(1));
  case K::Select:
    return e.select(op(0), op(1), op(2));
  case K::Relu:
    return e.relu(op(0));
  case K::Abs:
    return e.abs(op(0));
  case K::Max:
    return e.max(op(0), op(1));
  case K::Min:
    return e.min(op(0), op(1));
  case K::Clip: {
    auto lo = floatAttr(ins, "lo");
    if (!lo)
      return lo.takeError();
    auto hi = floatAttr(ins, "hi");
    if (!hi)
      return hi.takeError();
    return e.clip(op(0), *lo, *hi);
  }
  case K::ReduceMax:
    return e.reduceMax(op(0), axis, keep);
  case K::ReduceMin:
    return e.reduceMin(op(0), axis, keep);
  case K::ArgMax:
    return e.argmax(op(0), axis, keep);
  case K::ArgMin:
    return e.argmin(op(0), axis, keep);
  case K::Exp:
    return e.exp(op(0));
  case K::Reciprocal:
    return e.reciprocal(op(0));
  case K::Div:
    return e.div(op(0), op(1));
  case K::Rsqrt:
    return e.rsqrt(op(0));
  case K::Sqrt:
    return e.sqrt(op(0));
  case K::Sigmoid:
    return e.sigmoid(op(0));
  case K::Tanh:
    return e.tanh(op(0));
  case K::Gelu:
    return e.gelu(op(0), intAttr(ins, "approximate", 0) != 0);
  case K::Softmax:
    return e.softmax(op(0), axis);
  case K::LayerNorm: {
    auto eps = floatAttr(ins, "eps");
    if (!eps)
      return eps.takeError();
    return e.layerNorm(op(0), optionalOp(1), optionalOp(2), *eps, axis);
  }
  case K::Sum:
    return e.sum(op(0), intsAttr(ins, "axes"), keep);
  case K::Mean:
    return e.mean(op(0), intsAttr(ins, "axes"), keep);
  case K::Reshape:
    return e.reshape(op(0), ins.shape);
  case K::Transpose:
    return e.transpose(op(0), intsAttr(ins, "perm"));
  case K::Slice:
    return e.slice(op(0), intsAttr(ins, "starts"), intsAttr(ins, "stops"),
                   intsAttr(ins, "steps"));
  case K::Concat: {
    std::vector<const SharedTensor *> parts;
    for (size_t k = 0; k < ins.operands.size(); ++k)
      parts.push_back(&op(k));
    return e.concat(parts, axis);
  }
  case K::Gather:
    return e.gather(op(0), intsAttr(ins, "indices"),
                    intsAttr(ins, "index_shape"), axis);
  case K::Broadcast:
    return e.broadcastTo(op(0), ins.shape);
  }
  return mpcError("unknown operation");
}

} // namespace

namespace {
llvm::Expected<std::vector<ProgramValue>>
runVerified(Rep3Engine &engine, const Program &program,
            const std::vector<const PlainTensor *> &inputValues,
            std::vector<SharedTensor> *sharedInputs);
} // namespace

llvm::Expected<std::vector<ProgramValue>>
runProgram(Rep3Engine &engine, const Program &program,
           const std::vector<const PlainTensor *> &inputValues) {
  // Tensors too large for memory make std::vector throw; that is an error
  // of this run, not a reason to abort the process.
  try {
    return runVerified(engine, program, inputValues, nullptr);
  } catch (const std::bad_alloc &) {
    return mpcError("out of memory running the protocol program");
  }
}

llvm::Expected<std::vector<ProgramValue>>
runProgramShared(Rep3Engine &engine, const Program &program,
                 std::vector<SharedTensor> inputs) {
  try {
    return runVerified(engine, program, {}, &inputs);
  } catch (const std::bad_alloc &) {
    return mpcError("out of memory running the protocol program");
  }
}

namespace {
llvm::Expected<std::vector<ProgramValue>>
runVerified(Rep3Engine &engine, const Program &program,
            const std::vector<const PlainTensor *> &inputValues,
            std::vector<SharedTensor> *sharedInputs) {
  if (auto err = verifyProgram(program))
    return err;
  size_t given = sharedInputs ? sharedInputs->size() : inputValues.size();
  if (given != program.inputs.size())
    return mpcError("the program has " + std::to_string(program.inputs.size()) +
                " inputs, got " + std::to_string(given) + " values");
  std::vector<std::optional<SharedTensor>> slots(program.numSlots);
  // Last instruction reading each slot; outputs are kept to the end.
  std::vector<int> lastUse(program.numSlots, -1);
  for (size_t i = 0; i < program.instructions.size(); ++i)
    for (int s : program.instructions[i].operands)
      if (s >= 0)
        lastUse[s] = int(i);
  for (const ProgramOutput &o : program.outputs)
    lastUse[o.slot] = int(program.instructions.size());

  for (size_t i = 0; sharedInputs && i < program.inputs.size(); ++i) {
    const ProgramInput &in = program.inputs[i];
    SharedTensor &x = (*sharedInputs)[i];
    if (x.shape != in.shape || x.encoding != in.encoding)
      return mpcError("input " + std::to_string(i) + " is " + shapeToString(x.shape) +
                  ", the program declares " + shapeToString(in.shape));
    slots[in.slot] = std::move(x);
  }
  for (size_t i = 0; !sharedInputs && i < program.inputs.size(); ++i) {
    const ProgramInput &in = program.inputs[i];
    auto x = engine.input(in.owner,
                          engine.party() == in.owner ? inputValues[i] : nullptr,
                          in.shape, in.encoding);
    if (!x)
      return mpcError("input " + std::to_string(i) + ": " +
                  messageOf(x.takeError(), engine.party()));
    slots[in.slot] = std::move(*x);
  }
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    const Instruction &ins = program.instructions[i];
    std::string where =
        ins.line > 0 ? std::to_string(ins.line) + ":" + std::to_string(ins.col) + ": " +
                           programOpInfo(ins.op).name
                     : "instruction " + std::to_string(i) + " (%" + std::to_string(ins.result) +
                           " = " + programOpInfo(ins.op).name + ")";
    auto r = step(engine, ins, slots);
    if (!r)
      return mpcError(where + ": " + messageOf(r.takeError(), engine.party()));
    if (r->shape != ins.shape)
      return mpcError(where + ": result has shape " + shapeToString(r->shape) +
                  ", the program declares " + shapeToString(ins.shape));
    slots[ins.result] = std::move(*r);
    for (int s : ins.operands)
      if (s >= 0 && lastUse[s] == int(i))
        slots[s].reset();
  }
  // Shared inputs come with shared outputs: nothing is revealed.
  std::vector<const SharedTensor *> toReveal;
  for (const ProgramOutput &o : program.outputs)
    if (o.reveal && !sharedInputs)
      toReveal.push_back(&*slots[o.slot]);
  std::vector<PlainTensor> none;
  auto opened = toReveal.empty()
                    ? llvm::Expected<std::vector<PlainTensor>>(std::move(none))
                    : engine.revealMany(toReveal);
  if (!opened)
    return opened.takeError();
  std::vector<ProgramValue> out;
  size_t next = 0;
  for (const ProgramOutput &o : program.outputs) {
    ProgramValue v;
    v.revealed = o.reveal && !sharedInputs;
    if (v.revealed)
      v.value = std::move((*opened)[next++]);
    else
      v.shared = *slots[o.slot];
    out.push_back(std::move(v));
  }
  return out;
}
} // namespace

} // namespace mdl::backend::mpc
