// The operation table of protocol programs, the verifier and the executor
// (Program.h). The text form is in ProgramText.cpp.
//
// The executor is one switch over the operation kinds, each case a call of
// the engine operation with the instruction's slots and attributes; after
// each step the result's shape is compared with the one the program
// declares, so a compile-time half that disagrees with the engine's shape
// rules is caught at the step, not at the output.
#include "backend/mpc/Program.h"

#include <map>

namespace mdl::backend::mpc {

namespace {

using K = ProgramOpKind;

} // namespace

const std::vector<ProgramOpInfo> &programOps() {
  static const std::vector<ProgramOpInfo> ops = {
      {K::Constant,
       "constant",
       0,
       0,
       {"value:f", "value_shape:i", "integer:i?"}},
      {K::Add, "add", 2, 2, {}},
      {K::Sub, "sub", 2, 2, {}},
      {K::Neg, "neg", 1, 1, {}},
      {K::AddPublic, "add_public", 1, 1, {"value:f", "value_shape:i"}},
      {K::MulPublic, "mul_public", 1, 1, {"value:f", "value_shape:i"}},
      {K::Mul, "mul", 2, 2, {}},
      {K::MatMul, "matmul", 2, 2, {}},
      {K::Truncate, "truncate", 1, 1, {"bits:i"}},
      {K::Lt, "lt", 2, 2, {}},
      {K::Le, "le", 2, 2, {}},
      {K::Gt, "gt", 2, 2, {}},
      {K::Ge, "ge", 2, 2, {}},
      {K::Eq, "eq", 2, 2, {}},
      {K::Ne, "ne", 2, 2, {}},
      {K::Select, "select", 3, 3, {}},
      {K::Relu, "relu", 1, 1, {}},
      {K::Abs, "abs", 1, 1, {}},
      {K::Max, "max", 2, 2, {}},
      {K::Min, "min", 2, 2, {}},
      {K::Clip, "clip", 1, 1, {"lo:f", "hi:f"}},
      {K::ReduceMax, "reduce_max", 1, 1, {"axis:i", "keepdims:i?"}},
      {K::ReduceMin, "reduce_min", 1, 1, {"axis:i", "keepdims:i?"}},
      {K::ArgMax, "argmax", 1, 1, {"axis:i", "keepdims:i?"}},
      {K::ArgMin, "argmin", 1, 1, {"axis:i", "keepdims:i?"}},
      {K::Exp, "exp", 1, 1, {}},
      {K::Reciprocal, "reciprocal", 1, 1, {}},
      {K::Div, "div", 2, 2, {}},
      {K::Rsqrt, "rsqrt", 1, 1, {}},
      {K::Sqrt, "sqrt", 1, 1, {}},
      {K::Sigmoid, "sigmoid", 1, 1, {}},
      {K::Tanh, "tanh", 1, 1, {}},
      {K::Gelu, "gelu", 1, 1, {"approximate:i?"}},
      {K::Softmax, "softmax", 1, 1, {"axis:i"}},
      {K::LayerNorm, "layernorm", 1, 3, {"axis:i", "eps:f"}},
      {K::Sum, "sum", 1, 1, {"axes:i", "keepdims:i?"}},
      {K::Mean, "mean", 1, 1, {"axes:i", "keepdims:i?"}},
      {K::Reshape, "reshape", 1, 1, {}},
      {K::Transpose, "transpose", 1, 1, {"perm:i"}},
      {K::Slice, "slice", 1, 1, {"starts:i", "stops:i", "steps:i"}},
      {K::Concat, "concat", 1, -1, {"axis:i"}},
      {K::Gather, "gather", 1, 1, {"indices:i", "index_shape:i", "axis:i"}},
      {K::Broadcast, "broadcast", 1, 1, {}},
  };
  return ops;
}

const ProgramOpInfo &programOpInfo(ProgramOpKind kind) {
  const ProgramOpInfo &info = programOps()[size_t(kind)];
  assert(info.kind == kind && "the table is in enum order");
  return info;
}

const ProgramOpInfo *programOpByName(const std::string &name) {
  static const std::map<std::string, const ProgramOpInfo *> byName = [] {
    std::map<std::string, const ProgramOpInfo *> m;
    for (const ProgramOpInfo &info : programOps())
      m[info.name] = &info;
    return m;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
}

const ProgramAttr *Instruction::attr(const std::string &name) const {
  for (const ProgramAttr &a : attrs)
    if (a.name == name)
      return &a;
  return nullptr;
}

llvm::Error verifyProgram(const Program &p) {
  std::vector<std::string> problems;
  std::vector<bool> defined(p.numSlots > 0 ? size_t(p.numSlots) : 0, false);
  auto inRange = [&](int slot) { return slot >= 0 && slot < p.numSlots; };
  auto define = [&](int slot, const std::string &where) {
    if (!inRange(slot))
      problems.push_back(where + ": slot %" + std::to_string(slot) +
                         " is out of range (" + std::to_string(p.numSlots) +
                         " slots)");
    else if (defined[slot])
      problems.push_back(where + ": slot %" + std::to_string(slot) +
                         " is written twice");
    else
      defined[slot] = true;
  };
  if (p.numSlots < 0)
    problems.push_back("negative slot count");
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const ProgramInput &in = p.inputs[i];
    std::string where = "input " + std::to_string(i);
    if (in.owner < 0 || in.owner >= kNumParties)
      problems.push_back(where + ": owner " + std::to_string(in.owner) +
                         " is not 0, 1 or 2");
    if (numElements(in.shape) < 0)
      problems.push_back(where + ": invalid shape " + shapeToString(in.shape));
    define(in.slot, where);
  }
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction &ins = p.instructions[i];
    std::string where = "instruction " + std::to_string(i);
    if (size_t(ins.op) >= programOps().size()) {
      problems.push_back(where + ": unknown operation");
      continue;
    }
    const ProgramOpInfo &info = programOpInfo(ins.op);
    where += " (" + std::string(info.name) + ")";
    int n = int(ins.operands.size());
    if (n < info.minOperands || (info.maxOperands >= 0 && n > info.maxOperands))
      problems.push_back(where + ": takes " + std::to_string(info.minOperands) +
                         (info.maxOperands == info.minOperands ? ""
                          : info.maxOperands < 0
                              ? " or more"
                              : " to " + std::to_string(info.maxOperands)) +
                         " operands, got " + std::to_string(n));
    for (int k = 0; k < n; ++k) {
      int s = ins.operands[k];
      if (s == -1 && ins.op == K::LayerNorm && k > 0)
        continue; // absent gamma or beta
      if (!inRange(s) || !defined[s])
        problems.push_back(where + ": operand %" + std::to_string(s) +
                           " is not defined before");
    }
    for (const char *spec : info.attrs) {
      std::string s = spec;
      bool optional = s.back() == '?';
      if (optional)
        s.pop_back();
      std::string name = s.substr(0, s.find(':'));
      AttrKind kind =
          s.substr(s.find(':') + 1) == "f" ? AttrKind::Floats : AttrKind::Ints;
      const ProgramAttr *a = ins.attr(name);
      if (!a) {
        if (!optional)
          problems.push_back(where + ": missing attribute '" + name + "'");
        continue;
      }
      if (a->kind != kind)
        problems.push_back(where + ": attribute '" + name + "' must hold " +
                           (kind == AttrKind::Ints ? "integers" : "reals"));
    }
    for (const ProgramAttr &a : ins.attrs) {
      bool known = false;
      for (const char *spec : info.attrs)
        known |= std::string(spec).rfind(a.name + ":", 0) == 0;
      if (!known)
        problems.push_back(where + ": unknown attribute '" + a.name + "'");
    }
    if (numElements(ins.shape) < 0)
      problems.push_back(where + ": invalid result shape " +
                         shapeToString(ins.shape));
    define(ins.result, where);
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    int s = p.outputs[i].slot;
    if (!inRange(s) || !defined[s])
      problems.push_back("output " + std::to_string(i) + ": slot %" +
                         std::to_string(s) + " is not defined");
  }
  if (problems.empty())
    return llvm::Error::success();
  std::string all = "invalid protocol program:";
  for (const std::string &pr : problems)
    all += "\n  " + pr;
  return mpcError(all);
}

} // namespace mdl::backend::mpc
