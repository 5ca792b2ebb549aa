// Unit tests for the CPU kernels: element-wise, cast, reductions and
// linear algebra. Each operation is built the way the compiler builds it and
// checked against values computed independently here: by hand, by a formula
// or by a naive loop.
#include "KernelTestUtil.h"
#include "stdlib/Registry.h"

#include "ir/Half.h"

#include <cstring>

#include <functional>

using namespace kerneltest;

namespace {

// --- f16 conversions --------------------------------------------------------

TEST(HalfConvertTest, KnownValuesAndRounding) {
  EXPECT_EQ(ir::floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(ir::floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(ir::floatToHalf(65504.0f), 0x7bff);      // largest finite half
  EXPECT_EQ(ir::floatToHalf(65520.0f), 0x7c00);      // rounds to infinity
  EXPECT_EQ(ir::floatToHalf(0x1p-24f), 0x0001);      // smallest subnormal
  EXPECT_EQ(ir::floatToHalf(0x1p-25f), 0x0000);      // tie to even: zero
  EXPECT_EQ(ir::floatToHalf(3 * 0x1p-25f), 0x0002);  // tie to even: 2
  EXPECT_EQ(ir::floatToHalf(1.0f + 0x1p-11f), 0x3c00);      // tie: stays even
  EXPECT_EQ(ir::floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie: up to even
  EXPECT_EQ(ir::floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(ir::floatToHalf(NAN) & 0x7e00, 0x7e00);
  EXPECT_EQ(ir::halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(ir::halfToFloat(0x0001), 0x1p-24f);
  EXPECT_TRUE(std::isnan(ir::halfToFloat(0x7e01)));
  // Every finite half converts to float and back unchanged.
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7c00) != 0x7c00) {
      ASSERT_EQ(ir::floatToHalf(ir::halfToFloat(uint16_t(h))), h) << h;
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__)
// GCC's _Float16 is an independent implementation: compare exhaustively.
TEST(HalfConvertTest, MatchesTheCompilersConversions) {
  auto viaCompiler = [](uint16_t h) {
    _Float16 x;
    std::memcpy(&x, &h, 2);
    return float(x);
  };
  for (uint32_t h = 0; h < 65536; ++h) {
    float want = viaCompiler(uint16_t(h)), got = ir::halfToFloat(uint16_t(h));
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(got)) << h;
    else
      ASSERT_EQ(ir::floatBits(got), ir::floatBits(want)) << h;
  }
  auto check = [](float x) {
    _Float16 c = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &c, 2);
    uint16_t got = ir::floatToHalf(x);
    if (std::isnan(x))
      ASSERT_EQ(got & 0x7e00, 0x7e00);
    else
      ASSERT_EQ(got, want) << x;
  };
  // Every half, the midpoints between neighbours (ties to even) and the
  // floats just beside them.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    float a = ir::halfToFloat(uint16_t(h)), b = ir::halfToFloat(uint16_t(h + 1));
    float mid = a + (b - a) / 2;
    for (float x : {a, mid, std::nextafter(mid, 0.f), std::nextafter(mid, INFINITY)}) {
      check(x);
      check(-x);
    }
  }
}
#endif

// --- Element-wise -----------------------------------------------------------

void checkBroadcastAdd(const Shape &a, const Shape &b, const Shape &out) {
  Tensor x = randomTensor(DType::F32, a, 1), y = randomTensor(DType::F32, b, 2);
  Tensor z = ok(OpKind::Add, {x, y});
  ASSERT_EQ(shapeOf(z), out);
  for (int64_t i = 0; i < z.numElements(); ++i) {
    Shape idx = unflatten(i, out);
    float want = float(x.getDouble(broadcastIndex(idx, a))) +
                 float(y.getDouble(broadcastIndex(idx, b)));
    ASSERT_EQ(z.getDouble(i), want) << "element " << i;
  }
}

TEST(ElementwiseTest, Broadcasting) {
  checkBroadcastAdd({2, 3}, {2, 3}, {2, 3});
  checkBroadcastAdd({2, 3}, {3}, {2, 3});
  checkBroadcastAdd({2, 1}, {1, 3}, {2, 3});
  checkBroadcastAdd({}, {2, 2}, {2, 2});
  checkBroadcastAdd({4, 1, 3}, {2, 1}, {4, 2, 3});
  checkBroadcastAdd({5, 1, 1, 7}, {1, 3, 2, 1}, {5, 3, 2, 7});
  checkBroadcastAdd({3, 1}, {3}, {3, 3});
  // Large enough for the parallel path, with a broadcast row and column.
  checkBroadcastAdd({1000, 300}, {300}, {1000, 300});
  checkBroadcastAdd({700, 1}, {1, 500}, {700, 500});
}

TEST(ElementwiseTest, AddEveryDType) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64, DType::F16,
                  DType::BF16, DType::F32, DType::F64}) {
    Tensor z =
        ok(OpKind::Add, {make(t, {3}, {1, 2, 3}), make(t, {3}, {4, 5, 6})});
    EXPECT_EQ(z.dtype(), t);
    expectValues(z, {5, 7, 9});
  }
  // Overflow wraps.
  expectValues(ok(OpKind::Add,
                  {make(DType::I8, {1}, {100}), make(DType::I8, {1}, {100})}),
               {-56});
  expectValues(ok(OpKind::Add,
                  {make(DType::U8, {1}, {250}), make(DType::U8, {1}, {10})}),
               {4});
  expectValues(ok(OpKind::Mul, {makeInts(DType::I32, {1}, {1 << 20}),
                                makeInts(DType::I32, {1}, {1 << 12})}),
               {0});
  Tensor big = ok(OpKind::Add, {makeInts(DType::I64, {1}, {INT64_MAX}),
                                makeInts(DType::I64, {1}, {1})});
  EXPECT_EQ(big.getInt(0), INT64_MIN);
  // Halves round the f32 sum once.
  Tensor h = ok(OpKind::Add,
                {make(DType::F16, {1}, {0.1}), make(DType::F16, {1}, {0.2})});
  EXPECT_EQ(h.data<uint16_t>()[0],
            ir::floatToHalf(ir::halfToFloat(ir::floatToHalf(0.1f)) +
                            ir::halfToFloat(ir::floatToHalf(0.2f))));
}

