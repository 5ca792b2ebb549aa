// Affinity: decides, in one deterministic pass, the device of every
// operation of a specialized program (LANGUAGE.md, Placement).
//
// The result is a module where each function is specialized per placement
// (the devices its arguments arrive on and the `on DEV` of its call): every
// operation that executes on a device has one, with PlacementKind Explicit
// or Inferred; replicable values (computed only from unpinned params,
// consts and literals, or from loop indices) have none and are floating, to
// be materialized on each consuming device by insertTransfers. Control flow,
// calls, print, yield and return are host orchestration and have no device.
//
// Diagnostics: E0301 ambiguous placement, E0302 implicit transfer under
// --strict-placement, E0303 operation not implemented for a device kind,
// E0304 secret value leaving mpc without reveal, E0305 secret condition,
// E0306 loop-carried value changing device; with `explain`, N0801 for every
// implicit transfer and N0802 for every constant materialized on several
// devices.
#pragma once

#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <memory>
#include <string>

namespace mdl::passes {

struct AffinityOptions {
  std::string entry = "main";
  bool strictPlacement = false;
  bool explain = false;
  /// Names the instances of a function after their placement whenever it
  /// is not the default one (`f@gpu0`, `f@default.args_gpu0`), even when
  /// there is only one, so that a name always means the same code (see
  /// SpecializeOptions::stableNames).
  bool stableNames = false;
};

/// Returns the placed module, or null after reporting errors.
std::unique_ptr<ir::Module> affinity(const ir::Module &m, const AffinityOptions &opts,
                                     ir::DiagnosticEngine &diags);

/// Reports E0303 when device `d` of `m` does not implement `op` (its
/// kind's compile-time half answers), listing the operations the kind does
/// implement and ending the message with `where`. Returns the diagnostic
/// (for more notes), or null when the device implements it.
ir::Diagnostic *checkSupported(const ir::Module &m, const ir::Operation &op, int d,
                               ir::DiagnosticEngine &diags, const std::string &where = "");

} // namespace mdl::passes
