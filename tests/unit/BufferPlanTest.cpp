// Buffer planning for the JIT (backend/jit/BufferPlan.h): offset assignment,
// sharing of arena slots by liveness, views instead of copies, values
// computed straight into their destinations, and updates computed in the
// buffer of the operand they update when, and only when, that is safe.
#include "PlannedProgram.h"
#include "stdlib/Registry.h"

#include "backend/jit/BufferPlan.h"

#include <gtest/gtest.h>

#include <random>

namespace mdl {
namespace {

using backend::jit::FunctionPlan;
using backend::jit::PlanInterval;
using backend::jit::Root;
using namespace ir;

bool overlap(const PlanInterval &a, const PlanInterval &b) {
  bool time = a.start <= b.end && b.start <= a.end;
  bool space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
  return time && space;
}

TEST(AssignOffsetsTest, DisjointLifetimesShare) {
  std::vector<PlanInterval> v = {{1000, 0, 1}, {1000, 2, 3}, {1000, 4, 5}};
  EXPECT_EQ(backend::jit::assignOffsets(v), 1024);
  for (const PlanInterval &i : v)
    EXPECT_EQ(i.offset, 0);
}

TEST(AssignOffsetsTest, OverlappingLifetimesDoNot) {
  std::vector<PlanInterval> v = {{100, 0, 4}, {200, 2, 6}, {50, 5, 8}};
  int64_t total = backend::jit::assignOffsets(v);
  EXPECT_FALSE(overlap(v[0], v[1]));
  EXPECT_FALSE(overlap(v[1], v[2]));
  // v[0] and v[2] are never live together: v[2] reuses v[0]'s place.
  EXPECT_EQ(v[2].offset, v[0].offset);
  EXPECT_EQ(total, 256 + 128);
  for (const PlanInterval &i : v)
    EXPECT_EQ(i.offset % 64, 0);
}

TEST(AssignOffsetsTest, RandomIntervalsNeverCollide) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<PlanInterval> v;
    for (int i = 0; i < 60; ++i) {
      int s = int(rng() % 100);
      v.push_back({int64_t(1 + rng() % 5000), s, s + int(rng() % 20)});
    }
    int64_t total = backend::jit::assignOffsets(v);
    int64_t peakLive = 0;
    for (int t = 0; t < 120; ++t) {
      int64_t live = 0;
      for (const PlanInterval &i : v)
        live += i.start <= t && t <= i.end ? i.bytes : 0;
      peakLive = std::max(peakLive, live);
    }
    EXPECT_GE(total, peakLive);
    for (size_t a = 0; a < v.size(); ++a) {
      EXPECT_LE(v[a].offset + v[a].bytes, total);
      for (size_t b = a + 1; b < v.size(); ++b)
        EXPECT_FALSE(overlap(v[a], v[b])) << "round " << round << ": " << a << " and " << b;
    }
  }
}

using Planned = test::PlannedProgram;

Planned plan(const std::string &text) { return test::planProgram(text); }

TEST(BufferPlanTest, DeadIntermediatesShareMemory) {
  Planned p = plan(R"(
fn main(x: f32[64, 64], w: f32[64, 64]) -> f32[64, 64] {
  return x @ w @ w @ w @ w
})");
  std::vector<const Value *> mm = p.results(OpKind::Matmul);
  ASSERT_EQ(mm.size(), 4u);
  // t1 is dead once t2 exists, so t3 can take its place; t4 is returned and
  // is computed in the caller's buffer.
  EXPECT_EQ(p.root(mm[0]).kind, Root::Kind::Arena);
  EXPECT_EQ(p.root(mm[0]).offset, p.root(mm[2]).offset);
  EXPECT_NE(p.root(mm[0]).offset, p.root(mm[1]).offset);
  EXPECT_EQ(p.root(mm[3]).kind, Root::Kind::Result);
  EXPECT_EQ(p.plan.arenaBytes.at(-1), 2 * 64 * 64 * 4);
  EXPECT_EQ(p.plan.unsharedBytes, 3 * 64 * 64 * 4);
}

