// Shape and element-type rules of the standard library, on static and
// symbolic shapes.
#include "stdlib/DotDims.h"
#include "stdlib/Registry.h"

#include <gtest/gtest.h>

using namespace mdl;
using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::NamedAttr;
using ir::OpKind;
using ir::TensorType;

namespace {

TensorType f32(std::vector<int64_t> dims) { return TensorType::of(DType::F32, dims); }

TensorType sym(DType t, std::vector<std::string> dims) {
  ir::Shape s;
  for (auto &d : dims) {
    if (d == "?")
      s.push_back(Dim::unknown());
    else if (std::isdigit(static_cast<unsigned char>(d[0])))
      s.push_back(Dim::of(std::stoll(d)));
    else
      s.push_back(Dim::symbol(d));
  }
  return TensorType(t, s);
}

stdlib::InferResult infer(OpKind k, std::vector<TensorType> ops,
                          std::vector<NamedAttr> attrs = {}) {
  return stdlib::inferTypes(k, ops, attrs);
}

std::string str(const stdlib::InferResult &r) {
  if (!r.ok())
    return r.error->code + ": " + r.error->message;
  std::string s;
  for (auto &t : r.types)
    s += (s.empty() ? "" : ", ") + t.str();
  return s;
}

} // namespace

TEST(Broadcast, NumpyRules) {
  EXPECT_EQ(str(infer(OpKind::Add, {f32({2, 3}), f32({3})})), "f32[2, 3]");
  EXPECT_EQ(str(infer(OpKind::Add, {f32({4, 1, 3}), f32({2, 1})})), "f32[4, 2, 3]");
  EXPECT_EQ(str(infer(OpKind::Add, {f32({}), f32({5})})), "f32[5]");
  auto r = infer(OpKind::Add, {f32({2, 3}), f32({2})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, "E0202");
  EXPECT_NE(r.error->message.find("[2, 3] and [2]"), std::string::npos);
}

TEST(Broadcast, Symbolic) {
  EXPECT_EQ(str(infer(OpKind::Mul, {sym(DType::F32, {"B", "4"}), f32({4})})), "f32[B, 4]");
  EXPECT_EQ(str(infer(OpKind::Mul, {sym(DType::F32, {"B"}), sym(DType::F32, {"B"})})), "f32[B]");
  // Different symbols may be equal once bound: unknown until specialization.
  EXPECT_EQ(str(infer(OpKind::Mul, {sym(DType::F32, {"N"}), sym(DType::F32, {"M"})})), "f32[?]");
  // A symbol against a static size takes the size.
  EXPECT_EQ(str(infer(OpKind::Mul, {sym(DType::F32, {"N"}), f32({3})})), "f32[3]");
}

TEST(ElementTypes, MismatchAndBool) {
  auto r = infer(OpKind::Add, {f32({2}), TensorType::of(DType::I32, {2})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, "E0201");
  EXPECT_EQ(str(infer(OpKind::Lt, {f32({2}), f32({2})})), "bool[2]");
  EXPECT_EQ(infer(OpKind::And, {f32({2}), f32({2})}).error->code, "E0201");
  EXPECT_EQ(infer(OpKind::Exp, {TensorType::of(DType::I64, {2})}).error->code, "E0201");
  EXPECT_EQ(str(infer(OpKind::Neg, {TensorType::of(DType::I64, {2})})), "i64[2]");
}

TEST(Reductions, AxesAndKeepdims) {
  std::vector<NamedAttr> attrs = {{"axis", Attribute::integer(-1)},
                                  {"keepdims", Attribute::boolean(true)}};
  auto r = stdlib::inferTypes(OpKind::Sum, {f32({2, 3})}, attrs);
  EXPECT_EQ(str(r), "f32[2, 1]");
  // The axis is canonicalized to a non-negative list.
  EXPECT_EQ(attrs[0].value.asIntList(), std::vector<int64_t>{1});
  std::vector<NamedAttr> all;
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Mean, {f32({2, 3})}, all)), "f32");
  EXPECT_EQ(all[0].value.asIntList(), (std::vector<int64_t>{0, 1}));
  std::vector<NamedAttr> bad = {{"axis", Attribute::integer(2)}};
  EXPECT_EQ(stdlib::inferTypes(OpKind::Sum, {f32({2, 3})}, bad).error->code, "E0204");
  std::vector<NamedAttr> am = {{"axis", Attribute::integer(1)}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Argmax, {f32({2, 3})}, am)), "i64[2]");
  EXPECT_EQ(infer(OpKind::Mean, {TensorType::of(DType::I32, {3})}).error->code, "E0201");
}

