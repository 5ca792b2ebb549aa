// The first half of the GPU generator: a hip segment (plain operations, as
// the JIT and the interpreter hand it over) becomes the fused-loop IR the
// kernels are generated from, in a copy the generator owns:
// 1. the segment is copied into a module of its own (its operands become
//    the function's arguments);
// 2. reductions over leading axes, or over every axis, become reductions
//    over trailing axes of a transposed view (a transpose is free: kernels
//    read strides), with a reshape for keepdims, so fusion takes them;
//    softmax, log_softmax and layernorm over another axis than the last
//    work on a transposed view too;
// 3. canonicalize (ir/passes/Canonicalize.h): softmax, log_softmax and
//    layernorm become reductions and element-wise operations;
// 4. operations whose operands are all constants (random_normal and
//    random_uniform above all) are evaluated on the host with the CPU
//    kernels and become constants, shipped as the program's constant data;
// 5. fuse (ir/passes/Fuse.h), exactly as for the JIT;
// 6. an element-wise operation fusion left alone (integer pow) becomes a
//    fusion of its own, so every element-wise kernel comes from one emitter.
#pragma once

#include "ir/IR.h"

#include <memory>
#include <string>

namespace mdl::backend::hip {

struct PreparedSegment {
  std::unique_ptr<ir::Module> module; // owns the copy
  ir::Operation *segment = nullptr;   // the prepared segment in it
};

/// Prepares a copy of `segment`; false with `error`.
bool prepareSegment(const ir::Operation &segment, PreparedSegment &out, std::string &error);

} // namespace mdl::backend::hip
