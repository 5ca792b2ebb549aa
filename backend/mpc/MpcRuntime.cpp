// The mpc kind's run-time half: the C device interface over rep3 parties.
//
// The parties this process runs (all three as threads by default, or one
// of three over TLS) each keep an engine for the whole run and a table of
// the secret tensors the device holds, keyed by device address. Memory is
// host memory the runtime never reads: it only gives each value a unique
// address (the JIT places values at offsets in arenas it allocates). Every
// call is a job that each local party runs on its engine, together:
//   copy_in   secret-shares a value (its holder is the input's owner);
//   copy_out  reveals one to every party (only reveal(x) moves a secret
//             value out: the compiler refuses anything else, E0304);
//   copy      copies shares within the device, nothing revealed;
//   run       runs a protocol program on shared inputs, outputs shared.
// In a run of three processes a host value that another party holds comes
// in with a null source: the parties agree on its owner in one round.
#include "backend/mpc/Accounting.h"
#include "backend/mpc/Channel.h"
#include "backend/mpc/MpcArtifact.h"
#include "backend/mpc/Parties.h"
#include "backend/mpc/TlsChannel.h"
#include "backend/runtime/Tensor.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

namespace mdl::backend::mpc {
namespace {

/// One party's share of the device's memory.
using Memory = std::map<uintptr_t, SharedTensor>;
using Job = std::function<llvm::Error(Rep3Engine &engine, Memory &memory)>;

/// The parties of this process, each with its engine and memory, running
/// jobs together: three threads, or this thread as one party of three.
class LocalParties {
public:
  ~LocalParties() { stop(); }

  llvm::Error startThreads(const Rep3Options &options) {
    channels_ = makeLocalChannels();
    states_.resize(kNumParties);
    for (int p = 0; p < kNumParties; ++p)
      threads_.emplace_back([this, p, options] { loop(p, options); });
    // Setup is itself a job: wait until every engine exists.
    return all([](Rep3Engine &, Memory &) { return llvm::Error::success(); });
  }

  llvm::Error startRemote(const PartyConfig &config, const Rep3Options &options) {
    TlsConfig tls;
    tls.party = config.party;
    tls.peers = config.peers;
    tls.caFile = config.tlsDir + "/ca.pem";
    tls.certFile = config.tlsDir + "/party" + std::to_string(config.party) + ".pem";
    tls.keyFile = config.tlsDir + "/party" + std::to_string(config.party) + ".key";
    tls.connectTimeout = config.connectTimeout;
    tls.ioTimeout = config.ioTimeout;
    auto channel = connectTls(tls);
    if (!channel)
      return channel.takeError();
    remoteChannel_ = std::move(*channel);
    auto engine = Rep3Engine::create(*remoteChannel_, options);
    if (!engine)
      return engine.takeError();
    states_.resize(1);
    states_[0].engine = std::move(*engine);
    return llvm::Error::success();
  }

  /// Runs `job` on every local party; their errors joined.
  llvm::Error all(const Job &job) {
    if (threads_.empty()) { // one party, this thread
      State &s = states_[0];
      return job(*s.engine, s.memory);
    }
    std::unique_lock<std::mutex> lock(mu_);
    job_ = &job;
    done_ = 0;
    ++generation_;
    wake_.notify_all();
    finished_.wait(lock, [&] { return done_ == kNumParties; });
    job_ = nullptr;
    std::string why;
    for (State &s : states_)
      if (!s.error.empty()) {
        why += (why.empty() ? "" : "; ") + s.error;
        s.error.clear();
      }
    return why.empty() ? llvm::Error::success() : mpcError(why);
  }

  bool threadMode() const { return !threads_.empty(); }
  int firstParty() const { return threads_.empty() ? states_[0].engine->party() : 0; }