TEST(Matmul, NumpySemantics) {
  EXPECT_EQ(str(infer(OpKind::Matmul, {f32({2, 3}), f32({3, 4})})), "f32[2, 4]");
  EXPECT_EQ(str(infer(OpKind::Matmul, {f32({3}), f32({3, 4})})), "f32[4]");
  EXPECT_EQ(str(infer(OpKind::Matmul, {f32({2, 3}), f32({3})})), "f32[2]");
  EXPECT_EQ(str(infer(OpKind::Matmul, {f32({5, 2, 3}), f32({3, 4})})), "f32[5, 2, 4]");
  EXPECT_EQ(str(infer(OpKind::Matmul, {f32({5, 1, 2, 3}), f32({7, 3, 4})})), "f32[5, 7, 2, 4]");
  auto r = infer(OpKind::Matmul, {f32({2, 3}), f32({4, 5})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, "E0203");
  EXPECT_EQ(r.error->message, "matmul contraction mismatch: lhs has 3 columns, rhs has 4 rows");
  EXPECT_EQ(str(infer(OpKind::Matmul, {sym(DType::F32, {"B", "N"}), sym(DType::F32, {"N", "M"})})),
            "f32[B, M]");
}

TEST(ShapeOps, ReshapeInfersMinusOne) {
  std::vector<NamedAttr> a = {{"shape", Attribute::dimList({Dim::of(-1), Dim::of(4)})}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Reshape, {f32({3, 8})}, a)), "f32[6, 4]");
  std::vector<NamedAttr> b = {{"shape", Attribute::dimList({Dim::of(5), Dim::of(3)})}};
  EXPECT_EQ(stdlib::inferTypes(OpKind::Reshape, {f32({12})}, b).error->code, "E0202");
  std::vector<NamedAttr> c = {{"shape", Attribute::dimList({Dim::of(-1), Dim::of(2)})}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Reshape, {sym(DType::F32, {"B", "2"})}, c)), "f32[B, 2]");
  std::vector<NamedAttr> d = {{"shape", Attribute::dimList({Dim::of(-1), Dim::of(-1)})}};
  EXPECT_EQ(stdlib::inferTypes(OpKind::Reshape, {f32({4})}, d).error->code, "E0204");
}

TEST(ShapeOps, ConcatStackSqueezeExpand) {
  std::vector<NamedAttr> ax1 = {{"axis", Attribute::integer(1)}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Concat, {f32({2, 3}), f32({2, 5})}, ax1)), "f32[2, 8]");
  std::vector<NamedAttr> ax1b = {{"axis", Attribute::integer(1)}};
  EXPECT_EQ(stdlib::inferTypes(OpKind::Concat, {f32({2, 3}), f32({3, 5})}, ax1b).error->code,
            "E0202");
  std::vector<NamedAttr> ax0 = {{"axis", Attribute::integer(2)}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Stack, {f32({2, 3}), f32({2, 3})}, ax0)), "f32[2, 3, 2]");
  std::vector<NamedAttr> sq = {{"axis", Attribute::integer(0)}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Squeeze, {f32({1, 3})}, sq)), "f32[3]");
  std::vector<NamedAttr> sqBad = {{"axis", Attribute::integer(1)}};
  EXPECT_EQ(stdlib::inferTypes(OpKind::Squeeze, {f32({1, 3})}, sqBad).error->code, "E0202");
  std::vector<NamedAttr> ed = {{"axis", Attribute::integer(-1)}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::ExpandDims, {f32({3})}, ed)), "f32[3, 1]");
}