TEST(BufferPlanTest, ShapeOperationsAreViews) {
  Planned p = plan(R"(
fn main(x: f32[8, 16], w: f32[16, 16]) -> f32[4, 4] {
  let y = x @ w
  let t = transpose(y)
  let r = reshape(y, [4, 32])
  return r[:, 0:16] @ t[:, 0:4]
})");
  const Value *y = p.results(OpKind::Matmul)[0];
  const Value *t = p.results(OpKind::Transpose)[0];
  const Value *r = p.results(OpKind::Reshape)[0];
  const Value *s = p.results(OpKind::Slice)[1];
  EXPECT_EQ(p.plan.rep(p.plan.loc(t).root), p.plan.rep(p.plan.loc(y).root));
  EXPECT_EQ(p.plan.loc(t).strides, (std::vector<int64_t>{1, 16}));
  EXPECT_FALSE(p.plan.loc(t).contiguous);
  EXPECT_TRUE(p.plan.loc(r).contiguous);
  EXPECT_EQ(p.plan.rep(p.plan.loc(r).root), p.plan.rep(p.plan.loc(y).root));
  // The matrix product reads the transposed slice as it is: no copy.
  EXPECT_FALSE(p.plan.loc(s).contiguous);
  EXPECT_EQ(p.plan.copyFrom.count(s), 0u);
  EXPECT_EQ(p.plan.copyFrom.count(t), 0u);
}

TEST(BufferPlanTest, KernelsGetContiguousCopies) {
  Planned p = plan(R"(
fn main(x: f32[8, 16]) -> i64[16] {
  return argmax(transpose(x), axis = 1)
})");
  const Value *t = p.results(OpKind::Transpose)[0];
  // argmax runs on the CPU kernel, which reads row-major data.
  EXPECT_EQ(p.plan.copyFrom.count(t), 1u);
  EXPECT_TRUE(p.plan.loc(t).contiguous);
  EXPECT_FALSE(p.plan.copyFrom.at(t).contiguous);
}

TEST(BufferPlanTest, LoopStateIsUpdatedInPlace) {
  Planned p = plan(R"(
fn main(h0: f32[4, 8], w: f32[8, 8]) -> f32[4, 8] {
  let h = for i in 0..10 carry (h = h0) {
    yield tanh(h @ w)
  }
  return h * 2.0
})");
  const Operation *loop = nullptr;
  walk(*p.main->body, [&](const Operation &op) {
    if (op.kind == OpKind::For)
      loop = &op;
  });
  ASSERT_TRUE(loop);
  const Value *slot = loop->results[0].get();
  const Value *yielded = stdlib::terminatorOf(*loop->regions[0])->operands[0];
  // The fused tanh writes the carried slot directly: no copy per iteration.
  EXPECT_EQ(p.plan.rep(p.plan.loc(yielded).root), p.plan.rep(p.plan.loc(slot).root));
  // The product inside the loop reads the slot, so it cannot share it.
  const Value *prod = p.results(OpKind::Matmul)[0];
  EXPECT_NE(p.plan.rep(p.plan.loc(prod).root), p.plan.rep(p.plan.loc(slot).root));
}

TEST(BufferPlanTest, ValuesReadInLoopsLiveUntilTheLoopEnds) {
  Planned p = plan(R"(
fn main(x: f32[16, 16]) -> f32[16, 16] {
  let a = x @ x
  let h = for i in 0..3 carry (h = x) {
    let b = h @ h
    yield b @ a
  }
  return h
})");
  std::vector<const Value *> mm = p.results(OpKind::Matmul);
  ASSERT_EQ(mm.size(), 3u);
  const Root &a = p.root(mm[0]), &b = p.root(mm[1]);
  // `a` is read in every iteration, after `b` is made: they never share.
  bool apart = a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
  EXPECT_TRUE(apart);
}

