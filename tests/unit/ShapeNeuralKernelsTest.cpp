// Unit tests for the CPU kernels that move data (shape and indexing), the
// neural kernels (softmax, layernorm, conv2d, pooling, embedding) and the
// creation kernels (including the counter-based random generator).
#include "KernelTestUtil.h"
#include "stdlib/Registry.h"
#include "backend/cpu/KernelTable.h"

using namespace kerneltest;

namespace {

// --- Shape ------------------------------------------------------------------

std::vector<double> iota(int64_t n, double from = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = from + double(i);
  return v;
}

NamedAttr dims(const char *name, const Shape &s) {
  ir::Shape d;
  for (int64_t n : s)
    d.push_back(ir::Dim::of(n));
  return attr(name, Attribute::dimList(d));
}

constexpr int64_t kNone = INT64_MAX; // an omitted slice bound

TEST(ShapeTest, SliceWithSteps) {
  Tensor x = make(DType::F32, {6}, iota(6));
  auto slice = [&](const Tensor &t, Shape start, Shape stop, Shape step,
                   Shape drop = {}) {
    return ok(OpKind::Slice, {t},
              {ints("start", start), ints("stop", stop), ints("step", step),
               ints("drop", drop)});
  };
  expectValues(slice(x, {kNone}, {kNone}, {-1}), {5, 4, 3, 2, 1, 0}); // x[::-1]
  expectValues(slice(x, {4}, {0}, {-2}), {4, 2});     // x[4:0:-2]
  expectValues(slice(x, {-2}, {kNone}, {1}), {4, 5}); // x[-2:]
  expectValues(slice(x, {1}, {100}, {2}), {1, 3, 5}); // clamped stop
  expectValues(slice(x, {kNone}, {-7}, {-1}), {5, 4, 3, 2, 1, 0});
  EXPECT_EQ(slice(x, {3}, {3}, {1}).numElements(), 0);
  Tensor m = make(DType::I32, {3, 4}, iota(12));
  // m[::-1, 1:3] and m[1, ::-2] (the integer index drops its axis).
  Tensor a = slice(m, {kNone, 1}, {kNone, 3}, {-1, 1});
  EXPECT_EQ(shapeOf(a), (Shape{3, 2}));
  expectValues(a, {9, 10, 5, 6, 1, 2});
  Tensor b = slice(m, {1, kNone}, {2, kNone}, {1, -2}, {0});
  EXPECT_EQ(shapeOf(b), (Shape{2}));
  expectValues(b, {7, 5});
  expectValues(slice(m, {-1, -1}, {0, 0}, {1, 1}, {0, 1}), {11});
}

TEST(ShapeTest, ReshapeFamily) {
  Tensor x = make(DType::F32, {2, 3}, iota(6));
  Tensor r = ok(OpKind::Reshape, {x}, {dims("shape", {3, -1})});
  EXPECT_EQ(shapeOf(r), (Shape{3, 2}));
  expectValues(r, iota(6));
  Tensor e = ok(OpKind::ExpandDims, {x}, {attr("axis", Attribute::integer(1))});
  EXPECT_EQ(shapeOf(e), (Shape{2, 1, 3}));
  Tensor s = ok(OpKind::Squeeze, {e});
  EXPECT_EQ(shapeOf(s), (Shape{2, 3}));
  expectValues(s, iota(6));
  Tensor b = ok(OpKind::BroadcastTo, {make(DType::I8, {3, 1}, {1, 2, 3})},
                {dims("shape", {2, 3, 2})});
  expectValues(b, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  for (OpKind k : {OpKind::To, OpKind::Reveal, OpKind::Transfer})
    expectValues(ok(k, {x}), iota(6));
}

TEST(ShapeTest, ConcatAndStack) {
  Tensor a = make(DType::F32, {2, 2}, {1, 2, 3, 4}),
         b = make(DType::F32, {2, 1}, {5, 6});
  expectValues(
      ok(OpKind::Concat, {a, b}, {attr("axis", Attribute::integer(1))}),
      {1, 2, 5, 3, 4, 6});
  Tensor c = make(DType::F32, {1, 2}, {7, 8});
  expectValues(
      ok(OpKind::Concat, {a, c}, {attr("axis", Attribute::integer(0))}),
      {1, 2, 3, 4, 7, 8});
  Tensor d = make(DType::F32, {2, 2}, {5, 6, 7, 8});
  Tensor s0 = ok(OpKind::Stack, {a, d});
  EXPECT_EQ(shapeOf(s0), (Shape{2, 2, 2}));
  expectValues(s0, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor s2 = ok(OpKind::Stack, {a, d}, {attr("axis", Attribute::integer(-1))});
  EXPECT_EQ(shapeOf(s2), (Shape{2, 2, 2}));
  expectValues(s2, {1, 5, 2, 6, 3, 7, 4, 8});
  expectValues(
      ok(OpKind::Stack, {make(DType::I64, {}, {1}), make(DType::I64, {}, {2})}),
      {1, 2});
}

TEST(ShapeTest, Pad) {
  Tensor x = make(DType::F32, {2, 2}, {1, 2, 3, 4});
  Tensor y =
      ok(OpKind::Pad, {x},
         {ints("pads", {1, 0, 0, 2}), attr("value", Attribute::real(9))});
  EXPECT_EQ(shapeOf(y), (Shape{3, 4}));
  expectValues(y, {9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9});
  Tensor z = ok(OpKind::Pad, {makeInts(DType::I64, {2}, {5, 6})},
                {ints("pads", {2, 1})});
  expectValues(z, {0, 0, 5, 6, 0});
  Tensor big = ok(OpKind::Pad, {makeInts(DType::I64, {1}, {1})},
                  {ints("pads", {0, 1}),
                   attr("value", Attribute::integer((int64_t(1) << 60) + 1))});
  EXPECT_EQ(big.getInt(1), (int64_t(1) << 60) + 1); // integer values stay exact
}

// --- Indexing ---------------------------------------------------------------

TEST(IndexingTest, DynamicIndex) {
  Tensor x = make(DType::F32, {3, 2}, iota(6));
  expectValues(ok(OpKind::DynamicIndex, {x, makeInts(DType::I64, {}, {1})}),
               {2, 3});
  expectValues(ok(OpKind::DynamicIndex, {x, makeInts(DType::I64, {}, {-1})}),
               {4, 5});
  expectValues(ok(OpKind::DynamicIndex, {x, makeInts(DType::I32, {}, {1})},
                  {attr("axis", Attribute::integer(1))}),
               {1, 3, 5});
  Result r = run(OpKind::DynamicIndex, {x, makeInts(DType::I64, {}, {7})});
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(*r.error, "index 7 is out of range for axis 0 with size 3");
  r = run(OpKind::DynamicIndex, {x, makeInts(DType::I64, {}, {-4})});
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(*r.error, "index -4 is out of range for axis 0 with size 3");
}

TEST(IndexingTest, Gather) {
  Tensor x = make(DType::F64, {2, 3}, iota(6));
  for (DType t : {DType::I64, DType::I32, DType::U8, DType::I8}) {
    Tensor idx = makeInts(t, {2, 2}, {0, 2, 1, 1});
    Tensor y =
        ok(OpKind::Gather, {x, idx}, {attr("axis", Attribute::integer(1))});
    EXPECT_EQ(shapeOf(y), (Shape{2, 2, 2}));
    expectValues(y, {0, 2, 1, 1, 3, 5, 4, 4});
  }
  expectValues(ok(OpKind::Gather, {x, makeInts(DType::I64, {3}, {1, 0, -1})}),
               {3, 4, 5, 0, 1, 2, 3, 4, 5});
  Result r = run(OpKind::Gather, {x, makeInts(DType::I64, {2}, {0, 5})},
                 {attr("axis", Attribute::integer(1))});
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(*r.error, "index 5 is out of range for axis 1 with size 3");
}

TEST(IndexingTest, Embedding) {
  Tensor table = make(DType::F32, {4, 3}, iota(12));
  Tensor y = ok(OpKind::Embedding,
                {table, makeInts(DType::I32, {2, 2}, {3, 0, 1, 3})});
  EXPECT_EQ(shapeOf(y), (Shape{2, 2, 3}));
  expectValues(y, {9, 10, 11, 0, 1, 2, 3, 4, 5, 9, 10, 11});
  Result r = run(OpKind::Embedding, {table, makeInts(DType::I64, {2}, {1, 4})});
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(*r.error, "embedding id 4 is out of range for a table of 4 rows");
  r = run(OpKind::Embedding, {table, makeInts(DType::I64, {1}, {-1})});
  ASSERT_TRUE(r.error.has_value());
}

// --- Neural -----------------------------------------------------------------

TEST(NeuralTest, Softmax) {
  Tensor x = make(DType::F32, {2, 3}, {1, 2, 3, 1000, 1001, 1002});
  Tensor y = ok(OpKind::Softmax, {x});
  std::vector<double> want = {0.09003057317038046, 0.24472847105479767,
                              0.6652409557748219};
  expectValues(y, {want[0], want[1], want[2], want[0], want[1], want[2]}, 1e-6);
  for (int r = 0; r < 2; ++r)
    EXPECT_NEAR(y.getDouble(3 * r) + y.getDouble(3 * r + 1) +
                    y.getDouble(3 * r + 2),
                1, 1e-6);
  Tensor l = ok(OpKind::LogSoftmax, {x});
  expectValues(l,
               {std::log(want[0]), std::log(want[1]), std::log(want[2]),
                std::log(want[0]), std::log(want[1]), std::log(want[2])},
               1e-6);
  // Over axis 0, in f64 and f16.
  Tensor c =
      ok(OpKind::Softmax, {make(DType::F64, {2, 2}, {0, 1, std::log(3.0), 1})},
         {attr("axis", Attribute::integer(0))});
  expectValues(c, {0.25, 0.5, 0.75, 0.5}, 1e-15);
  Tensor h = ok(OpKind::Softmax, {make(DType::F16, {3}, {1, 2, 3})});
  expectValues(h, want, 1e-3);
  Tensor big = ok(OpKind::Softmax, {randomTensor(DType::F32, {64, 500}, 21)});
  for (int r = 0; r < 64; ++r) {
    double s = 0;
    for (int k = 0; k < 500; ++k)
      s += big.getDouble(r * 500 + k);
    EXPECT_NEAR(s, 1, 1e-5);
  }
}

TEST(NeuralTest, Layernorm) {
  Tensor x = make(DType::F64, {2, 3}, {1, 2, 3, 2, 4, 9});
  Tensor g = make(DType::F64, {3}, {1, 2, 0.5}),
         b = make(DType::F64, {3}, {0, 1, -1});
  Tensor y =
      ok(OpKind::Layernorm, {x, g, b}, {attr("eps", Attribute::real(1e-5))});
  std::vector<double> want;
  double rows[2][3] = {{1, 2, 3}, {2, 4, 9}};
  for (auto &row : rows) {
    double mu = (row[0] + row[1] + row[2]) / 3, var = 0;
    for (double v : row)
      var += (v - mu) * (v - mu) / 3;
    for (int k = 0; k < 3; ++k)
      want.push_back((row[k] - mu) / std::sqrt(var + 1e-5) * g.getDouble(k) +
                     b.getDouble(k));
  }
  expectValues(y, want, 1e-12);
  // Normalizing over axis 0 with a [2, 1] gamma.
  Tensor y0 =
      ok(OpKind::Layernorm,
         {x, make(DType::F64, {2, 1}, {1, 1}), make(DType::F64, {}, {0})},
         {attr("axis", Attribute::integer(0))});
  for (int k = 0; k < 3; ++k) {
    double a = rows[0][k], c = rows[1][k], mu = (a + c) / 2,
           var = (a - mu) * (a - mu);
    EXPECT_NEAR(y0.getDouble(k), (a - mu) / std::sqrt(var + 1e-5), 1e-12);
    EXPECT_NEAR(y0.getDouble(3 + k), (c - mu) / std::sqrt(var + 1e-5), 1e-12);
  }
  Tensor f = ok(OpKind::Layernorm, {make(DType::F32, {1, 3}, {1, 2, 3}),
                                    make(DType::F32, {3}, {1, 1, 1}),
                                    make(DType::F32, {3}, {0, 0, 0})});
  expectValues(f, {-1.2247356859083902, 0, 1.2247356859083902}, 1e-5);
}

// Direct convolution, straight from the definition.
std::vector<double> naiveConv(const Tensor &x, const Tensor &w, int64_t sh,
                              int64_t sw, int64_t ph, int64_t pw, Shape &out) {
  Shape xs = shapeOf(x), ws = shapeOf(w);
  int64_t OH = (xs[2] + 2 * ph - ws[2]) / sh + 1,
          OW = (xs[3] + 2 * pw - ws[3]) / sw + 1;
  out = {xs[0], ws[0], OH, OW};
  std::vector<double> y;
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t o = 0; o < ws[0]; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = 0;
          for (int64_t c = 0; c < xs[1]; ++c)
            for (int64_t kh = 0; kh < ws[2]; ++kh)
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                int64_t ih = i * sh - ph + kh, iw = j * sw - pw + kw;
                if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3])
                  continue;
                s += x.getDouble(flatten({n, c, ih, iw}, xs)) *
                     w.getDouble(flatten({o, c, kh, kw}, ws));
              }
          y.push_back(s);
        }
  return y;
}

