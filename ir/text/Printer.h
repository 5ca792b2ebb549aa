// The IR text form: a deterministic printer (stable %N numbering in print
// order, attributes in insertion order, no pointer-keyed iteration) whose
// output ir/text/Parser.h reads back, so print(parse(print(m))) == print(m).
//
//   device @gpu0 = hip(ordinal = 0) loc(1:1)
//   func @f<B>(%0: f32[B, 4]) -> (f32[B, 4]) loc(3:1) {
//     %1 = mul %0, %0 : f32[B, 4] on @gpu0 loc(4:12)
//     return %1 loc(5:3)
//   }
#pragma once

#include "ir/IR.h"

#include <ostream>
#include <string>

namespace mdl::ir {

struct PrintOptions {
  bool locations = true; // print loc(...) suffixes
};

void printModule(const Module &m, std::ostream &os, PrintOptions opts = {});
std::string printModule(const Module &m, PrintOptions opts = {});
/// Prints one attribute value as it appears in the text form.
std::string printAttribute(const Attribute &a);
/// Prints a function alone (with the module for device names).
void printFunction(const Module &m, const Function &f, std::ostream &os,
                   PrintOptions opts = {});

} // namespace mdl::ir
