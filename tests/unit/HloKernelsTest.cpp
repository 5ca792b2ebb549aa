// Unit tests for the CPU kernels of the HLO import operations, each against
// XLA's semantics written out here naively (loops over the definition), or
// against values worked out by hand for the edge cases (division by zero,
// shifts by the width, NaN and signed zeros in orders, clamped indices).
#include "KernelTestUtil.h"
#include "stdlib/Registry.h"

#include <algorithm>

using namespace kerneltest;

namespace {

// Runs an operation with several results.
std::vector<Tensor> runAll(OpKind kind, std::vector<Tensor> in, std::vector<NamedAttr> attrs) {
  std::vector<TensorType> types;
  for (const Tensor &t : in)
    types.push_back(t.type());
  stdlib::InferResult r = stdlib::inferTypes(kind, types, attrs);
  EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
  ir::Operation op(kind);
  op.attrs = attrs;
  for (const TensorType &t : r.types)
    op.addResult(t);
  std::vector<Tensor> out;
  auto err = backend::cpu::runKernel(op, in, out);
  EXPECT_FALSE(err.has_value()) << *err;
  return out;
}

NamedAttr str(const char *n, const char *v) { return attr(n, Attribute::string(v)); }
NamedAttr flag(const char *n, bool v) { return attr(n, Attribute::boolean(v)); }
NamedAttr num(const char *n, int64_t v) { return attr(n, Attribute::integer(v)); }

TEST(HloKernelsTest, IntegerDivisionAndRemainderTruncate) {
  Tensor a = makeInts(DType::I32, {6}, {7, -7, 7, -7, 5, INT32_MIN});
  Tensor b = makeInts(DType::I32, {6}, {2, 2, -2, 0, 0, -1});
  expectValues(ok(OpKind::DivTrunc, {a, b}), {3, -3, -3, -1, -1, INT32_MIN});
  expectValues(ok(OpKind::Rem, {a, b}), {1, -1, 1, -7, 5, 0});
  // Unsigned: -2 is 4294967294.
  Tensor u = makeInts(DType::I32, {2}, {-2, 7}), v = makeInts(DType::I32, {2}, {3, 0});
  Tensor q = ok(OpKind::DivTrunc, {u, v}, {flag("is_unsigned", true)});
  EXPECT_EQ(q.getInt(0), 1431655764);
  EXPECT_EQ(q.getInt(1), -1); // all bits set
  Tensor f = ok(OpKind::Rem, {make(DType::F32, {2}, {-7.5, 7.5}), make(DType::F32, {2}, {2, -2})});
  expectValues(f, {-1.5, 1.5});
}

TEST(HloKernelsTest, ShiftsByTheFullWidth) {
  Tensor a = makeInts(DType::I32, {4}, {-8, -8, 1, -8});
  Tensor s = makeInts(DType::I32, {4}, {1, 32, 31, 40});
  expectValues(ok(OpKind::ShiftLeft, {a, s}), {-16, 0, double(INT32_MIN), 0});
  expectValues(ok(OpKind::ShiftRightLogical, {a, s}), {2147483644, 0, 0, 0});
  expectValues(ok(OpKind::ShiftRightArith, {a, s}), {-4, -1, 0, -1});
  Tensor x = makeInts(DType::I64, {2}, {0, -1});
  expectValues(ok(OpKind::Popcnt, {x}), {0, 64});
  expectValues(ok(OpKind::Clz, {makeInts(DType::I32, {3}, {0, 1, -1})}), {32, 31, 0});
}

TEST(HloKernelsTest, CompareOrders) {
  double nan = std::nan("");
  Tensor a = make(DType::F32, {4}, {-0.0, nan, 1, -nan});
  Tensor b = make(DType::F32, {4}, {0.0, 1, nan, nan});
  expectValues(ok(OpKind::Compare, {a, b}, {str("direction", "LT")}), {0, 0, 0, 0});
  expectValues(ok(OpKind::Compare, {a, b}, {str("direction", "LT"), str("order", "total")}),
               {1, 0, 1, 1});
  Tensor u = makeInts(DType::I32, {2}, {-1, 1}), v = makeInts(DType::I32, {2}, {1, 2});
  expectValues(ok(OpKind::Compare, {u, v}, {str("direction", "GT"), str("order", "unsigned")}),
               {1, 0});
}

TEST(HloKernelsTest, ConvertsReadAndWriteUnsigned) {
  Tensor x = makeInts(DType::I32, {2}, {-1, 5});
  Tensor w = ok(OpKind::Convert, {x},
                {attr("dtype", Attribute::dtype(DType::I64)), flag("from_unsigned", true)});
  EXPECT_EQ(w.getInt(0), 4294967295);
  Tensor f = ok(OpKind::Convert, {make(DType::F32, {4}, {-3, 5e9, 7.9, std::nan("")})},
                {attr("dtype", Attribute::dtype(DType::I32)), flag("to_unsigned", true)});
  EXPECT_EQ(f.getInt(0), 0);
  EXPECT_EQ(f.getInt(1), -1); // 4294967295
  EXPECT_EQ(f.getInt(2), 7);
  EXPECT_EQ(f.getInt(3), 0);
  Tensor g = ok(OpKind::Convert, {makeInts(DType::I64, {1}, {-1})},
                {attr("dtype", Attribute::dtype(DType::F64)), flag("from_unsigned", true)});
  EXPECT_EQ(g.getDouble(0), 18446744073709551615.0);
}

TEST(HloKernelsTest, ReducePrecisionToBf16MatchesBf16Rounding) {
  std::vector<double> xs = {1.0, 1.00390625, 1.005859375, 3.14159265, -65504, 1e-40, 3e38};
  Tensor y = ok(OpKind::ReducePrecision, {make(DType::F32, {7}, xs)},
                {num("exponent_bits", 8), num("mantissa_bits", 7)});
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_EQ(float(y.getDouble(int64_t(i))), ir::bf16ToFloat(ir::floatToBf16(float(xs[i]))))
        << xs[i];
  Tensor h = ok(OpKind::ReducePrecision, {make(DType::F32, {2}, {1e6, 1e-9})},
                {num("exponent_bits", 5), num("mantissa_bits", 10)});
  EXPECT_TRUE(std::isinf(h.getDouble(0))); // beyond f16
  EXPECT_EQ(h.getDouble(1), 0.0);
}

TEST(HloKernelsTest, DynamicSlicesClampTheirStart) {
  Tensor x = make(DType::F32, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor i = makeInts(DType::I32, {}, {1}), j = makeInts(DType::I32, {}, {3});
  expectValues(ok(OpKind::DynamicSlice, {x, i, j}, {ints("sizes", {1, 2})}), {6, 7});
  Tensor u = make(DType::F32, {1, 2}, {-1, -2});
  Tensor m = makeInts(DType::I64, {}, {-5});
  expectValues(ok(OpKind::DynamicUpdateSlice, {x, u, m, j}), {0, 1, -1, -2, 4, 5, 6, 7});
}

TEST(HloKernelsTest, PadWithNegativeAndInteriorPadding) {
  Tensor x = make(DType::F32, {3}, {1, 2, 3});
  Tensor v = make(DType::F32, {}, {9});
  expectValues(ok(OpKind::PadGeneral, {x, v},
                  {ints("low", {-1}), ints("high", {2}), ints("interior", {1})}),
               {9, 2, 9, 3, 9, 9});
}

// dot_general against its definition.
TEST(HloKernelsTest, DotGeneralMatchesItsDefinition) {
  // lhs [K=3, B=2, M=4], rhs [N=5, B=2, K=3]: result [B, M, N].
  Tensor a = randomTensor(DType::F32, {3, 2, 4}, 1), b = randomTensor(DType::F32, {5, 2, 3}, 2);
  Tensor c = ok(OpKind::DotGeneral, {a, b},
                {ints("lhs_batch", {1}), ints("rhs_batch", {1}), ints("lhs_contract", {0}),
                 ints("rhs_contract", {2})});
  ASSERT_EQ(shapeOf(c), (Shape{2, 4, 5}));
  for (int bi = 0; bi < 2; ++bi)
    for (int m = 0; m < 4; ++m)
      for (int n = 0; n < 5; ++n) {
        double s = 0;
        for (int k = 0; k < 3; ++k)
          s += a.getDouble(flatten({k, bi, m}, {3, 2, 4})) *
               b.getDouble(flatten({n, bi, k}, {5, 2, 3}));
        EXPECT_NEAR(c.getDouble(flatten({bi, m, n}, {2, 4, 5})), s, 1e-5);
      }
  Tensor ib = makeInts(DType::I32, {2, 2}, {1, 2, 3, 4});
  expectValues(ok(OpKind::DotGeneral, {ib, ib}, {ints("lhs_contract", {1}), ints("rhs_contract", {0})}),
               {7, 10, 15, 22});
}

// XLA convolution by its definition, on NCHW / OIHW operands.
std::vector<double> naiveConv(const Tensor &x, const Tensor &w, const Shape &out, Shape stride,
                              Shape pad, Shape ldil, Shape rdil, int64_t G, int64_t BG) {
  Shape xs = shapeOf(x), ws = shapeOf(w);
  int64_t I = ws[1], O = ws[0], Nout = out[0];
  std::vector<double> y(size_t(out[0] * out[1] * out[2] * out[3]), 0);
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t o = 0; o < O; ++o) {
      int64_t g = o / (O / (G * BG));
      int64_t nIn = G > 1 ? n : g * Nout + n, c0 = G > 1 ? g * I : 0;
      for (int64_t oy = 0; oy < out[2]; ++oy)
        for (int64_t ox = 0; ox < out[3]; ++ox) {
          double s = 0;
          for (int64_t c = 0; c < I; ++c)
            for (int64_t ky = 0; ky < ws[2]; ++ky)
              for (int64_t kx = 0; kx < ws[3]; ++kx) {
                int64_t py = oy * stride[0] + ky * rdil[0] - pad[0];
                int64_t px = ox * stride[1] + kx * rdil[1] - pad[2];
                if (py < 0 || px < 0 || py % ldil[0] || px % ldil[1])
                  continue;
                py /= ldil[0];
                px /= ldil[1];
                if (py >= xs[2] || px >= xs[3])
                  continue;
                s += x.getDouble(flatten({nIn, c0 + c, py, px}, xs)) *
                     w.getDouble(flatten({o, c, ky, kx}, ws));
              }
          y[size_t(flatten({n, o, oy, ox}, out))] = s;
        }
    }
  return y;
}

TEST(HloKernelsTest, ConvolutionMatchesItsDefinition) {
  struct Case {
    Shape x, w, stride, pad, ldil, rdil;
    int64_t groups, batchGroups;
  } cases[] = {
      {{2, 3, 7, 6}, {4, 3, 3, 2}, {1, 1}, {1, 1, 0, 0}, {1, 1}, {1, 1}, 1, 1},
      {{1, 4, 9, 9}, {6, 2, 3, 3}, {2, 3}, {-1, 2, 1, 0}, {1, 1}, {2, 1}, 2, 1},
      {{2, 3, 4, 4}, {2, 3, 3, 3}, {1, 1}, {1, 2, 2, 1}, {2, 2}, {1, 1}, 1, 1},
      {{4, 2, 5, 5}, {4, 2, 5, 5}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1, 4},
  };
  for (const Case &k : cases) {
    Tensor x = randomTensor(DType::F32, k.x, 3), w = randomTensor(DType::F32, k.w, 4);
    Tensor y = ok(OpKind::Convolution, {x, w},
                  {str("dim_labels", "bf01_oi01->bf01"), ints("strides", k.stride),
                   ints("padding", k.pad), ints("lhs_dilation", k.ldil),
                   ints("rhs_dilation", k.rdil), num("feature_groups", k.groups),
                   num("batch_groups", k.batchGroups)});
    expectValues(y, naiveConv(x, w, shapeOf(y), k.stride, k.pad, k.ldil, k.rdil, k.groups,
                              k.batchGroups),
                 1e-5);
  }
  // The same convolution with NHWC / HWIO labels gives the transposed result.
  Tensor x = randomTensor(DType::F32, {2, 3, 5, 5}, 5), w = randomTensor(DType::F32, {4, 3, 3, 3}, 6);
  Tensor ref = ok(OpKind::Convolution, {x, w}, {str("dim_labels", "bf01_oi01->bf01")});
  Tensor xt = ok(OpKind::Transpose, {x}, {ints("perm", {0, 2, 3, 1})});
  Tensor wt = ok(OpKind::Transpose, {w}, {ints("perm", {2, 3, 1, 0})});
  Tensor yt = ok(OpKind::Convolution, {xt, wt}, {str("dim_labels", "b01f_01io->b01f")});
  expectValues(ok(OpKind::Transpose, {yt}, {ints("perm", {0, 3, 1, 2})}), values(ref), 1e-5);
}

TEST(HloKernelsTest, ReduceAndReduceWindow) {
  Tensor x = make(DType::F32, {2, 3}, {1, std::nan(""), 3, 4, 5, 6});
  Tensor z = make(DType::F32, {}, {10});
  expectValues(ok(OpKind::Reduce, {x, z}, {ints("dims", {1}), str("reducer", "add")}),
               {std::nan(""), 25});
  Tensor m = make(DType::F32, {}, {-INFINITY});
  expectValues(ok(OpKind::Reduce, {x, m}, {ints("dims", {1}), str("reducer", "max")}),
               {std::nan(""), 6});
  Tensor p = make(DType::Bool, {2, 2}, {1, 0, 1, 1});
  expectValues(ok(OpKind::Reduce, {p, make(DType::Bool, {}, {1})},
                  {ints("dims", {1}), str("reducer", "and")}),
               {0, 1});
  // Max pooling 3x3 stride 2 with padding 1 on a 1x1x5x5 image.
  Tensor img = randomTensor(DType::F32, {1, 1, 5, 5}, 7);
  Tensor pool = ok(OpKind::ReduceWindow, {img, m},
                   {ints("window", {1, 1, 3, 3}), ints("strides", {1, 1, 2, 2}),
                    ints("padding", {0, 0, 0, 0, 1, 1, 1, 1}), str("reducer", "max")});
  ASSERT_EQ(shapeOf(pool), (Shape{1, 1, 3, 3}));
  for (int oy = 0; oy < 3; ++oy)
    for (int ox = 0; ox < 3; ++ox) {
      double best = -INFINITY;
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
          int y = oy * 2 + ky - 1, xx = ox * 2 + kx - 1;
          if (y >= 0 && y < 5 && xx >= 0 && xx < 5)
            best = std::max(best, img.getDouble(y * 5 + xx));
        }
      EXPECT_EQ(pool.getDouble(oy * 3 + ox), best);
    }
}

