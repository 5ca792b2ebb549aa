// Internal: the table from operation kind to shape rule, used by the
// registry to fill its entries.
#pragma once

#include "stdlib/Registry.h"

namespace mdl::stdlib {

using RuleFn = InferResult (*)(const std::vector<ir::TensorType> &,
                               std::vector<ir::NamedAttr> &);

/// The shape rule for a kind, or null for structural operations.
RuleFn shapeRuleFor(ir::OpKind kind);
/// The rules of the HLO import operations (ShapeRulesHlo.cpp).
RuleFn hloShapeRuleFor(ir::OpKind kind);

} // namespace mdl::stdlib
