// The CPU kernel entry point: checks the call, allocates missing outputs and
// dispatches on the operation kind to the kernel families (one file each:
// Elementwise, Cast, Reduction, Linalg, Shape, Indexing, Neural, Conv,
// Creation).
#include "backend/cpu/HloKernels.h"
#include "backend/cpu/KernelSupport.h"

#include <new>

namespace mdl::backend::cpu {

using ir::OpKind;

bool hasKernel(OpKind kind) {
  switch (kind) {
  case OpKind::Constant:
  case OpKind::Global:
  case OpKind::Load:
  case OpKind::Call:
  case OpKind::If:
  case OpKind::For:
  case OpKind::While:
  case OpKind::Yield:
  case OpKind::Return:
  case OpKind::Print:
  case OpKind::Segment:
  case OpKind::Fusion:
    return false;
  default:
    return true;
  }
}

namespace {

// How many operands a kernel reads; -1 for "one or more" (concat, stack).
int operandCount(OpKind k) {
  if (isHloOp(k))
    return hloOperandCount(k);
  switch (k) {
  case OpKind::Zeros:
  case OpKind::Ones:
  case OpKind::Full:
  case OpKind::Arange:
  case OpKind::RandomNormal:
  case OpKind::RandomUniform:
    return 0;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Mod:
  case OpKind::Pow:
  case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::Lt:
  case OpKind::Le:
  case OpKind::Gt:
  case OpKind::Ge:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Matmul:
  case OpKind::DynamicIndex:
  case OpKind::Gather:
  case OpKind::Conv2d:
  case OpKind::Embedding:
    return 2;
  case OpKind::Clip:
  case OpKind::Select:
  case OpKind::Layernorm:
    return 3;
  case OpKind::Concat:
  case OpKind::Stack:
    return -1;
  default:
    return 1;
  }
}

Status dispatch(const ir::Operation &op, const std::vector<Tensor> &in,
                std::vector<Tensor> &out) {
  switch (op.kind) {
  case OpKind::Cast:
    return runCast(op, in, out);
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::Prod:
    return runReduction(op, in, out);
  case OpKind::Argmax:
  case OpKind::Argmin:
    return runArgReduction(op, in, out);
  case OpKind::Matmul:
    return runMatmul(op, in, out);
  case OpKind::To:
  case OpKind::Reveal:
  case OpKind::Transfer:
  case OpKind::Transpose:
  case OpKind::Reshape:
  case OpKind::BroadcastTo:
  case OpKind::Concat:
  case OpKind::Stack:
  case OpKind::ExpandDims:
  case OpKind::Squeeze:
  case OpKind::Slice:
  case OpKind::Pad:
    return runShape(op, in, out);
  case OpKind::DynamicIndex:
  case OpKind::Gather:
  case OpKind::Embedding:
    return runIndexing(op, in, out);
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::Layernorm:
    return runNormalization(op, in, out);
  case OpKind::Conv2d:
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d:
    return runConvPool(op, in, out);
  case OpKind::Zeros:
  case OpKind::Ones:
  case OpKind::Full:
  case OpKind::Arange:
  case OpKind::RandomNormal:
  case OpKind::RandomUniform:
    return runCreation(op, in, out);
  default:
    return runElementwise(op, in, out);
  }
}

} // namespace

std::optional<std::string> runKernel(const ir::Operation &op,
                                     const std::vector<Tensor> &inputs,
                                     std::vector<Tensor> &outputs,
                                     const FunctionCaller *caller) {
  std::string name = ir::opName(op.kind);
  if (!hasKernel(op.kind))
    return "'" + name + "' is not a kernel operation";
  int want = operandCount(op.kind);
  if ((want >= 0 && int(inputs.size()) != want) || (want < 0 && inputs.empty()))
    return "'" + name + "' expects " +
           (want < 0 ? "at least 1" : std::to_string(want)) +
           " operands, got " + std::to_string(inputs.size());
  for (const Tensor &t : inputs)
    if (!t.valid())
      return "'" + name + "' got an operand without data";
  if (op.results.empty())
    return "'" + name + "' has no result";
  // Outputs the caller did not allocate are allocated here.
  if (outputs.size() < op.results.size())
    outputs.resize(op.results.size());
  for (size_t i = 0; i < op.results.size(); ++i) {
    const ir::TensorType &t = op.result(unsigned(i))->type;
    if (!t.isStatic())
      return "'" + name + "' result type " + t.str() + " is not static";
    if (outputs[i].valid()) {
      // Kernels write the whole output by its type: a wrong buffer would be
      // written out of bounds.
      if (outputs[i].type() != t)
        return "'" + name + "' output is " + outputs[i].type().str() +
               ", but the result type is " + t.str();
      continue;
    }
    outputs[i] = Tensor::empty(t);
    if (!outputs[i].valid())
      return "out of memory allocating " + t.str() + " for '" + name + "'";
  }
  try {
    if (isHloOp(op.kind))
      return runHloKernel(op, inputs, outputs, caller);
    return dispatch(op, inputs, outputs);
  } catch (const std::bad_alloc &) {
    return "out of memory in '" + name + "'";
  }
}

} // namespace mdl::backend::cpu