void checkConv(DType t, const Shape &xs, const Shape &ws, Shape stride,
               Shape pad, double tol) {
  Tensor x = randomTensor(t, xs, 31), w = randomTensor(t, ws, 32);
  Tensor y = ok(OpKind::Conv2d, {x, w},
                {ints("stride", stride), ints("padding", pad)});
  Shape out;
  std::vector<double> want =
      naiveConv(x, w, stride[0], stride[1], pad[0], pad[1], out);
  EXPECT_EQ(shapeOf(y), out);
  expectValues(y, want, tol);
}

TEST(NeuralTest, Conv2d) {
  checkConv(DType::F32, {2, 3, 7, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1}, 1e-5);
  checkConv(DType::F32, {1, 2, 5, 5}, {3, 2, 3, 2}, {1, 2}, {0, 1}, 1e-5);
  checkConv(DType::F32, {2, 4, 3, 3}, {5, 4, 1, 1}, {1, 1}, {0, 0},
            1e-5); // 1x1: no im2col
  checkConv(DType::F64, {2, 3, 7, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1}, 1e-12);
  checkConv(DType::F16, {1, 2, 6, 6}, {2, 2, 3, 3}, {2, 2}, {1, 1}, 2e-2);
  checkConv(DType::F32, {2, 16, 20, 20}, {8, 16, 3, 3}, {1, 1}, {1, 1}, 1e-4);
}

