#!/usr/bin/python3
"""The mpc device through `mdl run` (three parties as threads): time,
rounds and bytes per party of secret workloads, against the ABY3 cost
model, and the secret 1024 x 1024 matmul against six plaintext 64-bit
integer GEMMs of the same size measured in the same run.

  bench/mpc_bench.py [--mdl build/bin/mdl] [--gemm-bench build/bench/mpc_gemm_bench]
                     [--rounds 3] [--out FILE.md] [--work DIR] [--only NAME,...]

Each workload is an mdl program with an `mpc` device. Each round runs it
in two fresh processes with `--timings --diagnostics=json` (the device then
prints, per party and operation kind, calls, rounds, exact bytes sent and
received, and time): once, and with `--repeat 2`; the difference of the two
divided by 2 is one entry call in steady state (the first call of a process
also pays for growing its heap). The table gives, per workload, the median
over rounds of:
- compute: the slowest party's time per call in the workload's operations
  (the secret-sharing of the inputs and the final reveal are listed apart:
  they depend on where the data comes from, not on the model);
- rounds and bytes sent per party per call in those operations;
- the ABY3 model's bytes where the model defines them (a product: 64 bits
  per element and party; a matmul: 64 bits per output element and party,
  one round) and the ratio of the products' measured bytes to it (the
  nonlinear operations have no figure in that model; their rounds and bytes
  are listed per operation kind);
- the first call's whole `run` phase, and the largest error of the revealed
  results against the same computation in float64 (NumPy).
The secret 1024 matmul is set beside six plaintext 64-bit integer GEMMs of
the same size that `mpc_gemm_bench` times in the same round.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "conformance", "run")

# Operations that are not the workload's own computation.
IO_OPS = {"setup", "input", "reveal"}
# Operations the ABY3 cost model of the issue covers (products).
MODEL_OPS = {"matmul", "mul"}
# Entry calls after the first, to measure the steady state.
REPEAT = 2

BERT = """# One BERT-base encoder layer, all of it secret-shared: sequence 128,
# width 768, 12 heads of 64, FFN 3072, post-layernorm, tanh-form gelu.
device host = cpu()
device sec = mpc()

