// Blocked 64-bit integer GEMM (Gemm.h).
//
// The loop nest is the usual one of cache-blocked GEMMs (Goto's algorithm,
// as in BLIS):
//   1. for each block of kNc columns of B and C,
//   2.   for each block of kKc rows of B (columns of A): pack B's block into
//        micro-panels of kNr columns, k-major (stays in L2/L3),
//   3.     for each block of kMc rows of A: pack A's block into micro-panels
//          of kMr rows, k-major (stays in L2),
//   4.       for each kMr x kNr tile of C: the micro-kernel accumulates the
//            tile in registers over the kKc inner products and adds it to C
//            (prefetched at the kernel's start: C does not stay in cache).
// Packing pads partial panels with zeros, so the micro-kernel always runs
// full tiles; partial tiles of C go through a small buffer.
//
// The AVX-512 micro-kernel keeps 8x16 accumulators in 16 zmm registers: per
// step of k it loads two vectors of B, broadcasts eight elements of A, and
// issues 16 vpmullq and 16 vpaddq. vpmullq's throughput bounds it.
//
// Multi-threaded calls run one at a time (a process-wide turn), so that
// the parties of thread mode do not oversubscribe the cores.
#include "backend/mpc/Gemm.h"

#include "backend/mpc/Parallel.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include <immintrin.h>

namespace mdl::backend::mpc {

namespace {

constexpr int64_t kMr = 8;
constexpr int64_t kNr = 16;
constexpr int64_t kKc = 512;
constexpr int64_t kMc = 64;
constexpr int64_t kNc = 1024;

// Micro-panels of A: for each group of kMr rows, kc steps of kMr values.
void packA(int64_t mc, int64_t kc, const Ring *a, int64_t lda, Ring *out) {
  for (int64_t i0 = 0; i0 < mc; i0 += kMr) {
    int64_t rows = std::min(kMr, mc - i0);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t r = 0; r < rows; ++r)
        out[r] = a[(i0 + r) * lda + p];
      for (int64_t r = rows; r < kMr; ++r)
        out[r] = 0;
      out += kMr;
    }
  }
}

// Micro-panels of B: for each group of kNr columns, kc steps of kNr values.
void packB(int64_t kc, int64_t nc, const Ring *b, int64_t ldb, Ring *out) {
  for (int64_t j0 = 0; j0 < nc; j0 += kNr) {
    int64_t cols = std::min(kNr, nc - j0);
    for (int64_t p = 0; p < kc; ++p) {
      const Ring *row = b + p * ldb + j0;
      std::memcpy(out, row, cols * sizeof(Ring));
      for (int64_t c = cols; c < kNr; ++c)
        out[c] = 0;
      out += kNr;
    }
  }
}

// c[kMr x kNr] (rows ldc apart) += sum over p of ap[p] (column) * bp[p]
// (row). kc >= 1.
void kernelGeneric(int64_t kc, const Ring *ap, const Ring *bp, Ring *c,
                   int64_t ldc) {
  Ring acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t r = 0; r < kMr; ++r) {
      Ring av = ap[r];
      for (int64_t col = 0; col < kNr; ++col)
        acc[r][col] += av * bp[col];
    }
    ap += kMr;
    bp += kNr;
  }
  for (int64_t r = 0; r < kMr; ++r)
    for (int64_t col = 0; col < kNr; ++col)
      c[r * ldc + col] += acc[r][col];
}

__attribute__((target("avx512f,avx512dq"))) void
kernelAvx512(int64_t kc, const Ring *ap, const Ring *bp, Ring *c, int64_t ldc) {
  // The C tile is read at the end: start fetching it now (C is too large
  // for the caches and is revisited once per block of kKc).
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + 8), _MM_HINT_T0);
  }
  __m512i acc[kMr][2];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    acc[r][0] = _mm512_setzero_si512();
    acc[r][1] = _mm512_setzero_si512();
  }
  // A do-while (kc >= 1): with a zero-trip path GCC copies the
  // accumulators around the loop.
  do {
    __m512i b0 = _mm512_loadu_si512(bp);
    __m512i b1 = _mm512_loadu_si512(bp + 8);
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      __m512i av = _mm512_set1_epi64(int64_t(ap[r]));
      acc[r][0] = _mm512_add_epi64(acc[r][0], _mm512_mullo_epi64(av, b0));
      acc[r][1] = _mm512_add_epi64(acc[r][1], _mm512_mullo_epi64(av, b1));
    }
    ap += kMr;
    bp += kNr;
  } while (--kc > 0);
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    Ring *row = c + r * ldc;
    _mm512_storeu_si512(row,
                        _mm512_add_epi64(_mm512_loadu_si512(row), acc[r][0]));
    _mm512_storeu_si512(
        row + 8, _mm512_add_epi64(_mm512_loadu_si512(row + 8), acc[r][1]));
  }
}