TEST(ElementwiseTest, IntegerFloorDivisionAndModulo) {
  Shape s = {8};
  std::vector<int64_t> a = {7, -7, 7, -7, 6, -6, 0, 1};
  std::vector<int64_t> b = {2, 2, -2, -2, 3, 3, 5, -5};
  for (DType t : {DType::I8, DType::I32, DType::I64}) {
    Tensor x = makeInts(t, s, a), y = makeInts(t, s, b);
    expectValues(ok(OpKind::Div, {x, y}), {3, -4, -4, 3, 2, -2, 0, -1});
    expectValues(ok(OpKind::Mod, {x, y}), {1, 1, -1, -1, 0, 0, 0, -4});
  }
  Tensor u = ok(OpKind::Div, {makeInts(DType::U8, {2}, {250, 7}),
                              makeInts(DType::U8, {2}, {3, 2})});
  expectValues(u, {83, 3});
}

TEST(ElementwiseTest, IntegerDivisionByZeroDoesNotCrash) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    Tensor x = makeInts(t, {2}, {5, 0}), z = makeInts(t, {2}, {0, 0});
    expectValues(ok(OpKind::Div, {x, z}), {0, 0});
    expectValues(ok(OpKind::Mod, {x, z}), {0, 0});
  }
  // The one signed overflow of division wraps.
  Tensor m = ok(OpKind::Div, {makeInts(DType::I32, {1}, {INT32_MIN}),
                              makeInts(DType::I32, {1}, {-1})});
  EXPECT_EQ(m.getInt(0), INT32_MIN);
  Tensor r = ok(OpKind::Mod, {makeInts(DType::I64, {1}, {INT64_MIN}),
                              makeInts(DType::I64, {1}, {-1})});
  EXPECT_EQ(r.getInt(0), 0);
}

