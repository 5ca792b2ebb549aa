// TLS channels over Asio (TlsChannel.h).
//
// Everything runs on one io_context owned by the channel, driven by the
// calling thread: setup and each round start asynchronous operations and a
// deadline timer, then run the context until all operations finished. On
// the first failure (or the deadline) every socket involved is closed, so
// the outstanding operations complete with "aborted" and the run drains
// instead of hanging. Asio is used through its error_code overloads only;
// the few constructors that can throw are wrapped so that no exception
// leaves this file.
//
// Wire format of a message: an 8-byte little-endian payload length, then the
// payload. The receiver knows the length it expects and treats any other
// as a protocol error.
#include "backend/mpc/TlsChannel.h"

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <array>
#include <cstring>
#include <functional>
#include <optional>

namespace mdl::backend::mpc {

namespace {

using tcp = asio::ip::tcp;
using SslStream = asio::ssl::stream<tcp::socket>;
using Clock = std::chrono::steady_clock;

std::string describeTlsError(const asio::error_code &ec, SslStream &stream) {
  std::string msg = ec.message();
  long verify = SSL_get_verify_result(stream.native_handle());
  if (verify != X509_V_OK)
    msg += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
  return msg;
}

// The subject CN of the peer's certificate, "" when there is none.
std::string peerCommonName(SslStream &stream) {
  X509 *cert = SSL_get1_peer_certificate(stream.native_handle());
  if (!cert)
    return "";
  char buf[256] = {0};
  int len = X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
                                      NID_commonName, buf, sizeof buf);
  X509_free(cert);
  return len > 0 ? std::string(buf, size_t(len)) : std::string();
}

int partyOfName(const std::string &cn) {
  for (int j = 0; j < kNumParties; ++j)
    if (cn == partyCommonName(j))
      return j;
  return -1;
}

std::string addressOf(const PeerAddress &p) {
  return p.host + ":" + std::to_string(p.port);
}

class TlsChannel final : public Channel {
public:
  TlsChannel(int party, std::chrono::milliseconds ioTimeout)
      : Channel(party), ctx_(asio::ssl::context::tls), ioTimeout_(ioTimeout) {}
  ~TlsChannel() override { close(); }

  llvm::Error setup(const TlsConfig &config);

  void close() override {
    for (auto &link : links_)
      if (link) {
        asio::error_code ignored;
        link->lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
        link->lowest_layer().close(ignored);
      }
  }

protected:
  llvm::Error doExchange(ConstBytes toNext, ConstBytes toPrev,
                         MutableBytes fromNext,
                         MutableBytes fromPrev) override {
    try {
      return exchangeRound(toNext, toPrev, fromNext, fromPrev);
    } catch (const std::exception &e) {
      close();
      broken_ = std::string("network error: ") + e.what();
      return channelError(party(), broken_);
    }
  }

private:
  friend class Connector;
  llvm::Error exchangeRound(ConstBytes toNext, ConstBytes toPrev,
                            MutableBytes fromNext, MutableBytes fromPrev);
  int slotOf(int peer) const { return peer == nextParty(party()) ? 0 : 1; }
  int peerOf(int slot) const {
    return slot == 0 ? nextParty(party()) : prevParty(party());
  }

  asio::io_context io_;
  asio::ssl::context ctx_;
  std::shared_ptr<SslStream> links_[2]; // [0]: next party, [1]: previous party
  std::chrono::milliseconds ioTimeout_;
  std::string broken_; // why the channel is unusable, once it is
};

// Listening, dialing and handshaking of one party's setup.
class Connector {
public:
  Connector(TlsChannel &ch, const TlsConfig &cfg)
      : ch_(ch), cfg_(cfg), io_(ch.io_), deadline_(ch.io_) {}

  llvm::Error run();

private:
  void fail(const std::string &message) {
    if (failure_.empty())
      failure_ = message;
    finish();
  }
  void linked(int peer, std::shared_ptr<SslStream> stream) {
    asio::error_code ignored;
    stream->lowest_layer().set_option(tcp::no_delay(true), ignored);
    ch_.links_[ch_.slotOf(peer)] = stream;
    // Until setup ends, notice a linked peer that goes away (readable with
    // nothing to read is the end of the stream); data means it is already
    // past its own setup, which is fine.
    stream->lowest_layer().async_wait(
        tcp::socket::wait_read, [this, stream, peer](asio::error_code ec) {
          if (finished_ || ec == asio::error::operation_aborted)
            return;
          asio::error_code ignored;
          if (ec || stream->lowest_layer().available(ignored) == 0)
            fail("party " + std::to_string(peer) +
                 " closed its connection during setup");
        });
    if (--pending_ == 0)
      finish();
  }
  // Stops every operation still in flight so that the context drains.
  void finish() {
    if (finished_)
      return;
    finished_ = true;
    asio::error_code ignored;
    deadline_.cancel();
    if (acceptor_)
      acceptor_->close(ignored);
    for (auto &t : retryTimers_)
      t->cancel();
    for (auto &s : attempts_) {
      bool kept = s == ch_.links_[0] || s == ch_.links_[1];
      if (kept)
        s->lowest_layer().cancel(ignored); // the watch of linked()
      else
        s->lowest_layer().close(ignored);
    }
  }
  void startAccept();
  void dial(int peer);

