// oneDNN as the JIT's run time uses it: one CPU engine for every primitive
// (the convolutions of ConvPrimitive.cpp, the bf16 and f16 products of
// HalfGemm.cpp) and one stream per thread to execute them on.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace mdl::backend::jit {

/// The CPU engine (made at first use, with oneDNN's tracing-tool marks
/// turned off: it reads DNNL_ITT_TASK_LEVEL once, when first used).
dnnl::engine &onednnEngine();
/// This thread's stream on it.
dnnl::stream &onednnThreadStream();

} // namespace mdl::backend::jit