TEST(ElementwiseTest, FloatDivisionAndModulo) {
  for (DType t : {DType::F32, DType::F64, DType::F16}) {
    Tensor x = make(t, {4}, {7.5, -7.5, 7.5, -7.5}),
           y = make(t, {4}, {2, 2, -2, -2});
    expectValues(ok(OpKind::Div, {x, y}), {3.75, -3.75, -3.75, 3.75});
    // The remainder has the sign of the divisor (NumPy's remainder).
    expectValues(ok(OpKind::Mod, {x, y}), {1.5, 0.5, -0.5, -1.5});
  }
  Tensor z = ok(OpKind::Mod, {make(DType::F32, {2}, {4, -4}),
                              make(DType::F32, {2}, {-2, 2})});
  EXPECT_TRUE(std::signbit(z.getDouble(0))); // -0.0, like NumPy
  EXPECT_FALSE(std::signbit(z.getDouble(1)));
  Tensor nz =
      ok(OpKind::Mod, {make(DType::F64, {1}, {1}), make(DType::F64, {1}, {0})});
  EXPECT_TRUE(std::isnan(nz.getDouble(0)));
}

TEST(ElementwiseTest, PowMaximumMinimum) {
  expectValues(
      ok(OpKind::Pow, {makeInts(DType::I32, {5}, {2, 3, 1, -1, -1}),
                       makeInts(DType::I32, {5}, {10, -1, -5, -3, 4})}),
      {1024, 0, 1, -1, 1});
  expectValues(ok(OpKind::Pow, {makeInts(DType::I8, {1}, {3}),
                                makeInts(DType::I8, {1}, {5})}),
               {-13}); // 243 wraps
  expectValues(ok(OpKind::Pow, {make(DType::F32, {2}, {2, 4}),
                                make(DType::F32, {2}, {0.5, -1})}),
               {std::sqrt(2.0), 0.25}, 1e-6);
  double nan = std::nan("");
  expectValues(ok(OpKind::Maximum, {make(DType::F32, {3}, {1, nan, 3}),
                                    make(DType::F32, {3}, {2, 0, nan})}),
               {2, nan, nan});
  expectValues(ok(OpKind::Minimum, {make(DType::F64, {3}, {1, nan, 3}),
                                    make(DType::F64, {1}, {2})}),
               {1, nan, 2});
  expectValues(ok(OpKind::Maximum, {makeInts(DType::I64, {2}, {-5, 5}),
                                    makeInts(DType::I64, {}, {0})}),
               {0, 5});
}

TEST(ElementwiseTest, ComparisonsAndLogic) {
  Tensor a = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
         b = make(DType::F32, {3}, {2, 2, 7});
  Tensor lt = ok(OpKind::Lt, {a, b});
  EXPECT_EQ(lt.dtype(), DType::Bool);
  expectValues(lt, {1, 0, 1, 0, 0, 1});
  expectValues(ok(OpKind::Ge, {a, b}), {0, 1, 0, 1, 1, 0});
  expectValues(ok(OpKind::Eq, {a, b}), {0, 1, 0, 0, 0, 0});
  expectValues(ok(OpKind::Ne, {make(DType::F32, {1}, {std::nan("")}),
                               make(DType::F32, {1}, {1})}),
               {1});
  expectValues(ok(OpKind::Le, {makeInts(DType::U8, {2}, {200, 3}),
                               makeInts(DType::U8, {}, {3})}),
               {0, 1});
  Tensor p = make(DType::Bool, {4}, {1, 1, 0, 0}),
         q = make(DType::Bool, {4}, {1, 0, 1, 0});
  expectValues(ok(OpKind::And, {p, q}), {1, 0, 0, 0});
  expectValues(ok(OpKind::Or, {p, q}), {1, 1, 1, 0});
  expectValues(ok(OpKind::Not, {p}), {0, 0, 1, 1});
  expectValues(ok(OpKind::Eq, {p, q}), {1, 0, 0, 1});
  Tensor np = ok(OpKind::Not, {p});
  for (int i = 0; i < 4; ++i)
    EXPECT_LE(np.data<uint8_t>()[i], 1); // bools are stored as 0 / 1
}

