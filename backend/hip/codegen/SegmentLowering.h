// The second half of the GPU generator: a prepared segment (SegmentPrepare.h)
// becomes the steps of a GpuProgram, walking its operations in order.
//
// Every value gets a View (GpuKernels.h): segment inputs are input buffers;
// constants live in the program's constant data; view operations (reshape,
// transpose, expand_dims, squeeze, slice, broadcast_to) only change strides
// and offsets; every other operation writes a new buffer, which is the
// segment output itself when the value is yielded (in place), else a
// scratch slot (ScratchPlan.h). Each operation kind has one lowering,
// registered by kind (the generator's kernels by operation): fusions,
// matrix products (Gemm steps with mdl's tiled kernel as the fallback),
// concat / stack / pad (copies into parts of the result), gather /
// embedding / dynamic_index, argmax / argmin / prod, creations. Yielded
// values not computed in place are copied to their outputs (a Copy step
// when both sides are contiguous, else a copy kernel).
#pragma once

#include "backend/hip/GpuProgram.h"
#include "backend/hip/codegen/KernelBuilder.h"
#include "ir/IR.h"

#include <string>

namespace mdl::backend::hip {

/// Lowers the prepared `segment` into `program`'s steps, kernels (into
/// `gm`), inputs, outputs, scratch and constants; false with `error`.
bool lowerSegment(const ir::Operation &segment, GpuModule &gm, GpuProgram &program,
                  std::string &error);

/// The operation kinds lowerSegment has a lowering for (GpuOps.cpp's table
/// must say the same; a unit test checks it).
bool generatorLowers(ir::OpKind kind);

} // namespace mdl::backend::hip
