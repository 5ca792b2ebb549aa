#!/usr/bin/python3
"""Indices out of range on a GPU: the same error as on the CPU.

  index_errors.py --mdl BIN [--gpu-runtime opencl]

gather, embedding and dynamic_index (`x[i]` with a run-time index, in a
loop) placed on a hip device, with inputs whose indices are in range (the
results must be the CPU's) and out of range (the run must fail). The CPU
reference is the interpreter with the hip device on the CPU (libmdl_hip.so
made unloadable); the GPU runs use --gpu-runtime (PoCL by default) with
--fallback=error on both backends. An out-of-range run must exit 1 with
exactly the CPU's diagnostic: E0405 at the operation's line and column,
with the CPU kernel's message, naming the first index out of range in
row-major order and the first failing operation of the program (the GPU's
kernels record it in the program's error record, which the runtime reads
at the end of the run). --timings must show kernels launched.

Without an OpenCL device the check is skipped (exit 77), saying why.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import gpu_programs  # the drivers' GPU table (this folder)

SKIP = 77

PROGRAM = """device gpu = hip(0)

fn main(x: f32[4, 6, 3], i: i64[2, 2], t: f32[5, 4], ids: i32[3], k: i64) -> (f32[4, 2, 2, 3], f32[3, 4], f32, f32[4, 2, 2, 3]) {
  let g = gather(x * 2.0, i, axis = 1)
  let e = embedding(t, ids) + 1.0
  let acc = for j in 0..3 carry (acc = 0.0) {
    yield acc + sum(x[0, j * k])
  }
  let h = gather(x, i, axis = 1) * 3.0
  return g, e, acc, h
}
"""

# (name, inputs, the CPU's message or None when the run succeeds)
CASES = [
    ("in range, negative indices from the end",
     {"i": [[0, 5], [-6, -1]], "ids": [0, 4, 2], "k": 2}, None),
    ("gather: the first bad index in row-major order",
     {"i": [[0, 6], [-7, 9]], "ids": [0, 4, 2], "k": 2},
     "4:11: error[E0405]: index 6 is out of range for axis 1 with size 6"),
    ("gather: below -n",
     {"i": [[0, 1], [-7, 2]], "ids": [0, 4, 2], "k": 2},
     "4:11: error[E0405]: index -7 is out of range for axis 1 with size 6"),
    ("embedding: a negative id is out of range",
     {"i": [[0, 1], [2, 3]], "ids": [1, -1, 9], "k": 2},
     "5:11: error[E0405]: embedding id -1 is out of range for a table of 5 rows"),
    ("dynamic_index in a loop's third iteration",
     {"i": [[0, 1], [2, 3]], "ids": [1, 2, 3], "k": 3},
     "7:21: error[E0405]: index 6 is out of range for axis 0 with size 6"),
    ("two failing operations: the first one is reported",
     {"i": [[0, 1], [2, 30]], "ids": [7, 2, 3], "k": 2},
     "4:11: error[E0405]: index 30 is out of range for axis 1 with size 6"),
]



def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if p.returncode < 0 or p.returncode >= 128:
        fail("mdl crashed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p


def errors(stderr):
    """The error lines, without the file name."""
    return [re.sub(r"^[^:]*:", "", l) for l in stderr.splitlines() if ": error[" in l]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--gpu-runtime", default="opencl")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "index_errors.mdl")
        with open(path, "w") as f:
            f.write(PROGRAM)
        np.save(os.path.join(tmp, "x.npy"), np.arange(72, dtype=np.float32).reshape(4, 6, 3))
        np.save(os.path.join(tmp, "t.npy"), np.arange(20, dtype=np.float32).reshape(5, 4) * 0.5)
        cpu_env = dict(os.environ, MDL_HIP_LIBRARY=os.path.join(tmp, "no-gpu-support.so"))
        gpu_env = dict(os.environ)
        gpu_env.setdefault("POCL_DEVICES", "pthread")
        for n, (name, values, expected) in enumerate(CASES):
            inputs = ["--input=x=" + os.path.join(tmp, "x.npy"),
                      "--input=t=" + os.path.join(tmp, "t.npy")]
            for key, dtype in (("i", np.int64), ("ids", np.int32), ("k", np.int64)):
                f = os.path.join(tmp, "%s%d.npy" % (key, n))
                np.save(f, np.array(values[key], dtype=dtype))
                inputs.append("--input=%s=%s" % (key, f))
            ref_out = os.path.join(tmp, "cpu%d" % n)
            ref = run([a.mdl, "run", path, "--backend=interp", "--quiet", "--out", ref_out] + inputs,
                      cpu_env)
            if "N0803" not in ref.stderr:
                fail("%s: the CPU reference did not run on the CPU\n%s" % (name, ref.stderr))
            want = errors(ref.stderr)
            if expected is None and (ref.returncode != 0 or want):
                fail("%s: the CPU reference failed\n%s" % (name, ref.stderr))
            if expected is not None and (ref.returncode != 1 or want != [expected]):
                fail("%s: the CPU reference gives %s (exit %d), the test expects %s" %
                     (name, want, ref.returncode, expected))
            for backend in ("interp", "jit"):
                out = os.path.join(tmp, "gpu%d_%s" % (n, backend))
                p = run([a.mdl, "run", path, "--backend=" + backend, "--quiet", "--timings",
                         "--gpu-runtime=" + a.gpu_runtime, "--fallback=error", "--out", out] +
                        inputs, gpu_env)
                if p.returncode != 0 and "is unavailable: OpenCL: " in p.stderr and \
                        "no device" not in p.stderr:
                    print("SKIP: no OpenCL device: " + p.stderr.strip().splitlines()[0])
                    return SKIP
                tables = gpu_programs.GPU_TABLE.findall(p.stderr)
                if not tables or int(tables[0][2]) == 0:
                    fail("%s on %s: --timings shows no kernels launched on a GPU\n%s" %
                         (name, backend, p.stderr))
                got = errors(p.stderr)
                if expected is None:
                    if p.returncode != 0:
                        fail("%s on %s: exit %d\n%s" % (name, backend, p.returncode, p.stderr))
                    for f in sorted(os.listdir(ref_out)):
                        g, w = np.load(os.path.join(out, f)), np.load(os.path.join(ref_out, f))
                        if not np.array_equal(g, w):
                            fail("%s on %s: result %s is\n%s\nthe CPU's\n%s" % (name, backend, f,
                                                                                 g, w))
                elif p.returncode != 1 or got != want:
                    fail("%s on %s: exit %d, errors %s; the CPU's: %s\n%s" %
                         (name, backend, p.returncode, got, want, p.stderr))
                print("ok: %s on %s (%s)" % (name, backend, want[0] if want else "results as on "
                                             "the CPU"))
    print("PASS: %d cases, both backends" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
