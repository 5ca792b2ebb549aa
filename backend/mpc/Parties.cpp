// Running parties as threads or as one process of three (Parties.h).
#include "backend/mpc/Parties.h"

#include "backend/mpc/Parallel.h"
#include "backend/mpc/TlsChannel.h"

#include <algorithm>
#include <climits>
#include <malloc.h>
#include <mutex>
#include <new>
#include <thread>

namespace mdl::backend::mpc {

namespace {

// Prefixes "party I: " unless the message already starts with it.
std::string partyMessage(int party, llvm::Error err) {
  std::string msg = llvm::toString(std::move(err));
  if (msg.rfind("party " + std::to_string(party) + ": ", 0) != 0)
    msg = "party " + std::to_string(party) + ": " + msg;
  return msg;
}

// One party's whole life on a connected channel: engine setup, the body,
// then closing the channel (which also releases peers waiting on it).
llvm::Error runOnChannel(Channel &channel, const Rep3Options &options,
                         const PartyFn &fn, OpStatsTable *stats) {
  auto engine = Rep3Engine::create(channel, options);
  if (!engine) {
    channel.close();
    return engine.takeError();
  }
  llvm::Error err = llvm::Error::success();
  try {
    err = fn(**engine);
  } catch (const std::bad_alloc &) {
    err = mpcError("out of memory");
  } catch (const std::exception &e) {
    err = mpcError(std::string("unexpected exception: ") + e.what());
  }
  if (stats)
    *stats = (*engine)->stats();
  channel.close();
  return err;
}

} // namespace

void keepFreedMemory() {
#ifdef __GLIBC__
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    // The parties' threads allocate in arenas of their own, which give
    // memory back when their top shrinks unless it is padded.
    mallopt(M_TOP_PAD, 64 * 1024 * 1024);
  });
#endif
}

llvm::Error runThreeParties(const Rep3Options &options, const PartyFn &fn,
                            std::vector<OpStatsTable> *stats,
                            std::chrono::milliseconds timeout) {
  auto channels = makeLocalChannels(timeout);
  return runOnChannels(
      {channels[0].get(), channels[1].get(), channels[2].get()}, options, fn,
      stats);
}

llvm::Error runOnChannels(const std::vector<Channel *> &channels,
                          const Rep3Options &options, const PartyFn &fn,
                          std::vector<OpStatsTable> *stats) {
  if (channels.size() != size_t(kNumParties))
    return mpcError("expected 3 channels, got " + std::to_string(channels.size()));
  for (int i = 0; i < kNumParties; ++i)
    if (!channels[i] || channels[i]->party() != i)
      return mpcError("channel " + std::to_string(i) + " is not party " +
                  std::to_string(i) + "'s");
  keepFreedMemory();
  Rep3Options opts = options;
  // Each party may use every core: its large GEMMs take turns with the
  // other parties' (Gemm.cpp), everything else is short.
  if (opts.threads <= 0)
    opts.threads = hardwareThreads();
  std::vector<OpStatsTable> tables(kNumParties);
  std::vector<std::string> errors(kNumParties);
  std::vector<std::thread> threads;
  for (int i = 0; i < kNumParties; ++i)
    threads.emplace_back([&, i] {
      if (llvm::Error err = runOnChannel(*channels[i], opts, fn, &tables[i]))
        errors[i] = partyMessage(i, std::move(err));
    });
  for (std::thread &t : threads)
    t.join();
  if (stats)
    *stats = std::move(tables);
  std::string all;
  for (const std::string &e : errors)
    if (!e.empty())
      all += (all.empty() ? "" : "\n") + e;
  return all.empty() ? llvm::Error::success() : mpcError(all);
}

llvm::Expected<std::vector<PeerAddress>> parsePeers(const std::string &text) {
  std::vector<PeerAddress> peers;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::string host, port;
    if (!item.empty() && item[0] == '[') {
      size_t close = item.find(']');
      if (close == std::string::npos || close + 1 >= item.size() ||
          item[close + 1] != ':')
        return mpcError("peer '" + item + "' is not [IPV6]:PORT");
      host = item.substr(1, close - 1);
      port = item.substr(close + 2);
    } else {
      size_t colon = item.rfind(':');
      if (colon == std::string::npos)
        return mpcError("peer '" + item + "' is not HOST:PORT");
      host = item.substr(0, colon);
      port = item.substr(colon + 1);
    }
    bool digits = !port.empty() && port.size() <= 5 &&
                  std::all_of(port.begin(), port.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (host.empty() || !digits || std::stoul(port) == 0 ||
        std::stoul(port) > 65535)
      return mpcError("peer '" + item +
                  "' needs a host and a port from 1 to 65535");
    peers.push_back({host, uint16_t(std::stoul(port))});
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  if (peers.size() != size_t(kNumParties))
    return mpcError("expected 3 peers H0:P0,H1:P1,H2:P2, got " +
                std::to_string(peers.size()) + " in '" + text + "'");
  return peers;
}

llvm::Error runParty(const PartyConfig &config, const Rep3Options &options,
                     const PartyFn &fn, OpStatsTable *stats) {
  if (config.party < 0 || config.party >= kNumParties)
    return mpcError("--mpc-party " + std::to_string(config.party) +
                " is not 0, 1 or 2");
  keepFreedMemory();
  TlsConfig tls;
  tls.party = config.party;
  tls.peers = config.peers;
  tls.caFile = config.tlsDir + "/ca.pem";
  tls.certFile =
      config.tlsDir + "/party" + std::to_string(config.party) + ".pem";
  tls.keyFile =
      config.tlsDir + "/party" + std::to_string(config.party) + ".key";
  tls.connectTimeout = config.connectTimeout;
  tls.ioTimeout = config.ioTimeout;
  auto channel = connectTls(tls);
  if (!channel)
    return channel.takeError();
  if (llvm::Error err = runOnChannel(**channel, options, fn, stats))
    return mpcError(partyMessage(config.party, std::move(err)));
  return llvm::Error::success();
}

} // namespace mdl::backend::mpc