std::vector<double> naivePool(const Tensor &x, int64_t k0, int64_t k1,
                              int64_t s0, int64_t s1, bool isMax) {
  Shape xs = shapeOf(x);
  int64_t OH = (xs[2] - k0) / s0 + 1, OW = (xs[3] - k1) / s1 + 1;
  std::vector<double> y;
  for (int64_t p = 0; p < xs[0] * xs[1]; ++p)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double acc = isMax ? -INFINITY : 0;
        for (int64_t a = 0; a < k0; ++a)
          for (int64_t b = 0; b < k1; ++b) {
            double v =
                x.getDouble((p * xs[2] + i * s0 + a) * xs[3] + j * s1 + b);
            acc = isMax ? std::max(acc, v) : acc + v;
          }
        y.push_back(isMax ? acc : acc / double(k0 * k1));
      }
  return y;
}

TEST(NeuralTest, Pooling) {
  Tensor x = randomTensor(DType::F32, {2, 3, 7, 6}, 41);
  for (auto [k, s] : {std::pair<Shape, Shape>{{2, 2}, {2, 2}},
                      {{3, 3}, {1, 1}},
                      {{3, 2}, {2, 1}}}) {
    Tensor mx =
        ok(OpKind::MaxPool2d, {x}, {ints("size", k), ints("stride", s)});
    expectValues(mx, naivePool(x, k[0], k[1], s[0], s[1], true));
    Tensor av =
        ok(OpKind::AvgPool2d, {x}, {ints("size", k), ints("stride", s)});
    expectValues(av, naivePool(x, k[0], k[1], s[0], s[1], false), 1e-6);
  }
  // Stride defaults to the size.
  Tensor d = ok(OpKind::AvgPool2d, {make(DType::F64, {1, 1, 2, 4}, iota(8))},
                {ints("size", {2, 2})});
  expectValues(d, {2.5, 4.5});
}

