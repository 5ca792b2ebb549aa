// Internal to the CPU kernels: the kernels of the operations that exist for
// HLO import (stdlib/Ops.def's last section), with XLA's semantics: integer
// division and remainder that truncate, shifts by the full width, total-order
// and unsigned comparisons, general dot and convolution, reductions with
// named or function reducers, gather/scatter with dimension numbers, sort,
// and batch normalization.
//
// Operations that apply a function of the module (a reducer, comparator or
// mapped function named by a symbol attribute) call it through the
// FunctionCaller once per application.
#pragma once

#include "backend/cpu/KernelSupport.h"

namespace mdl::backend::cpu {

// Families (HloKernels*.cpp), registered by registerHloKernels.
void registerHloElementwiseKernels(KernelTable &t);
void registerHloIndexingKernels(KernelTable &t);
void registerHloReduceKernels(KernelTable &t);
Status runHloSort(const ir::Operation &op, const std::vector<Tensor> &in,
                  std::vector<Tensor> &out, const FunctionCaller *caller);
Status runHloMap(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &out,
                 const FunctionCaller *caller);
Status runHloDot(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out);
Status runHloConvolution(const ir::Operation &op, const std::vector<Tensor> &in,
                         std::vector<Tensor> &out);
Status runHloBatchNorm(const ir::Operation &op, const std::vector<Tensor> &in,
                       std::vector<Tensor> &out);

/// Calls `fn` on scalars: a helper for the kernels that apply functions.
/// `args` are rank-0 tensors; results are written to `results`.
Status callScalarFunction(const FunctionCaller *caller, const std::string &fn,
                          const std::vector<Tensor> &args, std::vector<Tensor> &results);

/// Element i of a tensor as double / the same stored from double (any
/// dtype), for the generic paths.
double loadAsDouble(const Tensor &t, int64_t i);

} // namespace mdl::backend::cpu