TEST(ElementwiseTest, UnaryMath) {
  Tensor x = make(DType::F64, {5}, {-2, -0.5, 0, 0.5, 2});
  std::vector<double> v = {-2, -0.5, 0, 0.5, 2}, want;
  auto each = [&](double (*f)(double)) {
    std::vector<double> w;
    for (double e : v)
      w.push_back(f(e));
    return w;
  };
  expectValues(ok(OpKind::Tanh, {x}),
               each([](double e) { return std::tanh(e); }), 1e-15);
  expectValues(ok(OpKind::Sin, {x}), each([](double e) { return std::sin(e); }),
               1e-15);
  expectValues(ok(OpKind::Cos, {x}), each([](double e) { return std::cos(e); }),
               1e-15);
  expectValues(ok(OpKind::Exp, {x}), each([](double e) { return std::exp(e); }),
               1e-15);
  expectValues(ok(OpKind::Sigmoid, {x}),
               each([](double e) { return 1 / (1 + std::exp(-e)); }), 1e-15);
  expectValues(ok(OpKind::Neg, {x}), {2, 0.5, 0, -0.5, -2});
  expectValues(ok(OpKind::Abs, {x}), {2, 0.5, 0, 0.5, 2});
  expectValues(ok(OpKind::Relu, {x}), {0, 0, 0, 0.5, 2});
  expectValues(ok(OpKind::Floor, {x}), {-2, -1, 0, 0, 2});
  expectValues(ok(OpKind::Ceil, {x}), {-2, -0.0, 0, 1, 2});
  expectValues(ok(OpKind::Sign, {x}), {-1, -1, 0, 1, 1});
  Tensor pos = make(DType::F32, {3}, {0.25, 1, 4});
  expectValues(ok(OpKind::Sqrt, {pos}), {0.5, 1, 2});
  expectValues(ok(OpKind::Rsqrt, {pos}), {2, 1, 0.5});
  expectValues(ok(OpKind::Log, {pos}), {std::log(0.25), 0, std::log(4.0)},
               1e-7);
  // Sigmoid never overflows.
  expectValues(ok(OpKind::Sigmoid, {make(DType::F32, {3}, {-1000, 0, 1000})}),
               {0, 0.5, 1});
  // Integers: wrap, identity for floor, sign.
  expectValues(ok(OpKind::Abs, {makeInts(DType::I8, {3}, {-128, -3, 4})}),
               {-128, 3, 4});
  expectValues(ok(OpKind::Neg, {makeInts(DType::U8, {2}, {1, 0})}), {255, 0});
  expectValues(ok(OpKind::Sign, {makeInts(DType::I32, {3}, {-9, 0, 9})}),
               {-1, 0, 1});
  expectValues(ok(OpKind::Relu, {makeInts(DType::I64, {2}, {-9, 9})}), {0, 9});
  expectValues(ok(OpKind::Floor, {makeInts(DType::I32, {1}, {-9})}), {-9});
}

TEST(ElementwiseTest, Gelu) {
  Tensor x = make(DType::F64, {3}, {-1, 0, 1});
  // 0.5 x (1 + erf(x / sqrt 2)) and the tanh form at x = 1.
  expectValues(ok(OpKind::Gelu, {x}),
               {-0.15865525393145707, 0, 0.8413447460685429}, 1e-15);
  expectValues(
      ok(OpKind::Gelu, {x}, {attr("approximate", Attribute::boolean(true))}),
      {-0.15880800939172324, 0, 0.8411919906082768}, 1e-15);
  expectValues(ok(OpKind::Gelu, {make(DType::F32, {1}, {1})}),
               {0.8413447460685429}, 1e-6);
}

