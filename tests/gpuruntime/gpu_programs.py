#!/usr/bin/python3
"""Programs with hip devices, run on GPU code through OpenCL (PoCL on the CPU).

  gpu_programs.py --mdl BIN --backend jit --case DIR/run/NAME.mdl
  gpu_programs.py --mdl BIN --backend interp --example examples/NAME.mdl

Each program runs with `--gpu-runtime=opencl --fallback=error --timings`:
its hip devices open on OpenCL devices (POCL_DEVICES gives PoCL eight), the
generator compiles its hip segments to spir64 kernels, and a device that
cannot open is an error rather than a silent run on the CPU. Then

  * a conformance case's results must be its expected results within its
    tolerance (as tests/conformance/run_case.py checks them);
  * an example's prints and results must be those of the same program with
    its hip devices on the CPU (the reference: libmdl_hip.so made
    unloadable with MDL_HIP_LIBRARY, so that every hip device falls back),
    within 1e-4 relative to the result's magnitude (GPU reductions add in
    another order than the CPU's), or within the tolerance a
    `# tolerance: X` line of the program names (the bf16 and f16 programs:
    fused loops keep f32 where the interpreter rounds every operation);
  * --timings must show every hip device that opened with kernels launched
    (> 0): a program whose GPU code silently ran elsewhere fails (as JSON
    lines for conformance cases, run with --diagnostics=json; as tables for
    the others).

Without an OpenCL device the check is skipped (exit 77), saying why. With
--gpu-runtime auto, hip or cuda it checks a real GPU (ctest's gpu.hardware
tests), and is skipped, saying why, where the machine has no such GPU or
fewer than the program declares.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jit"))
from differential import inputs_of  # noqa: E402 (a program's inputs, as differential.py)

SKIP = 77
NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+|nan|inf)")
GPU_TABLE = re.compile(r"^gpu (\d+): (.*)\n\s+(\d+) launches of (\d+) kernels", re.M)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def env_with(**extra):
    env = dict(os.environ)
    env.setdefault("POCL_DEVICES", " ".join(["pthread"] * 8))
    env.update(extra)
    return env


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    if p.returncode < 0 or p.returncode >= 128:
        fail("mdl crashed (exit %d): %s\nstderr:\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p


def gpu_tables(stderr):
    """(ordinal, description, launches) of each GPU --timings printed: tables,
    or under --diagnostics=json one object per device."""
    tables = [(t[0], t[1], t[2]) for t in GPU_TABLE.findall(stderr)]
    for line in stderr.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if "gpu" in d and "kernels" in d:
                tables.append((str(d["gpu"]), d["device"], str(d["launches"])))
    return tables


def check_launches(stderr, what, runtime):
    """Every GPU --timings reports shows kernels launched."""
    tables = gpu_tables(stderr)
    if not tables:
        fail("%s: --timings printed no GPU device: the hip devices did not run on a GPU\n%s" %
             (what, stderr))
    for ordinal, desc, launches in tables:
        if runtime == "opencl" and "(OpenCL, " not in desc:
            fail("%s: gpu %s is not an OpenCL device: %s" % (what, ordinal, desc))
        if int(launches) == 0:
            fail("%s: gpu %s (%s) launched no kernel\n%s" % (what, ordinal, desc, stderr))
    return ", ".join("gpu %s: %s launches" % (t[0], t[2]) for t in tables)


def unavailable(stderr, runtime):
    """Why the devices a run needs are not on this machine (the run is
    skipped), or None. On OpenCL that is no OpenCL at all (no loader, no
    platform): PoCL's device count comes from POCL_DEVICES, so too few
    devices is a failure. On a vendor's runtime it is any device that does
    not open: no GPU, or fewer GPUs than the program declares."""
    m = re.search(r"is unavailable: ([^\n\"]*)", stderr)
    if not m:
        return None
    if runtime == "opencl":
        return "no OpenCL device: " + m.group(1) if m.group(1).startswith("OpenCL: ") \
            and "no device" not in m.group(1) else None
    return "no GPU for --gpu-runtime=%s here: %s" % (runtime, m.group(1))


def run_on_gpu(mdl, path, backend, out, runtime, extra=()):
    cmd = [mdl, "run", path, "--backend=" + backend, "--gpu-runtime=" + runtime,
           "--fallback=error", "--timings", "--out", out] + list(extra) + inputs_of(path)
    p = run(cmd, env_with())
    if p.returncode != 0:
        why = unavailable(p.stderr, runtime)
        if why:
            print("SKIP: " + why)
            sys.exit(SKIP)
        fail("exit %d\ncommand: %s\nstderr:\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p


def widen(a):
    """Float64 values of a result (mdl saves bf16 as two-byte void, '<V2')."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        a = (a.reshape(-1).view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(a.shape)
    return a.astype(np.float64)


