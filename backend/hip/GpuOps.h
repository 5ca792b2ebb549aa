// Which operations the hip kind runs on a GPU: the operations its kernel
// generator (codegen/) makes kernels for. Read by the kind's supports()
// (E0303 lists the rest) without loading the generator, so it is a plain
// table here; the generator's own tests check that the two agree.
#pragma once

#include "ir/IR.h"

namespace mdl::backend::hip {

/// Whether a hip segment may hold operations of `kind`.
bool gpuImplements(ir::OpKind kind);

} // namespace mdl::backend::hip
