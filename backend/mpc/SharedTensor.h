// The values a rep3 engine works on: public tensors (what enters and
// leaves the device) and one party's view of a secret tensor.
//
// In rep3 a secret x in Z_2^64 is split as x = x0 + x1 + x2 and party i
// holds the pair (x_i, x_{i+1}) (indices mod 3): any two parties can
// reconstruct x, any single one sees two uniformly random ring elements.
// A SharedTensor is that pair for every element, plus the public facts
// every party knows: the shape and how the ring elements encode values.
#pragma once

#include "backend/mpc/Ring.h"

#include <cstdint>
#include <vector>

namespace mdl::backend::mpc {

/// A public tensor of doubles, row-major.
struct PlainTensor {
  Shape shape;
  std::vector<double> values;
};

/// One party's two shares of every element, row-major; `a` is x_i and `b`
/// is x_{i+1} for party i. Binary (XOR) sharings inside the engine use the
/// same layout.
struct Shares {
  std::vector<Ring> a;
  std::vector<Ring> b;

  Shares() = default;
  explicit Shares(size_t n) : a(n), b(n) {}
  size_t size() const { return a.size(); }
};

/// One party's handle on a secret tensor.
struct SharedTensor {
  Shape shape;
  EncodingKind encoding = EncodingKind::Fixed;
  Shares s;

  int64_t size() const { return int64_t(s.size()); }
};

} // namespace mdl::backend::mpc
