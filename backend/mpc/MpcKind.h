// The `mpc` device kind: secret-shared computation among `parties` parties
// in fixed point with `frac_bits` fractional bits. Values on it are secret:
// they enter shared and leave only by reveal. Its compile-time half says
// which operations the protocol implements (E0303 for the others at check
// time), never lets a segment be compiled into host code, and turns each
// segment into a protocol program (MpcCompile.cpp); its run-time half runs
// the three rep3 parties as threads, or this process as one of three over
// TLS (MpcRuntime.cpp). docs/mpc.md has the protocol and its costs.
#pragma once

#include <string>

namespace mdl::backend::mpc {

/// Registers the mpc kind (from the tool's main).
bool registerMpcKind();

/// Writes a test certificate authority and three party certificates into
/// `dir` (ca.pem, partyI.pem, partyI.key; `mdl mpc-certs`). False with
/// `error` when it cannot.
bool writeTestCertificates(const std::string &dir, std::string &error);

} // namespace mdl::backend::mpc