TEST(BufferPlanTest, BranchResultsAreComputedInPlace) {
  Planned p = plan(R"(
fn main(x: f32[32, 32], c: bool) -> f32[32, 32] {
  let y = if c { yield x @ x } else { yield transpose(x) @ x }
  return y + 1.0
})");
  const Operation *branch = nullptr;
  walk(*p.main->body, [&](const Operation &op) {
    if (op.kind == OpKind::If)
      branch = &op;
  });
  ASSERT_TRUE(branch);
  int result = p.plan.rep(p.plan.loc(branch->results[0].get()).root);
  for (auto &r : branch->regions)
    EXPECT_EQ(p.plan.rep(p.plan.loc(stdlib::terminatorOf(*r)->operands[0]).root), result);
}

/// The first operation of kind `k` in `main`.
const Operation *firstOp(const Planned &p, OpKind k) {
  const Operation *found = nullptr;
  walk(*p.main->body, [&](const Operation &op) {
    if (op.kind == k && !found)
      found = &op;
  });
  return found;
}

/// Whether update `op` was planned in its operand's buffer, and the plan
/// agrees with itself: result 0 and operand 0 share a root exactly then.
bool inPlace(const Planned &p, const Operation *op) {
  bool shared = p.plan.rep(p.plan.loc(op->results[0].get()).root) ==
                p.plan.rep(p.plan.loc(op->operands[0]).root);
  EXPECT_EQ(shared, p.plan.inPlace.count(op) == 1u);
  return p.plan.inPlace.count(op) == 1u;
}

TEST(BufferPlanTest, LoopCarriedUpdatesAreInPlace) {
  // The benchmark's pattern: read one element, write it back, in a while
  // loop whose state is returned.
  Planned p = plan(R"(
fn main(x0: f32[1000]) -> f32[1000] {
  let (i, x) = while i < 100 carry (i = 0, x = x0) {
    let v = x[i * 7 % 1000] + 1.0
    yield i + 1, dynamic_update_slice(x, reshape(v, [1]), [i * 7 % 1000])
  }
  return x
})");
  const Operation *dus = firstOp(p, OpKind::DynamicUpdateSlice);
  ASSERT_TRUE(dus);
  EXPECT_TRUE(inPlace(p, dus));
  // dynamic_index and the update are computed inline, not by kernels.
  EXPECT_EQ(p.plan.inlined.count(dus), 1u);
  EXPECT_EQ(p.plan.inlined.count(firstOp(p, OpKind::DynamicIndex)), 1u);
  EXPECT_EQ(p.plan.handleOf.count(dus), 0u);
  // The carried slot is the caller's result buffer: the loop's state is
  // never copied, not even at the end.
  const Operation *loop = firstOp(p, OpKind::While);
  EXPECT_EQ(p.root(loop->results[1].get()).kind, Root::Kind::Result);
}

TEST(BufferPlanTest, DeadTemporariesAreUpdatedInPlace) {
  Planned p = plan(R"(
fn main(x: f32[64], u: f32[4], i: i64) -> f32[64] {
  let t = x * 2.0
  return dynamic_update_slice(t, u, [i]) + 1.0
})");
  EXPECT_TRUE(inPlace(p, firstOp(p, OpKind::DynamicUpdateSlice)));
}

TEST(BufferPlanTest, ALaterReadOfTheOldValueForcesACopy) {
  Planned p = plan(R"(
fn main(x: f32[64], u: f32[4], i: i64) -> f32[64] {
  let t = x * 2.0
  let y = dynamic_update_slice(t, u, [i])
  return y - t
})");
  EXPECT_FALSE(inPlace(p, firstOp(p, OpKind::DynamicUpdateSlice)));
}

TEST(BufferPlanTest, ArgumentsAreNeverUpdatedInPlace) {
  // The caller still owns its argument.
  Planned p = plan(R"(
fn main(x: f32[64], u: f32[4], i: i64) -> f32[64] {
  return dynamic_update_slice(x, u, [i])
})");
  EXPECT_FALSE(inPlace(p, firstOp(p, OpKind::DynamicUpdateSlice)));
}

TEST(BufferPlanTest, ValuesFromOutsideALoopAreNotUpdatedInsideIt) {
  // Every iteration must see `t` as it was before the loop.
  Planned p = plan(R"(
fn main(x: f32[64], u: f32[4]) -> f32[64] {
  let t = x * 2.0
  let s = for k in 0..4 carry (s = zeros(f32[64])) {
    yield s + dynamic_update_slice(t, u, [k * 8])
  }
  return s
})");
  EXPECT_FALSE(inPlace(p, firstOp(p, OpKind::DynamicUpdateSlice)));
}

