#!/usr/bin/python3
"""Softmax and layernorm rows, f32 and bf16, at the sizes of ViT-B/16 (the
attention scores [12, 197, 197] and the activations [197, 768]): mdl's time
per call, optionally against another mdl build in the same run (to measure
a change: one-pass rows, halves in fused loops).

  bench/rows_bench.py [--mdl build/bin/mdl] [--base OTHER/bin/mdl]
                      [--rounds 5] [--threads N]

Every round runs each program once per build, interleaved, in fresh
processes (`mdl run --repeat`); the table gives the median over rounds of
each process's median time per call. --threads sets OMP_NUM_THREADS (1
measures the loops' work without the worker pool's hand-offs).
"""
import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import real_models_util as U  # noqa: E402

PROGRAMS = {
    "softmax f32 [12, 197, 197]": ("f32", (12, 197, 197), "softmax(x * 0.125, axis = -1)"),
    "softmax bf16 [12, 197, 197]": ("bf16", (12, 197, 197), "softmax(x * 0.125, axis = -1)"),
    "layernorm f32 [197, 768]": ("f32", (197, 768), "layernorm(x, g, b, eps = 1e-6)"),
    "layernorm bf16 [197, 768]": ("bf16", (197, 768), "layernorm(x, g, b, eps = 1e-6)"),
}


def write(work):
    rng = np.random.default_rng(5)
    out = {}
    for i, (name, (t, shape, expr)) in enumerate(PROGRAMS.items()):
        dims = ", ".join(map(str, shape))
        src = ("param g : %s[%d] = random_normal(seed = 1, std = 1.0)\n"
               "param b : %s[%d] = random_normal(seed = 2, std = 0.1)\n"
               "fn main(x: %s[%s]) -> %s[%s] {\n  return %s\n}\n"
               % (t, shape[-1], t, shape[-1], t, dims, t, dims, expr))
        path = os.path.join(work, "rows_%d.mdl" % i)
        with open(path, "w") as f:
            f.write(src)
        x = os.path.join(work, "rows_%d_x.npy" % i)
        data = rng.standard_normal(shape).astype(np.float32)
        if t == "bf16":
            U.save_bf16_npy(x, data)
        else:
            np.save(x, data)
        out[name] = (path, ["x=" + x])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", default=os.path.join(HERE, "..", "build", "bin", "mdl"))
    ap.add_argument("--base", help="another mdl to compare with, in the same run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=500)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    builds = [("mdl", os.path.abspath(a.mdl))]
    if a.base:
        builds.append(("base", os.path.abspath(a.base)))
    env = {"OMP_NUM_THREADS": str(a.threads)} if a.threads else {}
    progs = write(tempfile.mkdtemp(prefix="mdl-rows-"))
    times = {(n, b): [] for n in progs for b, _ in builds}
    load = os.getloadavg()[0]
    for r in range(a.rounds):
        for name, (path, ins) in progs.items():
            for b, binary in builds:
                times[(name, b)].append(U.run_mdl(binary, path, ins, a.repeat, env)[0])
    print("median of %d rounds, us per call%s; load average %.2f before, %.2f after"
          % (a.rounds, " (OMP_NUM_THREADS=%d)" % a.threads if a.threads else "", load,
             os.getloadavg()[0]))
    print("| rows | " + " | ".join(b for b, _ in builds) + (" | base / mdl |" if a.base else " |"))
    print("|---|" + "---|" * (len(builds) + (1 if a.base else 0)))
    for name in progs:
        med = [statistics.median(times[(name, b)]) for b, _ in builds]
        row = "| %s | " % name + " | ".join("%.1f" % m for m in med)
        print(row + (" | %.2f |" % (med[1] / med[0]) if a.base else " |"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
