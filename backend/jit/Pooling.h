// Pooling for JIT-compiled code: a reduce_window whose windows span whole
// rows of its last dimension (max or average pooling of NHWC images, as
// JAX and Keras export them) runs on the worker pool, its output rows cut
// into chunks taken in turn, each computed by the CPU kernel's row loop on
// one thread. Other reduce_windows run their CPU kernel whole.
//
// Why not the CPU kernel on OpenMP: after a parallel region, libgomp's
// threads spin for milliseconds; the convolutions that follow a pooling
// layer run on the worker pool, whose threads would share their cores with
// the spinning ones (docs/jit.md, *Threads*).
#pragma once

#include "backend/jit/Runtime.h"

extern "C" {
/// Runs reduce_window `op` on contiguous host buffers.
int32_t mdl_rt_window(mdl::backend::jit::RuntimeContext *ctx, const mdl::ir::Operation *op,
                      void *const *ins, void *const *outs);
}