// --- Creation ---------------------------------------------------------------

NamedAttr typeAttr(DType t, const Shape &s) {
  return attr("type", Attribute::type(TensorType::of(t, s)));
}

TEST(CreationTest, ConstantsAndArange) {
  expectValues(ok(OpKind::Zeros, {}, {typeAttr(DType::F32, {2, 2})}),
               {0, 0, 0, 0});
  expectValues(ok(OpKind::Ones, {}, {typeAttr(DType::I8, {3})}), {1, 1, 1});
  expectValues(ok(OpKind::Ones, {}, {typeAttr(DType::Bool, {2})}), {1, 1});
  expectValues(
      ok(OpKind::Full, {},
         {typeAttr(DType::F16, {2}), attr("value", Attribute::real(1.5))}),
      {1.5, 1.5});
  expectValues(
      ok(OpKind::Full, {},
         {typeAttr(DType::I32, {2}), attr("value", Attribute::integer(-7))}),
      {-7, -7});
  Tensor a = ok(OpKind::Arange, {}, {dims("n", {5})});
  EXPECT_EQ(a.dtype(), DType::I64);
  expectValues(a, {0, 1, 2, 3, 4});
}

// An independent transcription of the generator documented in Kernels.h.
double unit(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) / 9007199254740992.0;
}

