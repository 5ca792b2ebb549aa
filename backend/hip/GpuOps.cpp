// The hip kind's operations (see GpuOps.h).
#include "backend/hip/GpuOps.h"

namespace mdl::backend::hip {

bool gpuImplements(ir::OpKind) { return true; }

} // namespace mdl::backend::hip
