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

/// True for the operation kinds of the HLO import section.
inline bool isHloOp(ir::OpKind k) { return k >= ir::OpKind::Expm1; }

/// How many operands the kernel of an HLO import operation reads: a count,
/// or -1 for variadic ones. Only meaningful when isHloOp(k).
int hloOperandCount(ir::OpKind k);

/// Runs the kernel of an HLO import operation.
Status runHloKernel(const ir::Operation &op, const std::vector<Tensor> &in,
                    std::vector<Tensor> &out, const FunctionCaller *caller);

// Families (HloKernels*.cpp).
Status runHloElementwise(const ir::Operation &op, const std::vector<Tensor> &in,
                         std::vector<Tensor> &out);
Status runHloIndexing(const ir::Operation &op, const std::vector<Tensor> &in,
                      std::vector<Tensor> &out, const FunctionCaller *caller);
Status runHloSortMap(const ir::Operation &op, const std::vector<Tensor> &in,
                     std::vector<Tensor> &out, const FunctionCaller *caller);
Status runHloDot(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out);
Status runHloConvolution(const ir::Operation &op, const std::vector<Tensor> &in,
                         std::vector<Tensor> &out);
Status runHloReduce(const ir::Operation &op, const std::vector<Tensor> &in,
                    std::vector<Tensor> &out, const FunctionCaller *caller);
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
