#!/usr/bin/python3
"""`mdl repl --gpu-runtime=opencl`: a session whose values are computed on
a hip device, on GPU code through OpenCL, on both backends.

  repl_gpu.py --mdl BIN

Each evaluation opens the session's devices: the values must be right, no
device may fall back to the CPU (--fallback=error), and --timings must show
a kernel launched for each evaluation computed on the device. Skipped (exit
77) without an OpenCL device.
"""
import argparse
import os
import re
import subprocess
import sys

SESSION = """device g = hip(0)
let a = [1.0, 2.0, 3.0]
let b = exp(a) * 2.0 on g
b
let c = sum(b * b) on g
c
"""
# 2 e^x for x = 1, 2, 3; then the sum of their squares.
EXPECT_B = [5.4365635, 14.778112, 40.171074]
EXPECT_C = sum(v * v for v in EXPECT_B)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def numbers(text):
    return [float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", text)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", required=True)
    a = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("POCL_DEVICES", "pthread")
    for backend in ("jit", "interp"):
        p = subprocess.run([a.mdl, "repl", "--gpu-runtime=opencl", "--fallback=error", "--timings",
                            "--backend=" + backend], input=SESSION, capture_output=True,
                           text=True, timeout=600, env=env)
        if p.returncode < 0 or p.returncode >= 128:
            fail("mdl repl crashed (exit %d)\n%s" % (p.returncode, p.stderr))
        if "E0403" in p.stderr and "OpenCL: " in p.stderr and "no device" not in p.stderr:
            print("SKIP: no OpenCL device: " + p.stderr.strip().splitlines()[0])
            sys.exit(77)
        if p.returncode != 0 or "error" in p.stderr:
            fail("%s: exit %d\n%s" % (backend, p.returncode, p.stderr))
        values = numbers(p.stdout)
        if len(values) != 4:
            fail("%s: expected b's 3 values and c, got %s\n%s" % (backend, values, p.stdout))
        for got, want in zip(values, EXPECT_B + [EXPECT_C]):
            if abs(got - want) > 1e-5 * abs(want):
                fail("%s: %s, expected %s\n%s" % (backend, values, EXPECT_B + [EXPECT_C],
                                                  p.stdout))
        launches = [int(n) for n in re.findall(r"^\s+(\d+) launches of", p.stderr, re.M)]
        if sum(1 for n in launches if n > 0) < 2:
            fail("%s: --timings shows %s launches per evaluation; b and c are computed on the "
                 "device\n%s" % (backend, launches, p.stderr))
        print("PASS: %s (launches per evaluation: %s)" % (backend, launches))


if __name__ == "__main__":
    main()
