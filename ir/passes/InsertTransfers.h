// insertTransfers: carries out the decisions of affinity.
//
// Where an operation on device D reads a value that lives on device E, a
// `transfer` (from E, on D) is inserted right after the value is defined,
// once per (value, device), so a value used inside a loop moves once, before
// it. A floating (replicable) value is materialized on each device that
// consumes it: reads of unpinned globals and chains computed only from
// params, consts and literals are hoisted into globals, materialized once
// per device at load time; anything else floating (loop indices, revealed
// values) is recomputed on the consuming device. The floating originals
// are removed: afterwards every operation is on a device or is host
// orchestration (control flow, calls, print, transfers).
#pragma once

#include "ir/Diagnostics.h"
#include "ir/IR.h"

namespace mdl::passes {

/// Rewrites a module produced by affinity in place. Returns false after
/// reporting errors (E0303 for a floating operation that must run on a
/// device kind that does not implement it).
bool insertTransfers(ir::Module &m, ir::DiagnosticEngine &diags);

} // namespace mdl::passes
