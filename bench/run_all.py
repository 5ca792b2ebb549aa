#!/usr/bin/python3
"""Runs every benchmark of mdl against its peers and writes
docs/performance.md.

  bench/run_all.py [--mdl build/bin/mdl] [--gemm-bench build/bench/gemm_bench]
                   [--rounds 5] [--out docs/performance.md] [--work DIR]

Workloads (bench/workloads.py): MLP 784-1024-1024-10 at batch 64 and 1, one
transformer encoder layer, a chain of 100 element-wise operations on 1,000
and 1,000,000 floats, a 50-step RNN loop, single matrix products (GEMM
efficiency against the library's own throughput), and the compile latency
of generated programs of 10 to 10,000 operations; then the real models of
bench/real_models.py (ResNet-50, a ViT-B/16 in bf16, the corpus attention
block, an in-place loop, compile time of big models), unless
--skip-real-models.

Peers, in the same run: PyTorch (Debian's python3-torch) eager as a user
gets it by default, eager in its best setting (2 threads,
OMP_WAIT_POLICY=passive) and torch.jit.trace + freeze in that setting, and
NumPy. Every round runs every contender once, in turn (interleaved), each
in a fresh process that warms up and then times its calls; the tables give
the median over rounds of each process's median time per call.
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads as W  # noqa: E402

PY = "/usr/bin/python3"  # Debian's NumPy and PyTorch live here

WORKLOADS = [
    # name, mdl program, inputs, repeat (mdl), repeat (peers)
    ("mlp64", "mlp.mdl", ["x=mlp_x64.npy"], 300, 100),
    ("mlp1", "mlp.mdl", ["x=mlp_x1.npy"], 1000, 300),
    ("transformer", "transformer.mdl", ["x=tf_x.npy"], 40, 15),
    ("chain1000", "chain_1000.mdl", ["x=chain_x1000.npy"], 2000, 300),
    ("chain1000000", "chain_1000000.mdl", ["x=chain_x1000000.npy"], 40, 10),
    ("rnn", "rnn.mdl", ["h0=rnn_h0.npy"], 100, 30),
]
LABELS = {
    "mlp64": "MLP 784-1024-1024-10, batch 64",
    "mlp1": "MLP 784-1024-1024-10, batch 1",
    "transformer": "transformer encoder layer (d 256, 4 heads, FFN 1024, seq 128, batch 8)",
    "chain1000": "100 element-wise ops, 1,000 floats",
    "chain1000000": "100 element-wise ops, 1,000,000 floats",
    "rnn": "RNN loop: 50 x tanh(h @ w + b), h [64, 256]",
}
PEERS = [
    # name, peers.py mode, threads, extra environment
    ("torch eager (default)", "torch-eager", 0, {}),
    ("torch eager (best)", "torch-eager", 2, {"OMP_WAIT_POLICY": "passive"}),
    ("torch jit trace+freeze (best)", "torch-jit", 2, {"OMP_WAIT_POLICY": "passive"}),
    ("numpy", "numpy", 0, {}),
]
# The ratio is against the fastest PyTorch figure of a workload, whichever
# mode and setting gave it.
TORCH = ("torch eager (default)", "torch eager (best)", "torch jit trace+freeze (best)")
COMPILE_SIZES = [10, 100, 1000, 10000]
MATMUL_SIZES = [256, 512, 1024, 2048]


def env_with(extra):
    e = dict(os.environ)
    e.update(extra)
    return e


def run_mdl(mdl, work, program, inputs, repeat, extra_env=None):
    cmd = [mdl, "run", os.path.join(work, program), "-q", "--repeat", str(repeat)]
    for i in inputs:
        name, f = i.split("=", 1)
        cmd.append("--input=%s=%s" % (name, os.path.join(work, f)))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env_with(extra_env or {}),
                       timeout=900)
    median = W.repeat_median_us(p.stderr)
    if p.returncode != 0 or median is None:
        raise RuntimeError("mdl failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return median


def run_peer(work, workload, mode, threads, extra, repeat):
    cmd = [PY, os.path.join(HERE, "peers.py"), "--work", work, "--workload", workload,
           "--mode", mode, "--repeat", str(repeat)]
    if threads:
        cmd += ["--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env_with(extra), timeout=900)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    return json.loads(p.stdout.strip().splitlines()[-1])["median_us"], None


def compile_latency(mdl, work, n, cache=None):
    cmd = [mdl, "run", os.path.join(work, "compile_%d.mdl" % n), "-q", "--timings",
           "--input=x=" + os.path.join(work, "compile_x.npy"),
           "--input=w=" + os.path.join(work, "compile_w.npy")]
    if cache:
        cmd += ["--cache-dir", cache]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    phases = W.timing_phases(p.stderr)
    if p.returncode != 0 or phases is None:
        raise RuntimeError("mdl failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return phases


def op_count(mdl, work, n):
    p = subprocess.run([mdl, "ir", os.path.join(work, "compile_%d.mdl" % n)],
                       capture_output=True, text=True, timeout=900)
    return sum(1 for line in p.stdout.splitlines() if re.match(r"\s+%\d+.* = ", line))


def gemm_library(gemm_bench):
    """GFLOP/s per (library, shape) from the Google Benchmark of bench/."""
    if not gemm_bench or not os.path.exists(gemm_bench):
        return {}
    p = subprocess.run([gemm_bench, "--benchmark_min_time=0.3", "--benchmark_repetitions=3",
                        "--benchmark_enable_random_interleaving=true",
                        "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                       capture_output=True, text=True, env=env_with({"OMP_NUM_THREADS": "2"}),
                       timeout=1800)
    out = {}
    try:
        data = json.loads(p.stdout)
    except ValueError:
        return {}
    for b in data.get("benchmarks", []):
        if b.get("aggregate_name") != "median":
            continue
        lib, shape = b["run_name"].split("/")[:2]
        out[(lib, shape)] = b["GFLOPs"] / 1e9 if b["GFLOPs"] > 1e6 else b["GFLOPs"]
    return out


def fmt_us(us):
    if us is None:
        return "n/a"
    return "%.0f us" % us if us >= 100 else "%.1f us" % us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", default=os.path.join(HERE, "..", "build", "bin", "mdl"))
    ap.add_argument("--gemm-bench", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "performance.md"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--skip-real-models", action="store_true",
                    help="leave out bench/real_models.py (ResNet-50, ViT, attention, in-place "
                         "loop, compile time of big models: about 15 minutes)")
    ap.add_argument("--real-models-rounds", type=int, default=3)
    ap.add_argument("--baseline-mdl", help="an earlier mdl, for bench/real_models.py")
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "corpus", "hlo"))
    a = ap.parse_args()
    mdl = os.path.abspath(a.mdl)
    gemm_bench = a.gemm_bench or os.path.join(os.path.dirname(os.path.dirname(mdl)), "bench",
                                              "gemm_bench")
    work = a.work or tempfile.mkdtemp(prefix="mdl-bench-")
    command = "bench/run_all.py " + " ".join(sys.argv[1:])
    load_before = os.getloadavg()
    W.write_all(work)

    # The transformer computes what PyTorch's layer computes.
    subprocess.run([mdl, "run", os.path.join(work, "transformer.mdl"), "-q", "--out",
                    os.path.join(work, "tf_out"), "--input=x=" + os.path.join(work, "tf_x.npy")],
                   check=True)
    subprocess.run([PY, os.path.join(HERE, "peers.py"), "--work", work, "--workload",
                    "transformer", "--mode", "torch-eager", "--repeat", "1", "--save",
                    os.path.join(work, "tf_torch.npy")], check=True, capture_output=True)
    import numpy as np
    got = np.load(os.path.join(work, "tf_out", "0.npy"))
    want = np.load(os.path.join(work, "tf_torch.npy"))
    tf_diff = float(np.abs(got - want).max())
    tf_ok = bool(np.allclose(got, want, rtol=1e-4, atol=1e-4))

    times = {w[0]: {} for w in WORKLOADS}
    errors = {}
    mm_times = {n: [] for n in MATMUL_SIZES}
    for r in range(a.rounds):
        print("round %d of %d" % (r + 1, a.rounds), file=sys.stderr)
        for name, program, inputs, rep_mdl, rep_peer in WORKLOADS:
            times[name].setdefault("mdl", []).append(run_mdl(mdl, work, program, inputs, rep_mdl))
            for peer, mode, threads, extra in PEERS:
                t, err = run_peer(work, name, mode, threads, extra, rep_peer)
                if t is None:
                    errors[(name, peer)] = err
                    continue
                times[name].setdefault(peer, []).append(t)
        for n in MATMUL_SIZES:
            mm_times[n].append(run_mdl(mdl, work, "matmul_%d.mdl" % n,
                                       ["a=mm_a_%d.npy" % n, "b=mm_b_%d.npy" % n],
                                       # about half a second of calls, at least 20
                                       min(2000, max(20, int(0.5 * 150e9 / (2 * n ** 3))))))

    med = {w: {k: statistics.median(v) for k, v in d.items()} for w, d in times.items()}

    # Compile latency: fresh processes, no cache; then again from a warm cache.
    compile_rows = []
    cache = tempfile.mkdtemp(prefix="mdl-cache-")
    for n in COMPILE_SIZES:
        runs = [compile_latency(mdl, work, n) for _ in range(max(3, a.rounds))]
        total = statistics.median(sum(v for k, v in ph.items() if k != "run") for ph in runs)
        codegen = statistics.median(ph.get("codegen", 0) for ph in runs)
        compile_latency(mdl, work, n, cache)
        warm = [compile_latency(mdl, work, n, cache) for _ in range(3)]
        total_warm = statistics.median(sum(v for k, v in ph.items() if k != "run") for ph in warm)
        compile_rows.append((n, op_count(mdl, work, n), total, codegen, total_warm))

    gemm = {} if a.skip_gemm else gemm_library(gemm_bench)
    load_after = os.getloadavg()

    # --- The report ---------------------------------------------------------------
    L = []
    L.append("# Performance")
    L.append("")
    L.append("Generated by `%s` on %s." % (command, datetime.date.today().isoformat()))
    L.append("")
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch
    L.append("Machine: %s, %d cores, %s; load average %.2f before, %.2f after. "
             "PyTorch %s, NumPy %s. mdl runs as a user gets it: its worker pool on all "
             "cores (2), oneDNN for f32 products."
             % (cpu, os.cpu_count(), platform.platform(), load_before[0], load_after[0],
                torch.__version__, np.__version__))
    L.append("")
    L.append("Each figure is the median, over %d interleaved rounds, of one process's median "
             "time per call after warm-up (mdl: `mdl run FILE --repeat N`, which excludes "
             "compilation). *Ratio* is mdl's time divided by the fastest PyTorch figure of the "
             "row, whichever mode and setting gave it (eager with PyTorch's defaults, or eager "
             "and trace+freeze with 2 threads and `OMP_WAIT_POLICY=passive`): below 1.0 mdl "
             "is faster." % a.rounds)
    L.append("")
    peers = [p[0] for p in PEERS]
    L.append("| workload | mdl | " + " | ".join(peers) + " | ratio to fastest PyTorch | ratio to eager (default) |")
    L.append("|---|---|" + "---|" * len(peers) + "---|---|")
    verdicts = []
    for name, *_ in WORKLOADS:
        m = med[name]
        best = min((m[p] for p in TORCH if p in m), default=None)
        ratio = m["mdl"] / best if best else None
        eager = m.get("torch eager (default)")
        row = "| %s | %s | " % (LABELS[name], fmt_us(m["mdl"]))
        row += " | ".join(fmt_us(m.get(p)) for p in peers)
        row += " | %s | %s |" % ("%.2f" % ratio if ratio else "n/a",
                                 "%.3f" % (m["mdl"] / eager) if eager else "n/a")
        L.append(row)
        if name in ("mlp64", "mlp1", "transformer"):
            verdicts.append((LABELS[name], "ratio <= 1.0 to the fastest PyTorch mode",
                             ratio is not None and ratio <= 1.0, "%.2f" % ratio if ratio else "n/a"))
        if name.startswith("chain"):
            speed = eager / m["mdl"] if eager else None
            best_eager = m.get("torch eager (best)")
            speed_best = best_eager / m["mdl"] if best_eager else None
            # met only if it holds against eager in either setting
            verdicts.append((LABELS[name], "at least 5x faster than PyTorch eager",
                             speed is not None and speed >= 5 and
                             (speed_best is None or speed_best >= 5),
                             "%.1fx (default), %.1fx (best setting)" % (speed or 0, speed_best or 0)))
    L.append("")
    for (name, peer), err in sorted(errors.items()):
        L.append("- %s, %s: not measured (%s)" % (LABELS[name], peer, err))
    if errors:
        L.append("")
    L.append("The transformer's output equals PyTorch's layer on the same weights and input: "
             "max |difference| %.2g (%s within rtol = atol = 1e-4)."
             % (tf_diff, "all" if tf_ok else "NOT all"))
    L.append("")

    L.append("## GEMM")
    L.append("")
    L.append("`bench/gemm_bench` (Google Benchmark, 2 threads, interleaved, median of 3), "
             "GFLOP/s. *openblas*: OpenBLAS with its own 2 threads; *openblas_omp*: OpenBLAS "
             "single-threaded, rows split over OpenMP; *dnnl*: oneDNN's `dnnl_sgemm` on its "
             "OpenMP threads; *openblas_gemv*: `cblas_sgemv` for the single-row products. "
             "Shapes: *sqN* N x N x N; *mlp64_l1* 64 x 1024 x 784 (M x N x K) and the other "
             "MLP layers; *tf_qkv* 1024 x 768 x 256, *tf_out* 1024 x 256 x 256, *tf_ffn1* "
             "1024 x 1024 x 256, *tf_ffn2* 1024 x 256 x 1024, *tf_scores* 32 x (128 x 128 x 64), "
             "*tf_context* 32 x (128 x 64 x 128).")
    L.append("")
    order = ["sq256", "sq512", "sq1024", "sq2048", "mlp64_l1", "mlp64_l2", "mlp64_l3",
             "mlp1_l1", "mlp1_l2", "tf_qkv", "tf_out", "tf_ffn1", "tf_ffn2", "tf_scores",
             "tf_context"]
    shapes = [s for s in order if any(k[1] == s for k in gemm)]
    libs = ["openblas", "openblas_omp", "dnnl", "openblas_gemv"]
    if gemm:
        L.append("| shape | " + " | ".join(libs) + " |")
        L.append("|---|" + "---|" * len(libs))
        for s in shapes:
            L.append("| %s | " % s + " | ".join("%.1f" % gemm[(l, s)] if (l, s) in gemm else ""
                                               for l in libs) + " |")
        L.append("")
    L.append("mdl's own product (`a @ b`, f32, through the JIT and the chosen library), against "
             "the library alone:")
    L.append("")
    L.append("| size | mdl time | mdl GFLOP/s | library GFLOP/s (dnnl) | mdl / library |")
    L.append("|---|---|---|---|---|")
    for n in MATMUL_SIZES:
        t = statistics.median(mm_times[n])
        g = 2 * n ** 3 / (t * 1e-6) / 1e9
        lib = gemm.get(("dnnl", "sq%d" % n))
        L.append("| %d | %s | %.1f | %s | %s |" % (n, fmt_us(t), g, "%.1f" % lib if lib else "n/a",
                                                  "%.2f" % (g / lib) if lib else "n/a"))
        if lib:
            verdicts.append(("GEMM %dx%d" % (n, n), "within 10% of the library's throughput",
                             g >= 0.9 * lib, "%.0f%% of it" % (100 * g / lib)))
    L.append("")

    L.append("## Compile latency")
    L.append("")
    L.append("Generated programs (bench/workloads.py `compile_program`): functions of 25 "
             "statements, each a dense step `h = tanh(h @ w + c) * k + h` or an element-wise "
             "step, chained from `main`. *Operations* counts the IR operations after lowering. "
             "*Parse to runnable* is every phase of `mdl run --timings` but the run itself "
             "(parse, check, passes, LLVM codegen, load and link), median of fresh processes; "
             "*warm cache* is the same with `--cache-dir` already filled by an earlier run.")
    L.append("")
    L.append("| program | operations | parse to runnable | of which LLVM codegen | per operation | warm cache |")
    L.append("|---|---|---|---|---|---|")
    for n, ops, total, codegen, warm in compile_rows:
        L.append("| compile_%d | %d | %.1f ms | %.1f ms | %.0f us | %.1f ms |"
                 % (n, ops, total, codegen, 1000 * total / max(ops, 1), warm))
        if n == 1000:
            verdicts.append(("compile of 1,000 operations", "under 300 ms", total < 300,
                             "%.0f ms" % total))
    L.append("")

    L.append("## Targets")
    L.append("")
    L.append("| target | goal | met | measured |")
    L.append("|---|---|---|---|")
    for what, goal, ok, measured in verdicts:
        L.append("| %s | %s | %s | %s |" % (what, goal, "yes" if ok else "**no**", measured))
    L.append("")
    if not a.skip_real_models:
        import real_models
        L += real_models.measure(mdl, os.path.abspath(a.corpus), os.path.join(work, "real"),
                                 a.real_models_rounds, real_models.ALL,
                                 os.path.abspath(a.baseline_mdl) if a.baseline_mdl else None)
    notes = os.path.join(HERE, "performance_notes.md")
    if os.path.exists(notes):
        L.append(open(notes).read().rstrip())
        L.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
