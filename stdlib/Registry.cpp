// The registry table: one entry per operation kind with its user-facing
// signature, class and device kinds; shape rules come from ShapeRules.cpp.
#include "stdlib/Registry.h"
#include "stdlib/RegistryEntries.h"
#include "stdlib/ShapeRules.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

namespace mdl::stdlib {

using ir::Attribute;
using ir::OpKind;
using P = ParamSpec;
using PK = ParamKind;

namespace {

// MPC implements linear algebra, comparisons-free arithmetic, ReLU and a
// sigmoid approximation, max reductions and data movement.
constexpr unsigned kAll = kAllDevices;
constexpr unsigned kNoMpc = kCpu | kHip;

std::vector<Entry> buildEntries() {
  const auto i0 = Attribute::integer(0);
  const auto m1 = Attribute::integer(-1);
  const auto no = Attribute::boolean(false);
  std::vector<Entry> e = {
      // Structure: not callable by name.
      {OpKind::Constant, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::Global, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::Load, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::Call, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::If, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::For, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::While, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::Yield, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::Return, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::Print, "print", OpClass::Structural, {P{"values", PK::Variadic, std::nullopt, true}}, kAll},
      {OpKind::Segment, nullptr, OpClass::Structural, {}, kAll},
      {OpKind::Fusion, nullptr, OpClass::Structural, {}, kAll},
      // Placement.
      {OpKind::To, "to", OpClass::Placement, {tensor("x"), req("device", PK::Device)}, kAll},
      {OpKind::Reveal, "reveal", OpClass::Placement, {tensor("x")}, kAll},
      {OpKind::Transfer, nullptr, OpClass::Placement, {}, kAll},
      // Elementwise binary (operators; also callable where named).
      {OpKind::Add, nullptr, OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Sub, nullptr, OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Mul, nullptr, OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Div, nullptr, OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Mod, nullptr, OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Pow, "pow", OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Maximum, "maximum", OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Minimum, "minimum", OpClass::ElementwiseBinary, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Eq, nullptr, OpClass::Comparison, {tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Ne, nullptr, OpClass::Comparison, {tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Lt, nullptr, OpClass::Comparison, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Le, nullptr, OpClass::Comparison, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Gt, nullptr, OpClass::Comparison, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Ge, nullptr, OpClass::Comparison, {tensor("a"), tensor("b")}, kAll},
      {OpKind::And, nullptr, OpClass::Logic, {tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Or, nullptr, OpClass::Logic, {tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Not, nullptr, OpClass::Logic, {tensor("x")}, kNoMpc},
      // Elementwise unary.
      {OpKind::Neg, "neg", OpClass::ElementwiseUnary, {tensor("x")}, kAll},
      {OpKind::Abs, "abs", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Exp, "exp", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Log, "log", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Sqrt, "sqrt", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Rsqrt, "rsqrt", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Tanh, "tanh", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Sigmoid, "sigmoid", OpClass::ElementwiseUnary, {tensor("x")}, kAll},
      {OpKind::Relu, "relu", OpClass::ElementwiseUnary, {tensor("x")}, kAll},
      {OpKind::Gelu, "gelu", OpClass::ElementwiseUnary,
       {tensor("x"), dflt("approximate", PK::Bool, no)}, kNoMpc},
      {OpKind::Sin, "sin", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Cos, "cos", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Floor, "floor", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Ceil, "ceil", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Sign, "sign", OpClass::ElementwiseUnary, {tensor("x")}, kNoMpc},
      {OpKind::Clip, "clip", OpClass::ElementwiseOther,
       {tensor("x"), tensor("lo"), tensor("hi")}, kNoMpc},
      {OpKind::Select, "select", OpClass::ElementwiseOther,
       {tensor("cond"), tensor("a"), tensor("b")}, kNoMpc},
      {OpKind::Cast, "cast", OpClass::ElementwiseOther,
       {tensor("x"), req("dtype", PK::DType)}, kAll},
      // Reductions.
      {OpKind::Sum, "sum", OpClass::Reduction,
       {tensor("x"), opt("axis", PK::Axes), dflt("keepdims", PK::Bool, no)}, kAll},
      {OpKind::Mean, "mean", OpClass::Reduction,
       {tensor("x"), opt("axis", PK::Axes), dflt("keepdims", PK::Bool, no)}, kAll},
      {OpKind::ReduceMax, "max", OpClass::Reduction,
       {tensor("x"), opt("axis", PK::Axes), dflt("keepdims", PK::Bool, no)}, kAll},
      {OpKind::ReduceMin, "min", OpClass::Reduction,
       {tensor("x"), opt("axis", PK::Axes), dflt("keepdims", PK::Bool, no)}, kAll},
      {OpKind::Prod, "prod", OpClass::Reduction,
       {tensor("x"), opt("axis", PK::Axes), dflt("keepdims", PK::Bool, no)}, kNoMpc},
      {OpKind::Argmax, "argmax", OpClass::Reduction, {tensor("x"), opt("axis", PK::Int)}, kNoMpc},
      {OpKind::Argmin, "argmin", OpClass::Reduction, {tensor("x"), opt("axis", PK::Int)}, kNoMpc},
      // Linear algebra.
      {OpKind::Matmul, "matmul", OpClass::LinearAlgebra, {tensor("a"), tensor("b")}, kAll},
      {OpKind::Transpose, "transpose", OpClass::Shape, {tensor("x"), opt("perm", PK::IntList)}, kAll},
      // Shape.
      {OpKind::Reshape, "reshape", OpClass::Shape, {tensor("x"), req("shape", PK::DimList)}, kAll},
      {OpKind::BroadcastTo, "broadcast_to", OpClass::Shape,
       {tensor("x"), req("shape", PK::DimList)}, kAll},
      {OpKind::Concat, "concat", OpClass::Shape,
       {P{"values", PK::TensorList, std::nullopt, true}, dflt("axis", PK::Int, i0)}, kAll},
      {OpKind::Stack, "stack", OpClass::Shape,
       {P{"values", PK::TensorList, std::nullopt, true}, dflt("axis", PK::Int, i0)}, kAll},
      {OpKind::ExpandDims, "expand_dims", OpClass::Shape, {tensor("x"), req("axis", PK::Int)}, kAll},
      {OpKind::Squeeze, "squeeze", OpClass::Shape, {tensor("x"), opt("axis", PK::Int)}, kAll},
      {OpKind::Slice, nullptr, OpClass::Shape, {tensor("x")}, kAll},
      {OpKind::DynamicIndex, nullptr, OpClass::Shape, {tensor("x"), tensor("index")}, kNoMpc},
      {OpKind::Gather, "gather", OpClass::Shape,
       {tensor("x"), tensor("indices"), dflt("axis", PK::Int, i0)}, kNoMpc},
      {OpKind::Pad, "pad", OpClass::Shape,
       {tensor("x"), req("pads", PK::IntPairs), dflt("value", PK::Number, Attribute::real(0))}, kAll},
      // Neural.
      {OpKind::Softmax, "softmax", OpClass::Neural, {tensor("x"), dflt("axis", PK::Int, m1)}, kNoMpc},
      {OpKind::LogSoftmax, "log_softmax", OpClass::Neural, {tensor("x"), dflt("axis", PK::Int, m1)}, kNoMpc},
      {OpKind::Layernorm, "layernorm", OpClass::Neural,
       {tensor("x"), tensor("gamma"), tensor("beta"),
        dflt("eps", PK::Number, Attribute::real(1e-5)), dflt("axis", PK::Int, m1)}, kNoMpc},
      {OpKind::Conv2d, "conv2d", OpClass::Neural,
       {tensor("x"), tensor("w"), dflt("stride", PK::IntPair, Attribute::integer(1)),
        dflt("padding", PK::IntPair, i0)}, kNoMpc},
      {OpKind::MaxPool2d, "max_pool2d", OpClass::Neural,
       {tensor("x"), req("size", PK::IntPair), opt("stride", PK::IntPair)}, kNoMpc},
      {OpKind::AvgPool2d, "avg_pool2d", OpClass::Neural,
       {tensor("x"), req("size", PK::IntPair), opt("stride", PK::IntPair)}, kNoMpc},
      {OpKind::Embedding, "embedding", OpClass::Neural, {tensor("table"), tensor("ids")}, kNoMpc},
      // Creation.
      {OpKind::Zeros, "zeros", OpClass::Creation, {req("type", PK::Type)}, kAll},
      {OpKind::Ones, "ones", OpClass::Creation, {req("type", PK::Type)}, kAll},
      {OpKind::Full, "full", OpClass::Creation, {req("type", PK::Type), req("value", PK::Number)}, kAll},
      {OpKind::Arange, "arange", OpClass::Creation, {req("n", PK::DimValue)}, kAll},
      {OpKind::RandomNormal, "random_normal", OpClass::Creation,
       {req("type", PK::Type), req("seed", PK::Int), dflt("mean", PK::Number, Attribute::real(0)),
        dflt("std", PK::Number, Attribute::real(1))}, kAll},
      {OpKind::RandomUniform, "random_uniform", OpClass::Creation,
       {req("type", PK::Type), req("seed", PK::Int), dflt("lo", PK::Number, Attribute::real(0)),
        dflt("hi", PK::Number, Attribute::real(1))}, kAll},
  };
  appendHloEntries(e);
  return e;
}

struct Table {
  std::vector<OpInfo> infos;
  std::unordered_map<std::string, const OpInfo *> callable;
};

const Table &table() {
  static const Table t = [] {
    Table tb;
    tb.infos.resize(ir::kNumOpKinds);
    std::vector<bool> seen(ir::kNumOpKinds, false);
    for (Entry &e : buildEntries()) {
      int k = static_cast<int>(e.kind);
      assert(!seen[k] && "operation registered twice");
      seen[k] = true;
      OpInfo &info = tb.infos[k];
      info.kind = e.kind;
      info.callName = e.call;
      info.cls = e.cls;
      info.params = std::move(e.params);
      info.devices = e.devices;
      info.infer = shapeRuleFor(e.kind);
    }
    for (int k = 0; k < ir::kNumOpKinds; ++k) {
      assert(seen[k] && "operation kind missing from the registry");
      if (tb.infos[k].callName)
        tb.callable.emplace(tb.infos[k].callName, &tb.infos[k]);
    }
    return tb;
  }();
  return t;
}

} // namespace

const OpInfo &opInfo(OpKind kind) {
  return table().infos[static_cast<int>(kind)];
}

const OpInfo *lookupCallable(const std::string &name) {
  auto it = table().callable.find(name);
  return it == table().callable.end() ? nullptr : it->second;
}

std::vector<std::string> callableNames() {
  std::vector<std::string> names;
  for (auto &kv : table().callable)
    names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

InferResult inferTypes(OpKind kind, const std::vector<ir::TensorType> &operands,
                       std::vector<ir::NamedAttr> &attrs) {
  const OpInfo &info = opInfo(kind);
  assert(info.infer && "inferTypes on a structural operation");
  return info.infer(operands, attrs);
}

} // namespace mdl::stdlib
