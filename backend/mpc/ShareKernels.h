// Element-wise loops on share vectors: the local half of the products and
// of the linear operations.
//
// Each loop is compiled twice (GCC function multiversioning): for
// x86-64-v4 (AVX-512, where vpmullq does 64-bit products) and for the
// baseline; the dynamic loader picks one for the CPU at hand.
#pragma once

#include "backend/mpc/Ring.h"

#include <cstddef>

namespace mdl::backend::mpc {

/// z[i] += xa[i] * (ya[i] + yb[i]) + xb[i] * ya[i]: party i's share of the
/// product, x_i y_i + x_i y_{i+1} + x_{i+1} y_i.
void mulLocal(size_t n, const Ring *xa, const Ring *xb, const Ring *ya,
              const Ring *yb, Ring *z);

/// z[i] ^= (xa[i] & (ya[i] ^ yb[i])) ^ (xb[i] & ya[i]): the same for AND of
/// XOR-shared words.
void andLocal(size_t n, const Ring *xa, const Ring *xb, const Ring *ya,
              const Ring *yb, Ring *z);

/// out[i] = x[i] + y[i].
void addVec(size_t n, const Ring *x, const Ring *y, Ring *out);
/// out[i] = x[i] - y[i].
void subVec(size_t n, const Ring *x, const Ring *y, Ring *out);
/// out[i] = x[i] * k.
void scaleVec(size_t n, const Ring *x, Ring k, Ring *out);
/// out[i] = x[i] * y[i] (a share times a public ring vector).
void mulVec(size_t n, const Ring *x, const Ring *y, Ring *out);

} // namespace mdl::backend::mpc
