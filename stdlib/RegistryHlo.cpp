// Registry entries of the operations that exist for HLO import: XLA
// semantics that the core library does not cover (general dot and
// convolution, reductions with reducers, gather/scatter with dimension
// numbers, bit operations, ...). Each is callable from mdl source, so that
// `mdl import` can write a program that runs to the same results; operations
// that apply a function take its name (`reduce(..., to_apply = add_fn)`).
//
// These run on the CPU (and its fallback for `hip`); none is implemented
// for `mpc`.
#include "stdlib/RegistryEntries.h"

namespace mdl::stdlib {

using ir::Attribute;
using ir::OpKind;
using PK = ParamKind;

namespace {

constexpr unsigned kDev = kCpu | kHip;

ParamSpec list(const char *n) { return ParamSpec{n, PK::TensorList, std::nullopt, true}; }
ParamSpec ints(const char *n) { return dflt(n, PK::IntList, Attribute::intList({})); }
ParamSpec flag(const char *n) { return dflt(n, PK::Bool, Attribute::boolean(false)); }
ParamSpec text(const char *n) { return dflt(n, PK::String, Attribute::string("")); }
ParamSpec fn(const char *n) { return opt(n, PK::Function); }

Entry unary(OpKind k, const char *name) {
  return {k, name, OpClass::ElementwiseUnary, {tensor("x")}, kDev};
}
Entry binary(OpKind k, const char *name) {
  return {k, name, OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kDev};
}

} // namespace

void appendHloEntries(std::vector<Entry> &e) {
  const Attribute one = Attribute::integer(1);
  for (auto [k, n] : std::initializer_list<std::pair<OpKind, const char *>>{
           {OpKind::Expm1, "expm1"}, {OpKind::Log1p, "log1p"}, {OpKind::Tan, "tan"},
           {OpKind::Erf, "erf"}, {OpKind::Cbrt, "cbrt"}, {OpKind::Acos, "acos"},
           {OpKind::Asin, "asin"}, {OpKind::Atan, "atan"}, {OpKind::Acosh, "acosh"},
           {OpKind::Asinh, "asinh"}, {OpKind::Atanh, "atanh"}, {OpKind::Cosh, "cosh"},
           {OpKind::Sinh, "sinh"}, {OpKind::RoundEven, "round_even"},
           {OpKind::RoundAway, "round_away"}, {OpKind::IsFinite, "is_finite"},
           {OpKind::BitNot, "bit_not"}, {OpKind::Popcnt, "popcnt"}, {OpKind::Clz, "clz"}})
    e.push_back(unary(k, n));
  e.push_back({OpKind::ReducePrecision, "reduce_precision", OpClass::ElementwiseUnary,
               {tensor("x"), req("exponent_bits", PK::Int), req("mantissa_bits", PK::Int)},
               kDev});
  for (auto [k, n] : std::initializer_list<std::pair<OpKind, const char *>>{
           {OpKind::BitAnd, "bit_and"}, {OpKind::BitOr, "bit_or"}, {OpKind::BitXor, "bit_xor"},
           {OpKind::ShiftLeft, "shift_left"}, {OpKind::ShiftRightLogical, "shift_right_logical"},
           {OpKind::ShiftRightArith, "shift_right_arithmetic"}, {OpKind::Atan2, "atan2"}})
    e.push_back(binary(k, n));
  e.push_back({OpKind::DivTrunc, "div_trunc", OpClass::ElementwiseBinary,
               {tensor("a"), tensor("b"), flag("unsigned")}, kDev});
  e.push_back({OpKind::Rem, "rem", OpClass::ElementwiseBinary,
               {tensor("a"), tensor("b"), flag("unsigned")}, kDev});
  e.push_back({OpKind::Compare, "compare", OpClass::Comparison,
               {tensor("a"), tensor("b"), req("direction", PK::String),
                dflt("order", PK::String, Attribute::string("default"))},
               kDev});
  e.push_back({OpKind::Convert, "convert", OpClass::ElementwiseOther,
               {tensor("x"), req("dtype", PK::DType), flag("from_unsigned"), flag("to_unsigned")},
               kDev});
  e.push_back({OpKind::BitcastConvert, "bitcast_convert", OpClass::ElementwiseOther,
               {tensor("x"), req("dtype", PK::DType)}, kDev});
  e.push_back({OpKind::Iota, "iota", OpClass::Creation,
               {req("type", PK::Type), req("dimension", PK::Int)}, kDev});
  e.push_back({OpKind::DynamicSlice, "dynamic_slice", OpClass::Shape,
               {tensor("x"), list("starts"), req("sizes", PK::IntList)}, kDev});
  e.push_back({OpKind::DynamicUpdateSlice, "dynamic_update_slice", OpClass::Shape,
               {tensor("x"), tensor("update"), list("starts")}, kDev});
  e.push_back({OpKind::PadGeneral, "pad_general", OpClass::Shape,
               {tensor("x"), tensor("value"), req("low", PK::IntList), req("high", PK::IntList),
                ints("interior")},
               kDev});
  e.push_back({OpKind::GatherGeneral, "gather_general", OpClass::Shape,
               {tensor("x"), tensor("indices"), ints("offset_dims"), ints("collapsed_slice_dims"),
                ints("start_index_map"), req("index_vector_dim", PK::Int),
                req("slice_sizes", PK::IntList), ints("operand_batching_dims"),
                ints("start_indices_batching_dims")},
               kDev});
  e.push_back({OpKind::Scatter, "scatter", OpClass::Shape,
               {list("operands"), tensor("indices"), list("updates"), ints("update_window_dims"),
                ints("inserted_window_dims"), ints("scatter_dims_to_operand_dims"),
                req("index_vector_dim", PK::Int), ints("input_batching_dims"),
                ints("scatter_indices_batching_dims"), text("combiner"), fn("to_apply")},
               kDev});
  e.push_back({OpKind::Sort, "sort", OpClass::Shape,
               {list("values"), req("dimension", PK::Int), flag("is_stable"), text("order"),
                fn("comparator")},
               kDev});
  e.push_back({OpKind::Map, "map", OpClass::ElementwiseOther,
               {list("inputs"), req("fn", PK::Function), req("dtype", PK::DType)}, kDev});
  e.push_back({OpKind::DotGeneral, "dot_general", OpClass::LinearAlgebra,
               {tensor("a"), tensor("b"), ints("lhs_batch"), ints("rhs_batch"),
                ints("lhs_contract"), ints("rhs_contract"), opt("dtype", PK::DType)},
               kDev});
  e.push_back({OpKind::Convolution, "convolution", OpClass::Neural,
               {tensor("x"), tensor("w"), req("dim_labels", PK::String), ints("strides"),
                ints("padding"), ints("lhs_dilation"), ints("rhs_dilation"),
                dflt("feature_groups", PK::Int, one), dflt("batch_groups", PK::Int, one),
                opt("dtype", PK::DType)},
               kDev});
  e.push_back({OpKind::Reduce, "reduce", OpClass::Reduction,
               {list("inputs"), list("inits"), req("dims", PK::IntList), text("reducer"),
                fn("to_apply")},
               kDev});
  e.push_back({OpKind::ReduceWindow, "reduce_window", OpClass::Reduction,
               {list("inputs"), list("inits"), req("window", PK::IntList), ints("strides"),
                ints("base_dilation"), ints("window_dilation"), ints("padding"), text("reducer"),
                fn("to_apply")},
               kDev});
  e.push_back({OpKind::SelectAndScatter, "select_and_scatter", OpClass::Reduction,
               {tensor("x"), tensor("source"), tensor("init"), req("window", PK::IntList),
                ints("strides"), ints("padding"), text("select"), fn("select_fn"), text("scatter"),
                fn("scatter_fn")},
               kDev});
  e.push_back({OpKind::BatchNormTraining, "batch_norm_training", OpClass::Neural,
               {tensor("x"), tensor("scale"), tensor("offset"), req("epsilon", PK::Number),
                req("feature_index", PK::Int)},
               kDev});
  e.push_back({OpKind::BatchNormInference, "batch_norm_inference", OpClass::Neural,
               {tensor("x"), tensor("scale"), tensor("offset"), tensor("mean"), tensor("variance"),
                req("epsilon", PK::Number), req("feature_index", PK::Int)},
               kDev});
  e.push_back({OpKind::BatchNormGrad, "batch_norm_grad", OpClass::Neural,
               {tensor("x"), tensor("scale"), tensor("mean"), tensor("variance"),
                tensor("grad_output"), req("epsilon", PK::Number), req("feature_index", PK::Int)},
               kDev});
}

const std::vector<std::string> &functionAttrs(ir::OpKind kind) {
  static const std::vector<std::vector<std::string>> table = [] {
    std::vector<std::vector<std::string>> t(ir::kNumOpKinds);
    for (int k = 0; k < ir::kNumOpKinds; ++k)
      for (const ParamSpec &p : opInfo(ir::OpKind(k)).params)
        if (p.kind == ParamKind::Function)
          t[size_t(k)].push_back(p.name);
    return t;
  }();
  return table[size_t(kind)];
}

} // namespace mdl::stdlib