TEST(ShapeOps, SliceAndIndexBounds) {
  std::vector<NamedAttr> a = {{"start", Attribute::intList({0, 1})},
                              {"stop", Attribute::intList({INT64_MAX, 3})},
                              {"step", Attribute::intList({1, 1})},
                              {"drop", Attribute::intList({})}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Slice, {f32({2, 4})}, a)), "f32[2, 2]");
  std::vector<NamedAttr> rev = {{"start", Attribute::intList({INT64_MAX})},
                                {"stop", Attribute::intList({INT64_MAX})},
                                {"step", Attribute::intList({-2})},
                                {"drop", Attribute::intList({})}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Slice, {f32({5})}, rev)), "f32[3]");
  std::vector<NamedAttr> oob = {{"start", Attribute::intList({7})},
                                {"stop", Attribute::intList({8})},
                                {"step", Attribute::intList({1})},
                                {"drop", Attribute::intList({0})}};
  EXPECT_EQ(stdlib::inferTypes(OpKind::Slice, {f32({3})}, oob).error->code, "E0210");
  auto s = stdlib::normalizeSliceDim(10, -3, INT64_MAX, 1);
  EXPECT_EQ(s.start, 7);
  EXPECT_EQ(s.len, 3);
}

TEST(Neural, ConvPoolShapes) {
  std::vector<NamedAttr> c = {{"stride", Attribute::integer(1)}, {"padding", Attribute::integer(1)}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Conv2d, {f32({2, 3, 6, 6}), f32({4, 3, 3, 3})}, c)),
            "f32[2, 4, 6, 6]");
  std::vector<NamedAttr> c2;
  auto bad = stdlib::inferTypes(OpKind::Conv2d, {f32({2, 3, 6, 6}), f32({4, 2, 3, 3})}, c2);
  EXPECT_EQ(bad.error->code, "E0202");
  std::vector<NamedAttr> p = {{"size", Attribute::integer(2)}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::MaxPool2d, {f32({2, 4, 6, 6})}, p)), "f32[2, 4, 3, 3]");
  EXPECT_EQ(p[1].value.asIntList(), (std::vector<int64_t>{2, 2})); // stride defaults to size
}

TEST(Creation, TypesAndArange) {
  std::vector<NamedAttr> z = {{"type", Attribute::type(f32({2, 2}))}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Zeros, {}, z)), "f32[2, 2]");
  std::vector<NamedAttr> a = {{"n", Attribute::dimList({Dim::of(6)})}};
  EXPECT_EQ(str(stdlib::inferTypes(OpKind::Arange, {}, a)), "i64[6]");
  std::vector<NamedAttr> r = {{"type", Attribute::type(TensorType::of(DType::I32, {2}))},
                              {"seed", Attribute::integer(1)}};
  EXPECT_EQ(stdlib::inferTypes(OpKind::RandomNormal, {}, r).error->code, "E0201");
}

// dot_general as a batched matrix product: lhs [k0=2, b=3, m=4, k1=5],
// rhs [k1=5, n=6, b=3, k0=2, n2=7], batch (1; 2), contracted (0, 3; 3, 0).
TEST(DotGeneral, DimensionNumbersAsAMatrixProduct) {
  stdlib::DotDims d =
      stdlib::dotDims({2, 3, 4, 5}, {5, 6, 3, 2, 7}, {1}, {2}, {0, 3}, {3, 0});
  EXPECT_EQ(d.lhsFree, (std::vector<int64_t>{2}));
  EXPECT_EQ(d.rhsFree, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(d.lhsOrder, (std::vector<int64_t>{1, 2, 0, 3}));
  EXPECT_EQ(d.rhsOrder, (std::vector<int64_t>{2, 3, 0, 1, 4}));
  EXPECT_EQ(d.batch, (std::vector<int64_t>{3}));
  EXPECT_EQ(d.B, 3);
  EXPECT_EQ(d.M, 4);
  EXPECT_EQ(d.K, 10);
  EXPECT_EQ(d.N, 42);
  // No batch, nothing contracted: an outer product.
  stdlib::DotDims o = stdlib::dotDims({4}, {6}, {}, {}, {}, {});
  EXPECT_EQ(o.B, 1);
  EXPECT_EQ(o.K, 1);
  EXPECT_EQ(o.M * o.N, 24);
  EXPECT_TRUE(o.batch.empty());
}
