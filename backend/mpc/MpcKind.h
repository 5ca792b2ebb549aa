// The `mpc` device kind: secret-shared computation among `parties` parties
// in fixed point with `frac_bits` fractional bits. Values on it are secret:
// they enter shared and leave only by reveal. Its compile-time half says
// which operations the protocol implements (E0303 for the others at check
// time) and never lets a segment be compiled into host code; this build has
// no run-time half, so running an mpc program is refused (E0406) and
// nothing is ever run in plaintext in its place.
#pragma once

namespace mdl::backend::mpc {

/// Registers the mpc kind (from the tool's main).
bool registerMpcKind();

} // namespace mdl::backend::mpc