TEST(ElementwiseTest, ClipAndSelect) {
  Tensor x = make(DType::F32, {2, 3}, {-5, 0, 5, -1, 2, 9});
  Tensor lo = make(DType::F32, {3}, {-2, -2, 0}),
         hi = make(DType::F32, {2, 1}, {1, 3});
  expectValues(ok(OpKind::Clip, {x, lo, hi}), {-2, 0, 1, -1, 2, 3});
  expectValues(ok(OpKind::Clip, {makeInts(DType::I32, {3}, {-5, 1, 50}),
                                 makeInts(DType::I32, {}, {0}),
                                 makeInts(DType::I32, {}, {10})}),
               {0, 1, 10});
  Tensor c = make(DType::Bool, {2, 1}, {1, 0});
  Tensor a = make(DType::F64, {3}, {1, 2, 3}), b = make(DType::F64, {}, {-1});
  expectValues(ok(OpKind::Select, {c, a, b}), {1, 2, 3, -1, -1, -1});
  Tensor ia = makeInts(DType::I8, {2, 2}, {1, 2, 3, 4}),
         ib = makeInts(DType::I8, {2, 2}, {5, 6, 7, 8});
  expectValues(ok(OpKind::Select, {make(DType::Bool, {2}, {0, 1}), ia, ib}),
               {5, 2, 7, 4});
  Tensor hb = ok(OpKind::Select, {make(DType::Bool, {2}, {0, 1}),
                                  make(DType::BF16, {2}, {1, 2}),
                                  make(DType::BF16, {2}, {3, 4})});
  expectValues(hb, {3, 2});
}

TEST(ElementwiseTest, CastSemantics) {
  auto cast = [](const Tensor &x, DType t) {
    return ok(OpKind::Cast, {x}, {attr("dtype", Attribute::dtype(t))});
  };
  Tensor f = make(DType::F32, {6}, {0, 1.7, -1.7, 300, -300, std::nan("")});
  expectValues(cast(f, DType::I8),
               {0, 1, -1, 127, -128, 0}); // truncate, saturate
  expectValues(cast(f, DType::U8), {0, 1, 0, 255, 0, 0});
  expectValues(cast(f, DType::I32), {0, 1, -1, 300, -300, 0});
  expectValues(cast(f, DType::Bool), {0, 1, 1, 1, 1, 1}); // x != 0, NaN is true
  expectValues(cast(make(DType::F64, {2}, {1e30, -1e30}), DType::I64),
               {double(INT64_MAX), double(INT64_MIN)});
  expectValues(cast(makeInts(DType::I32, {3}, {300, -1, 127}), DType::I8),
               {44, -1, 127}); // wraps
  expectValues(cast(makeInts(DType::I32, {2}, {-1, 256}), DType::U8), {255, 0});
  expectValues(cast(make(DType::Bool, {2}, {1, 0}), DType::F32), {1, 0});
  expectValues(cast(make(DType::Bool, {2}, {1, 0}), DType::I64), {1, 0});
  Tensor h = cast(make(DType::F32, {1}, {0.1}), DType::F16);
  EXPECT_EQ(h.data<uint16_t>()[0], ir::floatToHalf(0.1f));
  Tensor bf = cast(make(DType::F64, {1}, {3.0}), DType::BF16);
  EXPECT_EQ(bf.data<uint16_t>()[0], ir::floatToBf16(3.0f));
  expectValues(cast(h, DType::F64),
               {double(ir::halfToFloat(ir::floatToHalf(0.1f)))});
  expectValues(
      cast(makeInts(DType::I64, {1}, {(int64_t(1) << 53) + 1}), DType::F64),
      {double(int64_t(1) << 53)});
  // Every pair of dtypes converts 0, 1 and 2 exactly.
  for (int s = 0; s < ir::kNumDTypes; ++s)
    for (int d = 0; d < ir::kNumDTypes; ++d) {
      bool sb = DType(s) == DType::Bool, db = DType(d) == DType::Bool;
      Tensor x = make(DType(s), {3}, {0, 1, sb ? 1.0 : 2.0});
      Tensor y = cast(x, DType(d));
      EXPECT_EQ(y.dtype(), DType(d));
      expectValues(y, {0, 1, (sb || db) ? 1.0 : 2.0});
    }
}

// --- Reductions -------------------------------------------------------------

