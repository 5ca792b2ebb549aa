// The registration of the HLO import operations' kernels, by family, and
// the helpers shared by the kernels that call module functions.
#include "backend/cpu/HloKernels.h"
#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;

void registerHloKernels(KernelTable &t) {
  registerHloElementwiseKernels(t);
  registerHloIndexingKernels(t);
  registerHloReduceKernels(t);
  t.add(OpKind::Sort, MDL_KERNEL {
    if (out.size() != in.size())
      return std::string("sort gives one result per operand");
    return runHloSort(op, in, out, caller);
  });
  t.add(OpKind::Map, MDL_KERNEL { return runHloMap(op, in, out[0], caller); });
  t.add(OpKind::DotGeneral, MDL_KERNEL { return runHloDot(op, in, out); });
  t.add({OpKind::Convolution, OpKind::FusedConvolution},
        MDL_KERNEL { return runHloConvolution(op, in, out); });
  t.add({OpKind::BatchNormTraining, OpKind::BatchNormInference, OpKind::BatchNormGrad},
        MDL_KERNEL { return runHloBatchNorm(op, in, out); });
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
