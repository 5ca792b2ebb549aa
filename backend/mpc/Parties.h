// Running the three parties of a rep3 computation: as threads of this
// process (the default mode), or as one party of a multi-process run over
// mutually authenticated TLS (`--mpc-party I --mpc-peers H0:P0,H1:P1,H2:P2
// --mpc-tls DIR`).
//
// Both entry points take the same body, a function run once per party on
// that party's engine; the body makes the same calls on every party (the
// public program), with only the input owners supplying values. Errors of
// any party end the run: the failing party closes its channel so that the
// others fail promptly instead of waiting for their timeout.
#pragma once

#include "backend/mpc/Rep3Engine.h"

#include <llvm/Support/Error.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace mdl::backend::mpc {

/// Asks glibc's malloc to keep freed memory for reuse instead of giving it
/// back to the system (M_MMAP_THRESHOLD at its 32 MiB maximum, M_TRIM_
/// THRESHOLD at 2 GiB, M_TOP_PAD 64 MiB for the threads' arenas): every
/// operation allocates and frees share vectors of the tensors' size, and
/// memory that goes back to the system returns with a page fault and a
/// zeroing per 4 KiB, which costs more than the arithmetic (a 1024 x 1024
/// output matmul spent 110 of its 140 ms there). The price is a resident
/// size that stays near its peak. Process-wide and idempotent;
/// runThreeParties and runParty call it.
void keepFreedMemory();

/// The body of a computation, run on each party's engine.
using PartyFn = std::function<llvm::Error(Rep3Engine &)>;

/// Three parties as threads of this process, over in-memory channels.
/// Options::threads = 0 lets each party use all hardware threads (large
/// GEMMs of the three take turns). `stats`, when given, receives each party's
/// accounting. Returns the parties' errors joined (each names its party).
llvm::Error
runThreeParties(const Rep3Options &options, const PartyFn &fn,
                std::vector<OpStatsTable> *stats = nullptr,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// runThreeParties on channels the caller made (index = party), for tests
/// that observe or disturb the traffic. Threads default as there.
llvm::Error runOnChannels(const std::vector<Channel *> &channels,
                          const Rep3Options &options, const PartyFn &fn,
                          std::vector<OpStatsTable> *stats = nullptr);

/// A peer's address.
struct PeerAddress {
  std::string host;
  uint16_t port = 0;
};

/// "H0:P0,H1:P1,H2:P2" -> three addresses (IPv6 hosts in brackets:
/// "[::1]:7000"); an error that says what is wrong otherwise.
llvm::Expected<std::vector<PeerAddress>> parsePeers(const std::string &text);

/// Configuration of one party of a multi-process run.
struct PartyConfig {
  int party = 0;
  std::vector<PeerAddress> peers; ///< all three, this party's own included
  std::string tlsDir;             ///< ca.pem, partyI.pem, partyI.key
  /// How long to keep retrying to connect while peers start.
  std::chrono::milliseconds connectTimeout = std::chrono::seconds(30);
  /// Bound on every wait for a peer once connected.
  std::chrono::milliseconds ioTimeout = std::chrono::seconds(30);
};

/// Runs party `config.party` of a multi-process computation: connects to
/// the other two over TLS 1.3 with mutual certificate checks, sets up the
/// engine and runs `fn`. `stats`, when given, receives this party's
/// accounting.
llvm::Error runParty(const PartyConfig &config, const Rep3Options &options,
                     const PartyFn &fn, OpStatsTable *stats = nullptr);

} // namespace mdl::backend::mpc
