// Helpers shared by the CPU kernel tests: building tensors, running an
// operation the way the compiler builds it (attributes canonicalized and the
// result type computed by the registry's shape rule), and naive references.
#pragma once

#include "backend/cpu/Kernels.h"

#include "ir/Half.h"
#include "stdlib/Registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace kerneltest {

using namespace mdl;
using backend::Tensor;
using ir::Attribute;
using ir::DType;
using ir::NamedAttr;
using ir::OpKind;
using ir::TensorType;

using Shape = std::vector<int64_t>;

inline Tensor make(DType t, const Shape &shape, const std::vector<double> &v) {
  Tensor x = Tensor::empty(TensorType::of(t, shape));
  EXPECT_TRUE(x.valid());
  EXPECT_EQ(int64_t(v.size()), x.numElements());
  for (size_t i = 0; i < v.size(); ++i)
    x.setDouble(int64_t(i), v[i]);
  return x;
}

inline Tensor makeInts(DType t, const Shape &shape,
                       const std::vector<int64_t> &v) {
  Tensor x = Tensor::empty(TensorType::of(t, shape));
  for (size_t i = 0; i < v.size(); ++i)
    x.setInt(int64_t(i), v[i]);
  return x;
}

// Deterministic pseudo-random values in [-2, 2).
inline Tensor randomTensor(DType t, const Shape &shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-2, 2);
  Tensor x = Tensor::empty(TensorType::of(t, shape));
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.setDouble(i, d(rng));
  return x;
}

inline std::vector<double> values(const Tensor &t) {
  std::vector<double> v(size_t(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.getDouble(int64_t(i));
  return v;
}

inline NamedAttr attr(const char *name, Attribute a) {
  return NamedAttr{name, std::move(a)};
}
inline NamedAttr ints(const char *name, std::vector<int64_t> v) {
  return attr(name, Attribute::intList(std::move(v)));
}

struct Result {
  Tensor out;
  std::optional<std::string> error;
};

// Runs `kind` on `in` with `attrs`, as the compiler would build it.
inline Result run(OpKind kind, std::vector<Tensor> in,
                  std::vector<NamedAttr> attrs = {}) {
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
  Result res;
  res.error = backend::cpu::runKernel(op, in, out);
  if (!out.empty())
    res.out = out[0];
  return res;
}

inline Tensor ok(OpKind kind, std::vector<Tensor> in,
                 std::vector<NamedAttr> attrs = {}) {
  Result r = run(kind, std::move(in), std::move(attrs));
  EXPECT_FALSE(r.error.has_value()) << *r.error;
  return r.out;
}

inline void expectValues(const Tensor &t, const std::vector<double> &want,
                         double tol = 0) {
  ASSERT_EQ(t.numElements(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double got = t.getDouble(int64_t(i));
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
    else
      EXPECT_NEAR(got, want[i], tol + tol * std::fabs(want[i]))
          << "element " << i;
  }
}

// Row-major multi-index helpers for naive references.
inline Shape unflatten(int64_t i, const Shape &s) {
  Shape idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}
inline int64_t flatten(const Shape &idx, const Shape &s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d)
    f = f * s[d] + idx[d];
  return f;
}
// The element of `in` (shape s) that broadcasts to output index `idx`.
inline int64_t broadcastIndex(const Shape &idx, const Shape &s) {
  Shape j(s.size());
  size_t lead = idx.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d)
    j[d] = s[d] == 1 ? 0 : idx[lead + d];
  return flatten(j, s);
}

inline Shape shapeOf(const Tensor &t) { return t.type().sizes(); }

} // namespace kerneltest