// Naive reference: reduce `x` over `axes` (sorted) with `f`, starting at
// `init`.
std::vector<double> naiveReduce(const Tensor &x, const Shape &axes,
                                std::function<double(double, double)> f,
                                double init, bool mean = false) {
  Shape s = shapeOf(x), os;
  for (size_t d = 0; d < s.size(); ++d)
    os.push_back(std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end()
                     ? 1
                     : s[d]);
  int64_t n = 1;
  for (int64_t a : axes)
    n *= s[a];
  int64_t outCount = 1;
  for (int64_t d : os)
    outCount *= d;
  std::vector<double> out(size_t(outCount), init);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    Shape idx = unflatten(i, s);
    for (int64_t a : axes)
      idx[a] = 0;
    double &o = out[size_t(flatten(idx, os))];
    o = f(o, x.getDouble(i));
  }
  if (mean)
    for (double &o : out)
      o /= double(n);
  return out;
}

TEST(ReductionTest, AxisSetsAndKeepdims) {
  Tensor x = randomTensor(DType::F64, {3, 4, 5, 2}, 3);
  auto plus = [](double a, double b) { return a + b; };
  for (Shape axes : {Shape{0}, Shape{1}, Shape{3}, Shape{0, 2}, Shape{1, 3},
                     Shape{0, 1, 2, 3}, Shape{1, 2}, Shape{}})
    for (bool keep : {false, true}) {
      Tensor y =
          ok(OpKind::Sum, {x},
             {ints("axis", axes), attr("keepdims", Attribute::boolean(keep))});
      Shape want;
      for (int d = 0; d < 4; ++d) {
        bool red = std::find(axes.begin(), axes.end(), d) != axes.end();
        if (!red)
          want.push_back(shapeOf(x)[d]);
        else if (keep)
          want.push_back(1);
      }
      EXPECT_EQ(shapeOf(y), want);
      expectValues(y, naiveReduce(x, axes, plus, 0), 1e-12);
      expectValues(
          ok(OpKind::Mean, {x},
             {ints("axis", axes), attr("keepdims", Attribute::boolean(keep))}),
          naiveReduce(x, axes, plus, 0, true), 1e-12);
    }
  // Negative axes are canonicalized by the shape rule; no axis means all.
  Tensor all = ok(OpKind::Sum, {x});
  EXPECT_EQ(all.rank(), 0);
  expectValues(all, naiveReduce(x, {0, 1, 2, 3}, plus, 0), 1e-12);
  expectValues(ok(OpKind::Sum, {x}, {attr("axis", Attribute::integer(-1))}),
               naiveReduce(x, {3}, plus, 0), 1e-12);
}

TEST(ReductionTest, MaxMinProd) {
  Tensor x = randomTensor(DType::F32, {4, 6, 3}, 4);
  auto mx = [](double a, double b) { return std::max(a, b); };
  auto mn = [](double a, double b) { return std::min(a, b); };
  for (Shape axes :
       {Shape{0}, Shape{1}, Shape{2}, Shape{0, 2}, Shape{0, 1, 2}}) {
    expectValues(ok(OpKind::ReduceMax, {x}, {ints("axis", axes)}),
                 naiveReduce(x, axes, mx, -INFINITY));
    expectValues(ok(OpKind::ReduceMin, {x}, {ints("axis", axes)}),
                 naiveReduce(x, axes, mn, INFINITY));
    expectValues(ok(OpKind::Prod, {x}, {ints("axis", axes)}),
                 naiveReduce(
                     x, axes, [](double a, double b) { return a * b; }, 1),
                 1e-5);
  }
  double nan = std::nan("");
  expectValues(ok(OpKind::ReduceMax,
                  {make(DType::F32, {2, 3}, {1, nan, 3, 4, 5, 6})},
                  {ints("axis", {1})}),
               {nan, 6});
  expectValues(ok(OpKind::ReduceMin, {make(DType::F64, {2, 2}, {1, nan, 3, 4})},
                  {ints("axis", {0})}),
               {1, nan});
  // Integer sums and products wrap in the element type.
  expectValues(ok(OpKind::Sum, {makeInts(DType::I8, {3}, {100, 100, 100})}),
               {44});
  expectValues(
      ok(OpKind::Prod, {makeInts(DType::I32, {3}, {1 << 16, 1 << 16, 3})}),
      {0});
  expectValues(ok(OpKind::ReduceMax, {makeInts(DType::U8, {3}, {7, 255, 3})}),
               {255});
  expectValues(ok(OpKind::ReduceMin,
                  {makeInts(DType::I64, {2, 2}, {5, -9, 4, 2})},
                  {ints("axis", {1})}),
               {-9, 2});
}

