#!/usr/bin/python3
"""Compiles programs with `hip` devices for every GPU target.

  compile_programs.py --mdl BIN [--targets gfx90a,gfx942,sm_80,sm_90,spir64] PROGRAM.mdl|DIR ...

Every program goes through `mdl compile --gpu-arch T` for each target; the
PTX is assembled by CUDA's ptxas where it is installed (it is not part of a
Debian set-up: then the PTX is only compiled, and the script says so). What
the kernels compute is checked by running them on PoCL through the hip
kind's OpenCL runtime (tests/gpuruntime/gpu_programs.py, gpu.program.*).
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode < 0 or p.returncode >= 128:
        raise RuntimeError("crashed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p


def compile_for(mdl, path, target, ptxas):
    with tempfile.TemporaryDirectory() as out:
        p = run([mdl, "compile", path, "--gpu-arch", target, "-o", out])
        if p.returncode != 0:
            return "mdl compile --gpu-arch %s exited %d:\n%s" % (target, p.returncode, p.stderr)
        if ptxas and target.startswith("sm_"):
            for f in sorted(glob.glob(os.path.join(out, "*.ptx"))):
                q = run([ptxas, "-arch=" + target, f, "-o", f + ".cubin"])
                if q.returncode != 0:
                    return "ptxas -arch=%s rejects %s:\n%s" % (target, os.path.basename(f),
                                                               q.stderr)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--targets", default="gfx90a,gfx942,sm_80,sm_90,spir64")
    ap.add_argument("programs", nargs="+")
    a = ap.parse_args()
    files = []
    for p in a.programs:
        files += sorted(glob.glob(os.path.join(p, "*.mdl"))) if os.path.isdir(p) else [p]
    ptxas = shutil.which("ptxas") or next(
        (p for p in ["/usr/local/cuda/bin/ptxas"] if os.path.exists(p)), None)
    if not ptxas:
        print("note: no ptxas (CUDA is not installed): the PTX is compiled, not assembled")
    failures = checks = 0
    for path in files:
        for target in filter(None, a.targets.split(",")):
            checks += 1
            try:
                problem = compile_for(a.mdl, path, target, ptxas)
            except RuntimeError as e:
                problem = str(e)
            if problem:
                print("FAIL: %s: %s" % (os.path.basename(path), problem))
                failures += 1
            else:
                print("ok: %s for %s" % (os.path.basename(path), target))
    print("%d passed, %d failed" % (checks - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
