// Test certificates for multi-process runs (`mdl mpc-certs DIR`):
// a certificate authority and one certificate and key per party, made with
// OpenSSL's API.
//
// These are for testing and for trying the device on three hosts; a real
// deployment would have each party generate its key on its own host and
// have an authority the parties trust sign it.
#pragma once

#include <llvm/Support/Error.h>

#include <string>

namespace mdl::backend::mpc {

/// Writes into `dir` (created if missing): ca.pem (a self-signed CA,
/// ECDSA P-256, SHA-256, valid 10 years), and for I in 0..2 partyI.pem (a
/// certificate with subject CN `mdl-party-I`, for both TLS client and server
/// use, signed by the CA) and partyI.key (its private key, mode 0600). The
/// CA's private key is not kept. Existing files are replaced.
llvm::Error createTestCertificates(const std::string &dir);

} // namespace mdl::backend::mpc
