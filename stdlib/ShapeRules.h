// The shape and element-type rules of the operations, named by the table
// (Ops.def) that attaches one to each operation kind. Each rule receives
// the operand types and the operation's attributes, canonicalizes the
// attributes (negative axes made non-negative, ...) and returns the result
// types or a RuleError. ShapeRules.cpp holds the core rules,
// ShapeRulesHlo*.cpp those of the HLO import operations.
#pragma once

#include "stdlib/Registry.h"

namespace mdl::stdlib {

namespace rules {
#define MDL_RULE(name)                                                                        \
  InferResult name(const std::vector<ir::TensorType> &ops, std::vector<ir::NamedAttr> &attrs);
MDL_RULE(unaryFloat)
MDL_RULE(unaryNumeric)
MDL_RULE(unaryBool)
MDL_RULE(binaryArith)
MDL_RULE(comparison)
MDL_RULE(logic)
MDL_RULE(clip)
MDL_RULE(select)
MDL_RULE(cast)
MDL_RULE(passThrough)
MDL_RULE(reduceAny)
MDL_RULE(reduceMean)
MDL_RULE(argReduce)
MDL_RULE(matmul)
MDL_RULE(transpose)
MDL_RULE(reshape)
MDL_RULE(broadcastTo)
MDL_RULE(concat)
MDL_RULE(stack)
MDL_RULE(expandDims)
MDL_RULE(squeeze)
MDL_RULE(slice)
MDL_RULE(dynamicIndex)
MDL_RULE(gather)
MDL_RULE(pad)
MDL_RULE(softmax)
MDL_RULE(layernorm)
MDL_RULE(conv2d)
MDL_RULE(pool2d)
MDL_RULE(embedding)
MDL_RULE(fromTypeAttr)
MDL_RULE(fullRule)
MDL_RULE(randomRule)
MDL_RULE(arange)
MDL_RULE(noResults)
} // namespace rules

namespace hlorules {
MDL_RULE(needFloat)
MDL_RULE(isFinite)
MDL_RULE(reducePrecision)
MDL_RULE(bitUnary)
MDL_RULE(intUnary)
MDL_RULE(bitBinary)
MDL_RULE(shift)
MDL_RULE(atan2Rule)
MDL_RULE(divTrunc)
MDL_RULE(rem)
MDL_RULE(compare)
MDL_RULE(convert)
MDL_RULE(bitcastConvert)
MDL_RULE(iota)
MDL_RULE(dynamicSlice)
MDL_RULE(dynamicUpdateSlice)
MDL_RULE(padGeneral)
MDL_RULE(gatherRule)
MDL_RULE(scatterRule)
MDL_RULE(sortRule)
MDL_RULE(mapRule)
MDL_RULE(dotRule)
MDL_RULE(convRule)
MDL_RULE(fusedConvRule)
MDL_RULE(reduceRule)
MDL_RULE(reduceWindowRule)
MDL_RULE(selectAndScatterRule)
MDL_RULE(batchNormTrainingRule)
MDL_RULE(batchNormInferenceRule)
MDL_RULE(batchNormGradRule)
#undef MDL_RULE
} // namespace hlorules

} // namespace mdl::stdlib
