// The operation registry: every kind is registered exactly once, every
// operation of LANGUAGE.md's table is callable by its name, and the
// signatures carry the documented defaults.
#include "stdlib/DeviceKinds.h"
#include "stdlib/OpAttrs.h"
#include "stdlib/Registry.h"

#include <algorithm>

#include <gtest/gtest.h>

#include <set>

using namespace mdl;

TEST(Registry, EveryKindHasAnEntry) {
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    const stdlib::OpInfo &info = stdlib::opInfo(static_cast<ir::OpKind>(k));
    EXPECT_EQ(static_cast<int>(info.kind), k) << ir::opName(static_cast<ir::OpKind>(k));
    bool structural = info.cls == stdlib::OpClass::Structural;
    // Everything that is not structure has a shape rule.
    if (!structural && info.kind != ir::OpKind::Transfer && info.kind != ir::OpKind::To &&
        info.kind != ir::OpKind::Reveal) {
      EXPECT_NE(info.infer, nullptr) << ir::opName(info.kind);
    }
  }
}

TEST(Registry, LanguageTableIsCallable) {
  // The standard library table of LANGUAGE.md (operators are not names).
  const char *names[] = {
      "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu",
      "sin", "cos", "floor", "ceil", "sign", "pow", "maximum", "minimum", "clip",
      "select", "sum", "mean", "max", "min", "prod", "argmax", "argmin", "matmul",
      "transpose", "reshape", "broadcast_to", "concat", "stack", "expand_dims",
      "squeeze", "gather", "pad", "softmax", "log_softmax", "layernorm", "conv2d",
      "max_pool2d", "avg_pool2d", "embedding", "zeros", "ones", "full", "arange",
      "random_normal", "random_uniform", "cast", "to", "reveal", "print"};
  std::set<std::string> seen;
  for (const char *n : names) {
    const stdlib::OpInfo *info = stdlib::lookupCallable(n);
    ASSERT_NE(info, nullptr) << n;
    EXPECT_STREQ(info->callName, n);
    seen.insert(n);
  }
  // Anything else callable is one of the operations added for HLO import
  // (after `expm1` in Ops.def, documented in docs/hlo-import.md).
  for (const std::string &n : stdlib::callableNames()) {
    if (seen.count(n))
      continue;
    const stdlib::OpInfo *info = stdlib::lookupCallable(n);
    EXPECT_EQ(info->dialect, stdlib::Dialect::Hlo)
        << n << " is callable but neither in LANGUAGE.md's table nor an HLO operation";
  }
  EXPECT_EQ(stdlib::lookupCallable("softplusx"), nullptr);
}

TEST(Registry, Defaults) {
  const stdlib::OpInfo *sm = stdlib::lookupCallable("softmax");
  ASSERT_EQ(sm->params.size(), 2u);
  EXPECT_STREQ(sm->params[1].name, "axis");
  ASSERT_TRUE(sm->params[1].dflt.has_value());
  EXPECT_EQ(sm->params[1].dflt->asInt(), -1);
  const stdlib::OpInfo *ln = stdlib::lookupCallable("layernorm");
  EXPECT_DOUBLE_EQ(ln->params[3].dflt->asFloat(), 1e-5);
  EXPECT_EQ(ln->operandCount, 3);
  EXPECT_EQ(stdlib::lookupCallable("concat")->operandCount, -1);
}

// Passes ask the table; these are the facts they ask about.
TEST(Registry, Traits) {
  using ir::OpKind;
  EXPECT_TRUE(stdlib::isTransfer(OpKind::To) && stdlib::isTransfer(OpKind::Reveal) &&
              stdlib::isTransfer(OpKind::Transfer));
  EXPECT_FALSE(stdlib::isTransfer(OpKind::Add));
  EXPECT_TRUE(stdlib::isOrchestration(OpKind::While) && stdlib::isOrchestration(OpKind::Print));
  EXPECT_FALSE(stdlib::isOrchestration(OpKind::Matmul));
  EXPECT_TRUE(stdlib::isView(OpKind::Reshape) && stdlib::isView(OpKind::Slice));
  EXPECT_FALSE(stdlib::isView(OpKind::Concat));
  EXPECT_FALSE(stdlib::hasKernel(OpKind::Call));
  EXPECT_TRUE(stdlib::hasKernel(OpKind::Gelu));
  EXPECT_TRUE(stdlib::isFusibleKind(OpKind::Exp, ir::DType::F32));
  EXPECT_FALSE(stdlib::isFusibleKind(OpKind::Exp, ir::DType::I32)); // no float: the kernel
  EXPECT_TRUE(stdlib::isFusibleKind(OpKind::Sum, ir::DType::I64));
  EXPECT_FALSE(stdlib::isFusibleKind(OpKind::Sum, ir::DType::Bool));
  EXPECT_TRUE(stdlib::isRowReduction(OpKind::Mean));
  EXPECT_FALSE(stdlib::isRowReduction(OpKind::Prod));
  EXPECT_GT(stdlib::opInfo(OpKind::Tanh).cost, stdlib::opInfo(OpKind::Add).cost);
  EXPECT_EQ(stdlib::opInfo(OpKind::DotGeneral).dialect, stdlib::Dialect::Hlo);
  EXPECT_EQ(stdlib::opInfo(OpKind::Matmul).dialect, stdlib::Dialect::Core);
}

