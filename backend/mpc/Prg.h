// Pseudo-random generators for the correlated randomness of rep3: AES-128 in
// counter mode through OpenSSL's EVP interface, one generator per key.
//
// Each pair of neighbouring parties shares one key (party i makes the key it
// shares with party i+1 and sends it during setup), so both holders of a key
// draw the same stream; a zero-sharing or a random replicated sharing then
// costs no message. Keys come from OpenSSL's RAND_bytes, which OpenSSL seeds
// from the operating system's entropy (getrandom). A fixed seed exists only
// for tests (testKey), behind Rep3Options::testSeed.
#pragma once

#include "backend/mpc/Ring.h"

#include <llvm/Support/Error.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace mdl::backend::mpc {

/// A 128-bit AES key.
using PrgKey = std::array<uint8_t, 16>;

/// A fresh key from OpenSSL's CSPRNG (seeded from the OS's entropy).
llvm::Expected<PrgKey> randomKey();

/// A key derived from a public test seed and an index (SHA-256 of both):
/// deterministic, and therefore only for tests.
PrgKey testKey(uint64_t seed, uint64_t index);

/// An AES-128-CTR keystream; the counter starts at zero and never repeats
/// for the life of the generator.
class Prg {
public:
  Prg();
  ~Prg();
  Prg(Prg &&) noexcept;
  Prg &operator=(Prg &&) noexcept;

  /// Starts the keystream of `key`. Fails only if OpenSSL cannot set up
  /// the cipher.
  llvm::Error init(const PrgKey &key);
  bool valid() const { return ctx_ != nullptr; }

  /// The next n * 8 bytes of keystream as ring elements.
  void fill(Ring *out, size_t n);
  /// The next `bytes` bytes of keystream.
  void fillBytes(void *out, size_t bytes);

private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

} // namespace mdl::backend::mpc
