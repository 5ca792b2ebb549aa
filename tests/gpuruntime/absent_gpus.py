#!/usr/bin/python3
"""hip devices where the GPU, its driver or its API is missing: a reason,
never a crash.

  absent_gpus.py --mdl BIN --program examples/pipeline.mdl

Runs a program with two hip devices through each GPU runtime and checks
what a user sees:

  * --gpu-runtime=hip / cuda with --fallback=error: exit 1 and E0403 whose
    reason starts with "HIP: " / "CUDA: " (what was missing: the library,
    an entry point, a GPU). Where Debian's libamdhip64 is installed, HIP's
    library loads and every entry point mdl calls is bound before hipInit
    reports no GPU; where the CUDA toolkit's stub libcuda is present
    (MDL_CUDA_LIBRARY points at it), every driver entry point is bound and
    cuInit's answer is reported as "the toolkit's stub". On a machine where
    one of these GPUs exists, the run must succeed instead.
  * the default (auto): exit 0, one note N0803 naming what was tried for
    both devices, and the results of a run on the CPU.
  * --gpu-runtime=opencl without the OpenCL library, and with fewer OpenCL
    devices than the program declares: N0803 with the reason, results as
    on the CPU.
  * every message is a well-formed JSON diagnostic under --diagnostics=json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(mdl, args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([mdl, "run"] + args, capture_output=True, text=True, timeout=300, env=e)
    if p.returncode < 0 or p.returncode >= 128:
        fail("mdl crashed (exit %d): %s\n%s" % (p.returncode, " ".join(args), p.stderr))
    return p


def json_diagnostics(stderr):
    diags = []
    for line in stderr.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            fail("not a JSON diagnostic: %r" % line)
        diags.append(d)
    return diags


def same_results(a, b, what):
    names = sorted(os.listdir(a))
    if not names or names != sorted(os.listdir(b)):
        fail("%s: results %s, expected %s" % (what, sorted(os.listdir(a)), sorted(os.listdir(b))))
    for n in names:
        if not np.array_equal(np.load(os.path.join(a, n)), np.load(os.path.join(b, n))):
            fail("%s: result %s differs from the CPU's" % (what, n))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--program", required=True, help="a program with hip devices 0 and 1")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    x = os.path.join(tmp, "x.npy")
    np.save(x, np.arange(32, dtype=np.float32).reshape(4, 8) / 7)
    base = [a.program, "--quiet", "--input", "x=" + x]
    cpu = os.path.join(tmp, "cpu")
    # The reference: no GPU support library, so both devices run on the CPU.
    p = run(a.mdl, base + ["--out", cpu], {"MDL_HIP_LIBRARY": os.path.join(tmp, "none.so")})
    if p.returncode != 0 or "no GPU support library" not in p.stderr:
        fail("the CPU reference: exit %d\n%s" % (p.returncode, p.stderr))

    for runtime, prefix in (("hip", "HIP: "), ("cuda", "CUDA: ")):
        p = run(a.mdl, base + ["--gpu-runtime=" + runtime, "--fallback=error",
                               "--diagnostics=json"])
        if p.returncode == 0:
            print("note: a %s GPU is present, and the program ran on it" % runtime)
            continue
        errors = [d for d in json_diagnostics(p.stderr) if d["code"] == "E0403"]
        if p.returncode != 1 or len(errors) != 2:
            fail("--gpu-runtime=%s: exit %d, expected 1 with E0403 for both devices\n%s" %
                 (runtime, p.returncode, p.stderr))
        for d in errors:
            reason = d["message"].split("is unavailable: ", 1)[-1]
            if not reason.startswith(prefix):
                fail("--gpu-runtime=%s: the reason does not name the API: %s" % (runtime, reason))
        print("%s: %s" % (runtime, errors[0]["message"]))
        if runtime == "hip" and "not found" not in reason:
            # The library loaded: every entry point was bound (a missing one
            # is "has no 'hipXxx'"), then HIP answered.
            if "has no '" in reason:
                fail("libamdhip64 lacks an entry point mdl calls: " + reason)

    stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
    if os.path.exists(stub):
        p = run(a.mdl, base + ["--gpu-runtime=cuda", "--fallback=error"],
                {"MDL_CUDA_LIBRARY": stub})
        if p.returncode != 1 or "is the toolkit's stub, not an NVIDIA driver" not in p.stderr:
            fail("the CUDA stub library: exit %d\n%s" % (p.returncode, p.stderr))
        print("cuda (stub): every driver entry point bound, then cuInit: no driver")
    else:
        print("note: no CUDA toolkit stub at %s: the driver's entry points are not checked here"
              % stub)

    out = os.path.join(tmp, "auto")
    p = run(a.mdl, base + ["--out", out])
    if p.returncode != 0:
        fail("auto: exit %d\n%s" % (p.returncode, p.stderr))
    if "N0803" in p.stderr:
        notes = [l for l in p.stderr.splitlines() if "N0803" in l]
        if len(notes) != 1 or "no GPU found (HIP: " not in notes[0] or "; CUDA: " not in notes[0] \
                or "hip devices gpu0, gpu1 run on the CPU" not in notes[0]:
            fail("auto: expected one note naming HIP and CUDA for both devices:\n%s" % p.stderr)
        same_results(out, cpu, "auto")
        print("auto: " + notes[0])

    out = os.path.join(tmp, "nolib")
    p = run(a.mdl, base + ["--gpu-runtime=opencl", "--out", out],
            {"MDL_OPENCL_LIBRARY": os.path.join(tmp, "libOpenCL.so.1")})
    if p.returncode != 0 or "N0803" not in p.stderr or "OpenCL: " not in p.stderr \
            or "libOpenCL.so.1 not found" not in p.stderr:
        fail("OpenCL without its library: exit %d\n%s" % (p.returncode, p.stderr))
    same_results(out, cpu, "OpenCL without its library")
    print("opencl, no library: " + p.stderr.splitlines()[0])

    p = run(a.mdl, base + ["--gpu-runtime=opencl", "--out", os.path.join(tmp, "one"),
                           "--diagnostics=json"], {"POCL_DEVICES": "pthread"})
    notes = [d for d in json_diagnostics(p.stderr) if d["code"] == "N0803"]
    if notes and ("and no device 1" not in notes[0]["message"] or "hip device gpu1 runs on the CPU"
                  not in notes[0]["message"]):
        fail("one OpenCL device for two: %s" % notes[0]["message"])
    if notes:
        print("opencl, one device: " + notes[0]["message"])
    else:
        print("note: OpenCL has more than one device here")
    print("PASS")


if __name__ == "__main__":
    main()
