// Dispatch of the HLO import operations' kernels to their families, and
// the helpers shared by the kernels that call module functions.
#include "backend/cpu/HloKernels.h"

namespace mdl::backend::cpu {

using ir::OpKind;

int hloOperandCount(OpKind k) {
  switch (k) {
  case OpKind::BitAnd: case OpKind::BitOr: case OpKind::BitXor: case OpKind::ShiftLeft:
  case OpKind::ShiftRightLogical: case OpKind::ShiftRightArith: case OpKind::DivTrunc:
  case OpKind::Rem: case OpKind::Atan2: case OpKind::Compare: case OpKind::PadGeneral:
  case OpKind::GatherGeneral: case OpKind::DotGeneral: case OpKind::Convolution:
    return 2;
  case OpKind::SelectAndScatter: case OpKind::BatchNormTraining:
    return 3;
  case OpKind::BatchNormInference: case OpKind::BatchNormGrad:
    return 5;
  case OpKind::Iota:
    return 0;
  case OpKind::DynamicSlice: case OpKind::DynamicUpdateSlice: case OpKind::Scatter:
  case OpKind::Sort: case OpKind::Map: case OpKind::Reduce: case OpKind::ReduceWindow:
    return -1;
  default:
    return 1;
  }
}

Status runHloKernel(const ir::Operation &op, const std::vector<Tensor> &in,
                    std::vector<Tensor> &out, const FunctionCaller *caller) {
  switch (op.kind) {
  case OpKind::DynamicSlice: case OpKind::DynamicUpdateSlice: case OpKind::PadGeneral:
  case OpKind::GatherGeneral: case OpKind::Scatter:
    return runHloIndexing(op, in, out, caller);
  case OpKind::Sort: case OpKind::Map:
    return runHloSortMap(op, in, out, caller);
  case OpKind::DotGeneral:
    return runHloDot(op, in, out);
  case OpKind::Convolution:
    return runHloConvolution(op, in, out);
  case OpKind::Reduce: case OpKind::ReduceWindow: case OpKind::SelectAndScatter:
    return runHloReduce(op, in, out, caller);
  case OpKind::BatchNormTraining: case OpKind::BatchNormInference: case OpKind::BatchNormGrad:
    return runHloBatchNorm(op, in, out);
  default:
    return runHloElementwise(op, in, out);
  }
}

Status callScalarFunction(const FunctionCaller *caller, const std::string &fn,
                          const std::vector<Tensor> &args, std::vector<Tensor> &results) {
  if (!caller || !*caller)
    return "cannot call @" + fn + " here (no function caller)";
  results.clear();
  if (auto err = (*caller)(fn, args, results))
    return err;
  return std::nullopt;
}

double loadAsDouble(const Tensor &t, int64_t i) {
  return visitDType(t.dtype(), [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return double(Elem<T>::load(t.data<T>()[i]));
  });
}

} // namespace mdl::backend::cpu