TEST(CreationTest, RandomIsDeterministic) {
  EXPECT_EQ(backend::cpu::splitmix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(backend::cpu::randomUnit(1, 0), 0.43152799704850997);
  EXPECT_EQ(backend::cpu::randomUnit(1, 1), 0.7457817572627011);
  for (uint64_t i = 0; i < 100; ++i)
    EXPECT_EQ(backend::cpu::randomUnit(12345, i), unit(12345, i));

  auto uniform = [](int64_t seed) {
    return ok(
        OpKind::RandomUniform, {},
        {typeAttr(DType::F64, {1000}), attr("seed", Attribute::integer(seed)),
         attr("lo", Attribute::real(-1)), attr("hi", Attribute::real(3))});
  };
  Tensor u1 = uniform(1), u2 = uniform(1), u3 = uniform(2);
  EXPECT_EQ(values(u1), values(u2));
  EXPECT_NE(values(u1), values(u3));
  EXPECT_EQ(u1.getDouble(0), -1 + 4 * 0.43152799704850997);
  for (double v : values(u1)) {
    EXPECT_GE(v, -1);
    EXPECT_LT(v, 3);
  }

  Tensor n =
      ok(OpKind::RandomNormal, {},
         {typeAttr(DType::F64, {20000}), attr("seed", Attribute::integer(7)),
          attr("mean", Attribute::real(2)), attr("std", Attribute::real(0.5))});
  for (uint64_t i : {uint64_t(0), uint64_t(1), uint64_t(19999)}) {
    double want = 2 + 0.5 * std::sqrt(-2 * std::log(1 - unit(7, 2 * i))) *
                          std::cos(2 * 3.141592653589793 * unit(7, 2 * i + 1));
    EXPECT_NEAR(n.getDouble(int64_t(i)), want, 1e-15);
  }
  double mean = 0, var = 0;
  for (double v : values(n))
    mean += v / 20000;
  for (double v : values(n))
    var += (v - mean) * (v - mean) / 20000;
  EXPECT_NEAR(mean, 2, 0.02);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.02);

  // f32 rounds the same f64 values; negative seeds are their uint64 bits.
  Tensor f =
      ok(OpKind::RandomUniform, {},
         {typeAttr(DType::F32, {4}), attr("seed", Attribute::integer(-3))});
  for (uint64_t i = 0; i < 4; ++i)
    EXPECT_EQ(f.getDouble(int64_t(i)), double(float(unit(uint64_t(-3), i))));
}

