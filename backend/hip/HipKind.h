// The `hip` device kind: GPUs numbered by ordinal. Its run-time half is a
// GPU runtime library loaded with dlopen (libmdl_hip.so beside mdl or in
// lib/mdl, or $MDL_HIP_RUNTIME), so `mdl` runs where no GPU software is
// installed; without one, hip devices fall back to the host kind (the CPU)
// with a note. Its compile-time half has no GPU code generation yet: every
// hip segment runs where its device is bound, which without a GPU runtime
// is the CPU (whose compile-time half then compiles it).
#pragma once

namespace mdl::backend::hip {

/// Registers the hip kind (from the tool's main).
bool registerHipKind();

} // namespace mdl::backend::hip