// The typed accessors read attributes with the table's defaults.
TEST(Registry, TypedAttributes) {
  ir::Operation gelu(ir::OpKind::Gelu);
  EXPECT_FALSE(stdlib::attrs::Gelu::of(gelu).approximate);
  gelu.setAttr("approximate", ir::Attribute::boolean(true));
  EXPECT_TRUE(stdlib::attrs::Gelu::of(gelu).approximate);
  ir::Operation sum(ir::OpKind::Sum);
  EXPECT_FALSE(stdlib::attrs::Sum::of(sum).axis.has_value());
  sum.setAttr("axis", ir::Attribute::intList({0, 2}));
  EXPECT_EQ(*stdlib::attrs::Sum::of(sum).axis, (std::vector<int64_t>{0, 2}));
  ir::Operation conv(ir::OpKind::Conv2d);
  EXPECT_EQ(stdlib::attrs::Conv2d::of(conv).stride, (std::vector<int64_t>{1, 1}));
  ir::Operation rn(ir::OpKind::RandomNormal);
  EXPECT_DOUBLE_EQ(stdlib::attrs::RandomNormal::of(rn).std, 1.0);
}

// Which kinds implement an operation is each device kind's answer.
TEST(Registry, DeviceKindsAnswer) {
  const stdlib::DeviceKindInfo *mpc = stdlib::findDeviceKind("mpc");
  const stdlib::DeviceKindInfo *hip = stdlib::findDeviceKind("hip");
  ASSERT_NE(mpc, nullptr);
  ASSERT_NE(hip, nullptr);
  EXPECT_TRUE(mpc->supports(ir::OpKind::Relu));
  EXPECT_TRUE(mpc->supports(ir::OpKind::Matmul));
  EXPECT_TRUE(mpc->supports(ir::OpKind::Exp));
  EXPECT_FALSE(mpc->supports(ir::OpKind::Log));
  EXPECT_FALSE(mpc->supports(ir::OpKind::Print));
  EXPECT_TRUE(hip->supports(ir::OpKind::Log));
  EXPECT_FALSE(mpc->jitPreparesSegments);
  EXPECT_TRUE(hip->jitPreparesSegments);
  // What the protocol implements is said at check time.
  EXPECT_EQ(mpc->checkArg("parties", ir::Attribute::integer(3)), "");
  EXPECT_NE(mpc->checkArg("parties", ir::Attribute::integer(4)), "");
  EXPECT_EQ(mpc->checkArg("frac_bits", ir::Attribute::integer(30)), "");
  EXPECT_NE(mpc->checkArg("frac_bits", ir::Attribute::integer(31)), "");
  EXPECT_NE(mpc->checkArg("protocol", ir::Attribute::string("additive")), "");
  EXPECT_EQ(mpc->memory, stdlib::MemoryModel::Secret);
  EXPECT_EQ(stdlib::hostDeviceKind()->name, "cpu");
  EXPECT_EQ(stdlib::acceleratorDeviceKind()->name, "hip");
  std::vector<std::string> names = stdlib::supportedCallNames(*mpc);
  EXPECT_NE(std::find(names.begin(), names.end(), "relu"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "log"), names.end());
}

TEST(Registry, OpNamesRoundTrip) {
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    ir::OpKind out;
    ASSERT_TRUE(ir::parseOpName(ir::opName(static_cast<ir::OpKind>(k)), out));
    EXPECT_EQ(static_cast<int>(out), k);
  }
}