TEST(ReductionTest, LargeReductionsUseEveryPath) {
  // One huge output (split among threads), a reduced leading axis (blocks of
  // contiguous outputs), and a reduced trailing axis with many outputs.
  Tensor x = randomTensor(DType::F32, {1000, 300}, 5);
  auto plus = [](double a, double b) { return a + b; };
  expectValues(ok(OpKind::Sum, {x}), naiveReduce(x, {0, 1}, plus, 0), 1e-9);
  expectValues(ok(OpKind::Sum, {x}, {ints("axis", {0})}),
               naiveReduce(x, {0}, plus, 0), 1e-6);
  expectValues(ok(OpKind::Sum, {x}, {ints("axis", {1})}),
               naiveReduce(x, {1}, plus, 0), 1e-6);
  Tensor y = randomTensor(DType::F64, {3, 100000}, 6);
  expectValues(ok(OpKind::Mean, {y}, {ints("axis", {1})}),
               naiveReduce(y, {1}, plus, 0, true), 1e-9);
  expectValues(ok(OpKind::ReduceMax, {y}, {ints("axis", {1})}),
               naiveReduce(
                   y, {1}, [](double a, double b) { return std::max(a, b); },
                   -INFINITY));
}

TEST(ReductionTest, ArgmaxArgmin) {
  Tensor x = make(DType::F32, {2, 4}, {1, 5, 5, 2, 7, 0, 7, 0});
  Tensor a = ok(OpKind::Argmax, {x}, {attr("axis", Attribute::integer(1))});
  EXPECT_EQ(a.dtype(), DType::I64);
  expectValues(a, {1, 0}); // ties: the first occurrence
  expectValues(ok(OpKind::Argmin, {x}, {attr("axis", Attribute::integer(1))}),
               {0, 1});
  expectValues(ok(OpKind::Argmax, {x}, {attr("axis", Attribute::integer(0))}),
               {1, 0, 1, 0});
  expectValues(ok(OpKind::Argmin, {x}, {attr("axis", Attribute::integer(-2))}),
               {0, 1, 0, 1});
  Tensor flat = ok(OpKind::Argmax, {x});
  EXPECT_EQ(flat.rank(), 0);
  expectValues(flat, {4});
  expectValues(ok(OpKind::Argmin, {x}), {5});
  expectValues(ok(OpKind::Argmax,
                  {make(DType::F64, {4}, {1, std::nan(""), 9, std::nan("")})}),
               {1});
  expectValues(ok(OpKind::Argmax, {makeInts(DType::I8, {3}, {-1, -128, 127})}),
               {2});
  // Large, with the axis in the middle.
  Tensor y = randomTensor(DType::F32, {7, 50, 300}, 9);
  Tensor am = ok(OpKind::Argmax, {y}, {attr("axis", Attribute::integer(1))});
  for (int64_t o = 0; o < 7; ++o)
    for (int64_t i = 0; i < 300; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < 50; ++k)
        if (y.getDouble((o * 50 + k) * 300 + i) >
            y.getDouble((o * 50 + best) * 300 + i))
          best = k;
      ASSERT_EQ(am.getInt(o * 300 + i), best);
    }
}

// --- Linear algebra ---------------------------------------------------------

// Naive NumPy matmul on doubles.
std::vector<double> naiveMatmul(const Tensor &a, const Tensor &b,
                                const Shape &out) {
  Shape as = shapeOf(a), bs = shapeOf(b);
  bool av = as.size() == 1, bv = bs.size() == 1;
  if (av)
    as.insert(as.begin(), 1);
  if (bv)
    bs.push_back(1);
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape batch(out.begin(), out.end() - (av ? 0 : 1) - (bv ? 0 : 1));
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  int64_t nb = 1;
  for (int64_t d : batch)
    nb *= d;
  std::vector<double> y;
  for (int64_t p = 0; p < nb; ++p) {
    Shape idx = unflatten(p, batch);
    int64_t ao = broadcastIndex(idx, ab) * M * K,
            bo = broadcastIndex(idx, bb) * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.getDouble(ao + i * K + k) * b.getDouble(bo + k * N + j);
        y.push_back(s);
      }
  }
  return y;
}

