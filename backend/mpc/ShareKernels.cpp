// Multiversioned element-wise share loops (ShareKernels.h).
#include "backend/mpc/ShareKernels.h"

#define MDL_MPC_CLONES                                                         \
  __attribute__((target_clones("arch=x86-64-v4", "default")))

namespace mdl::backend::mpc {

MDL_MPC_CLONES void mulLocal(size_t n, const Ring *__restrict xa,
                             const Ring *__restrict xb,
                             const Ring *__restrict ya,
                             const Ring *__restrict yb, Ring *__restrict z) {
  for (size_t i = 0; i < n; ++i)
    z[i] += xa[i] * (ya[i] + yb[i]) + xb[i] * ya[i];
}

MDL_MPC_CLONES void andLocal(size_t n, const Ring *__restrict xa,
                             const Ring *__restrict xb,
                             const Ring *__restrict ya,
                             const Ring *__restrict yb, Ring *__restrict z) {
  for (size_t i = 0; i < n; ++i)
    z[i] ^= (xa[i] & (ya[i] ^ yb[i])) ^ (xb[i] & ya[i]);
}

MDL_MPC_CLONES void addVec(size_t n, const Ring *x, const Ring *y, Ring *out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = x[i] + y[i];
}

MDL_MPC_CLONES void subVec(size_t n, const Ring *x, const Ring *y, Ring *out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = x[i] - y[i];
}

MDL_MPC_CLONES void scaleVec(size_t n, const Ring *x, Ring k, Ring *out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = x[i] * k;
}

MDL_MPC_CLONES void mulVec(size_t n, const Ring *x, const Ring *y, Ring *out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = x[i] * y[i];
}

} // namespace mdl::backend::mpc
