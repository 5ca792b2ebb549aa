// Typed attribute accessors, generated from the operation table (Ops.def):
// for each operation kind E a struct attrs::E with one field per attribute
// of its signature, of the attribute's C++ type, and `E::of(op)` to read an
// operation's attributes into it (defaults from the table where absent):
//
//   auto a = stdlib::attrs::Gelu::of(op);   // a.approximate: bool
//   auto s = stdlib::attrs::Sum::of(op);    // s.axis: std::optional<std::vector<int64_t>>
#pragma once

#include "ir/IR.h"
#include "stdlib/OpKind.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mdl::stdlib::attrs {

// The C++ type of each ParamKind (Registry.h).
using IntT = int64_t;
using AxesT = ::std::vector<int64_t>;
using IntPairT = ::std::vector<int64_t>;
using IntListT = ::std::vector<int64_t>;
using IntPairsT = ::std::vector<int64_t>;
using DimListT = ir::Shape;
using DimValueT = ir::Dim;
using NumberT = double;
using BoolT = bool;
using DTypeT = ir::DType;
using TypeT = ir::TensorType;
using DeviceT = ::std::string;
using StringT = ::std::string;
using FunctionT = ::std::string;

#define IN(n)
#define LIST(n)
#define VARIADIC(n)
#define REQ(n, K) K##T n{};
#define OPT(n, K) ::std::optional<K##T> n;
#define DFLT(n, K, v) K##T n{};
#define MDL_OP(E, N, CALL, CLS, D, TR, F, COST, RULE, ...)                                     \
  struct E {                                                                                  \
    __VA_ARGS__                                                                               \
    static E of(const ir::Operation &op);                                                     \
  };
#include "stdlib/Ops.def"
#undef MDL_OP
#undef DFLT
#undef OPT
#undef REQ
#undef VARIADIC
#undef LIST
#undef IN

} // namespace mdl::stdlib::attrs
