// The operation kinds: the IR stores an OpKind in every operation without
// knowing what any of them is (ir/IR.h declares the enum opaquely); this
// header completes it from the operation table, stdlib/Ops.def, with each
// kind's IR spelling. Everything that names a kind includes it.
#pragma once

#include <cstdint>
#include <string>

namespace mdl::ir {

enum class OpKind : uint16_t {
#define MDL_OP(E, ...) E,
#include "stdlib/Ops.def"
#undef MDL_OP
};

constexpr int kNumOpKinds = 0
#define MDL_OP(E, ...) +1
#include "stdlib/Ops.def"
#undef MDL_OP
    ;

/// The text spelling of an operation kind (`add`, `max`, `for`).
const char *opName(OpKind k);
/// Looks an operation kind up by its spelling.
bool parseOpName(const std::string &s, OpKind &out);

} // namespace mdl::ir
