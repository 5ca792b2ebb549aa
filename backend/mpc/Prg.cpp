// AES-128-CTR keystreams through OpenSSL EVP (Prg.h).
//
// The keystream is produced by encrypting zero bytes in place: EVP allows
// the input and output buffers to coincide for counter mode. Large requests
// are cut into chunks so that the int lengths EVP takes never overflow.
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
                                   "cannot draw a random key: " + opensslMessage());
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
  if (EVP_Digest(input, sizeof input, digest, &len, EVP_sha256(), nullptr) != 1 ||
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
  if (!ctx->evp ||
      EVP_EncryptInit_ex(ctx->evp, EVP_aes_128_ctr(), nullptr, key.data(), iv) != 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot set up AES-128-CTR: " + opensslMessage());
  ctx_ = std::move(ctx);
  return llvm::Error::success();
}

void Prg::fillBytes(void *out, size_t bytes) {
  assert(ctx_ && "Prg used before init");
  unsigned char *p = static_cast<unsigned char *>(out);
  std::memset(p, 0, bytes);
  constexpr size_t kChunk = size_t(1) << 30;
  while (bytes) {
    size_t n = std::min(bytes, kChunk);
    int len = 0;
    // Counter mode with a valid context does not fail; keep the bytes
    // zeroed rather than undefined if it ever did.
    (void)EVP_EncryptUpdate(ctx_->evp, p, &len, p, int(n));
    p += n;
    bytes -= n;
  }
}

void Prg::fill(Ring *out, size_t n) { fillBytes(out, n * sizeof(Ring)); }

} // namespace mdl::backend::mpc
