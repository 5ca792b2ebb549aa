// The `mpc` device kind (see MpcKind.h).
#include "backend/mpc/MpcKind.h"
#include "backend/runtime/DeviceBackend.h"
#include "stdlib/OpKind.h"

#include <algorithm>

namespace mdl::backend::mpc {

namespace {

using ir::OpKind;

/// What the secret-sharing protocol implements: linear algebra, additions
/// and products, comparisons, ReLU, a sigmoid approximation, max/min and
/// sums, and data movement with public indices. Structure (constants,
/// globals, loads) comes with every segment.
bool implemented(OpKind k) {
  static const OpKind ops[] = {
      OpKind::Constant, OpKind::Global,  OpKind::Load,      OpKind::Call,
      OpKind::If,       OpKind::For,     OpKind::While,     OpKind::Yield,
      OpKind::Return,   OpKind::Print,   OpKind::Segment,   OpKind::Fusion,
      OpKind::To,       OpKind::Reveal,  OpKind::Transfer,  OpKind::Add,
      OpKind::Sub,      OpKind::Mul,     OpKind::Maximum,   OpKind::Minimum,
      OpKind::Lt,       OpKind::Le,      OpKind::Gt,        OpKind::Ge,
      OpKind::Neg,      OpKind::Sigmoid, OpKind::Relu,      OpKind::Cast,
      OpKind::Sum,      OpKind::Mean,    OpKind::ReduceMax, OpKind::ReduceMin,
      OpKind::Matmul,   OpKind::Transpose, OpKind::Reshape, OpKind::BroadcastTo,
      OpKind::Concat,   OpKind::Stack,   OpKind::ExpandDims, OpKind::Squeeze,
      OpKind::Slice,    OpKind::Pad,     OpKind::Zeros,     OpKind::Ones,
      OpKind::Full,     OpKind::Arange,  OpKind::RandomNormal, OpKind::RandomUniform};
  return std::find(std::begin(ops), std::end(ops), k) != std::end(ops);
}

class MpcBackend : public DeviceBackend {
public:
  stdlib::DeviceKindInfo descriptor() const override {
    using stdlib::ParamKind;
    stdlib::DeviceKindInfo k;
    k.name = "mpc";
    k.summary = "secret-shared computation among `parties` parties, in fixed point";
    k.args = {stdlib::ParamSpec{"parties", ParamKind::Int, ir::Attribute::integer(3), false},
              stdlib::ParamSpec{"protocol", ParamKind::String, ir::Attribute::string("rep3"),
                                false},
              stdlib::ParamSpec{"frac_bits", ParamKind::Int, ir::Attribute::integer(18), false}};
    k.memory = stdlib::MemoryModel::Secret;
    k.checkArg = [](const std::string &arg, const ir::Attribute &v) -> std::string {
      if (arg == "parties" && (v.asInt() < 2 || v.asInt() > 16))
        return "2 to 16 parties";
      if (arg == "frac_bits" && (v.asInt() < 1 || v.asInt() > 40))
        return "1 to 40 fractional bits";
      if (arg == "protocol" && v.asString() != "rep3" && v.asString() != "additive")
        return "expected \"rep3\" or \"additive\"";
      return "";
    };
    return k;
  }
  bool supports(OpKind k) const override { return implemented(k); }
  // Secret values are never computed as plaintext host code.
  bool inlineIntoHost(const mdl_device_interface &) const override { return false; }
  std::unique_ptr<Artifact> compile(const ir::Operation &, std::string &error) const override {
    error = "this build has no MPC runtime";
    return nullptr;
  }
  RuntimeChoice runtime() override {
    return {nullptr, "secret-shared execution is not available", true};
  }
};

} // namespace

bool registerMpcKind() { return registerDeviceBackend(std::make_unique<MpcBackend>()); }

} // namespace mdl::backend::mpc