  /// Prints each local party's accounting (--timings): tables, or with
  /// `json` one object per party and operation kind, exact bytes.
  void printStats(std::ostream &os, bool json) const {
    for (const State &s : states_) {
      if (!s.engine)
        continue;
      if (!json) {
        mpc::printStats(os, s.engine->party(), s.engine->stats());
        continue;
      }
      for (const auto &[name, st] : s.engine->stats())
        os << nlohmann::json{{"mpc_party", s.engine->party()}, {"op", name},
                             {"calls", st.calls}, {"rounds", st.rounds},
                             {"bytes_sent", st.bytesSent}, {"bytes_received", st.bytesReceived},
                             {"ms", st.seconds * 1e3},
                             {"fastest_call_ms", st.fastestCall * 1e3}}
                  .dump()
           << "\n";
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      wake_.notify_all();
    }
    for (std::thread &t : threads_)
      t.join();
    threads_.clear();
    if (remoteChannel_)
      remoteChannel_->close();
  }

private:
  struct State {
    std::unique_ptr<Rep3Engine> engine;
    Memory memory;
    std::string error;
  };

  void loop(int p, Rep3Options options) {
    State &s = states_[size_t(p)];
    auto engine = Rep3Engine::create(*channels_[size_t(p)], options);
    std::string setupError;
    if (!engine)
      setupError = llvm::toString(engine.takeError());
    else
      s.engine = std::move(*engine);
    uint64_t seen = 0;
    for (;;) {
      const Job *job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_)
          return;
        seen = generation_;
        job = job_;
      }
      std::string err = setupError;
      if (err.empty())
        if (llvm::Error e = (*job)(*s.engine, s.memory)) {
          err = llvm::toString(std::move(e));
          // The others must not wait for this party's messages.
          channels_[size_t(p)]->close();
        }
      std::lock_guard<std::mutex> lock(mu_);
      s.error = err;
      if (++done_ == kNumParties)
        finished_.notify_all();
    }
  }

  std::vector<std::unique_ptr<Channel>> channels_;
  std::unique_ptr<Channel> remoteChannel_;
  std::vector<State> states_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  const Job *job_ = nullptr;
  uint64_t generation_ = 0;
  int done_ = 0;
  bool stopping_ = false;
};

Shape shapeOf(const mdl_buffer &b) { return Shape(b.shape, b.shape + b.rank); }

EncodingKind encodingOf(const mdl_buffer &b) {
  return ir::isFloat(dtypeOfAbi(b.dtype)) ? EncodingKind::Fixed : EncodingKind::Integer;
}

/// A host tensor's values as doubles.
PlainTensor plainOf(const mdl_buffer &b, const void *data) {
  Tensor host = hostTensor(b, data);
  PlainTensor t{shapeOf(b), std::vector<double>(size_t(host.numElements()))};
  for (int64_t i = 0; i < host.numElements(); ++i)
    t.values[size_t(i)] = host.getDouble(i);
  return t;
}

/// Stores revealed values into a host tensor of `b`'s type.
void storePlain(const PlainTensor &t, const mdl_buffer &b, void *data) {
  Tensor host = hostTensor(b, data);
  for (size_t i = 0; i < t.values.size(); ++i)
    host.setDouble(int64_t(i), t.values[i]);
}

/// In a run of several processes: the party that holds a value entering
/// the device (the lowest one, when several do), agreed in one round.
llvm::Expected<int> agreeOwner(Rep3Engine &engine, bool held) {
  uint8_t mine = held, fromNext = 0, fromPrev = 0;
  if (llvm::Error e = engine.channel().exchange({&mine, 1}, {&mine, 1}, {&fromNext, 1},
                                                {&fromPrev, 1}))
    return e;
  bool holds[kNumParties];
  int p = engine.party();
  holds[p] = mine;
  holds[nextParty(p)] = fromNext;
  holds[prevParty(p)] = fromPrev;
  for (int i = 0; i < kNumParties; ++i)
    if (holds[i])
      return i;
  return mpcError("no party holds a value that enters the mpc device (give each entry argument "
              "with --input in exactly one party)");
}

} // namespace
} // namespace mdl::backend::mpc

struct mdl_device {
  std::unique_ptr<mdl::backend::mpc::LocalParties> parties;
  std::map<uintptr_t, uint64_t> allocations; // address -> bytes
  std::string description, error;
  int timings = 0; // 1: tables, 2: JSON lines (--timings --diagnostics=json)
};

