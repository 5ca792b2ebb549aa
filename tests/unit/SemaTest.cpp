// Semantic analysis on small programs: weak literals, scopes, calls with
// symbols, and that every error of a file is reported in one run.
#include "TestSupport.h"
#include "stdlib/Registry.h"

#include <gtest/gtest.h>

using namespace mdl;

namespace {
std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (auto &x : v)
    s += (s.empty() ? "" : " ") + x;
  return s;
}
const ir::Function &fn(const test::Compiled &c, const std::string &name) {
  return *c.module->findFunction(name);
}
} // namespace

TEST(Sema, WeakLiteralsTakeTheTensorType) {
  auto c = test::compileText("fn main(x: f16[3], k: i32) -> (f16[3], i32, f32, i64[2]) {\n"
                             "  return x * 2.0, k + 1, 1.5, [1, 2] * 3\n}\n");
  ASSERT_TRUE(c->module) << join(c->codes());
  EXPECT_EQ(fn(*c, "main").resultTypes[0].str(), "f16[3]");
  // The literal 2.0 became an f16 constant.
  bool sawF16Const = false;
  ir::walk(*fn(*c, "main").body, [&](const ir::Operation &op) {
    if (op.kind == ir::OpKind::Constant && op.results[0]->type.str() == "f16")
      sawF16Const = true;
  });
  EXPECT_TRUE(sawF16Const);
}

TEST(Sema, FloatLiteralWithIntegerTensorIsAnError) {
  auto c = test::compileText("fn main(k: i64) -> i64 {\n  return k * 2.5\n}\n");
  EXPECT_FALSE(c->module);
  EXPECT_TRUE(c->hasCode("E0201"));
}

TEST(Sema, AllErrorsReported) {
  auto c = test::compileText("fn main() -> f32[2] {\n"
                             "  let a = [1.0, 2.0] + q\n"
                             "  let b = nosuchop(a)\n"
                             "  let c = cast([1, 2], i32) + [1.0, 2.0]\n"
                             "  return [1.0, 2.0] + zeros(f32[3])\n"
                             "}\n");
  EXPECT_EQ(join(c->codes()), "E0101@2 E0104@3 E0201@4 E0202@5");
}

TEST(Sema, ShadowingAndScopes) {
  auto c = test::compileText("fn main() -> f32 {\n"
                             "  let x = 1.0\n  let x = x + 1.0\n"
                             "  let y = if x > 0.0 { let t = x * 2.0\n yield t } else { yield x }\n"
                             "  return t\n}\n");
  EXPECT_EQ(join(c->codes()), "E0101@6"); // t is local to the branch
}

TEST(Sema, SymbolBindingAtCalls) {
  auto c = test::compileText("fn add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }\n"
                             "fn main() -> f32[3] {\n  return add(zeros(f32[3]), ones(f32[4]))\n}\n");
  EXPECT_EQ(join(c->codes()), "E0205@3");
  auto ok = test::compileText("fn add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }\n"
                              "fn main() -> f32[3] {\n  return add(zeros(f32[3]), [1.0, 2.0, 3.0])\n}\n");
  EXPECT_TRUE(ok->module) << join(ok->codes());
}

TEST(Sema, InferredResultTypesAndKeywordArgs) {
  auto c = test::compileText("fn main() -> f32[2, 1] {\n"
                             "  return helper(x = [[1.0, 2.0], [3.0, 4.0]])\n}\n"
                             "fn helper(x: f32[2, 2]) { return sum(x, axis = 1, keepdims = true) }\n");
  ASSERT_TRUE(c->module) << join(c->codes());
  EXPECT_EQ(fn(*c, "helper").resultTypes[0].str(), "f32[2, 1]");
}

TEST(Sema, BuiltinSignatureErrors) {
  auto c = test::compileText("fn main(x: f32[2, 3]) -> f32[2, 3] {\n"
                             "  let a = softmax(x, axs = 1)\n"
                             "  let b = relu(x, x)\n"
                             "  let d = sum(x, axis = 5)\n"
                             "  return x\n}\n");
  EXPECT_EQ(join(c->codes()), "E0204@2 E0204@3 E0204@4");
}

TEST(Sema, ControlFlowTypes) {
  auto c = test::compileText("fn main(c: bool, x: f32[2]) -> f32[2] {\n"
                             "  let s = for i in 0..3 carry (acc = x) { yield acc + 1 }\n"
                             "  let w = while c carry (v = 0) { yield v + 1.5 }\n"
                             "  return s\n}\n");
  EXPECT_EQ(join(c->codes()), "E0201@3"); // 1.5 cannot join the i64 carry
  auto d = test::compileText("fn main(x: f32[2]) -> f32[2] {\n"
                             "  let s = for i in 0..3 carry (acc = x) { yield sum(acc) }\n"
                             "  return s\n}\n");
  EXPECT_EQ(join(d->codes()), "E0206@2");
}

TEST(Sema, DevicesAndPlacementNames) {
  auto c = test::compileText("device g0 = hip(0)\ndevice g0 = hip(1)\ndevice x = tpu(0)\n"
                             "device h = cpu(threads = 0)\n"
                             "fn main(a: f32[2]) -> f32[2] {\n  return a * 2.0 on g7\n}\n");
  EXPECT_EQ(join(c->codes()), "E0103@2 E0204@3 E0204@4 E0102@6");
}

TEST(Sema, ConstsAndIndexing) {
  auto c = test::compileText("const n = 2\nconst t = [[1.0, 2.0], [3.0, 4.0]] * 2.0\n"
                             "fn main() -> (f32[2], f32, f32[2]) {\n"
                             "  let k = arange(n)\n"
                             "  return t[0], t[1, -1], t[:, n - 1]\n}\n");
  ASSERT_TRUE(c->module) << join(c->codes());
  auto bad = test::compileText("fn main() -> f32 {\n  let t = [1.0, 2.0]\n  return t[2]\n}\n");
  EXPECT_EQ(join(bad->codes()), "E0210@3");
  auto cyc = test::compileText("const a = b\nconst b = a\nfn main() -> f32 { return 1.0 }\n");
  EXPECT_TRUE(cyc->hasCode("E0208"));
}

TEST(Sema, Recursion) {
  auto c = test::compileText("fn f(x: f32) -> f32 { return g(x) }\n"
                             "fn g(x: f32) -> f32 { return f(x) }\n"
                             "fn main() -> f32 { return f(1.0) }\n");
  EXPECT_TRUE(c->hasCode("E0208"));
}
