// Unit tests for run-time tensors: allocation, element access and
// conversion, and NumPy-style printing.
#include "backend/runtime/Tensor.h"

#include "ir/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

using mdl::backend::Buffer;
using mdl::backend::formatTensor;
using mdl::backend::Tensor;
using mdl::ir::DType;
using mdl::ir::TensorType;

namespace {

Tensor filled(DType t, const std::vector<int64_t> &shape,
              const std::vector<double> &v) {
  Tensor x = Tensor::empty(TensorType::of(t, shape));
  EXPECT_TRUE(x.valid());
  for (size_t i = 0; i < v.size(); ++i)
    x.setDouble(int64_t(i), v[i]);
  return x;
}

TEST(BufferTest, AllocatesAligned) {
  for (size_t n :
       {size_t(0), size_t(1), size_t(63), size_t(64), size_t(1000)}) {
    auto b = Buffer::allocate(n);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
    EXPECT_EQ(b->size(), n);
  }
}

TEST(BufferTest, HugeAllocationFailsCleanly) {
  EXPECT_EQ(Buffer::allocate(std::numeric_limits<size_t>::max()), nullptr);
  EXPECT_EQ(Buffer::allocate(std::numeric_limits<size_t>::max() - 10), nullptr);
  EXPECT_EQ(Buffer::allocate(size_t(1) << 62), nullptr);
}

TEST(TensorTest, EmptyRejectsHugeAndSymbolicShapes) {
  EXPECT_FALSE(Tensor::empty(TensorType::of(DType::F32, {int64_t(1) << 40,
                                                         int64_t(1) << 40}))
                   .valid());
  EXPECT_FALSE(
      Tensor::empty(TensorType::of(DType::F64, {int64_t(1) << 61})).valid());
  EXPECT_FALSE(Tensor::empty(TensorType::of(DType::F32, {-1})).valid());
  TensorType sym(DType::F32, {mdl::ir::Dim::symbol("B")});
  EXPECT_FALSE(Tensor::empty(sym).valid());
  Tensor z = Tensor::empty(TensorType::of(DType::F32, {0, 5}));
  EXPECT_TRUE(z.valid());
  EXPECT_EQ(z.numElements(), 0);
}

TEST(TensorTest, ZerosAndClone) {
  Tensor z = Tensor::zeros(TensorType::of(DType::I32, {3, 5}));
  ASSERT_TRUE(z.valid());
  for (int64_t i = 0; i < 15; ++i)
    EXPECT_EQ(z.getInt(i), 0);
  Tensor c = z.clone();
  c.setInt(4, 42);
  EXPECT_EQ(c.getInt(4), 42);
  EXPECT_EQ(z.getInt(4), 0); // a deep copy
  EXPECT_EQ(c.type(), z.type());
  EXPECT_NE(c.raw(), z.raw());
}

TEST(TensorTest, ReshapedSharesData) {
  Tensor a = filled(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = a.reshaped(TensorType::of(DType::F32, {3, 2}));
  EXPECT_EQ(a.raw(), b.raw());
  EXPECT_EQ(b.dim(0), 3);
  EXPECT_EQ(b.getDouble(5), 6);
}

TEST(TensorTest, RoundTripsEveryDType) {
  for (int k = 0; k < mdl::ir::kNumDTypes; ++k) {
    DType t = DType(k);
    Tensor x = Tensor::empty(TensorType::of(t, {4}));
    ASSERT_TRUE(x.valid());
    std::vector<double> v = {0, 1, 2,
                             t == DType::U8 || t == DType::Bool ? 1.0 : -3.0};
    for (int i = 0; i < 4; ++i)
      x.setDouble(i, v[i]);
    for (int i = 0; i < 4; ++i) {
      double want = t == DType::Bool ? (v[i] != 0) : v[i];
      EXPECT_EQ(x.getDouble(i), want)
          << mdl::ir::dtypeName(t) << " element " << i;
      EXPECT_EQ(x.getInt(i), int64_t(want)) << mdl::ir::dtypeName(t);
    }
  }
}

TEST(TensorTest, ConversionsSaturateAndWrap) {
  Tensor i8 = Tensor::empty(TensorType::of(DType::I8, {6}));
  i8.setDouble(0, 300.7);
  i8.setDouble(1, -1e10);
  i8.setDouble(2, std::nan(""));
  i8.setDouble(3, -2.9); // toward zero
  i8.setInt(4, 300);     // integers wrap: 300 - 256
  i8.setInt(5, -129);    // 127
  EXPECT_EQ(i8.getInt(0), 127);
  EXPECT_EQ(i8.getInt(1), -128);
  EXPECT_EQ(i8.getInt(2), 0);
  EXPECT_EQ(i8.getInt(3), -2);
  EXPECT_EQ(i8.getInt(4), 44);
  EXPECT_EQ(i8.getInt(5), 127);

  Tensor u8 = Tensor::empty(TensorType::of(DType::U8, {2}));
  u8.setDouble(0, -5);
  u8.setInt(1, -1);
  EXPECT_EQ(u8.getInt(0), 0);
  EXPECT_EQ(u8.getInt(1), 255);

  Tensor i64 = Tensor::empty(TensorType::of(DType::I64, {2}));
  i64.setDouble(0, 1e30);
  i64.setDouble(1, -1e30);
  EXPECT_EQ(i64.getInt(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.getInt(1), std::numeric_limits<int64_t>::min());

  Tensor b = Tensor::empty(TensorType::of(DType::Bool, {3}));
  b.setDouble(0, 0.5);
  b.setDouble(1, 0.0);
  b.setDouble(2, std::nan(""));
  EXPECT_EQ(b.data<uint8_t>()[0], 1);
  EXPECT_EQ(b.data<uint8_t>()[1], 0);
  EXPECT_EQ(b.data<uint8_t>()[2], 1);

  Tensor f = Tensor::empty(TensorType::of(DType::F32, {1}));
  f.setDouble(0, 2.75);
  EXPECT_EQ(f.getInt(0), 2);

  Tensor h = Tensor::empty(TensorType::of(DType::F16, {1}));
  h.setDouble(0, 0.1);
  EXPECT_EQ(h.data<uint16_t>()[0], mdl::ir::floatToHalf(0.1f));
  Tensor bf = Tensor::empty(TensorType::of(DType::BF16, {1}));
  bf.setDouble(0, 1.0);
  EXPECT_EQ(bf.data<uint16_t>()[0], 0x3f80);
}

// --- Printing ---------------------------------------------------------------

TEST(FormatTest, FloatMatrix) {
  EXPECT_EQ(formatTensor(filled(DType::F32, {2, 2}, {1, 2, 3, 4})),
            "[[1. 2.]\n [3. 4.]]");
  EXPECT_EQ(formatTensor(filled(DType::F32, {3}, {1, 2.5, -3})),
            "[ 1.   2.5 -3. ]");
}

TEST(FormatTest, ShortestDigitsPerDType) {
  EXPECT_EQ(formatTensor(filled(DType::F32, {}, {0.1})), "0.1");
  EXPECT_EQ(formatTensor(filled(DType::F64, {}, {0.1})), "0.1");
  EXPECT_EQ(formatTensor(filled(DType::F16, {}, {0.1})), "0.1");
  EXPECT_EQ(formatTensor(filled(DType::BF16, {}, {0.1})), "0.1");
  EXPECT_EQ(formatTensor(filled(DType::F32, {}, {1.0 / 3})), "0.33333334");
  EXPECT_EQ(formatTensor(filled(DType::F64, {}, {1.0 / 3})), "0.33333333");
  EXPECT_EQ(formatTensor(filled(DType::F32, {}, {1.5})), "1.5");
  EXPECT_EQ(formatTensor(filled(DType::F64, {}, {-0.0})), "-0.");
}

TEST(FormatTest, ScientificAndSpecialValues) {
  EXPECT_EQ(formatTensor(filled(DType::F32, {}, {1e-5})), "1e-05");
  EXPECT_EQ(formatTensor(filled(DType::F64, {}, {2.5e20})), "2.5e+20");
  EXPECT_EQ(formatTensor(
                filled(DType::F32, {3}, {std::nan(""), INFINITY, -INFINITY})),
            "[ nan  inf -inf]");
}

TEST(FormatTest, IntsAndBools) {
  EXPECT_EQ(formatTensor(filled(DType::I32, {2, 2}, {1, -20, 300, 4})),
            "[[  1 -20]\n [300   4]]");
  EXPECT_EQ(formatTensor(filled(DType::Bool, {2}, {1, 0})), "[ True False]");
  EXPECT_EQ(formatTensor(filled(DType::I64, {}, {7})), "7");
  EXPECT_EQ(formatTensor(filled(DType::U8, {0}, {})), "[]");
}

TEST(FormatTest, Rank3SeparatesMatrices) {
  EXPECT_EQ(
      formatTensor(filled(DType::I32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})),
      "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]");
}

TEST(FormatTest, SummarizesLargeTensors) {
  std::vector<double> v(2000);
  for (int i = 0; i < 2000; ++i)
    v[i] = i;
  EXPECT_EQ(formatTensor(filled(DType::I64, {2000}, v)),
            "[   0    1    2 ... 1997 1998 1999]");
  std::vector<double> m(100);
  for (int i = 0; i < 100; ++i)
    m[i] = i;
  EXPECT_EQ(formatTensor(filled(DType::I32, {10, 10}, m), 50),
            "[[ 0  1  2 ...  7  8  9]\n"
            " [10 11 12 ... 17 18 19]\n"
            " [20 21 22 ... 27 28 29]\n"
            " ...\n"
            " [70 71 72 ... 77 78 79]\n"
            " [80 81 82 ... 87 88 89]\n"
            " [90 91 92 ... 97 98 99]]");
  // Below the threshold nothing is elided.
  EXPECT_EQ(formatTensor(filled(DType::I32, {8}, {0, 1, 2, 3, 4, 5, 6, 7})),
            "[0 1 2 3 4 5 6 7]");
}

TEST(FormatTest, InvalidTensor) {
  EXPECT_EQ(formatTensor(Tensor()), "<no data>");
}

} // namespace