namespace mdl::backend::mpc {
namespace {

int fails(mdl_device *d, llvm::Error e) {
  d->error = llvm::toString(std::move(e));
  return 1;
}

mdl_device *openMpc(const mdl_device_arg *args, uint32_t n, const char **error) {
  Rep3Options options;
  int parties = 3, party = -1;
  std::string protocol = "rep3", peers, tlsDir;
  int timings = 0; // 1: tables, 2: JSON lines
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  for (uint32_t i = 0; i < n; ++i) {
    std::string name = args[i].name;
    std::string text = args[i].string_value ? args[i].string_value : "";
    if (name == "parties")
      parties = int(args[i].int_value);
    else if (name == "protocol")
      protocol = text;
    else if (name == "frac_bits")
      options.fracBits = int(args[i].int_value);
    else if (name == "mpc_party")
      party = int(args[i].int_value);
    else if (name == "mpc_peers")
      peers = text;
    else if (name == "mpc_tls")
      tlsDir = text;
    else if (name == "mpc_test_seed")
      options.testSeed = uint64_t(args[i].int_value);
    else if (name == "timings")
      timings = int(args[i].int_value);
    else if (name == "mpc_timeout_ms" && args[i].int_value > 0)
      timeout = std::chrono::milliseconds(args[i].int_value);
  }
  static std::string why;
  if (protocol != "rep3" || parties != 3) {
    why = "only the rep3 protocol among 3 parties is implemented (this device asks for " +
          protocol + " among " + std::to_string(parties) + ")";
    *error = why.c_str();
    return nullptr;
  }
  keepFreedMemory();
  auto d = std::make_unique<mdl_device>();
  d->parties = std::make_unique<LocalParties>();
  d->timings = timings;
  llvm::Error started = llvm::Error::success();
  if (party < 0) {
    started = d->parties->startThreads(options);
    d->description = "rep3 among 3 parties as threads (frac_bits " +
                     std::to_string(options.fracBits) + ")";
  } else {
    auto addresses = parsePeers(peers);
    if (!addresses) {
      why = llvm::toString(addresses.takeError());
      *error = why.c_str();
      return nullptr;
    }
    PartyConfig config;
    config.party = party;
    config.peers = *addresses;
    config.tlsDir = tlsDir;
    config.connectTimeout = timeout;
    config.ioTimeout = timeout;
    started = d->parties->startRemote(config, options);
    d->description = "rep3 party " + std::to_string(party) + " of 3 over TLS (frac_bits " +
                     std::to_string(options.fracBits) + ")";
  }
  if (started) {
    why = llvm::toString(std::move(started));
    *error = why.c_str();
    return nullptr;
  }
  return d.release();
}

void closeMpc(mdl_device *d) {
  if (d->timings)
    d->parties->printStats(std::cerr, d->timings == 2);
  d->parties->stop();
  delete d;
}

const char *describeMpc(mdl_device *d) { return d->description.c_str(); }

void *allocMpc(mdl_device *d, uint64_t bytes) {
  uint64_t size = std::max<uint64_t>((bytes + 63) / 64 * 64, 64);
  void *p = std::aligned_alloc(64, size);
  if (p)
    d->allocations[uintptr_t(p)] = size;
  return p;
}

void releaseMpc(mdl_device *d, void *p) {
  auto it = d->allocations.find(uintptr_t(p));
  if (it == d->allocations.end())
    return;
  uintptr_t lo = it->first, hi = lo + it->second;
  // Every share held in the block goes with it, at every party.
  llvm::consumeError(d->parties->all([lo, hi](Rep3Engine &, Memory &m) {
    m.erase(m.lower_bound(lo), m.lower_bound(hi));
    return llvm::Error::success();
  }));
  d->allocations.erase(it);
  std::free(p);
}

int copyInMpc(mdl_device *d, const mdl_buffer *dst, const void *src) {
  uintptr_t at = uintptr_t(dst->data);
  Shape shape = shapeOf(*dst);
  EncodingKind encoding = encodingOf(*dst);
  PlainTensor value;
  if (src)
    value = plainOf(*dst, src);
  bool threads = d->parties->threadMode();
  llvm::Error e = d->parties->all([&](Rep3Engine &engine, Memory &m) -> llvm::Error {
    // Threads: the host holds the value and party 0 shares it. Processes:
    // whoever holds it does.
    int owner = 0;
    if (!threads) {
      auto o = agreeOwner(engine, src != nullptr);
      if (!o)
        return o.takeError();
      owner = *o;
    }
    auto x = engine.input(owner, engine.party() == owner ? &value : nullptr, shape, encoding);
    if (!x)
      return x.takeError();
    m[at] = std::move(*x);
    return llvm::Error::success();
  });
  return e ? fails(d, std::move(e)) : 0;
}

int copyOutMpc(mdl_device *d, void *dst, const mdl_buffer *src) {
  uintptr_t at = uintptr_t(src->data);
  std::mutex mu;
  PlainTensor opened;
  int first = d->parties->firstParty();
  llvm::Error e = d->parties->all([&](Rep3Engine &engine, Memory &m) -> llvm::Error {
    auto it = m.find(at);
    if (it == m.end())
      return mpcError("reading a value the device does not hold");
    auto v = engine.reveal(it->second);
    if (!v)
      return v.takeError();
    if (engine.party() == first) {
      std::lock_guard<std::mutex> lock(mu);
      opened = std::move(*v);
    }
    return llvm::Error::success();
  });
  if (e)
    return fails(d, std::move(e));
  storePlain(opened, *src, dst);
  return 0;
}

int copyMpc(mdl_device *d, const mdl_buffer *dst, const mdl_buffer *src) {
  uintptr_t to = uintptr_t(dst->data), from = uintptr_t(src->data);
  llvm::Error e = d->parties->all([&](Rep3Engine &, Memory &m) -> llvm::Error {
    auto it = m.find(from);
    if (it == m.end())
      return mpcError("copying a value the device does not hold");
    m[to] = it->second;
    return llvm::Error::success();
  });
  return e ? fails(d, std::move(e)) : 0;
}

mdl_program *loadMpc(mdl_device *d, const mdl_artifact *a) {
  if (std::strcmp(a->format, kProtocolFormat) != 0) {
    d->error = std::string("the mpc device cannot run a '") + a->format + "' artifact";
    return nullptr;
  }
  return reinterpret_cast<mdl_program *>(const_cast<void *>(a->data));
}

int runMpc(mdl_device *d, mdl_program *prog, const mdl_buffer *in, uint32_t nIn,
           const mdl_buffer *out, uint32_t nOut) {
  const Program &program = reinterpret_cast<ProtocolArtifact *>(prog)->program;
  llvm::Error e = d->parties->all([&](Rep3Engine &engine, Memory &m) -> llvm::Error {
    std::vector<SharedTensor> inputs;
    for (uint32_t i = 0; i < nIn; ++i) {
      auto it = m.find(uintptr_t(in[i].data));
      if (it == m.end())
        return mpcError("a segment input the device does not hold");
      inputs.push_back(it->second);
    }
    auto r = runProgramShared(engine, program, std::move(inputs));
    if (!r)
      return r.takeError();
    if (r->size() != nOut)
      return mpcError("the segment has " + std::to_string(r->size()) + " outputs, the caller " +
                  std::to_string(nOut));
    for (uint32_t i = 0; i < nOut; ++i)
      m[uintptr_t(out[i].data)] = std::move((*r)[i].shared);
    return llvm::Error::success();
  });
  return e ? fails(d, std::move(e)) : 0;
}

void unloadMpc(mdl_device *, mdl_program *) {}
int syncMpc(mdl_device *) { return 0; }
const char *lastErrorMpc(mdl_device *d) { return d->error.c_str(); }

const mdl_device_interface kMpcRuntime = {
    MDL_DEVICE_ABI_VERSION,
    "mpc",
    0, // secret shares are never host-readable values
    openMpc,
    closeMpc,
    describeMpc,
    allocMpc,
    releaseMpc,
    copyInMpc,
    copyOutMpc,
    copyMpc,
    loadMpc,
    runMpc,
    unloadMpc,
    syncMpc,
    lastErrorMpc,
    nullptr, // target: protocol programs are portable
    nullptr, // no peer copies: secret values never move between mpc devices
};

} // namespace

const mdl_device_interface *mpcRuntime() { return &kMpcRuntime; }

} // namespace mdl::backend::mpc