TEST(HloKernelsTest, SelectAndScatterPicksTheFirstMaximum) {
  Tensor x = make(DType::F32, {1, 4}, {1, 3, 3, 2});
  Tensor src = make(DType::F32, {1, 2}, {10, 20});
  Tensor init = make(DType::F32, {}, {0.5});
  Tensor y = ok(OpKind::SelectAndScatter, {x, src, init},
                {ints("window", {1, 3}), ints("strides", {1, 2}), ints("padding", {0, 0, 0, 1}),
                 str("select", "ge"), str("scatter", "add")});
  // Windows [1 3 3] and [3 2 pad]: both select index 1 (the first 3)... the
  // second window starts at index 2, whose first maximum is index 2.
  expectValues(y, {0.5, 10.5, 20.5, 0.5});
}

TEST(HloKernelsTest, GatherAndScatterWithBatchingDims) {
  // take_along_axis: out[i, j] = x[i, idx[i, j]].
  Tensor x = make(DType::F32, {2, 3}, {10, 11, 12, 20, 21, 22});
  Tensor idx = makeInts(DType::I32, {2, 3, 1}, {2, 0, 1, 1, 5, -3});
  Tensor g = ok(OpKind::GatherGeneral, {x, idx},
                {ints("offset_dims", {}), ints("collapsed_slice_dims", {1}),
                 ints("start_index_map", {1}), num("index_vector_dim", 2),
                 ints("slice_sizes", {1, 1}), ints("operand_batching_dims", {0}),
                 ints("start_indices_batching_dims", {0})});
  expectValues(g, {12, 10, 11, 21, 22, 20}); // indices clamped into range
  // Embedding lookup: rows of a table.
  Tensor rows = ok(OpKind::GatherGeneral, {x, makeInts(DType::I64, {2}, {1, 0})},
                   {ints("offset_dims", {1}), ints("collapsed_slice_dims", {0}),
                    ints("start_index_map", {0}), num("index_vector_dim", 1),
                    ints("slice_sizes", {1, 3})});
  expectValues(rows, {20, 21, 22, 10, 11, 12});
  // Scatter-add of rows, one of them out of range (skipped).
  Tensor ops = make(DType::F32, {3, 2}, {0, 0, 0, 0, 0, 0});
  Tensor sidx = makeInts(DType::I32, {3, 1}, {2, 0, 7});
  Tensor upd = make(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor s = ok(OpKind::Scatter, {ops, sidx, upd},
                {ints("update_window_dims", {1}), ints("inserted_window_dims", {0}),
                 ints("scatter_dims_to_operand_dims", {0}), num("index_vector_dim", 1),
                 str("combiner", "add")});
  expectValues(s, {3, 4, 0, 0, 1, 2});
}

TEST(HloKernelsTest, SortAscendingIsStableWithNaNsLast) {
  double nan = std::nan("");
  Tensor k = make(DType::F32, {2, 4}, {3, nan, -0.0, 0.0, 2, 1, 2, 0});
  Tensor v = makeInts(DType::I32, {2, 4}, {0, 1, 2, 3, 0, 1, 2, 3});
  std::vector<Tensor> out = runAll(OpKind::Sort, {k, v},
                                   {num("dimension", 1), flag("is_stable", true), str("order", "asc")});
  expectValues(out[0], {-0.0, 0.0, 3, nan, 0, 1, 2, 2});
  expectValues(out[1], {2, 3, 0, 1, 3, 1, 0, 2});
  out = runAll(OpKind::Sort, {k, v}, {num("dimension", 0), str("order", "desc")});
  expectValues(out[0], {3, nan, 2, 0.0, 2, 1, -0.0, 0});
}

TEST(HloKernelsTest, BatchNormMatchesItsFormulas) {
  Tensor x = randomTensor(DType::F32, {4, 3, 2}, 9);
  Tensor scale = make(DType::F32, {3}, {1, 2, 0.5}), offset = make(DType::F32, {3}, {0, 1, -1});
  std::vector<Tensor> t = runAll(OpKind::BatchNormTraining, {x, scale, offset},
                                 {attr("epsilon", Attribute::real(1e-3)), num("feature_index", 1)});
  for (int c = 0; c < 3; ++c) {
    double s = 0, q = 0;
    for (int n = 0; n < 4; ++n)
      for (int w = 0; w < 2; ++w)
        s += x.getDouble(flatten({n, c, w}, {4, 3, 2}));
    double mean = s / 8;
    for (int n = 0; n < 4; ++n)
      for (int w = 0; w < 2; ++w) {
        double d = x.getDouble(flatten({n, c, w}, {4, 3, 2})) - mean;
        q += d * d;
      }
    double var = q / 8;
    EXPECT_NEAR(t[1].getDouble(c), mean, 1e-5);
    EXPECT_NEAR(t[2].getDouble(c), var, 1e-5);
    double want = (x.getDouble(flatten({1, c, 1}, {4, 3, 2})) - mean) / std::sqrt(var + 1e-3) *
                      scale.getDouble(c) + offset.getDouble(c);
    EXPECT_NEAR(t[0].getDouble(flatten({1, c, 1}, {4, 3, 2})), want, 1e-4);
  }
  Tensor dy = randomTensor(DType::F32, {4, 3, 2}, 10);
  std::vector<Tensor> g = runAll(OpKind::BatchNormGrad, {x, scale, t[1], t[2], dy},
                                 {attr("epsilon", Attribute::real(1e-3)), num("feature_index", 1)});
  double go = 0;
  for (int n = 0; n < 4; ++n)
    for (int w = 0; w < 2; ++w)
      go += dy.getDouble(flatten({n, 0, w}, {4, 3, 2}));
  EXPECT_NEAR(g[2].getDouble(0), go, 1e-4);
}

TEST(HloKernelsTest, BitcastConvertAndIota) {
  Tensor f = make(DType::F32, {2}, {1.0, -2.0});
  Tensor i = ok(OpKind::BitcastConvert, {f}, {attr("dtype", Attribute::dtype(DType::I32))});
  EXPECT_EQ(i.getInt(0), 0x3f800000);
  EXPECT_EQ(uint32_t(i.getInt(1)), 0xc0000000u);
  Tensor io = ok(OpKind::Iota, {}, {attr("type", Attribute::type(TensorType::of(DType::F32, {2, 3}))),
                                    num("dimension", 1)});
  expectValues(io, {0, 1, 2, 0, 1, 2});
}

} // namespace
