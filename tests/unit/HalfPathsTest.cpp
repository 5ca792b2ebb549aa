// The JIT's fast paths for bf16 and f16, and its row buffers: which products
// the runtime multiplies (rather than a CPU kernel), and which values of a
// fused loop nest are kept in a row buffer for a later phase
// (backend/jit/RowCache.cpp). Results against the interpreter are checked
// by tests/jit/halves.py and the random programs; this checks the decisions.
#include "PlannedProgram.h"
#include "stdlib/Registry.h"

#include "backend/jit/Codegen.h"
#include "backend/jit/Runtime.h"
#include "ir/passes/FusionDomain.h"

#include <gtest/gtest.h>

namespace mdl {
namespace {

using namespace ir;

using Prepared = test::PlannedProgram;

Prepared prepare(const std::string &text) { return test::planProgram(text); }

TEST(HalfPathsTest, ProductsOfHalvesRunInTheRuntime) {
  Prepared p = prepare(R"(
fn main(a: bf16[64, 32], b: bf16[32, 48], c: f16[4, 32, 16], d: i32[8, 8]) -> (bf16[64, 48], f16[4, 16, 16], i32[8, 8]) {
  return a @ b, transpose(c, [0, 2, 1]) @ c, d @ d
})");
  std::vector<const Operation *> mm = p.ops(OpKind::Matmul);
  ASSERT_EQ(mm.size(), 3u);
  // bf16 and f16 products (the second reading a transposed view) are
  // mdl_rt_matmul calls; integers keep their CPU kernel (a handle).
  EXPECT_EQ(p.plan.handleOf.count(mm[0]), 0u);
  EXPECT_EQ(p.plan.handleOf.count(mm[1]), 0u);
  EXPECT_EQ(p.plan.copyFrom.count(mm[1]->operands[0]), 0u);
  EXPECT_EQ(p.plan.handleOf.count(mm[2]), 1u);
}

TEST(HalfPathsTest, MatmulCodes) {
  using backend::jit::matmulCode;
  EXPECT_EQ(matmulCode(DType::F32, DType::F32), backend::jit::kMatmulF32);
  EXPECT_EQ(matmulCode(DType::BF16, DType::BF16), backend::jit::kMatmulBf16);
  EXPECT_EQ(matmulCode(DType::BF16, DType::F32), backend::jit::kMatmulBf16F32);
  EXPECT_EQ(matmulCode(DType::F16, DType::F32), backend::jit::kMatmulF16F32);
  EXPECT_EQ(matmulCode(DType::BF16, DType::F64), -1);
  EXPECT_EQ(matmulCode(DType::I32, DType::I32), -1);
}

/// The one fusion of main and what planRowCache keeps for it.
std::unordered_map<const Value *, backend::jit::RowCacheSlot> kept(const Prepared &p,
                                                                   int64_t budget) {
  std::vector<const Operation *> f = p.ops(OpKind::Fusion);
  EXPECT_EQ(f.size(), 1u);
  if (f.empty())
    return {};
  auto dom = passes::fusionDomain(*f[0]);
  EXPECT_TRUE(dom.has_value());
  return backend::jit::planRowCache(*f[0]->regions[0], dom->dims, dom->innerRank, budget);
}

TEST(HalfPathsTest, SoftmaxKeepsItsExponentials) {
  Prepared p = prepare(R"(
fn main(s: bf16[12, 197, 197]) -> bf16[12, 197, 197] {
  return softmax(s * 0.125, axis = -1)
})");
  auto k = kept(p, 32 * 1024);
  ASSERT_EQ(k.size(), 1u);
  const Value *v = k.begin()->first;
  // exp(x - max): computed by the sum's loop (phase 1, after the max's),
  // read back by the division.
  ASSERT_TRUE(v->def);
  EXPECT_EQ(v->def->kind, OpKind::Exp);
  EXPECT_EQ(k.begin()->second.phase, 1);
  EXPECT_EQ(k.begin()->second.index, 0);
}

TEST(HalfPathsTest, CheapValuesAndLongRowsAreRecomputed) {
  // layernorm's x - mean costs one subtraction: recomputed, not stored.
  Prepared ln = prepare(R"(
fn main(x: f32[64, 768], g: f32[768], b: f32[768]) -> f32[64, 768] {
  return layernorm(x, g, b)
})");
  EXPECT_TRUE(kept(ln, 32 * 1024).empty());
  // A row of 20,000 f32 values needs 80 KB: over the budget.
  Prepared wide = prepare(R"(
fn main(x: f32[4, 20000]) -> f32[4, 20000] {
  return softmax(x, axis = -1)
})");
  EXPECT_TRUE(kept(wide, 32 * 1024).empty());
  EXPECT_EQ(kept(wide, 128 * 1024).size(), 1u);
}

} // namespace
} // namespace mdl