  TlsChannel &ch_;
  const TlsConfig &cfg_;
  asio::io_context &io_;
  asio::steady_timer deadline_;
  std::optional<tcp::acceptor> acceptor_;
  std::vector<std::shared_ptr<SslStream>> attempts_;
  std::vector<std::shared_ptr<asio::steady_timer>> retryTimers_;
  std::string lastDialError_[kNumParties];
  int pending_ = 0;
  int acceptsLeft_ = 0;
  bool finished_ = false;
  std::string failure_;
};

void Connector::startAccept() {
  auto stream = std::make_shared<SslStream>(io_, ch_.ctx_);
  attempts_.push_back(stream);
  acceptor_->async_accept(stream->lowest_layer(), [this, stream](
                                                      asio::error_code ec) {
    if (finished_)
      return;
    if (ec)
      return fail("cannot accept connections: " + ec.message());
    stream->async_handshake(
        asio::ssl::stream_base::server, [this, stream](asio::error_code ec) {
          if (finished_)
            return;
          std::string from;
          asio::error_code ignored;
          auto remote = stream->lowest_layer().remote_endpoint(ignored);
          if (!ignored)
            from = " from " + remote.address().to_string() + ":" +
                   std::to_string(remote.port());
          if (ec)
            return fail(
                "refused a connection" + from +
                ": TLS handshake failed: " + describeTlsError(ec, *stream));
          std::string cn = peerCommonName(*stream);
          int peer = partyOfName(cn);
          if (peer <= ch_.party() || ch_.links_[ch_.slotOf(peer)]) {
            std::string expected;
            for (int j = ch_.party() + 1; j < kNumParties; ++j)
              if (!ch_.links_[ch_.slotOf(j)])
                expected +=
                    (expected.empty() ? "" : " or ") + partyCommonName(j);
            return fail("refused a connection" + from +
                        ": its certificate names '" + cn + "', expected " +
                        expected);
          }
          --acceptsLeft_;
          // With TLS 1.3 the dialer's handshake ends before its certificate
          // is checked here: it waits for this byte to know it was
          // accepted (and learns of a refusal from the alert instead).
          static const uint8_t kWelcome = 1;
          ch_.links_[ch_.slotOf(peer)] = stream; // taken: refuse a second one
          asio::async_write(*stream, asio::buffer(&kWelcome, 1),
                            [this, stream, peer](asio::error_code ec, size_t) {
                              if (finished_)
                                return;
                              if (ec)
                                return fail("lost party " +
                                            std::to_string(peer) +
                                            " during setup: " + ec.message());
                              linked(peer, stream);
                            });
          if (acceptsLeft_ > 0 && !finished_)
            startAccept();
        });
  });
}

void Connector::dial(int peer) {
  const PeerAddress &addr = cfg_.peers[peer];
  tcp::resolver resolver(io_);
  asio::error_code ec;
  auto endpoints = resolver.resolve(addr.host, std::to_string(addr.port), ec);
  if (ec)
    return fail("cannot resolve party " + std::to_string(peer) + "'s host '" +
                addr.host + "': " + ec.message());
  auto stream = std::make_shared<SslStream>(io_, ch_.ctx_);
  attempts_.push_back(stream);
  asio::async_connect(
      stream->lowest_layer(), endpoints,
      [this, stream, peer](asio::error_code ec, const tcp::endpoint &) {
        if (finished_)
          return;
        if (ec) {
          // Not listening yet: try again shortly, until the deadline.
          lastDialError_[peer] = ec.message();
          asio::error_code ignored;
          stream->lowest_layer().close(ignored);
          auto timer = std::make_shared<asio::steady_timer>(
              io_, std::chrono::milliseconds(100));
          retryTimers_.push_back(timer);
          timer->async_wait([this, peer](asio::error_code ec) {
            if (!ec && !finished_)
              dial(peer);
          });
          return;
        }
        stream->async_handshake(
            asio::ssl::stream_base::client,
            [this, stream, peer](asio::error_code ec) {
              if (finished_)
                return;
              std::string where = "party " + std::to_string(peer) + " at " +
                                  addressOf(cfg_.peers[peer]);
              if (ec)
                return fail("TLS handshake with " + where +
                            " failed: " + describeTlsError(ec, *stream));
              std::string cn = peerCommonName(*stream);
              if (cn != partyCommonName(peer))
                return fail("refused " + where + ": its certificate names '" +
                            cn + "', expected " + partyCommonName(peer));
              // Wait for the acceptor's verdict on our certificate.
              auto welcome = std::make_shared<uint8_t>(0);
              asio::async_read(*stream, asio::buffer(welcome.get(), 1),
                               [this, stream, peer, welcome,
                                where](asio::error_code ec, size_t) {
                                 if (finished_)
                                   return;
                                 if (ec || *welcome != 1)
                                   return fail(
                                       where + " did not accept this party: " +
                                       (ec ? describeTlsError(ec, *stream)
                                           : std::string("unexpected reply")));
                                 linked(peer, stream);
                               });
            });
      });
}

llvm::Error Connector::run() {
  int me = ch_.party();
  acceptsLeft_ = kNumParties - 1 - me; // the higher-numbered parties dial us
  pending_ = kNumParties - 1;
  if (acceptsLeft_ > 0) {
    const PeerAddress &own = cfg_.peers[me];
    // Listen on every interface of the family of our own address.
    tcp::resolver resolver(io_);
    asio::error_code ec;
    auto resolved = resolver.resolve(own.host, std::to_string(own.port), ec);
    bool v6 = !ec && !resolved.empty() &&
              resolved.begin()->endpoint().address().is_v6();
    tcp::endpoint endpoint(v6 ? tcp::v6() : tcp::v4(), own.port);
    acceptor_.emplace(io_);
    acceptor_->open(endpoint.protocol(), ec);
    if (!ec)
      acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec)
      acceptor_->bind(endpoint, ec);
    if (!ec)
      acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return channelError(me, "cannot listen on port " +
                                  std::to_string(own.port) + ": " +
                                  ec.message());
    startAccept();
  }
  for (int j = 0; j < me; ++j)
    dial(j);
  deadline_.expires_after(cfg_.connectTimeout);
  deadline_.async_wait([this](asio::error_code ec) {
    if (ec || finished_)
      return;
    std::string missing;
    for (int j = 0; j < kNumParties; ++j) {
      if (j == ch_.party() || ch_.links_[ch_.slotOf(j)])
        continue;
      missing += missing.empty() ? "" : "; ";
      if (j < ch_.party())
        missing +=
            "party " + std::to_string(j) + " not reachable at " +
            addressOf(cfg_.peers[j]) +
            (lastDialError_[j].empty() ? "" : " (" + lastDialError_[j] + ")");
      else
        missing += "no connection from party " + std::to_string(j);
    }
    fail("timed out after " + std::to_string(cfg_.connectTimeout.count()) +
         " ms setting up: " + missing);
  });
  io_.restart();
  io_.run();
  // Every operation was stopped by finish(); run() returning means drained.
  if (!failure_.empty())
    return channelError(me, failure_);
  return llvm::Error::success();
}

