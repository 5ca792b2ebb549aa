#!/usr/bin/python3
"""How long `mdl check` takes on a generated program of many functions.

  bench/check_bench.py --mdl build/bin/mdl [--functions 10000] [--repeat 5]

The program is a chain: each function calls the previous one, with a
symbolic batch dimension (so every function is specialized once), a few
element-wise operations, a reduction and a matmul, and `main` calls the last
function. Reports the median wall time of `mdl check` and the phase times
from `--timings`.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time


def program(n, path):
    with open(path, "w") as f:
        f.write("param w : f32[16, 16] = random_normal(seed = 1, std = 0.1)\n")
        f.write("fn layer0(x: f32[B, 16]) -> f32[B, 16] {\n  return relu(x @ w)\n}\n")
        for i in range(1, n):
            f.write("fn layer%d(x: f32[B, 16]) -> f32[B, 16] {\n" % i)
            f.write("  let h = layer%d(x) * 0.5 + 1.0\n" % (i - 1))
            f.write("  let s = sum(h, axis = 1, keepdims = true)\n")
            f.write("  return tanh(h - s / 16.0)\n}\n")
        f.write("fn main() -> f32[4, 16] {\n  return layer%d(ones(f32[4, 16]))\n}\n" % (n - 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--functions", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "many.mdl")
        program(a.functions, path)
        size = os.path.getsize(path)
        walls, phases = [], []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            p = subprocess.run([a.mdl, "check", path, "--timings"], capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            if p.returncode != 0:
                raise SystemExit("mdl check failed:\n" + p.stderr[-2000:])
            m = re.search(r"timings \(ms\):(.*)", p.stderr)
            phases.append(dict((k, float(v)) for k, v in re.findall(r"(\w+)=([0-9.e+-]+)", m.group(1))))
        med = statistics.median(walls)
        keys = list(phases[0].keys())
        detail = ", ".join("%s %.0f ms" % (k, statistics.median(p[k] for p in phases)) for k in keys)
        print("mdl check of %d functions (%.1f MB source): median %.2f s over %d runs "
              "(min %.2f s); phases: %s" % (a.functions, size / 1e6, med, a.repeat, min(walls), detail))


if __name__ == "__main__":
    main()
