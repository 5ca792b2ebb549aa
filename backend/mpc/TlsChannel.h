// The channel of a party running in its own process: TCP over TLS 1.3
// (Asio with OpenSSL), mutual certificate checks, no plaintext mode.
//
// Each pair of parties shares one connection; the higher-numbered party
// dials the lower one (party 0 accepts two connections, party 1 accepts
// one and dials one, party 2 dials two), retrying while the peer is not yet
// listening, up to connectTimeout. Both ends verify the other's
// certificate chain against ca.pem AND that its subject common name is
// the expected party's, `mdl-party-I`: a certificate from another CA, or
// one naming another party, is refused with an error that says so. Every
// round after setup is bounded by ioTimeout: a peer that dies (connection
// closed) fails the round at once, one that stalls fails it at the
// timeout; either way the channel is then broken and returns errors.
#pragma once

#include "backend/mpc/Channel.h"
#include "backend/mpc/Parties.h"

#include <llvm/Support/Error.h>

#include <chrono>
#include <memory>
#include <string>

namespace mdl::backend::mpc {

/// The files and addresses of one party's TLS channel.
struct TlsConfig {
  int party = 0;
  std::vector<PeerAddress> peers; ///< all three, this party's own included
  std::string caFile;             ///< PEM: the CA that signed all three
  std::string certFile;           ///< PEM: this party's certificate
  std::string keyFile;            ///< PEM: this party's private key
  std::chrono::milliseconds connectTimeout = std::chrono::seconds(30);
  std::chrono::milliseconds ioTimeout = std::chrono::seconds(30);
};

/// The subject common name party `party`'s certificate must carry.
std::string partyCommonName(int party);

/// Listens, dials and handshakes until both neighbours are connected and
/// verified. Errors: files that cannot be read, a port in use, a refused
/// certificate, a peer unreachable within connectTimeout.
llvm::Expected<std::unique_ptr<Channel>> connectTls(const TlsConfig &config);

} // namespace mdl::backend::mpc