fn main(x: f32[128, 768], wq: f32[768, 768], wk: f32[768, 768], wv: f32[768, 768],
        wo: f32[768, 768], w1: f32[768, 3072], w2: f32[3072, 768],
        b1: f32[3072], b2: f32[768], g1: f32[768], be1: f32[768],
        g2: f32[768], be2: f32[768]) -> f32[128, 768] {
  on sec {
    let q = transpose(reshape(x @ wq, [128, 12, 64]), perm = [1, 0, 2])
    let k = transpose(reshape(x @ wk, [128, 12, 64]), perm = [1, 2, 0])
    let v = transpose(reshape(x @ wv, [128, 12, 64]), perm = [1, 0, 2])
    let p = softmax((q @ k) * 0.125, axis = -1)
    let ctx = reshape(transpose(p @ v, perm = [1, 0, 2]), [128, 768])
    let h = layernorm(x + ctx @ wo, g1, be1, eps = 1e-5)
    let f = gelu(h @ w1 + b1, approximate = true) @ w2 + b2
    let y = layernorm(h + f, g2, be2, eps = 1e-5)
  }
  return reveal(y)
}
"""


def workloads(work):
    """name -> (label, program path, {arg: array}, ABY3 model bytes per party or None)."""
    rng = np.random.default_rng(7)

    def arr(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def program(name, text):
        path = os.path.join(work, name + ".mdl")
        with open(path, "w") as f:
            f.write("device host = cpu()\ndevice sec = mpc()\n\n" + text)
        return path

    w = {}
    for n in (256, 1024):
        w["matmul%d" % n] = (
            "secret matmul %d x %d @ %d x %d" % (n, n, n, n),
            program("matmul%d" % n,
                    "fn main(a: f32[%d, %d], b: f32[%d, %d]) -> f32[%d, %d] {\n"
                    "  let c = a @ b on sec\n  return reveal(c)\n}\n" % (n, n, n, n, n, n)),
            {"a": arr(n, n, scale=0.1), "b": arr(n, n, scale=0.1)},
            8 * n * n)
    w["relu1m"] = ("relu of 1,000,000 elements",
                   program("relu1m", "fn main(x: f32[1000000]) -> f32[1000000] {\n"
                                     "  let y = relu(x) on sec\n  return reveal(y)\n}\n"),
                   {"x": arr(1000000)}, None)
    w["logistic"] = ("logistic-regression scoring, 10,000 x 100",
                     program("logistic",
                             "fn main(x: f32[10000, 100], w: f32[100, 1]) -> f32[10000, 1] {\n"
                             "  let p = sigmoid(x @ w + 0.1) on sec\n  return reveal(p)\n}\n"),
                     {"x": arr(10000, 100, scale=0.3), "w": arr(100, 1, scale=0.3)},
                     8 * 10000)  # the matmul's outputs; the sigmoid is beyond the model
    w["softmax"] = ("softmax over 128 x 128 (rows)",
                    program("softmax", "fn main(x: f32[128, 128]) -> f32[128, 128] {\n"
                                       "  let y = softmax(x, axis = 1) on sec\n"
                                       "  return reveal(y)\n}\n"),
                    {"x": arr(128, 128, scale=2.0)}, None)
    mlp = os.path.join(SHARED, "mpc_mlp_relu.mdl")
    if os.path.exists(mlp):
        ins = {a[:-4]: np.load(os.path.join(SHARED, "mpc_mlp_relu.inputs", a))
               for a in sorted(os.listdir(os.path.join(SHARED, "mpc_mlp_relu.inputs")))}
        w["mlp"] = ("conformance MLP (mpc_mlp_relu: 4x6 @ 6x8, relu, @ 8x3, max)", mlp, ins,
                    8 * (4 * 8 + 4 * 3))
    bert = {"x": arr(128, 768, scale=0.5)}
    for k in ("wq", "wk", "wv", "wo"):
        bert[k] = arr(768, 768, scale=0.036)
    bert.update(w1=arr(768, 3072, scale=0.036), w2=arr(3072, 768, scale=0.018),
                b1=arr(3072, scale=0.02), b2=arr(768, scale=0.02),
                g1=np.ones(768, np.float32), be1=np.zeros(768, np.float32),
                g2=np.ones(768, np.float32), be2=np.zeros(768, np.float32))
    path = os.path.join(work, "bert_layer.mdl")
    with open(path, "w") as f:
        f.write(BERT)
    # The matmuls' outputs: q, k, v, scores, context, output projection, FFN.
    outputs = 3 * 128 * 768 + 12 * 128 * 128 + 12 * 128 * 64 + 128 * 768 + 128 * 3072 + 128 * 768
    w["bert"] = ("BERT-base encoder layer (seq 128, width 768, 12 heads, FFN 3072)", path, bert,
                 8 * outputs)
    return w


def run_once(mdl, prog, inputs, work, name, repeat=0, out=None):
    cmd = [mdl, "run", prog, "--timings", "--diagnostics=json", "--quiet"]
    if repeat:
        cmd += ["--repeat", str(repeat)]
    if out:
        cmd += ["--out", out]
    for arg, a in inputs.items():
        f = os.path.join(work, "%s.%s.npy" % (name, arg))
        if not os.path.exists(f):
            np.save(f, a)
        cmd += ["--input", "%s=%s" % (arg, f)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("mdl failed on %s:\n%s" % (name, p.stderr[-3000:]))
    rows = []
    run_ms = None
    for line in p.stderr.splitlines():
        if line.startswith("{") and '"mpc_party"' in line:
            rows.append(json.loads(line))
        elif line.startswith("timings (ms):"):
            for kv in line.split(":", 1)[1].split():
                k, v = kv.split("=")
                if k == "run":
                    run_ms = float(v)
    return rows, run_ms, wall


def steady(cold, warm, repeat):
    """Rows of one entry call in steady state: (warm - cold) / repeat, where
    `cold` ran the entry once and `warm` 1 + repeat times."""
    first = {(r["mpc_party"], r["op"]): r for r in cold}
    rows = []
    for r in warm:
        c = first.get((r["mpc_party"], r["op"]), {})
        d = dict(r)
        for k in ("calls", "rounds", "bytes_sent", "bytes_received"):
            d[k] = (r[k] - c.get(k, 0)) // repeat
        d["ms"] = max(0.0, (r["ms"] - c.get("ms", 0.0)) / repeat)
        rows.append(d)
    return rows


def summarize(rows):
    """Per party: compute ms, rounds, bytes sent (workload ops), io ms; ops seen."""
    parties = {}
    for r in rows:
        if r["op"] == "setup" and r["calls"] == 0:
            continue
        s = parties.setdefault(r["mpc_party"], {"ms": 0.0, "rounds": 0, "sent": 0,
                                                 "io_ms": 0.0, "ops": {}})
        if r["op"] in IO_OPS:
            s["io_ms"] += r["ms"]
            continue
        s["ms"] += r["ms"]
        s["rounds"] += r["rounds"]
        s["sent"] += r["bytes_sent"]
        s["ops"][r["op"]] = r
    return parties


def plaintext(name, i):
    """The workload's results computed in float64 by NumPy."""
    f = {k: np.asarray(v, np.float64) for k, v in i.items()}
    if name.startswith("matmul"):
        return [f["a"] @ f["b"]]
    if name == "relu1m":
        return [np.maximum(f["x"], 0)]
    if name == "logistic":
        return [1 / (1 + np.exp(-(f["x"] @ f["w"] + 0.1)))]
    if name == "softmax":
        e = np.exp(f["x"] - f["x"].max(axis=1, keepdims=True))
        return [e / e.sum(axis=1, keepdims=True)]
    if name == "mlp":
        h = np.maximum(f["x"] @ f["w1"], 0) @ f["w2"]
        return [h, h.max(axis=1)]
    if name == "bert":
        def ln(t, g, b):
            m = t.mean(-1, keepdims=True)
            v = ((t - m) ** 2).mean(-1, keepdims=True)
            return (t - m) / np.sqrt(v + 1e-5) * g + b

        def gelu(t):
            return 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3)))

        x = f["x"]
        q = (x @ f["wq"]).reshape(128, 12, 64).transpose(1, 0, 2)
        k = (x @ f["wk"]).reshape(128, 12, 64).transpose(1, 2, 0)
        v = (x @ f["wv"]).reshape(128, 12, 64).transpose(1, 0, 2)
        s = (q @ k) * 0.125
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        ctx = (p @ v).transpose(1, 0, 2).reshape(128, 768)
        h = ln(x + ctx @ f["wo"], f["g1"], f["be1"])
        ff = gelu(h @ f["w1"] + f["b1"]) @ f["w2"] + f["b2"]
        return [ln(h + ff, f["g2"], f["be2"])]
    return None