TEST(BufferPlanTest, ACarriedValueReadLaterInTheIterationIsCopied) {
  // `b` takes the old `a`: the update of `a` cannot overwrite it.
  Planned p = plan(R"(
fn main(x: f32[64], u: f32[4]) -> (f32[64], f32[64]) {
  let (a, b) = for k in 0..4 carry (a = x * 1.0, b = x * 1.0) {
    yield dynamic_update_slice(a, u, [k]), a
  }
  return a, b
})");
  EXPECT_FALSE(inPlace(p, firstOp(p, OpKind::DynamicUpdateSlice)));
}

TEST(BufferPlanTest, AnUpdateReadingItsOwnOperandIsCopied) {
  // The update is a slice of the operand: writing it in place would read
  // elements it has already written.
  Planned p = plan(R"(
fn main(x: f32[64], i: i64) -> f32[64] {
  let t = x * 2.0
  return dynamic_update_slice(t, t[0:8], [i])
})");
  EXPECT_FALSE(inPlace(p, firstOp(p, OpKind::DynamicUpdateSlice)));
}

TEST(BufferPlanTest, AnUpdateInAWhileConditionIsCopied) {
  // The condition reads the carried slot that the body then reads again.
  Planned p = plan(R"(
fn main(x: f32[64], u: f32[1]) -> f32[64] {
  let x = while dynamic_update_slice(x, u, [0])[5] < 10.0 carry (x = x * 1.0) {
    yield x + 1.0
  }
  return x
})");
  EXPECT_FALSE(inPlace(p, firstOp(p, OpKind::DynamicUpdateSlice)));
}

TEST(BufferPlanTest, ScattersAreUpdatedInPlace) {
  Planned p = plan(R"(
fn main(x: f32[16], idx: i32[3, 1], upd: f32[3]) -> f32[16] {
  let s = for k in 0..5 carry (s = x * 1.0) {
    yield scatter([s], idx, [upd], update_window_dims = [], inserted_window_dims = [0],
                  scatter_dims_to_operand_dims = [0], index_vector_dim = 1, combiner = "add")
  }
  return s
})");
  const Operation *sc = firstOp(p, OpKind::Scatter);
  ASSERT_TRUE(sc);
  EXPECT_TRUE(inPlace(p, sc));
  // An element scatter: the host code computes it, no kernel.
  EXPECT_EQ(p.plan.inlined.count(sc), 1u);
  EXPECT_EQ(p.plan.handleOf.count(sc), 0u);
}

TEST(BufferPlanTest, WindowScattersRunInPlaceOnTheirKernel) {
  Planned p = plan(R"(
fn main(x: f32[16], idx: i32[2, 1], upd: f32[2, 4]) -> f32[16] {
  let s = for k in 0..5 carry (s = x * 1.0) {
    yield scatter([s], idx, [upd], update_window_dims = [1], inserted_window_dims = [],
                  scatter_dims_to_operand_dims = [0], index_vector_dim = 1, combiner = "add")
  }
  return s
})");
  const Operation *sc = firstOp(p, OpKind::Scatter);
  ASSERT_TRUE(sc);
  EXPECT_TRUE(inPlace(p, sc));
  // A window of four elements per update: the kernel runs it, on the
  // operand's own buffer (it skips its copy when the two are one).
  EXPECT_EQ(p.plan.inlined.count(sc), 0u);
  EXPECT_EQ(p.plan.handleOf.count(sc), 1u);
}

/// The fused_convolution results of `main`, and each one's residual.
std::vector<std::pair<const Value *, const Value *>> convolutions(const Planned &p) {
  std::vector<std::pair<const Value *, const Value *>> out;
  walk(*p.main->body, [&](const Operation &op) {
    if (op.kind == OpKind::FusedConvolution)
      out.push_back({op.results[0].get(), op.operands.back()});
  });
  return out;
}

