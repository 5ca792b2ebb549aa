#!/usr/bin/python3
"""How long the GPU code generator takes: `mdl compile` per target.

  bench/gpu_compile_bench.py [--mdl build/bin/mdl] [--rounds 5] [--out FILE.md]

Workloads: bench/workloads.py's MLP (batch 64) and transformer encoder layer,
every operation placed on a hip device (`device gpu = hip(0)` declared
first; random weights instead of the weight files, which compiling never
reads). For each target (gfx90a, gfx942, sm_80, sm_90, spir64) the wall time
of `mdl compile FILE --gpu-arch T -o DIR` (parse, check, partition, and the
generator: preparation, lowering, LLVM (O2 and code generation for AMDGPU
and NVPTX; none for spir64, which PoCL optimizes), lld for AMDGPU) is
measured in fresh processes, rounds interleaving the targets and the
workloads; the figures are medians. `mdl check` on the same file is the
baseline of everything but the generator. The manifest gives the kernels,
steps and code size. The peer a GPU programmer knows is the vendor's
compiler, which needs the GPU toolchains this machine does not have; this
measures mdl's own cost.
"""
import argparse
import json
import re
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads  # noqa: E402

TARGETS = ["gfx90a", "gfx942", "sm_80", "sm_90", "spir64"]


def program(name):
    """The workload with random weights (the compiler never reads them)."""
    src = workloads.MLP_PROGRAM if name == "mlp" else workloads.TRANSFORMER_PROGRAM
    src = src.replace("x: f32[B, 784]", "x: f32[64, 784]").replace("f32[B, 10]", "f32[64, 10]")
    src = re.sub(r'load\("[^"]*", "[^"]*"\)', "random_normal(seed = 1, std = 0.05)", src)
    return "device gpu = hip(0)\n" + src


def timed(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", default=os.path.join(HERE, "..", "build", "bin", "mdl"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for w in ("mlp", "transformer"):
            files[w] = os.path.join(tmp, w + ".mdl")
            with open(files[w], "w") as f:
                f.write(program(w))
        times = {(w, t): [] for w in files for t in TARGETS + ["check"]}
        for _ in range(a.rounds):
            for w, path in files.items():
                times[(w, "check")].append(timed([a.mdl, "check", path]))
                for t in TARGETS:
                    out = os.path.join(tmp, "%s_%s" % (w, t))
                    times[(w, t)].append(timed([a.mdl, "compile", path, "--gpu-arch", t,
                                                "-o", out]))
        lines = ["| workload | target | mdl compile (median s) | minus mdl check | kernels | "
                 "steps | code bytes |", "|---|---|---|---|---|---|---|"]
        for w in files:
            base = statistics.median(times[(w, "check")])
            for t in TARGETS:
                m = json.load(open(os.path.join(tmp, "%s_%s" % (w, t), "manifest.json")))
                kernels = steps = code = 0
                for fn in m["functions"]:
                    for s in fn["segments"]:
                        d = s.get("description", {})
                        kernels += len(d.get("kernels", []))
                        steps += len(d.get("steps", []))
                        code += d.get("code_bytes", 0)
                med = statistics.median(times[(w, t)])
                lines.append("| %s | %s | %.3f | %.3f | %d | %d | %d |" % (
                    w, t, med, med - base, kernels, steps, code))
            lines.append("| %s | (mdl check) | %.3f | | | | |" % (w, base))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
