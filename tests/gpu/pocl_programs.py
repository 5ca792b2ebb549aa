#!/usr/bin/python3
"""Runs programs with `hip` devices on PoCL through the GPU code generator.

  pocl_programs.py --mdl BIN --plugin libmdl_hip_testcl.so PROGRAM.mdl|DIR ...

For every program: `mdl run` with the hip devices on the CPU (no GPU
runtime: the N0803 fallback, the CPU kernels) is the reference; then the
same run with MDL_HIP_LIBRARY pointing at the OpenCL test stand-in
(tests/gpu/OpenClTestPlugin.cpp), whose hip segments are the generator's
spir64 kernels run by PoCL, on both backends (interp and jit). Results must
agree within the tolerance (floats: |got - want| <= atol + rtol |want|,
integers and bools exactly), and every opened hip device must report kernels
launched (a silent fallback to the CPU fails). Every program is also
compiled by `mdl compile` for the AMD and NVIDIA targets (--targets), the
PTX assembled by CUDA's ptxas where it is installed. Inputs come from
NAME.inputs/ beside a program when it exists (the conformance layout).

Exits 77 (skipped, with the reason) where no OpenCL platform is installed.
"""
import argparse
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

SKIP = 77


def opencl_available():
    try:
        lib = ctypes.CDLL("libOpenCL.so.1")
    except OSError:
        return "no OpenCL ICD loader (libOpenCL.so.1; Debian's ocl-icd-libopencl1)"
    n = ctypes.c_uint(0)
    if lib.clGetPlatformIDs(0, None, ctypes.byref(n)) != 0 or n.value == 0:
        return "no OpenCL platform (Debian's pocl-opencl-icd)"
    return None


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    if p.returncode < 0 or p.returncode >= 128:
        raise RuntimeError("mdl crashed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p


def make_inputs(path, folder):
    """Inputs for the arguments of `fn main(...)`: normal floats, small
    integers, from a fixed seed (the same every run)."""
    src = open(path).read()
    m = re.search(r"fn main\(([^)]*)\)", src)
    if not m:
        return
    rng = np.random.default_rng(1234)
    for name, dtype, dims in re.findall(r"(\w+)\s*:\s*(\w+)(?:\[([^\]]*)\])?", m.group(1)):
        shape = tuple(int(d) for d in dims.split(",")) if dims else ()
        if dtype in ("f32", "f64"):
            v = rng.standard_normal(shape).astype(np.float32 if dtype == "f32" else np.float64)
        else:
            v = rng.integers(-50, 50, size=shape).astype({"i32": np.int32, "i64": np.int64}[dtype])
        np.save(os.path.join(folder, name + ".npy"), v)


def results(mdl, path, backend, plugin, extra):
    base = path[:-len(".mdl")]
    cmd = [mdl, "run", path, "--backend=" + backend, "--quiet"] + extra
    inputs = base + ".inputs"
    made = None
    if not os.path.isdir(inputs):
        made = tempfile.TemporaryDirectory()
        inputs = made.name
        make_inputs(path, inputs)
    for f in sorted(os.listdir(inputs)):
        if f.endswith(".npy"):
            cmd.append("--input=%s=%s" % (f[:-4], os.path.join(inputs, f)))
    env = dict(os.environ)
    env.pop("MDL_HIP_LIBRARY", None)
    if plugin:
        env["MDL_HIP_LIBRARY"] = plugin
        env["MDL_TESTCL_STATS"] = "1"
    with tempfile.TemporaryDirectory() as out:
        p = run(cmd + ["--out", out], env)
        if p.returncode != 0:
            raise RuntimeError("exit %d: %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
        vals = []
        for i in range(len(os.listdir(out))):
            vals.append(np.load(os.path.join(out, "%d.npy" % i)))
    return vals, p.stderr


def compare(name, want, got, rtol, atol):
    if len(want) != len(got):
        return "%s: %d results, expected %d" % (name, len(got), len(want))
    for i, (w, g) in enumerate(zip(want, got)):
        if w.dtype != g.dtype or w.shape != g.shape:
            return "%s: result %d is %s%s, expected %s%s" % (name, i, g.dtype, g.shape, w.dtype,
                                                           w.shape)
        if np.issubdtype(w.dtype, np.floating):
            bad = ~(np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True))
            if bad.any():
                j = np.argwhere(bad)[0]
                return "%s: result %d differs at %s: %r, expected %r (%d of %d elements)" % (
                    name, i, tuple(j), g[tuple(j)], w[tuple(j)], bad.sum(), w.size)
        elif not np.array_equal(w, g):
            return "%s: result %d differs: %r, expected %r" % (name, i, g, w)
    return None


def compile_for(mdl, path, target, ptxas):
    """mdl compile for a GPU target; PTX assembled by ptxas when given."""
    with tempfile.TemporaryDirectory() as out:
        p = run([mdl, "compile", path, "--gpu-arch", target, "-o", out], dict(os.environ))
        if p.returncode != 0:
            return "mdl compile --gpu-arch %s exited %d:\n%s" % (target, p.returncode, p.stderr)
        if ptxas and target.startswith("sm_"):
            for f in sorted(glob.glob(os.path.join(out, "*.ptx"))):
                q = run([ptxas, "-arch=" + target, f, "-o", f + ".cubin"], dict(os.environ))
                if q.returncode != 0:
                    return "ptxas -arch=%s rejects %s:\n%s" % (target, os.path.basename(f),
                                                                q.stderr)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--rtol", type=float, default=2e-4)
    ap.add_argument("--atol", type=float, default=2e-5)
    ap.add_argument("--targets", default="gfx90a,gfx942,sm_80,sm_90",
                    help="also compile every program for these targets (PTX through ptxas "
                         "where it is installed)")
    ap.add_argument("programs", nargs="+")
    a = ap.parse_args()
    why = opencl_available()
    if why:
        print("SKIP: %s: the generator's kernels cannot run here" % why)
        return SKIP
    files = []
    for p in a.programs:
        files += sorted(glob.glob(os.path.join(p, "*.mdl"))) if os.path.isdir(p) else [p]
    ptxas = shutil.which("ptxas") or next(
        (p for p in ["/usr/local/cuda/bin/ptxas"] if os.path.exists(p)), None)
    if not ptxas:
        print("note: no ptxas (CUDA): PTX is compiled but not assembled")
    failures = 0
    for path in files:
        name = os.path.basename(path)
        try:
            for target in filter(None, a.targets.split(",")):
                problem = compile_for(a.mdl, path, target, ptxas)
                if problem:
                    print("FAIL: %s: %s" % (name, problem))
                    failures += 1
            want, _ = results(a.mdl, path, "interp", None, [])
            for backend in ("interp", "jit"):
                got, err = results(a.mdl, path, backend, a.plugin, [])
                launched = [int(n) for n in re.findall(r"testcl: (\d+) kernels launched", err)]
                problem = compare("%s (%s)" % (name, backend), want, got, a.rtol, a.atol)
                if not problem and (not launched or min(launched) == 0):
                    problem = "%s (%s): no kernels launched on a hip device (%s)" % (
                        name, backend, launched)
                if problem:
                    print("FAIL: " + problem)
                    failures += 1
                else:
                    print("ok: %s (%s): %d results, kernels launched per device %s" % (
                        name, backend, len(got), launched))
        except RuntimeError as e:
            print("FAIL: %s: %s" % (name, e))
            failures += 1
    print("%d passed, %d failed" % (2 * len(files) - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