TEST(BufferPlanTest, ConvolutionIsComputedInItsDyingResidual) {
  Planned p = plan(R"(
fn main(x: f32[1, 8, 8, 4], w: f32[3, 3, 4, 4]) -> f32[1, 8, 8, 4] {
  let r = x * 2.0
  let y = fused_convolution(x, w, r, dim_labels = "b01f_01io->b01f", padding = [1, 1, 1, 1], epilogue = "residual,relu")
  return y * 3.0
})");
  auto convs = convolutions(p);
  ASSERT_EQ(convs.size(), 1u);
  EXPECT_EQ(p.root(convs[0].first).kind, Root::Kind::Arena);
  EXPECT_EQ(p.plan.rep(p.plan.loc(convs[0].first).root),
            p.plan.rep(p.plan.loc(convs[0].second).root));
}

// Two residuals are alive until the convolution reads them: neither may
// share the output's slot (the second would be overwritten by the first).
TEST(BufferPlanTest, ConvolutionWithTwoResidualsKeepsThemApart) {
  Planned p = plan(R"(
fn main(x: f32[1, 5, 5, 3], w: f32[3, 3, 3, 4], a: f32[1, 3, 3, 4], b: f32[1, 3, 3, 4]) -> f32[1, 3, 3, 4] {
  let r1 = exp(a)
  let r2 = sin(b) * 10.0
  let y = fused_convolution(x, w, r1, r2, dim_labels = "b01f_01io->b01f", epilogue = "residual,residual")
  return y * 2.0
})");
  const Operation *conv = nullptr;
  walk(*p.main->body, [&](const Operation &op) {
    if (op.kind == OpKind::FusedConvolution)
      conv = &op;
  });
  ASSERT_NE(conv, nullptr);
  int y = p.plan.rep(p.plan.loc(conv->results[0].get()).root);
  int r1 = p.plan.rep(p.plan.loc(conv->operands[2]).root);
  int r2 = p.plan.rep(p.plan.loc(conv->operands[3]).root);
  EXPECT_NE(r1, r2);
  EXPECT_NE(y, r1);
  EXPECT_NE(y, r2);
}

TEST(BufferPlanTest, ConvolutionKeepsAResidualReadLater) {
  Planned p = plan(R"(
fn main(x: f32[1, 8, 8, 4], w: f32[3, 3, 4, 4]) -> f32[1, 8, 8, 4] {
  let r = x * 2.0
  let y = fused_convolution(x, w, r, dim_labels = "b01f_01io->b01f", padding = [1, 1, 1, 1], epilogue = "residual")
  return y * 3.0 + r
})");
  auto convs = convolutions(p);
  ASSERT_EQ(convs.size(), 1u);
  const Root &y = p.root(convs[0].first), &r = p.root(convs[0].second);
  EXPECT_NE(p.plan.rep(p.plan.loc(convs[0].first).root),
            p.plan.rep(p.plan.loc(convs[0].second).root));
  bool apart = y.offset + y.bytes <= r.offset || r.offset + r.bytes <= y.offset;
  EXPECT_TRUE(apart);
}

TEST(BufferPlanTest, ConvolutionNeverOverwritesItsInput) {
  // The residual is the input itself: the output must not take its place.
  Planned p = plan(R"(
fn main(x: f32[1, 8, 8, 4], w: f32[3, 3, 4, 4]) -> f32[1, 8, 8, 4] {
  let h = x * 2.0
  let y = fused_convolution(h, w, h, dim_labels = "b01f_01io->b01f", padding = [1, 1, 1, 1], epilogue = "residual")
  return y * 3.0
})");
  auto convs = convolutions(p);
  ASSERT_EQ(convs.size(), 1u);
  const Root &y = p.root(convs[0].first), &h = p.root(convs[0].second);
  EXPECT_NE(p.plan.rep(p.plan.loc(convs[0].first).root),
            p.plan.rep(p.plan.loc(convs[0].second).root));
  bool apart = y.offset + y.bytes <= h.offset || h.offset + h.bytes <= y.offset;
  EXPECT_TRUE(apart);
}

} // namespace
} // namespace mdl
