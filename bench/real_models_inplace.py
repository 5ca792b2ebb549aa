#!/usr/bin/python3
"""In-place loop updates and small-tensor stability, for bench/real_models.py
(import it and call `measure` and `report`) or on its own:

  bench/real_models_inplace.py [--mdl build/bin/mdl] [--baseline-mdl OLD/mdl]
                               [--rounds 3] [--processes 10] [--out FILE.md]

1. The in-place loop: 100,000 steps of a while loop reading one element of
   a carried f32[100000] at a pseudo-random index and writing it back plus
   one, as XLA HLO text (bench/inplace_loop.hlo: dynamic-slice and
   dynamic-update-slice; bench/inplace_scatter.hlo: the write as JAX's
   x.at[i].set exports it, a scatter) and in mdl (bench/inplace_loop.mdl),
   against the same loop in PyTorch: eager (a Python loop of in-place index
   updates on a tensor), TorchScript (the loop scripted), and index_put_
   with accumulate (all updates in one call: the fastest PyTorch has, given
   the indices and exploiting that the updates commute, so not the same
   program). Every result is checked equal to the others. --baseline-mdl
   times an older mdl in the same rounds (the loop took 1.7 to 5 s there,
   copying the buffer at every step).
2. Stability across processes: the 100-operation chain on 1,000 floats
   (`mdl run --repeat 100`, as the issue measured it) and the MLP at batch 1
   (bench/workloads.py) in 10 fresh processes each, one after the other; the
   table gives each process's median and the ratio of the slowest to the
   fastest.

mdl is timed with `mdl run FILE --repeat N` (compilation excluded); PyTorch
in fresh processes of this script (--peer), in its default setting and in
its best one (2 threads, OMP_WAIT_POLICY=passive). Figures are medians over
rounds; the machine's load average is reported.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads as W  # noqa: E402

PY = "/usr/bin/python3"  # Debian's NumPy and PyTorch
STEPS, SIZE, SEED = 100000, 100000, 42
FORMS = [("hlo", "inplace_loop.hlo", "HLO: dynamic-slice, dynamic-update-slice"),
         ("scatter", "inplace_scatter.hlo", "HLO: dynamic-slice, scatter"),
         ("mdl", "inplace_loop.mdl", "mdl: x[i], dynamic_update_slice")]
PEERS = [("torch-eager", "PyTorch eager, Python loop"),
         ("torch-script", "TorchScript loop"),
         ("torch-index-put", "PyTorch index_put_(accumulate=True), one call")]
SETTINGS = [("default", 0, {}), ("best", 2, {"OMP_WAIT_POLICY": "passive"})]


def indices():
    s, out = SEED, np.empty(STEPS, np.int64)
    for i in range(STEPS):
        s = (s * 1103515245 + 12345) % 2147483648
        out[i] = s % SIZE
    return out


def loop_input():
    return np.arange(SIZE, dtype=np.float32)


# --- PyTorch, in a process of its own ------------------------------------------


def peer(mode, threads, repeat, save):
    import torch
    if threads:
        torch.set_num_threads(threads)
    x0 = torch.from_numpy(loop_input())
    if mode == "torch-eager":
        def run():
            x = x0.clone()
            s = SEED
            for _ in range(STEPS):
                s = (s * 1103515245 + 12345) % 2147483648
                idx = s % SIZE
                x[idx] = x[idx] + 1.0
            return x
    elif mode == "torch-script":
        @torch.jit.script
        def scripted(x0: torch.Tensor) -> torch.Tensor:
            x = x0.clone()
            s = 42
            for _ in range(100000):
                s = (s * 1103515245 + 12345) % 2147483648
                idx = s % 100000
                x[idx] = x[idx] + 1.0
            return x
        def run():
            return scripted(x0)
    else:
        idx = torch.from_numpy(indices())
        ones = torch.ones(STEPS, dtype=torch.float32)
        def run():
            return x0.clone().index_put_((idx,), ones, accumulate=True)
    out = run()
    if save:
        np.save(save, out.numpy())
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e6)
    print(json.dumps({"median_us": statistics.median(times)}))


# --- Measuring -----------------------------------------------------------------


def env_with(extra):
    e = dict(os.environ)
    e.update(extra)
    return e


def run_mdl(mdl, program, inputs, repeat, out=None):
    cmd = [mdl, "run", program, "-q", "--repeat", str(repeat)] + ["--input=" + i for i in inputs]
    if out:
        cmd += ["--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    median = W.repeat_median_us(p.stderr)
    if p.returncode != 0 or median is None:
        raise RuntimeError("mdl failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return median


def run_peer(mode, threads, extra, repeat, save=None):
    cmd = [PY, os.path.abspath(__file__), "--peer", mode, "--threads", str(threads),
           "--repeat", str(repeat)]
    if save:
        cmd += ["--save", save]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env_with(extra), timeout=1800)
    if p.returncode != 0:
        raise RuntimeError("peer %s failed:\n%s" % (mode, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])["median_us"]


def measure(mdl, baseline=None, rounds=3, processes=10, work=None):
    """Runs everything; returns a dict that report() turns into Markdown."""
    work = work or tempfile.mkdtemp(prefix="mdl-inplace-")
    x = os.path.join(work, "x.npy")
    np.save(x, loop_input())
    want = loop_input()
    np.add.at(want, indices(), 1.0)
    res = {"load_before": os.getloadavg()[0], "loop": {}, "check": {}}
    contenders = [("mdl", mdl)] + ([("baseline", baseline)] if baseline else [])
    # Correctness first: every form and peer gives the same tensor.
    for who, binary in contenders:
        for form, f, _ in FORMS:
            out = os.path.join(work, "out_%s_%s" % (who, form))
            run_mdl(binary, os.path.join(HERE, f), ["0=" + x], 1, out)
            got = np.load(os.path.join(out, "0.npy"))
            res["check"]["%s %s" % (who, form)] = bool(np.array_equal(got, want))
    for mode, _ in PEERS:
        save = os.path.join(work, "out_%s.npy" % mode)
        run_peer(mode, 0, {}, 1, save)
        res["check"][mode] = bool(np.array_equal(np.load(save), want))
    for r in range(rounds):
        print("in-place loop, round %d of %d" % (r + 1, rounds), file=sys.stderr)
        for who, binary in contenders:
            for form, f, _ in FORMS:
                reps = 20 if who == "mdl" else 1
                t = run_mdl(binary, os.path.join(HERE, f), ["0=" + x], reps)
                res["loop"].setdefault((who, form), []).append(t)
        for mode, _ in PEERS:
            for setting, threads, extra in SETTINGS:
                reps = 20 if mode == "torch-index-put" else 2
                t = run_peer(mode, threads, extra, reps)
                res["loop"].setdefault((mode, setting), []).append(t)
    res["loop"] = {k: statistics.median(v) for k, v in res["loop"].items()}

    # Stability: fresh processes one after the other (an older mdl's
    # interleaved with this one's, so that both see the same conditions).
    W.write_all(work, with_torch=False)
    res["stability"] = {}
    for name, program, inputs, repeat in [
            ("chain1000", "chain_1000.mdl", ["x=chain_x1000.npy"], 100),
            ("mlp1", "mlp.mdl", ["x=mlp_x1.npy"], 300)]:
        print("stability: %s" % name, file=sys.stderr)
        args = [i.split("=")[0] + "=" + os.path.join(work, i.split("=")[1]) for i in inputs]
        for _ in range(processes):
            for who, binary in contenders:
                res["stability"].setdefault((who, name), []).append(
                    run_mdl(binary, os.path.join(work, program), args, repeat))
    res["load_after"] = os.getloadavg()[0]
    return res


def fmt(us):
    if us >= 1e6:
        return "%.2f s" % (us / 1e6)
    if us >= 1e3:
        return "%.1f ms" % (us / 1e3)
    return "%.0f us" % us if us >= 100 else "%.1f us" % us


def report(res):
    L = ["## In-place loop updates", ""]
    L.append("100,000 steps, each reading one element of a carried f32[100000] at a "
             "pseudo-random index and writing it back plus one (bench/inplace_loop.hlo, "
             "bench/inplace_scatter.hlo, bench/inplace_loop.mdl); time per call of the whole "
             "loop, median of rounds; load average %.2f before, %.2f after."
             % (res["load_before"], res["load_after"]))
    L.append("")
    L.append("| program | mdl | earlier mdl | speed-up |")
    L.append("|---|---|---|---|")
    loop = res["loop"]
    for form, _, label in FORMS:
        m = loop[("mdl", form)]
        b = loop.get(("baseline", form))
        L.append("| %s | %s | %s | %s |" % (label, fmt(m), fmt(b) if b else "not run",
                                           "%.0fx" % (b / m) if b else ""))
    L.append("")
    L.append("| PyTorch | default | best setting |")
    L.append("|---|---|---|")
    for mode, label in PEERS:
        L.append("| %s | %s | %s |" % (label, fmt(loop[(mode, "default")]),
                                       fmt(loop[(mode, "best")])))
    best_loop = min(loop[(m, s)] for m in ("torch-eager", "torch-script")
                    for s, _, _ in SETTINGS)
    L.append("")
    L.append("mdl's HLO loop against the fastest PyTorch loop: %.4f (below 1.0 mdl is faster); "
             "against index_put_ of all the indices at once: %.2f."
             % (loop[("mdl", "hlo")] / best_loop,
                loop[("mdl", "hlo")] / min(loop[("torch-index-put", s)] for s, _, _ in SETTINGS)))
    bad = [k for k, ok in res["check"].items() if not ok]
    L.append("Results: %s." % ("every form and peer gives the same tensor" if not bad
                                else "**differ**: " + ", ".join(bad)))
    L.append("")
    L.append("## Small tensors: the same speed in every process")
    L.append("")
    L.append("Each figure is one fresh process's median time per call (`mdl run --repeat N`), "
             "processes run one after the other.")
    L.append("")
    L.append("| workload | mdl | per process | slowest / fastest |")
    L.append("|---|---|---|---|")
    for (who, name), ts in sorted(res["stability"].items(), key=lambda kv: (kv[0][1], kv[0][0] != "mdl")):
        label = {"chain1000": "100-op chain, 1,000 floats", "mlp1": "MLP 784-1024-1024-10, batch 1"}
        L.append("| %s | %s | %s | %.2f |" % (label[name], "this" if who == "mdl" else "earlier",
                                              " ".join(fmt(t) for t in ts), max(ts) / min(ts)))
    L.append("")
    return L


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", default=os.path.join(HERE, "..", "build", "bin", "mdl"))
    ap.add_argument("--baseline-mdl")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--processes", type=int, default=10)
    ap.add_argument("--out")
    ap.add_argument("--work")
    ap.add_argument("--peer")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--save")
    a = ap.parse_args()
    if a.peer:
        peer(a.peer, a.threads, a.repeat, a.save)
        return
    res = measure(os.path.abspath(a.mdl),
                  os.path.abspath(a.baseline_mdl) if a.baseline_mdl else None,
                  a.rounds, a.processes, a.work)
    text = "\n".join(report(res))
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
