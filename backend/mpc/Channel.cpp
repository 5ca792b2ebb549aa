// Channel accounting and the in-process channels (Channel.h).
//
// The local hub holds one queue per directed pair of parties. A send copies
// the bytes into the queue; a receive waits on a condition variable until a
// message arrives, the sender has closed, or the timeout passes.
#include "backend/mpc/Channel.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>

namespace mdl::backend::mpc {

llvm::Error channelError(int party, const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "party " + std::to_string(party) + ": " +
                                     message);
}

llvm::Error Channel::exchange(ConstBytes toNext, ConstBytes toPrev,
                              MutableBytes fromNext, MutableBytes fromPrev) {
  ++stats_.rounds;
  stats_.messagesSent += (toNext.size > 0) + (toPrev.size > 0);
  stats_.bytesSent += toNext.size + toPrev.size;
  stats_.bytesReceived += fromNext.size + fromPrev.size;
  return doExchange(toNext, toPrev, fromNext, fromPrev);
}

llvm::Error Channel::send(Peer to, const void *data, size_t size) {
  ConstBytes msg{data, size};
  return to == Peer::Next ? exchange(msg, {}, {}, {})
                          : exchange({}, msg, {}, {});
}

llvm::Error Channel::recv(Peer from, void *data, size_t size) {
  MutableBytes msg{data, size};
  return from == Peer::Next ? exchange({}, {}, msg, {})
                            : exchange({}, {}, {}, msg);
}

namespace {

// The queues between three in-process parties.
struct LocalHub {
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<std::vector<uint8_t>> queue[kNumParties]
                                        [kNumParties]; // [from][to]
  bool closed[kNumParties] = {false, false, false};
};

class LocalChannel : public Channel {
public:
  LocalChannel(int party, std::shared_ptr<LocalHub> hub,
               std::chrono::milliseconds timeout)
      : Channel(party), hub_(std::move(hub)), timeout_(timeout) {}
  ~LocalChannel() override { close(); }

  void close() override {
    std::lock_guard<std::mutex> lock(hub_->mutex);
    hub_->closed[party()] = true;
    hub_->arrived.notify_all();
  }

protected:
  llvm::Error doExchange(ConstBytes toNext, ConstBytes toPrev,
                         MutableBytes fromNext,
                         MutableBytes fromPrev) override {
    int me = party();
    post(nextParty(me), toNext);
    post(prevParty(me), toPrev);
    if (auto err = take(nextParty(me), fromNext))
      return err;
    return take(prevParty(me), fromPrev);
  }

private:
  void post(int to, ConstBytes msg) {
    if (!msg.size)
      return;
    const uint8_t *p = static_cast<const uint8_t *>(msg.data);
    std::vector<uint8_t> copy(p, p + msg.size);
    std::lock_guard<std::mutex> lock(hub_->mutex);
    hub_->queue[party()][to].push_back(std::move(copy));
    hub_->arrived.notify_all();
  }

  llvm::Error take(int from, MutableBytes msg) {
    if (!msg.size)
      return llvm::Error::success();
    std::unique_lock<std::mutex> lock(hub_->mutex);
    auto &q = hub_->queue[from][party()];
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (q.empty()) {
      if (hub_->closed[from])
        return channelError(party(),
                            "party " + std::to_string(from) +
                                " left the computation while this party "
                                "waited for its message");
      if (hub_->arrived.wait_until(lock, deadline) == std::cv_status::timeout &&
          q.empty())
        return channelError(
            party(), "timed out after " + std::to_string(timeout_.count()) +
                         " ms waiting for party " + std::to_string(from));
    }
    std::vector<uint8_t> got = std::move(q.front());
    q.pop_front();
    if (got.size() != msg.size)
      return channelError(party(), "protocol out of step: expected " +
                                       std::to_string(msg.size) +
                                       " bytes from party " +
                                       std::to_string(from) + ", got " +
                                       std::to_string(got.size()));
    std::memcpy(msg.data, got.data(), got.size());
    return llvm::Error::success();
  }

  std::shared_ptr<LocalHub> hub_;
  std::chrono::milliseconds timeout_;
};

} // namespace

std::vector<std::unique_ptr<Channel>>
makeLocalChannels(std::chrono::milliseconds timeout) {
  auto hub = std::make_shared<LocalHub>();
  std::vector<std::unique_ptr<Channel>> channels;
  for (int i = 0; i < kNumParties; ++i)
    channels.push_back(std::make_unique<LocalChannel>(i, hub, timeout));
  return channels;
}

} // namespace mdl::backend::mpc
