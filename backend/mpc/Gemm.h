// 64-bit integer matrix products modulo 2^64: the local work of a secret
// matmul (each party runs two of them per product, on its shares).
//
// C += A * B with row-major operands and leading dimensions in elements.
// The fast path is blocked for the caches (packed panels of A and B) and
// runs an 8x16 AVX-512 micro-kernel built on vpmullq (AVX512DQ); it is
// compiled with target attributes and chosen at run time, so the library
// still runs, on a portable kernel, where AVX-512 is missing. Large
// products are split over threads by columns of C.
#pragma once

#include "backend/mpc/Ring.h"

#include <cstdint>

namespace mdl::backend::mpc {

/// Which micro-kernel a GEMM uses.
enum class GemmKernelKind {
  Auto,    ///< AVX-512 when the CPU has it, else Generic
  Generic, ///< portable C++ (whatever the compiler vectorizes)
  Avx512,  ///< vpmullq; only valid when gemmHasAvx512()
};

/// True when this CPU runs the AVX-512 kernel (AVX512F and AVX512DQ).
bool gemmHasAvx512();

/// "avx512" or "generic": what `kind` resolves to on this CPU.
const char *gemmKernelName(GemmKernelKind kind);

/// C[m x n] += A[m x k] * B[k x n] (mod 2^64) on up to `threads` threads.
void gemmAccumulate(int64_t m, int64_t n, int64_t k, const Ring *a, int64_t lda,
                    const Ring *b, int64_t ldb, Ring *c, int64_t ldc,
                    int threads = 1,
                    GemmKernelKind kind = GemmKernelKind::Auto);

/// The textbook triple loop (i, p, j order), single-threaded: the
/// reference for tests and the benchmark's baseline.
void gemmNaive(int64_t m, int64_t n, int64_t k, const Ring *a, int64_t lda,
               const Ring *b, int64_t ldb, Ring *c, int64_t ldc);

} // namespace mdl::backend::mpc
