#!/usr/bin/python3
"""The interpreter is the oracle: runs every example and every conformance
program on both backends and compares what they print and return.

  differential.py --mdl BIN --examples DIR --conformance DIR

Results must agree within the case's tolerance (conformance cases) or
1e-5 relative / 1e-6 absolute (examples); integers and bools exactly. The
lines a program prints are compared as text, except that numbers in them may
differ in the last digits within the same tolerance. Programs that need the
MPC runtime are skipped (both backends refuse them; run_case.py checks that).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+|nan|inf)")


def fail(msg):
    print("FAIL: " + msg)
    return False


def run(mdl, path, backend, out, inputs):
    cmd = [mdl, "run", path, "--backend=" + backend, "--quiet", "--out", out] + inputs
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return p


def close(a, b, rtol, atol):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "biu":
        return np.array_equal(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ok = np.abs(a64 - b64) <= atol + rtol * np.abs(b64)
    ok |= np.isnan(a64) & np.isnan(b64)
    ok |= (a64 == b64)
    return bool(ok.all())


def same_text(a, b, rtol, atol):
    la, lb = a.splitlines(), b.splitlines()
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if NUMBER.sub("#", x) != NUMBER.sub("#", y):
            return False
        nx = [float(v) for v in NUMBER.findall(x)]
        ny = [float(v) for v in NUMBER.findall(y)]
        if not close(np.array(nx), np.array(ny), rtol, atol):
            return False
    return True


def inputs_of(path):
    """--input arguments for a program: its .inputs folder, else
    deterministic random arrays of main's declared (static) types."""
    base = path[:-len(".mdl")]
    args = []
    if os.path.isdir(base + ".inputs"):
        for f in sorted(os.listdir(base + ".inputs")):
            if f.endswith(".npy"):
                args.append("--input=%s=%s" % (f[:-4], os.path.join(base + ".inputs", f)))
        return args
    m = re.search(r"^fn\s+main\s*\(([^)]*)\)", open(path).read(), re.M)
    if m and m.group(1).strip():
        rng = np.random.default_rng(0)
        tmp = tempfile.mkdtemp()
        for name, dtype, dims in re.findall(r"(\w+)\s*:\s*(\w+)\[([\d,\s]*)\]", m.group(1)):
            shape = [int(x) for x in dims.split(",") if x.strip()]
            f = os.path.join(tmp, name + ".npy")
            np.save(f, rng.standard_normal(shape).astype({"f32": np.float32, "f64": np.float64}[dtype]))
            args.append("--input=%s=%s" % (name, f))
    return args


def check(mdl, path):
    base = path[:-len(".mdl")]
    if re.search(r"^\s*device\s+\w+\s*=\s*mpc\s*\(", open(path).read(), re.M):
        print("SKIP: %s needs the MPC runtime" % os.path.basename(path))
        return True
    rtol, atol = 1e-5, 1e-6
    tol = base + ".expected/tolerance"
    if os.path.exists(tol):
        for line in open(tol):
            k, v = line.split()
            rtol, atol = (float(v), atol) if k == "rtol" else (rtol, float(v))
    inputs = inputs_of(path)
    with tempfile.TemporaryDirectory() as d:
        outs, texts = [], []
        for backend in ("interp", "jit"):
            out = os.path.join(d, backend)
            p = run(mdl, path, backend, out, inputs)
            if p.returncode != 0:
                return fail("%s: --backend=%s exits %d\n%s" % (path, backend, p.returncode, p.stderr))
            outs.append(out)
            texts.append(p.stdout)
        if not same_text(texts[0], texts[1], rtol, atol):
            return fail("%s: printed output differs\ninterp:\n%s\njit:\n%s" % (path, texts[0], texts[1]))
        names = sorted(os.listdir(outs[0]))
        if names != sorted(os.listdir(outs[1])):
            return fail("%s: the backends return different results" % path)
        for n in names:
            a = np.load(os.path.join(outs[0], n))
            b = np.load(os.path.join(outs[1], n))
            if not close(b, a, rtol, atol):
                return fail("%s: result %s differs\ninterp:\n%s\njit:\n%s" % (path, n, a, b))
    print("PASS: %s" % os.path.basename(path))
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--conformance", required=True)
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.examples, "*.mdl")))
    files += sorted(glob.glob(os.path.join(a.conformance, "run", "*.mdl")))
    ok = all([check(a.mdl, f) for f in files])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
