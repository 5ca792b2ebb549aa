#!/usr/bin/python3
"""Compile time of big models, cold and from a warm compile cache:

  bench/compile_bench.py [--mdl build/bin/mdl] [--baseline-mdl OLD/mdl]
                         [--rounds 5] [--corpus ../shared/corpus/hlo]
                         [--work DIR] [--out FILE.md]

Programs: the corpus ResNet-50 (keras_jax_resnet50_predict_f32.hlo, random
inputs of the entry's types) and a ViT-B/16-sized transformer, f32
(bench/vit_program.py), as HLO text with every layer written out (as JAX
exports it) and as an .mdl program whose layer is a function. Each run is
a fresh `mdl run --timings` process; *to runnable* is every phase but the
run itself (import or parse, checks, passes, LLVM code generation, load and
link), *LLVM* the code generation phase alone (IR generation, optimization,
object emission, on all cores), both medians over rounds. *Warm* runs with
--cache-dir already filled by an earlier run. --baseline-mdl measures an
older mdl in the same rounds (its cold compile only).

Importable: measure(...) returns the figures, report(...) the Markdown.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "hlo"))  # hlo_util
sys.path.insert(0, HERE)
import workloads as W  # noqa: E402

PY = "/usr/bin/python3"
RESNET = "keras_jax_resnet50_predict_f32.hlo"
TARGETS = {"resnet50": 500.0, "vit_hlo": 1000.0, "vit_mdl": 1000.0}  # ms, to runnable
LABELS = {"resnet50": "ResNet-50 (corpus HLO, f32, batch 1)",
          "vit_hlo": "ViT-B/16-sized, HLO (12 layers written out)",
          "vit_mdl": "ViT-B/16-sized, .mdl (a layer function)"}


def phases(mdl, program, args, cache=None):
    cmd = [mdl, "run", program, "-q", "--timings"] + args
    if cache:
        cmd += ["--cache-dir", cache]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    ph = W.timing_phases(p.stderr)
    if p.returncode != 0 or ph is None:
        raise RuntimeError("mdl failed: %s\n%s" % (" ".join(cmd[:4]), p.stderr[-2000:]))
    jit = re.search(r"jit: .*", p.stderr)
    return ph, jit.group(0) if jit else ""


to_runnable = W.to_runnable


def resnet_inputs(mdl, corpus, work):
    import hlo_util
    import numpy as np
    path = os.path.join(corpus, RESNET)
    d = os.path.join(work, "resnet_in")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    args = []
    for i, (dt, shape) in enumerate(hlo_util.entry_args(mdl, path)):
        f = os.path.join(d, "%d.npy" % i)
        hlo_util.write_input(f, dt, shape, rng)
        args.append("--input=%d=%s" % (i, f))
    return path, args


def measure(mdl, corpus, baseline=None, rounds=5, work=None):
    work = work or tempfile.mkdtemp(prefix="mdl-compile-")
    subprocess.run([PY, os.path.join(HERE, "vit_program.py"), "--out", work, "--inputs"],
                   check=True)
    programs = {"resnet50": resnet_inputs(mdl, corpus, work)}
    for form in ("hlo", "mdl"):
        with open(os.path.join(work, "vit_%s.args" % form)) as f:
            programs["vit_" + form] = (os.path.join(work, "vit_b16_f32." + form),
                                       f.read().split())
    res = {"load_before": os.getloadavg()[0], "cold": {}, "warm": {}, "base": {}, "jit": {}}
    caches = {}
    for name, (path, args) in programs.items():
        caches[name] = tempfile.mkdtemp(prefix="mdl-cache-", dir=work)
        phases(mdl, path, args, caches[name])  # fills the cache
    for r in range(rounds):
        print("compile times, round %d of %d" % (r + 1, rounds), file=sys.stderr)
        for name, (path, args) in programs.items():
            ph, jit = phases(mdl, path, args)
            res["cold"].setdefault(name, []).append(ph)
            res["jit"][name] = jit
            res["warm"].setdefault(name, []).append(phases(mdl, path, args, caches[name])[0])
            if baseline:
                res["base"].setdefault(name, []).append(phases(baseline, path, args)[0])
    res["load_after"] = os.getloadavg()[0]
    return res


def report(res):
    L = ["## Compile time of big models", ""]
    L.append("Fresh `mdl run --timings` processes, medians of %d rounds; load average %.2f "
             "before, %.2f after. *To runnable*: every phase but the run (import or parse, "
             "passes, LLVM, load and link); *LLVM*: code generation alone (IR, optimization, "
             "objects, on both cores); *warm*: with `--cache-dir` filled by an earlier run."
             % (len(next(iter(res["cold"].values()))), res["load_before"], res["load_after"]))
    L.append("")
    L.append("| program | to runnable, cold | LLVM, cold | to runnable, warm | earlier mdl, cold | target | met |")
    L.append("|---|---|---|---|---|---|---|")
    for name, runs in res["cold"].items():
        cold = statistics.median(to_runnable(p) for p in runs)
        llvm = statistics.median(p.get("codegen", 0) for p in runs)
        warm = statistics.median(to_runnable(p) for p in res["warm"][name])
        base = res["base"].get(name)
        b = "%.0f ms" % statistics.median(to_runnable(p) for p in base) if base else "not run"
        L.append("| %s | %.0f ms | %.0f ms | %.0f ms | %s | under %.0f ms | %s |"
                 % (LABELS[name], cold, llvm, warm, b, TARGETS[name],
                    "yes" if cold < TARGETS[name] else "**no**"))
    L.append("")
    for name, jit in res["jit"].items():
        L.append("- %s: `%s`" % (LABELS[name], jit))
    L.append("")
    return L


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", default=os.path.join(HERE, "..", "build", "bin", "mdl"))
    ap.add_argument("--baseline-mdl")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "corpus", "hlo"))
    ap.add_argument("--work")
    ap.add_argument("--out")
    a = ap.parse_args()
    res = measure(os.path.abspath(a.mdl), os.path.abspath(a.corpus),
                  os.path.abspath(a.baseline_mdl) if a.baseline_mdl else None, a.rounds, a.work)
    text = "\n".join(report(res))
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