// --- The entry point --------------------------------------------------------

TEST(KernelEntryTest, HasKernel) {
  // The table is complete: every kind with a kernel has one, nothing else.
  EXPECT_EQ(backend::cpu::kernelTable().problems(), "");
  for (OpKind k : {OpKind::Constant, OpKind::Global, OpKind::Load, OpKind::Call,
                   OpKind::If, OpKind::For, OpKind::While, OpKind::Yield,
                   OpKind::Return, OpKind::Print, OpKind::Segment})
    EXPECT_EQ(backend::cpu::kernelTable().find(k), nullptr) << ir::opName(k);
  for (int k = int(OpKind::To); k < ir::kNumOpKinds; ++k)
    EXPECT_NE(backend::cpu::kernelTable().find(OpKind(k)), nullptr) << ir::opName(OpKind(k));
  ir::Operation op(OpKind::Call);
  std::vector<Tensor> out;
  EXPECT_TRUE(backend::cpu::runKernel(op, {}, out).has_value());
  ir::Operation add(OpKind::Add);
  add.addResult(TensorType::of(DType::F32, {1}));
  auto err = backend::cpu::runKernel(add, {make(DType::F32, {1}, {1})}, out);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(*err, "'add' expects 2 operands, got 1");
}

TEST(KernelEntryTest, RejectsInconsistentBuffers) {
  ir::Operation op(OpKind::Add);
  op.addResult(TensorType::of(DType::F32, {2, 2}));
  std::vector<Tensor> out = {Tensor::zeros(TensorType::of(DType::F32, {3}))};
  Tensor a = make(DType::F32, {2, 2}, {1, 2, 3, 4});
  auto err = backend::cpu::runKernel(op, {a, a}, out);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(*err, "'add' output is f32[3], but the result type is f32[2, 2]");
  out.clear();
  err = backend::cpu::runKernel(op, {a, make(DType::F32, {3}, {1, 2, 3})}, out);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(*err, "'add' operand 1 is f32[3], which does not broadcast to "
                  "f32[2, 2]");
}

TEST(KernelEntryTest, FillsPreallocatedOutputs) {
  ir::Operation op(OpKind::Mul);
  op.addResult(TensorType::of(DType::F32, {2}));
  std::vector<Tensor> out = {Tensor::zeros(TensorType::of(DType::F32, {2}))};
  void *before = out[0].raw();
  EXPECT_FALSE(backend::cpu::runKernel(
      op, {make(DType::F32, {2}, {2, 3}), make(DType::F32, {}, {4})}, out));
  EXPECT_EQ(out[0].raw(), before);
  expectValues(out[0], {8, 12});
}

} // namespace
