#!/usr/bin/python3
"""Real models against PyTorch in the same run, with the limits from counted
FLOPs: the section "Real models" of docs/performance.md.

  bench/real_models.py [--mdl build/bin/mdl] [--baseline-mdl OLD/mdl]
                       [--rounds 3] [--only resnet,vit,attention,inplace,compile]
                       [--corpus ../shared/corpus/hlo] [--work DIR] [--out FILE.md]

Workloads, each measured by its own module (which also runs alone):
  resnet     the corpus ResNet-50 (keras_jax_resnet50_predict_f32.hlo, batch 1,
             weights as params) against torchvision's resnet50
             (bench/real_models_resnet.py)
  vit        a ViT-B/16 in bf16 written in mdl against torchvision's vit_b_16
             in bf16 (bench/real_models_vit.py)
  attention  the corpus attention block (jax_mha_attention_block_bf16.hlo)
             against the same expression in PyTorch bf16
             (bench/real_models_attention.py)
  inplace    a 100,000-step loop updating one element of a carried tensor
             per step (HLO and .mdl) against PyTorch loops, and the 1,000-float
             chain and MLP at batch 1 in 10 fresh processes each
             (bench/real_models_inplace.py)
  compile    compile time of ResNet-50 and a ViT-B/16-sized program, cold and
             from a warm cache (bench/compile_bench.py)

PyTorch runs as a user gets it (eager, its defaults) and in its best setting
(2 threads, OMP_WAIT_POLICY=passive; eager and trace+freeze); the ratio is
mdl's time over the fastest of them. Every contender is a fresh process,
interleaved round after round. --baseline-mdl adds an earlier mdl to the
in-place and compile measurements. bench/run_all.py runs this and puts its
section into docs/performance.md.
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_bench  # noqa: E402
import real_models_attention as attention  # noqa: E402
import real_models_inplace as inplace  # noqa: E402
import real_models_resnet as resnet  # noqa: E402
import real_models_util as U  # noqa: E402
import real_models_vit as vit  # noqa: E402

ALL = ["resnet", "vit", "attention", "inplace", "compile"]
PEER_NAMES = [name for name, *_ in U.PEERS]
# The figure for the in-place loop before mdl updated in place
# (10.7 s per call), used when no earlier mdl is measured in the same run.
INPLACE_BEFORE_US = 10.7e6


def fmt_time(us):
    if us >= 1e6:
        return "%.2f s" % (us / 1e6)
    if us >= 1e3:
        return "%.1f ms" % (us / 1e3)
    return "%.0f us" % us


def verdict(ok):
    return "yes" if ok else "**no**"


class Report:
    """The summary table (one row per workload), the targets, and each
    workload's own section."""

    def __init__(self):
        self.rows, self.targets, self.sections = [], [], []

    def row(self, label, mdl_us, peers_us, flops=None, limit=None):
        best = min(peers_us.values()) if peers_us else None
        ratio = ("%.2f" if mdl_us >= 0.01 * best else "%.2g") % (mdl_us / best) if best else ""
        rate = "%.0f" % (flops / mdl_us / 1e3) if flops else ""
        self.rows.append("| %s | %s | %s | %s | %s | %s |" % (
            label, fmt_time(mdl_us),
            " | ".join(fmt_time(peers_us[n]) if n in peers_us else "" for n in PEER_NAMES),
            ratio, rate, limit or ""))
        return mdl_us / best if best else None

    def target(self, what, goal, ok, measured):
        self.targets.append("| %s | %s | %s | %s |" % (what, goal, verdict(ok), measured))

    def markdown(self):
        L = ["## Real models", ""]
        L.append("Models from outside mdl's own benchmarks, each against PyTorch on the same "
                 "shapes in the same run (`bench/real_models.py`; the sections below give each "
                 "workload's details). *Ratio*: mdl's time over the fastest PyTorch figure of "
                 "the row; *limit*: the counted FLOPs at the machine's rate.")
        L.append("")
        L.append("| workload | mdl | %s | ratio | mdl GFLOP/s | limit |" % " | ".join(PEER_NAMES))
        L.append("|---|---|%s---|---|---|" % ("---|" * len(PEER_NAMES)))
        L += self.rows
        L.append("")
        L.append("| target | goal | met | measured |")
        L.append("|---|---|---|---|")
        L += self.targets
        L.append("")
        for s in self.sections:
            L += s
            L.append("")
        return L


def run_resnet(rep, mdl, work, corpus, rounds):
    res = resnet.measure(mdl, os.path.join(work, "resnet"), corpus, rounds, 20,
                         log=lambda s: print(s, file=sys.stderr))
    med = {k: statistics.median(res[k]) for k in ["mdl"] + PEER_NAMES}
    gflop = res["flops"] / 1e9
    limit = "%s (%.2f GFLOP at %.0f GFLOP/s)" % (
        fmt_time(gflop / resnet.PEAK_GFLOPS * 1e6), gflop, resnet.PEAK_GFLOPS)
    ratio = rep.row("ResNet-50 f32, batch 1 (corpus HLO)", med["mdl"],
                    {n: med[n] for n in PEER_NAMES}, res["flops"], limit)
    rep.target("ResNet-50 f32", "at most 1.0x PyTorch's best mode (aim 0.7x)", ratio <= 1.0,
               "%.2f" % ratio)
    rep.sections.append(["### ResNet-50", ""] + resnet.report(res))
    return res


def bf16_limit(res):
    rate = res.get("bf16_rate")
    if not rate:
        return ""
    return "%s (%.3g GFLOP at %.0f GFLOP/s, oneDNN bf16)" % (
        fmt_time(res["limit_us"]), res["flops"] / 1e9, rate["gflops"])