void checkMatmul(DType t, const Shape &as, const Shape &bs, const Shape &out,
                 double tol) {
  Tensor a = randomTensor(t, as, 11), b = randomTensor(t, bs, 12);
  if (ir::isInteger(t)) {
    a = ok(OpKind::Cast, {randomTensor(DType::F32, as, 11)},
           {attr("dtype", Attribute::dtype(t))});
    b = ok(OpKind::Cast, {randomTensor(DType::F32, bs, 12)},
           {attr("dtype", Attribute::dtype(t))});
  }
  Tensor y = ok(OpKind::Matmul, {a, b});
  EXPECT_EQ(shapeOf(y), out);
  expectValues(y, naiveMatmul(a, b, out), tol);
}

TEST(LinalgTest, MatmulShapes) {
  for (DType t : {DType::F32, DType::F64}) {
    double tol = t == DType::F32 ? 1e-5 : 1e-12;
    checkMatmul(t, {3, 4}, {4, 5}, {3, 5}, tol);
    checkMatmul(t, {4}, {4, 5}, {5}, tol);             // gemv, transposed
    checkMatmul(t, {3, 4}, {4}, {3}, tol);             // gemv
    checkMatmul(t, {4}, {4}, {}, tol);                 // dot
    checkMatmul(t, {1, 4}, {4, 6}, {1, 6}, tol);       // one row
    checkMatmul(t, {2, 3, 4}, {4, 5}, {2, 3, 5}, tol); // folded batch
    checkMatmul(t, {2, 1, 3, 4}, {3, 4, 2}, {2, 3, 3, 2},
                tol); // broadcast batch
    checkMatmul(t, {4}, {2, 4, 3}, {2, 3}, tol);
    checkMatmul(t, {2, 3, 4}, {4}, {2, 3}, tol);
    checkMatmul(t, {3, 0}, {0, 2}, {3, 2}, tol); // empty contraction: zeros
  }
  checkMatmul(DType::F16, {2, 3, 4}, {4, 5}, {2, 3, 5}, 2e-2);
  checkMatmul(DType::BF16, {5, 6}, {6}, {5}, 5e-2);
  checkMatmul(DType::I32, {2, 3, 4}, {2, 4, 5}, {2, 3, 5}, 0);
  checkMatmul(DType::I8, {3}, {3, 2}, {2}, 0);
  checkMatmul(DType::F32, {64, 70}, {70, 50}, {64, 50}, 1e-4);
}

TEST(LinalgTest, IntegerMatmulWraps) {
  Tensor a = makeInts(DType::I8, {1, 2}, {100, 100}),
         b = makeInts(DType::I8, {2, 1}, {2, 1});
  expectValues(ok(OpKind::Matmul, {a, b}), {44}); // 300 mod 256
}

TEST(LinalgTest, Transpose) {
  Tensor x = randomTensor(DType::F32, {2, 3, 4}, 13);
  Tensor y = ok(OpKind::Transpose, {x}, {ints("perm", {2, 0, 1})});
  ASSERT_EQ(shapeOf(y), (Shape{4, 2, 3}));
  for (int64_t i = 0; i < y.numElements(); ++i) {
    Shape j = unflatten(i, {4, 2, 3});
    EXPECT_EQ(y.getDouble(i),
              x.getDouble(flatten({j[1], j[2], j[0]}, {2, 3, 4})));
  }
  Tensor r =
      ok(OpKind::Transpose, {makeInts(DType::I64, {2, 3}, {1, 2, 3, 4, 5, 6})});
  expectValues(r, {1, 4, 2, 5, 3, 6});
  Tensor big = randomTensor(DType::F64, {300, 200}, 14);
  Tensor bt = ok(OpKind::Transpose, {big});
  for (int64_t i = 0; i < 300; i += 37)
    for (int64_t j = 0; j < 200; j += 23)
      ASSERT_EQ(bt.getDouble(j * 300 + i), big.getDouble(i * 200 + j));
}

} // namespace
