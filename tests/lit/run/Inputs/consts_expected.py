#!/usr/bin/python3
"""The expected results of consts_everywhere.mdl, computed independently of
mdl, compared with the results each backend wrote (DIR/K.npy)."""
import sys

import numpy as np

MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def uniform(seed, n, lo, hi):
    out = []
    for i in range(n):
        u = (splitmix64((seed * 0x9E3779B97F4A7C15 + i) & MASK) >> 11) * 2.0 ** -53
        out.append(lo + (hi - lo) * u)
    return np.array(out, np.float32)


S, SEED, P, LO, HI, N, I = 2.5, 7, 2, -1.0, 1.0, 4, 3
v = np.array([-3.0, -0.5, 0.0, 0.5, 3.0], np.float32)
e = np.exp(v - v.max())
expected = [
    np.full(2, S, np.float32),
    np.pad(v, (P, P), constant_values=S),
    np.clip(v, LO, HI),
    np.float32((v * S + 10.0).sum(axis=0)),
    np.float32(S * N),
    v[None, :],
    e / e.sum(),
    v[I],
    uniform(SEED, 3, LO, HI),
]
for d in sys.argv[1:]:
    for k, want in enumerate(expected):
        got = np.load("%s/%d.npy" % (d, k))
        want = np.asarray(want, np.float32)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
            print("FAIL: %s/%d.npy is %r, expected %r" % (d, k, got, want))
            sys.exit(1)
print("%d results match on both backends" % len(expected))
