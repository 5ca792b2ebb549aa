// Channels between the three parties of a rep3 computation, with their
// accounting, and the in-process implementation (parties as threads).
//
// A party talks only to its two neighbours, next = (i+1) mod 3 and
// prev = (i+2) mod 3. The unit of communication is a round: in one call to
// exchange() a party sends at most one message to each neighbour and
// receives at most one from each, all four transfers in flight at once so
// that large messages cannot deadlock. Both ends know every message's size
// from the protocol; a size that differs is reported as a protocol error,
// never read past. Implementations: LocalChannel (this file, queues between
// threads) and TlsChannel (TlsChannel.h, Asio over TLS 1.3).
#pragma once

#include <llvm/Support/Error.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mdl::backend::mpc {

/// Number of parties of rep3.
constexpr int kNumParties = 3;

inline int nextParty(int i) { return (i + 1) % kNumParties; }
inline int prevParty(int i) { return (i + kNumParties - 1) % kNumParties; }

/// A neighbour of a party.
enum class Peer { Next, Prev };

/// Read-only bytes to send; size 0 sends nothing.
struct ConstBytes {
  const void *data = nullptr;
  size_t size = 0;
};

/// Room for bytes to receive; size 0 expects nothing.
struct MutableBytes {
  void *data = nullptr;
  size_t size = 0;
};

/// What one party's channel has carried so far.
struct ChannelStats {
  uint64_t rounds = 0;        ///< calls of exchange()
  uint64_t messagesSent = 0;  ///< non-empty messages sent
  uint64_t bytesSent = 0;     ///< payload bytes sent (headers not counted)
  uint64_t bytesReceived = 0; ///< payload bytes received
};

/// One party's connection to its two neighbours.
class Channel {
public:
  explicit Channel(int party) : party_(party) {}
  virtual ~Channel() = default;
  Channel(const Channel &) = delete;
  Channel &operator=(const Channel &) = delete;

  /// This party's index (0, 1 or 2).
  int party() const { return party_; }

  /// One round: sends toNext/toPrev, receives exactly fromNext.size and
  /// fromPrev.size bytes. Fails (without hanging past the channel's timeout)
  /// when a neighbour is gone, stalls, or sends a message of another size.
  llvm::Error exchange(ConstBytes toNext, ConstBytes toPrev,
                       MutableBytes fromNext, MutableBytes fromPrev);

  /// A round with a single message out.
  llvm::Error send(Peer to, const void *data, size_t size);
  /// A round with a single message in.
  llvm::Error recv(Peer from, void *data, size_t size);

  /// Tells the neighbours this party leaves (finished or failed): a peer
  /// waiting on it fails at once instead of at its timeout.
  virtual void close() = 0;

  const ChannelStats &stats() const { return stats_; }

protected:
  virtual llvm::Error doExchange(ConstBytes toNext, ConstBytes toPrev,
                                 MutableBytes fromNext,
                                 MutableBytes fromPrev) = 0;

private:
  int party_;
  ChannelStats stats_;
};

/// An error `party I: MESSAGE`.
llvm::Error channelError(int party, const std::string &message);

/// Three channels connected in memory, for parties running as threads of
/// one process. `timeout` bounds every wait for a message.
std::vector<std::unique_ptr<Channel>>
makeLocalChannels(std::chrono::milliseconds timeout = std::chrono::seconds(30));

} // namespace mdl::backend::mpc