def half_section(title, res):
    L = [title, ""]
    L.append("%s: %.2f GFLOP; load average %.2f before, %.2f after; mdl compiles it in %.0f ms "
             "(parse to runnable). Results: max |mdl - PyTorch| %.3g (largest |PyTorch| %.3g)."
             % (res["workload"], res["flops"] / 1e9, res["load"][0], res["load"][1],
                res["compile_ms"], res["max_abs_diff"], res["max_abs_ref"]))
    rate = res.get("bf16_rate")
    if rate:
        L.append("")
        L.append("The bf16 rate is oneDNN's own on this machine (`bench/bf16_rate`: %.0f GFLOP/s "
                 "on %d threads, %s)." % (rate["gflops"], rate["threads"], rate["impl"]))
    return L


def run_half(rep, module, label, title, goal, mdl, work, rounds, repeat, *args):
    res = module.measure(mdl, work, *args, rounds=rounds, repeat=repeat)
    t = res["times_us"]
    ratio = rep.row(label, t["mdl"], {n: t[n] for n in PEER_NAMES if n in t}, res["flops"],
                    bf16_limit(res))
    rep.target(label, goal, ratio <= 1.0, "%.2f" % ratio)
    rep.sections.append(half_section(title, res))
    return res


def run_inplace(rep, mdl, baseline, work, rounds):
    res = inplace.measure(mdl, baseline, rounds, 10, os.path.join(work, "inplace"))
    loop = res["loop"]
    peers = {}
    for name, mode, threads, _ in U.PEERS:
        setting = "default" if threads == 0 else "best"
        torch_mode = "torch-eager" if mode == "torch-eager" else "torch-script"
        if (torch_mode, setting) in loop:
            peers[name] = loop[(torch_mode, setting)]
    rep.row("in-place loop, 100,000 steps (HLO)", loop[("mdl", "hlo")], peers)
    before = loop.get(("baseline", "hlo"), INPLACE_BEFORE_US)
    speedup = before / loop[("mdl", "hlo")]
    rep.target("in-place loop", "at least 50x faster than before (10.7 s)", speedup >= 50,
               "%.0fx (%s, before %s%s)" % (speedup, fmt_time(loop[("mdl", "hlo")]),
                                            fmt_time(before),
                                            "" if ("baseline", "hlo") in loop else
                                            ", the issue's figure"))
    spread = max(res["stability"][("mdl", "chain1000")]) / min(res["stability"][("mdl", "chain1000")])
    rep.target("1,000-float chain across 10 processes", "slowest within 2x of the fastest",
               spread <= 2.0, "%.2f" % spread)
    rep.sections.append(inplace.report(res))
    return res


def run_compile(rep, mdl, corpus, baseline, work, rounds):
    res = compile_bench.measure(mdl, corpus, baseline, rounds, os.path.join(work, "compile"))
    for name, goal_ms in compile_bench.TARGETS.items():
        if name not in res["cold"]:
            continue
        cold = statistics.median(compile_bench.to_runnable(p) for p in res["cold"][name])
        rep.target("compile: " + compile_bench.LABELS[name], "under %.0f ms" % goal_ms,
                   cold < goal_ms, "%.0f ms" % cold)
    rep.sections.append(compile_bench.report(res))
    return res


def measure(mdl, corpus, work, rounds=3, only=ALL, baseline=None):
    """Runs the chosen workloads; returns the Markdown lines of the section."""
    mdl = os.path.abspath(mdl)
    rep = Report()
    for w in only:
        print("real models: %s" % w, file=sys.stderr)
        sub = os.path.join(work, w)
        os.makedirs(sub, exist_ok=True)
        if w == "resnet":
            run_resnet(rep, mdl, work, corpus, rounds)
        elif w == "vit":
            run_half(rep, vit, "ViT-B/16 in bf16, batch 1", "### ViT-B/16 in bf16",
                     "at most 1.0x PyTorch's best mode (aim 0.7x)", mdl, sub, rounds, 20)
        elif w == "attention":
            run_half(rep, attention, "attention block in bf16 (corpus HLO)",
                     "### Attention block in bf16", "at most 1.0x PyTorch's best mode", mdl,
                     sub, rounds, 500, corpus)
        elif w == "inplace":
            run_inplace(rep, mdl, baseline, work, rounds)
        elif w == "compile":
            run_compile(rep, mdl, corpus, baseline, work, rounds)
    return rep.markdown()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", default=os.path.join(HERE, "..", "build", "bin", "mdl"))
    ap.add_argument("--baseline-mdl", help="an earlier mdl, for the in-place loop and compile time")
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "corpus", "hlo"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=",".join(ALL),
                    help="comma-separated workloads (default: all of %s)" % ",".join(ALL))
    ap.add_argument("--work", help="where inputs and programs are written (default: a temporary folder)")
    ap.add_argument("--out", help="also write the Markdown section here")
    a = ap.parse_args()
    only = [w for w in a.only.split(",") if w]
    unknown = [w for w in only if w not in ALL]
    if unknown:
        ap.error("unknown workload %s (known: %s)" % (", ".join(unknown), ", ".join(ALL)))
    if not os.path.exists(a.mdl):
        ap.error("no mdl at %s (build first, or give --mdl)" % a.mdl)
    work = a.work or tempfile.mkdtemp(prefix="mdl-real-models-")
    lines = measure(a.mdl, os.path.abspath(a.corpus), work, a.rounds, only,
                    os.path.abspath(a.baseline_mdl) if a.baseline_mdl else None)
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