def close(got, want, rtol, atol, scaled):
    if got.dtype != want.dtype or got.shape != want.shape:
        return "dtype/shape %s%s, expected %s%s" % (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "biu":
        return None if np.array_equal(got, want) else "values differ"
    g, w = widen(got), widen(want)
    if scaled:
        atol = atol * max(1.0, float(np.nanmax(np.abs(w))) if w.size else 1.0)
    bad = ~((np.abs(g - w) <= atol + rtol * np.abs(w)) | (np.isnan(g) & np.isnan(w)) | (g == w))
    if bad.any():
        return "%d of %d values out of tolerance" % (int(bad.sum()), bad.size)
    return None


def compare_dirs(got_dir, want_dir, rtol, atol, scaled, what):
    want_files = sorted(f for f in os.listdir(want_dir) if f.endswith(".npy"))
    got_files = sorted(f for f in os.listdir(got_dir) if f.endswith(".npy"))
    if want_files != got_files:
        fail("%s: results %s, expected %s" % (what, got_files, want_files))
    for f in want_files:
        got, want = np.load(os.path.join(got_dir, f)), np.load(os.path.join(want_dir, f))
        why = close(got, want, rtol, atol, scaled)
        if why:
            fail("%s: %s: %s; got\n%s\nexpected\n%s" % (what, f, why, got, want))


def same_text(a, b, rtol, atol):
    la, lb = a.splitlines(), b.splitlines()
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        # NumPy-style printing pads columns to the widest number: spaces
        # do not count.
        if re.sub(r"\s+", "", NUMBER.sub("#", x)) != re.sub(r"\s+", "", NUMBER.sub("#", y)):
            return False
        nx = np.array([float(v) for v in NUMBER.findall(x)])
        ny = np.array([float(v) for v in NUMBER.findall(y)])
        if close(nx, ny, rtol, atol, True):
            return False
    return True


def case(mdl, path, backend, runtime):
    base = path[:-len(".mdl")]
    tol = {"rtol": 0.0, "atol": 0.0}
    for line in open(os.path.join(base + ".expected", "tolerance")):
        k, v = line.split()
        tol[k] = float(v)
    with tempfile.TemporaryDirectory() as out:
        # The --timings of conformance runs are read as JSON lines.
        p = run_on_gpu(mdl, path, backend, out, runtime, ["--quiet", "--diagnostics=json"])
        launches = check_launches(p.stderr, os.path.basename(path), runtime)
        compare_dirs(out, base + ".expected", tol["rtol"], tol["atol"], False, os.path.basename(path))
    print("PASS: %s on %s (%s)" % (os.path.basename(path), backend, launches))


def example(mdl, path, backend, runtime):
    rtol, atol = 1e-4, 1e-5
    m = re.search(r"^# tolerance: ([0-9.e-]+)$", open(path).read(), re.M)
    if m:
        rtol = atol = float(m.group(1))
    inputs = inputs_of(path)
    with tempfile.TemporaryDirectory() as d:
        ref_out, out = os.path.join(d, "cpu"), os.path.join(d, "gpu")
        ref = run([mdl, "run", path, "--backend=interp", "--out", ref_out] + inputs,
                  env_with(MDL_HIP_LIBRARY=os.path.join(d, "no-gpu-support.so")))
        if ref.returncode != 0 or "N0803" not in ref.stderr:
            fail("%s: the CPU reference did not run on the CPU (exit %d)\n%s" %
                 (path, ref.returncode, ref.stderr))
        p = run_on_gpu(mdl, path, backend, out, runtime)
        launches = check_launches(p.stderr, os.path.basename(path), runtime)
        # What the program printed (its prints and its results), then the
        # results as written.
        if not same_text(p.stdout, ref.stdout, rtol, atol):
            fail("%s: printed output differs\nGPU:\n%s\nCPU:\n%s" % (path, p.stdout, ref.stdout))
        compare_dirs(out, ref_out, rtol, atol, True, os.path.basename(path))
    print("PASS: %s on %s (%s)" % (os.path.basename(path), backend, launches))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--backend", default="jit", choices=["jit", "interp"])
    ap.add_argument("--gpu-runtime", default="opencl")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--case", help="a conformance program with hip devices")
    g.add_argument("--example", help="an example with hip devices")
    a = ap.parse_args()
    if a.case:
        case(a.mdl, a.case, a.backend, a.gpu_runtime)
    else:
        example(a.mdl, a.example, a.backend, a.gpu_runtime)


if __name__ == "__main__":
    main()
