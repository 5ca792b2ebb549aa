#!/usr/bin/python3
"""The random programs of tests/jit/random_programs.py on a hip device, run
by the GPU code generator's kernels on PoCL and compared with the CPU.

  random_hip.py --mdl BIN --plugin libmdl_hip_testcl.so [--count N] [--seed S] [--keep DIR]

Each generated program gets `device gpu = hip(0)` (so every operation is
placed on it) and its params become arguments of `main` (params are
computed once on the host; arguments make the operations run in segments),
with inputs drawn from a fixed seed. The reference is `mdl run` on the
interpreter with the hip device on the CPU (the N0803 fallback); the GPU
runs use the OpenCL stand-in (tests/gpu/OpenClTestPlugin.cpp) on both
backends, must launch kernels, and must agree within random_programs.py's
tolerance. Exits 77 (skipped, with the reason) without an OpenCL platform.
"""
import argparse
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "jit"))

import numpy as np  # noqa: E402

import pocl_programs  # noqa: E402
import random_programs  # noqa: E402


def on_hip(src):
    """The program with a hip device and its params as main's arguments."""
    params = re.findall(r"^param (\w+) : (f32\[[^\]]*\]) = .*$", src, re.M)
    body = re.sub(r"^param .*\n", "", src, flags=re.M)
    args = ", ".join("%s: %s" % (n, t) for n, t in params)
    body = body.replace("fn main() ->", "fn main(%s) ->" % args, 1)
    return "device gpu = hip(0)\n\n" + body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write the programs here")
    a = ap.parse_args()
    why = pocl_programs.opencl_available()
    if why:
        print("SKIP: %s: the generator's kernels cannot run here" % why)
        return pocl_programs.SKIP
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or tmp
        os.makedirs(where, exist_ok=True)
        for s in range(a.seed, a.seed + a.count):
            src = on_hip(random_programs.Gen(s).program())
            path = os.path.join(where, "random_hip_%d.mdl" % s)
            with open(path, "w") as f:
                f.write(src)
            try:
                want, _ = pocl_programs.results(a.mdl, path, "interp", None, [])
                for backend in ("interp", "jit"):
                    got, err = pocl_programs.results(a.mdl, path, backend, a.plugin, [])
                    launched = [int(n) for n in
                                re.findall(r"testcl: (\d+) kernels launched", err)]
                    problem = None
                    if len(got) != len(want):
                        problem = "%d results, expected %d" % (len(got), len(want))
                    for i, (g, w) in enumerate(zip(got, want)):
                        problem = problem or random_programs.compare(g, w)
                    if not problem and (not launched or min(launched) == 0):
                        problem = "no kernels launched on the hip device"
                    if problem:
                        print("FAIL: seed %d (%s): %s\n%s" % (s, backend, problem, src))
                        failures += 1
                        break
            except RuntimeError as e:
                print("FAIL: seed %d: %s\n%s" % (s, e, src))
                failures += 1
    print("%d random programs on a hip device (seeds %d to %d): %d passed, %d failed" % (
        a.count, a.seed, a.seed + a.count - 1, a.count - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