def accuracy(name, inputs, out):
    """Largest |revealed - plaintext| over the results, and the results' scale."""
    want = plaintext(name, inputs)
    if want is None:
        return None
    got = [np.load(os.path.join(out, "%d.npy" % i)) for i in range(len(want))]
    err = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(got, want))
    scale = max(float(np.max(np.abs(w))) for w in want)
    return err, scale


def gemm_reference(gemm_bench, n, repeats):
    """mpc_gemm_bench's 6 plaintext GEMMs and its library-level secret matmul."""
    if not gemm_bench or not os.path.exists(gemm_bench):
        return None
    p = subprocess.run([gemm_bench, str(n), str(repeats)], capture_output=True, text=True,
                       timeout=3600)
    if p.returncode != 0:
        return None
    out = {"text": p.stdout}
    for line in p.stdout.splitlines():
        if line.startswith("| 6 plaintext GEMMs"):
            out["six_ms"] = float(line.split("|")[2].split()[0])
        elif line.startswith("| secret matmul"):
            out["secret_ms"] = float(line.split("|")[2].split()[0])
        elif line.startswith("64-bit integer GEMM"):
            out["kernel"] = line
    return out


def human(b):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return "%.1f %s" % (b / k, unit)
    return "%d B" % b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", default=os.path.join(ROOT, "build", "bin", "mdl"))
    ap.add_argument("--gemm-bench", default=os.path.join(ROOT, "build", "bench", "mpc_gemm_bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--work", default="")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="mdl-mpc-bench.")
    os.makedirs(work, exist_ok=True)
    wl = workloads(work)
    names = [n for n in wl if not a.only or n in a.only.split(",")]
    results = {n: [] for n in names}
    gemm = []
    errors = {}
    for r in range(a.rounds):
        for n in names:
            label, prog, inputs, model = wl[n]
            out = os.path.join(work, n + ".out")
            cold, run_ms, wall = run_once(a.mdl, prog, inputs, work, n, out=out)
            if r == 0:
                errors[n] = accuracy(n, inputs, out)
            warm, _, _ = run_once(a.mdl, prog, inputs, work, n, repeat=REPEAT)
            results[n].append((summarize(steady(cold, warm, REPEAT)), run_ms, wall))
            print("round %d/%d: %s: first call %.1f ms" % (r + 1, a.rounds, n, run_ms or -1),
                  file=sys.stderr, flush=True)
        if "matmul1024" in names:
            g = gemm_reference(a.gemm_bench, 1024, 3)
            if g:
                gemm.append(g)
    lines = []
    lines.append("# mpc device benchmarks (`bench/mpc_bench.py`)\n")
    lines.append("%s, %d cores, %s; `mdl run` with the three parties as threads of one "
                 "process; median of %d rounds (each a fresh process).\n" %
                 (time.strftime("%Y-%m-%d"), os.cpu_count(), platform.machine(), a.rounds))
    lines.append("| workload | compute per call (slowest party) | rounds | bytes sent P0 / P1 / P2 | "
                 "ABY3 model per party (products) | products measured / model (P0) | "
                 "inputs + reveal per call | first call, whole (`run` phase) | "
                 "max abs error vs float64 (result scale) |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    medians = {}
    for n in names:
        label, prog, inputs, model = wl[n]
        comp = statistics.median(max(s["ms"] for s in p.values()) for p, _, _ in results[n])
        io = statistics.median(max(s["io_ms"] for s in p.values()) for p, _, _ in results[n])
        run = statistics.median(rm for _, rm, _ in results[n])
        last = results[n][-1][0]
        rounds = last[0]["rounds"]
        sent = [last[i]["sent"] for i in sorted(last)]
        medians[n] = comp
        # The model covers the products: compare their bytes alone.
        modeled = sum(v["bytes_sent"] for k, v in last[0]["ops"].items() if k in MODEL_OPS)
        ratio = "" if model is None else "%.2f" % (modeled / model)
        acc = errors.get(n)
        lines.append("| %s | %.1f ms | %d | %s | %s | %s | %.1f ms | %.1f ms | %s |" % (
            label, comp, rounds, " / ".join(human(b) for b in sent),
            "-" if model is None else human(model), ratio or "-", io, run,
            "-" if acc is None else "%.2g (%.2g)" % acc))
    lines.append("")
    lines.append("Operation rows of party 0 (last round): rounds and bytes sent per kind.\n")
    for n in names:
        ops = results[n][-1][0][0]["ops"]
        lines.append("- %s: %s" % (n, ", ".join(
            "%s x%d: %d rounds, %s" % (k, v["calls"], v["rounds"], human(v["bytes_sent"]))
            for k, v in sorted(ops.items()))))
    if gemm and "matmul1024" in medians:
        six = statistics.median(g["six_ms"] for g in gemm)
        lib = statistics.median(g["secret_ms"] for g in gemm)
        m = medians["matmul1024"]
        lines.append("")
        lines.append("## Secret 1024 x 1024 matmul against 6 plaintext 64-bit GEMMs\n")
        lines.append("%s\n" % gemm[-1].get("kernel", ""))
        lines.append("| what | time | / 6 GEMMs |")
        lines.append("|---|---|---|")
        lines.append("| 6 plaintext 64-bit integer GEMMs 1024^3, all threads (mpc_gemm_bench) | "
                     "%.1f ms | 1.00 |" % six)
        lines.append("| secret matmul through `mdl run` (slowest party's matmul) | %.1f ms | "
                     "%.2f |" % (m, m / six))
        lines.append("| secret matmul, protocol library alone (mpc_gemm_bench) | %.1f ms | "
                     "%.2f |" % (lib, lib / six))
        lines.append("\nTarget: within 1.5x of the 6 GEMMs.")
    if "bert" in medians:
        last = results["bert"][-1][0]
        most = max(last[i]["sent"] for i in last)
        rounds = last[0]["rounds"]
        lines.append("")
        lines.append("## BERT-base encoder layer beside PUMA\n")
        lines.append(
            "One layer here: %.1f s of computation for the slowest party, the three parties "
            "sharing %d cores of one machine, with in-memory channels (no latency, no bandwidth "
            "limit). PUMA (Dong et al., 2023) reports BERT-base, 12 layers, in 33.9 s, about "
            "%.1f s per layer, with 3 parties each on its own 32-vCPU machine over a 5 Gbps "
            "LAN: %dx the cores, and a real network. On that network this layer's messages "
            "(up to %s sent by one party) would take about %.1f s at 5 Gbps, and its %d rounds "
            "about %.2f s at 0.3 ms each, so the comparison is one of order of magnitude, not a "
            "ranking; the approximations differ too (PUMA's gelu and softmax are its own)."
            % (medians["bert"] / 1e3, os.cpu_count(), 33.9 / 12, 96 // os.cpu_count(),
               human(most), most * 8 / 5e9, rounds, rounds * 0.3e-3))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
