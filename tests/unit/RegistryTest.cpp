// The operation registry: every kind is registered exactly once, every
// operation of LANGUAGE.md's table is callable by its name, and the
// signatures carry the documented defaults.
#include "stdlib/Registry.h"

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
        info.kind != ir::OpKind::Reveal)
      EXPECT_NE(info.infer, nullptr) << ir::opName(info.kind);
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
    EXPECT_GE(static_cast<int>(info->kind), static_cast<int>(ir::OpKind::Expm1))
        << n << " is callable but neither in LANGUAGE.md's table nor an HLO operation";
  }
  EXPECT_EQ(stdlib::lookupCallable("softplusx"), nullptr);
}

TEST(Registry, DefaultsAndDevices) {
  const stdlib::OpInfo *sm = stdlib::lookupCallable("softmax");
  ASSERT_EQ(sm->params.size(), 2u);
  EXPECT_STREQ(sm->params[1].name, "axis");
  ASSERT_TRUE(sm->params[1].dflt.has_value());
  EXPECT_EQ(sm->params[1].dflt->asInt(), -1);
  const stdlib::OpInfo *ln = stdlib::lookupCallable("layernorm");
  EXPECT_DOUBLE_EQ(ln->params[3].dflt->asFloat(), 1e-5);
  // MPC implements matmul and relu but not exp.
  EXPECT_TRUE(stdlib::lookupCallable("relu")->devices & stdlib::kMpc);
  EXPECT_TRUE(stdlib::opInfo(ir::OpKind::Matmul).devices & stdlib::kMpc);
  EXPECT_FALSE(stdlib::lookupCallable("exp")->devices & stdlib::kMpc);
  EXPECT_TRUE(stdlib::lookupCallable("exp")->devices & stdlib::kHip);
}

TEST(Registry, OpNamesRoundTrip) {
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    ir::OpKind out;
    ASSERT_TRUE(ir::parseOpName(ir::opName(static_cast<ir::OpKind>(k)), out));
    EXPECT_EQ(static_cast<int>(out), k);
  }
}