llvm::Error TlsChannel::setup(const TlsConfig &cfg) {
  SSL_CTX *raw = ctx_.native_handle();
  if (SSL_CTX_set_min_proto_version(raw, TLS1_3_VERSION) != 1)
    return channelError(party(), "this OpenSSL cannot do TLS 1.3");
  // No session tickets: nothing is resumed, and no bytes arrive unasked
  // after the handshake.
  SSL_CTX_set_num_tickets(raw, 0);
  asio::error_code ec;
  ctx_.load_verify_file(cfg.caFile, ec);
  if (ec)
    return channelError(party(), "cannot load CA certificate " + cfg.caFile +
                                     ": " + ec.message());
  ctx_.use_certificate_chain_file(cfg.certFile, ec);
  if (ec)
    return channelError(party(), "cannot load certificate " + cfg.certFile +
                                     ": " + ec.message());
  ctx_.use_private_key_file(cfg.keyFile, asio::ssl::context::pem, ec);
  if (ec)
    return channelError(party(), "cannot load private key " + cfg.keyFile +
                                     ": " + ec.message());
  if (SSL_CTX_check_private_key(raw) != 1)
    return channelError(party(), "private key " + cfg.keyFile +
                                     " does not match certificate " +
                                     cfg.certFile);
  ctx_.set_verify_mode(
      asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  if (ec)
    return channelError(party(),
                        "cannot require peer certificates: " + ec.message());
  Connector connector(*this, cfg);
  return connector.run();
}

llvm::Error TlsChannel::exchangeRound(ConstBytes toNext, ConstBytes toPrev,
                                      MutableBytes fromNext,
                                      MutableBytes fromPrev) {
  if (!broken_.empty())
    return channelError(party(), broken_);
  struct Op {
    uint64_t headerOut = 0;
    uint64_t headerIn = 0;
  } ops[2];
  ConstBytes out[2] = {toNext, toPrev};
  MutableBytes in[2] = {fromNext, fromPrev};
  int pending = 0;
  int pendingWith[2] = {0, 0}; // transfers not yet done, per neighbour
  std::string failure;
  asio::steady_timer deadline(io_);
  auto fail = [&](const std::string &message) {
    if (failure.empty())
      failure = message;
    deadline.cancel();
    close(); // aborts whatever is still in flight; the channel is broken
  };
  auto doneOne = [&](int slot) {
    --pendingWith[slot];
    if (--pending == 0)
      deadline.cancel();
  };
  for (int s = 0; s < 2; ++s) {
    std::string peer = "party " + std::to_string(peerOf(s));
    if (out[s].size) {
      ++pending;
      ++pendingWith[s];
      ops[s].headerOut = out[s].size;
      std::array<asio::const_buffer, 2> bufs = {
          asio::buffer(&ops[s].headerOut, 8),
          asio::buffer(out[s].data, out[s].size)};
      asio::async_write(*links_[s], bufs,
                        [&, peer, s](asio::error_code ec, size_t) {
                          if (ec && failure.empty())
                            fail("connection to " + peer +
                                 " lost while sending: " + ec.message());
                          doneOne(s);
                        });
    }
    if (in[s].size) {
      ++pending;
      ++pendingWith[s];
      SslStream &link = *links_[s];
      MutableBytes dst = in[s];
      asio::async_read(
          link, asio::buffer(&ops[s].headerIn, 8),
          [&, peer, s, dst](asio::error_code ec, size_t) {
            if (ec) {
              if (failure.empty())
                fail("connection to " + peer + " lost: " + ec.message());
              return doneOne(s);
            }
            if (ops[s].headerIn != dst.size) {
              fail("protocol out of step: expected " +
                   std::to_string(dst.size) + " bytes from " + peer + ", got " +
                   std::to_string(ops[s].headerIn));
              return doneOne(s);
            }
            asio::async_read(*links_[s], asio::buffer(dst.data, dst.size),
                             [&, peer, s](asio::error_code ec, size_t) {
                               if (ec && failure.empty())
                                 fail("connection to " + peer +
                                      " lost: " + ec.message());
                               doneOne(s);
                             });
          });
    }
  }
  if (pending == 0)
    return llvm::Error::success();
  deadline.expires_after(ioTimeout_);
  deadline.async_wait([&](asio::error_code ec) {
    if (ec || pending == 0)
      return;
    std::string waiting;
    for (int s = 0; s < 2; ++s)
      if (pendingWith[s] > 0)
        waiting += (waiting.empty() ? "" : " and ") +
                   ("party " + std::to_string(peerOf(s)));
    fail("timed out after " + std::to_string(ioTimeout_.count()) +
         " ms waiting for " + waiting);
  });
  io_.restart();
  io_.run();
  if (!failure.empty()) {
    broken_ = failure;
    return channelError(party(), failure);
  }
  return llvm::Error::success();
}

} // namespace

std::string partyCommonName(int party) {
  return "mdl-party-" + std::to_string(party);
}

llvm::Expected<std::unique_ptr<Channel>> connectTls(const TlsConfig &config) {
  if (config.party < 0 || config.party >= kNumParties)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "party index " + std::to_string(config.party) + " is not 0, 1 or 2");
  if (config.peers.size() != size_t(kNumParties))
    return channelError(config.party, "expected 3 peer addresses, got " +
                                          std::to_string(config.peers.size()));
  try {
    auto ch = std::make_unique<TlsChannel>(config.party, config.ioTimeout);
    if (auto err = ch->setup(config))
      return err;
    return std::unique_ptr<Channel>(std::move(ch));
  } catch (const std::exception &e) {
    return channelError(config.party,
                        std::string("TLS setup failed: ") + e.what());
  }
}

} // namespace mdl::backend::mpc
