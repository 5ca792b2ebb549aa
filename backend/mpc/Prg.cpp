// AES-128-CTR keystreams through OpenSSL EVP (Prg.h).
//
// The keystream is produced by encrypting zero bytes, 64 KiB at a time.
#include "backend/mpc/Prg.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstring>
#include <string>

namespace mdl::backend::mpc {

namespace {
std::string opensslMessage() {
  unsigned long code = ERR_get_error();
  if (!code)
    return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}
} // namespace

llvm::Expected<PrgKey> randomKey() {
  PrgKey key;
  if (RAND_bytes(key.data(), int(key.size())) != 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot draw a random key: " +
                                       opensslMessage());
  return key;
}

PrgKey testKey(uint64_t seed, uint64_t index) {
  unsigned char input[32] = "mdl-mpc-test-key";
  std::memcpy(input + 16, &seed, 8);
  std::memcpy(input + 24, &index, 8);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  PrgKey key{};
  // SHA-256 cannot fail on a fixed in-memory input; should OpenSSL be
  // broken, fall back to the raw bytes (tests only).
  if (EVP_Digest(input, sizeof input, digest, &len, EVP_sha256(), nullptr) !=
          1 ||
      len < key.size())
    std::memcpy(digest, input + 16, 16);
  std::memcpy(key.data(), digest, key.size());
  return key;
}

struct Prg::Ctx {
  EVP_CIPHER_CTX *evp = nullptr;
  ~Ctx() { EVP_CIPHER_CTX_free(evp); }
};

Prg::Prg() = default;
Prg::~Prg() = default;
Prg::Prg(Prg &&) noexcept = default;
Prg &Prg::operator=(Prg &&) noexcept = default;

llvm::Error Prg::init(const PrgKey &key) {
  auto ctx = std::make_unique<Ctx>();
  ctx->evp = EVP_CIPHER_CTX_new();
  unsigned char iv[16] = {0};
  if (!ctx->evp || EVP_EncryptInit_ex(ctx->evp, EVP_aes_128_ctr(), nullptr,
                                      key.data(), iv) != 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot set up AES-128-CTR: " +
                                       opensslMessage());
  ctx_ = std::move(ctx);
  return llvm::Error::success();
}

void Prg::fillBytes(void *out, size_t bytes) {
  assert(ctx_ && "Prg used before init");
  // The keystream is the encryption of zeros, taken from a zero block so
  // that the output is written once.
  static const unsigned char zeros[1 << 16] = {};
  unsigned char *p = static_cast<unsigned char *>(out);
  while (bytes) {
    size_t n = std::min(bytes, sizeof zeros);
    int len = 0;
    // Counter mode with a valid context does not fail; should it, the
    // bytes are zeroed rather than left undefined.
    if (EVP_EncryptUpdate(ctx_->evp, p, &len, zeros, int(n)) != 1 ||
        size_t(len) != n)
      std::memset(p, 0, n);
    p += n;
    bytes -= n;
  }
}

void Prg::fill(Ring *out, size_t n) { fillBytes(out, n * sizeof(Ring)); }

} // namespace mdl::backend::mpc