using KernelFn = void (*)(int64_t, const Ring *, const Ring *, Ring *, int64_t);

// C[m x n] += A B for one thread's part, with its own packing buffers.
void gemmSerial(int64_t m, int64_t n, int64_t k, const Ring *a, int64_t lda,
                const Ring *b, int64_t ldb, Ring *c, int64_t ldc,
                KernelFn kernel) {
  int64_t ncMax = std::min(kNc, (n + kNr - 1) / kNr * kNr);
  int64_t mcMax = std::min(kMc, (m + kMr - 1) / kMr * kMr);
  int64_t kcMax = std::min(kKc, k);
  // Packing buffers live as long as the thread: a fresh 4 MiB block per
  // call would cost page faults and zeroing by the kernel every time.
  thread_local std::vector<Ring> bPack, aPack;
  if (bPack.size() < size_t(ncMax * kcMax))
    bPack.resize(size_t(ncMax * kcMax));
  if (aPack.size() < size_t(mcMax * kcMax))
    aPack.resize(size_t(mcMax * kcMax));
  Ring tile[kMr * kNr];
  for (int64_t jc = 0; jc < n; jc += kNc) {
    int64_t nc = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      int64_t kc = std::min(kKc, k - pc);
      packB(kc, nc, b + pc * ldb + jc, ldb, bPack.data());
      for (int64_t ic = 0; ic < m; ic += kMc) {
        int64_t mc = std::min(kMc, m - ic);
        packA(mc, kc, a + ic * lda + pc, lda, aPack.data());
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          int64_t cols = std::min(kNr, nc - jr);
          const Ring *bp = bPack.data() + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            int64_t rows = std::min(kMr, mc - ir);
            Ring *cTile = c + (ic + ir) * ldc + jc + jr;
            if (rows == kMr && cols == kNr) {
              kernel(kc, aPack.data() + ir * kc, bp, cTile, ldc);
              continue;
            }
            // A partial tile of C goes through a full-size buffer.
            std::fill(tile, tile + kMr * kNr, Ring(0));
            kernel(kc, aPack.data() + ir * kc, bp, tile, kNr);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t col = 0; col < cols; ++col)
                cTile[r * ldc + col] += tile[r * kNr + col];
          }
        }
      }
    }
  }
}

} // namespace

bool gemmHasAvx512() {
  static const bool has =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return has;
}

const char *gemmKernelName(GemmKernelKind kind) {
  if (kind == GemmKernelKind::Generic ||
      (kind == GemmKernelKind::Auto && !gemmHasAvx512()))
    return "generic";
  return "avx512";
}

void gemmAccumulate(int64_t m, int64_t n, int64_t k, const Ring *a, int64_t lda,
                    const Ring *b, int64_t ldb, Ring *c, int64_t ldc,
                    int threads, GemmKernelKind kind) {
  if (m <= 0 || n <= 0 || k <= 0)
    return;
  bool avx = kind == GemmKernelKind::Avx512 ||
             (kind == GemmKernelKind::Auto && gemmHasAvx512());
  if (avx && !gemmHasAvx512())
    avx = false; // asked for a kernel this CPU cannot run
  KernelFn kernel = avx ? kernelAvx512 : kernelGeneric;
  // Threads only for products large enough to pay for starting them.
  if (double(m) * double(n) * double(k) < 2e6)
    threads = 1;
  // Multi-threaded products take turns: when the three parties of thread
  // mode share the machine, three GEMMs on all cores at once would only
  // time-slice each other out of the caches. One at a time on all cores
  // is as fast as the machine allows, and the other parties' waits cost
  // no CPU.
  static std::mutex turn;
  std::unique_lock<std::mutex> lock(turn, std::defer_lock);
  if (threads > 1)
    lock.lock();
  if (n >= m || m < kMr * threads) {
    parallelFor(n, threads, kNr, [&](int64_t j0, int64_t j1) {
      gemmSerial(m, j1 - j0, k, a, lda, b + j0, ldb, c + j0, ldc, kernel);
    });
  } else {
    parallelFor(m, threads, kMr, [&](int64_t i0, int64_t i1) {
      gemmSerial(i1 - i0, n, k, a + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc,
                 kernel);
    });
  }
}

void gemmNaive(int64_t m, int64_t n, int64_t k, const Ring *a, int64_t lda,
               const Ring *b, int64_t ldb, Ring *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      Ring av = a[i * lda + p];
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] += av * b[p * ldb + j];
    }
}

} // namespace mdl::backend::mpc
