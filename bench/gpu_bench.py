#!/usr/bin/python3
"""GPU benchmarks: mdl programs whose work is placed on a hip device.

  bench/gpu_bench.py [--mdl build/bin/mdl] [--gpu-runtime auto|hip|cuda|opencl]
                     [--size full|small] [--rounds 3] [--bandwidth GB/S] [--out FILE.md]
                     [--workloads mlp,transformer,gemm,chain,reduce]
                     [--baseline-hip-library OLD/libmdl_hip.so]

Workloads (bench/workloads.py's programs, their `main` placed `on` a hip
device; weights are replicated to the device once, at load):
  mlp          MLP 784-1024-1024-10, ReLU, batch 64
  transformer  one encoder layer (d 256, 4 heads, FFN 1024, seq 128, batch 8)
  gemm         one N x N x N f32 product (N = 4096; --size small: 256), its
               operands on the device: GFLOP/s of mdl's own tiled kernel
               against the vendor BLAS that mdl uses when present (rocBLAS,
               hipBLAS, cuBLAS; the target is 90% of it)
  chain        100 element-wise operations on 16M floats (--size small: 1M):
               bytes read and written once (a fused kernel) per kernel time,
               against the device's memory bandwidth (target 80%): --bandwidth
               GB/s, else measured as a device-to-device copy through PyTorch
               where it has the GPU, else NumPy's host copy (PoCL's memory is
               the host's)
  dense        relu(x @ w + b) with x, w and b the program's inputs (one
               segment), x 4096 x 4096 (--size small: 512 x 512): a product
               with a bias and an activation as its epilogue (one kernel
               with mdl's own GEMM; after a vendor BLAS, one more)
  reduce       sum(x * x) + max(x) over all 16M floats of x (--size small:
               4M): the reductions of a few long rows, over many work-groups
               and a second pass

--baseline-hip-library names the libmdl_hip.so of another build (the GPU
code generator and runtime before a change, the same mdl): every
measurement is made with it too, interleaved in the same rounds, and the
report gives both and their ratio (this build / the baseline).

Each workload runs as `mdl run FILE --gpu-runtime=R --fallback=error --repeat
N`, in fresh processes per round (rounds interleave the workloads); the
figures are medians over rounds. Per call: the wall time (`--repeat`: inputs
copied in, kernels, results copied out; measured without --timings, whose
events cost time), and from --timings --diagnostics=json the kernel time
(the runtime's events), the launches and the bytes copied in and out (the
difference between a process of N + 1 calls and one of one call, so that
compilation and load-time weight uploads do not count).
PyTorch on the same GPU is the peer for the MLP and the transformer where
PyTorch has the GPU (torch.cuda, also ROCm builds). With --gpu-runtime
opencl (PoCL on the CPU) sizes default to small: the figures say that the
code runs and what it launches, not how fast a GPU is.
"""
import argparse
import datetime
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

PY = "/usr/bin/python3"
SIZES = {"full": {"gemm": 4096, "chain": 1 << 24, "reduce": 1 << 24, "dense": 4096},
         "small": {"gemm": 256, "chain": 1 << 20, "reduce": 1 << 22, "dense": 512}}
NO_VENDOR_BLAS = {"MDL_CUBLAS_LIBRARY": "/nonexistent/libcublas.so",
                  "MDL_ROCBLAS_LIBRARY": "/nonexistent/librocblas.so",
                  "MDL_HIPBLAS_LIBRARY": "/nonexistent/libhipblas.so"}


def on_gpu(program):
    """`program` with main's body placed on `device gpu = hip(0)`: every
    statement inside `on gpu { }`, the returned expression bound there."""
    lines = program.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("fn main("))
    end = max(i for i, l in enumerate(lines) if l == "}")
    body = lines[start + 1:end]
    ret = body[-1].strip()
    assert ret.startswith("return "), ret
    inner = ["  " + l for l in body[:-1]] + ["    let result = " + ret[len("return "):]]
    head = 0
    while head < len(lines) and lines[head].startswith("#"):
        head += 1
    out = lines[:head] + ["device gpu = hip(0)"] + lines[head:start + 1] + ["  on gpu {"] + \
        inner + ["  }", "  return result", "}"]
    return "\n".join(out) + "\n"


def gemm_program(n):
    return ("# One %dx%d f32 product on a GPU (bench/gpu_bench.py).\n"
            "device gpu = hip(0)\n"
            "param a : f32[%d, %d] = random_normal(seed = 1)\n"
            "param b : f32[%d, %d] = random_normal(seed = 2)\n"
            "fn main() -> f32[%d, %d] {\n"
            "  on gpu {\n    let c = a @ b\n  }\n  return c\n}\n" % (n, n, n, n, n, n, n, n))


def write_work(work, size):
    os.makedirs(work, exist_ok=True)
    def text(name, s):
        with open(os.path.join(work, name), "w") as f:
            f.write(s)
    text("mlp.mdl", on_gpu(W.MLP_PROGRAM))
    W.save_safetensors(os.path.join(work, "mlp.safetensors"), W.mlp_weights())
    np.save(os.path.join(work, "mlp_x64.npy"),
            np.random.default_rng(6).standard_normal((64, 784)).astype(np.float32))
    try:
        _, tw = W.torch_transformer()
    except ImportError:  # the layer's weights are PyTorch's; without it, random ones
        rng = np.random.default_rng(0)
        shapes = {"wqkv": (256, 768), "bqkv": (768,), "wo": (256, 256), "bo": (256,),
                  "w1": (256, 1024), "b1": (1024,), "w2": (1024, 256), "b2": (256,),
                  "g1": (256,), "be1": (256,), "g2": (256,), "be2": (256,)}
        tw = {k: (rng.standard_normal(s) * 0.05).astype(np.float32) for k, s in shapes.items()}
    W.save_safetensors(os.path.join(work, "transformer.safetensors"), tw)
    text("transformer.mdl", on_gpu(W.TRANSFORMER_PROGRAM))
    np.save(os.path.join(work, "tf_x.npy"), W.transformer_input())
    n = SIZES[size]["chain"]
    text("chain.mdl", on_gpu(W.chain_program(n)))
    np.save(os.path.join(work, "chain_x.npy"), W.chain_input(n))
    text("gemm.mdl", gemm_program(SIZES[size]["gemm"]))
    n = SIZES[size]["dense"]
    text("dense.mdl", on_gpu("# A layer with its weights as inputs (bench/gpu_bench.py).\n"
                             "fn main(x: f32[%d, %d], w: f32[%d, %d], b: f32[%d]) -> f32[%d, %d] {\n"
                             "  return relu(x @ w + b)\n}\n" % (n, n, n, n, n, n, n)))
    rng = np.random.default_rng(7)
    for name, shape in (("x", (n, n)), ("w", (n, n)), ("b", (n,))):
        np.save(os.path.join(work, "dense_%s.npy" % name),
                (rng.standard_normal(shape) * 0.05).astype(np.float32))
    n = SIZES[size]["reduce"]
    text("reduce.mdl", on_gpu("# Reductions over every element (bench/gpu_bench.py).\n"
                              "fn main(x: f32[%d]) -> f32 {\n"
                              "  return sum(x * x) + max(x)\n}\n" % n))
    np.save(os.path.join(work, "reduce_x.npy"), W.chain_input(n))


WORKLOADS = {
    # name: (program, inputs, calls timed)
    "mlp": ("mlp.mdl", ["x=mlp_x64.npy"], 50),
    "transformer": ("transformer.mdl", ["x=tf_x.npy"], 10),
    "gemm": ("gemm.mdl", [], 10),
    "chain": ("chain.mdl", ["x=chain_x.npy"], 20),
    "dense": ("dense.mdl", ["x=dense_x.npy", "w=dense_w.npy", "b=dense_b.npy"], 10),
    "reduce": ("reduce.mdl", ["x=reduce_x.npy"], 20),
}


def run_mdl(mdl, work, name, runtime, repeat, env=None, timings=True):
    """One process: (wall us per call, the GPU summary of --timings)."""
    program, inputs, _ = WORKLOADS[name]
    cmd = [mdl, "run", os.path.join(work, program), "-q", "--gpu-runtime=" + runtime,
           "--fallback=error", "--diagnostics=json", "--repeat", str(repeat)]
    cmd += ["--timings"] if timings else []
    cmd += ["--input=%s" % i.replace("=", "=" + work + "/", 1) for i in inputs]
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=3600)
    median = W.repeat_median_us(p.stderr)
    gpus = [json.loads(l) for l in p.stderr.splitlines()
            if l.startswith("{") and '"launches"' in l and '"kernels"' in l]
    if p.returncode != 0 or (repeat and median is None) or (timings and not gpus):
        raise RuntimeError("mdl failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd),
                                                             p.stderr[-3000:]))
    return median, (gpus[0] if gpus else None)


def measure(mdl, work, name, runtime, env=None):
    """Per-call figures of one round: the wall time of a process without
    --timings (its events cost time), and the differences between a process
    of N + 1 calls and one of one call with --timings."""
    calls = WORKLOADS[name][2]
    wall, _ = run_mdl(mdl, work, name, runtime, calls, env, timings=False)
    _, one = run_mdl(mdl, work, name, runtime, 0, env)
    _, many = run_mdl(mdl, work, name, runtime, calls, env)
    per = lambda k: (many[k] - one[k]) / calls
    return {"wall_us": wall, "kernel_us": per("kernel_ms") * 1e3,
            "launches": per("launches"), "bytes_in": per("bytes_in"),
            "bytes_out": per("bytes_out"), "kernels": many["kernels"], "device": many["device"],
            "api": many["api"]}


# --- peers ----------------------------------------------------------------------

def peer_main(workload, work, repeat):
    """PyTorch on the GPU (a subprocess of this script): median us per call,
    the input copied in and the result out, as mdl's call does."""
    import torch
    if not torch.cuda.is_available():
        print(json.dumps({"error": "PyTorch has no GPU here"}))
        return
    dev = torch.device("cuda")
    if workload == "copy":
        # The device's memory bandwidth, as a device-to-device copy.
        n = int(repeat)
        src = torch.empty(n, dtype=torch.float32, device=dev).normal_()
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        print(json.dumps({"gbps": 2 * 4 * n * 20 / (start.elapsed_time(end) * 1e-3) / 1e9}))
        return
    if workload == "mlp":
        w = W.load_safetensors(os.path.join(work, "mlp.safetensors"))
        model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 10)).eval()
        with torch.no_grad():
            for i, layer in zip((1, 2, 3), (0, 2, 4)):
                model[layer].weight.copy_(torch.from_numpy(w["w%d" % i].T.copy()))
                model[layer].bias.copy_(torch.from_numpy(w["b%d" % i].copy()))
        x = torch.from_numpy(np.load(os.path.join(work, "mlp_x64.npy")))
    else:
        model, _ = W.torch_transformer()
        x = torch.from_numpy(np.load(os.path.join(work, "tf_x.npy")))
    model = model.to(dev)
    times = []
    with torch.no_grad():
        for i in range(int(repeat) + 5):
            t = time.perf_counter()
            model(x.to(dev)).cpu()
            if i >= 5:
                times.append((time.perf_counter() - t) * 1e6)
    print(json.dumps({"median_us": statistics.median(times)}))


def median_of(rows):
    """The medians of the numbers of each round's figures; texts from the first."""
    return {k: statistics.median(r[k] for r in rows) if isinstance(v, (int, float)) else v
            for k, v in rows[0].items()}


def run_peer(work, workload, arg):
    p = subprocess.run([PY, os.path.abspath(__file__), "--peer", workload, "--work", work,
                        "--peer-arg", str(arg)], capture_output=True, text=True, timeout=1800)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}


def host_copy_gbps(n):
    src = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    dst = np.empty_like(src)
    best = None
    for _ in range(10):
        t = time.perf_counter()
        np.copyto(dst, src)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return 2 * 4 * n / best / 1e9


# --- the report --------------------------------------------------------------------

def fmt(v, unit=""):
    if v is None:
        return "n/a"
    if unit == "us":
        return "%.0f us" % v if v >= 100 else "%.1f us" % v
    if unit == "B":
        for u, s in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if v >= u:
                return "%.1f %s" % (v / u, s)
        return "%.0f B" % v
    return "%.2f" % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", default=os.path.join(HERE, "..", "build", "bin", "mdl"))
    ap.add_argument("--gpu-runtime", default="auto", choices=["auto", "hip", "cuda", "opencl"])
    ap.add_argument("--size", choices=["full", "small"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bandwidth", type=float, help="the device's memory bandwidth, GB/s")
    ap.add_argument("--workloads", default="mlp,transformer,gemm,chain,dense,reduce")
    ap.add_argument("--baseline-hip-library",
                    help="another build's libmdl_hip.so, measured in the same rounds")
    ap.add_argument("--work")
    ap.add_argument("--out", help="also write the report here (markdown)")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--peer-arg", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer:
        peer_main(a.peer, a.work, a.peer_arg)
        return 0
    mdl = os.path.abspath(a.mdl)
    size = a.size or ("small" if a.gpu_runtime == "opencl" else "full")
    work = a.work or tempfile.mkdtemp(prefix="mdl-gpu-bench-")
    names = [w for w in a.workloads.split(",") if w]
    load_before = os.getloadavg()
    write_work(work, size)
    pocl = a.gpu_runtime == "opencl"

    rounds = {n: [] for n in names}
    base_rounds = {n: [] for n in names}
    base_env = {"MDL_HIP_LIBRARY": os.path.abspath(a.baseline_hip_library)} \
        if a.baseline_hip_library else None
    own_gemm = []
    for r in range(a.rounds):
        print("round %d of %d" % (r + 1, a.rounds), file=sys.stderr)
        for n in names:
            rounds[n].append(measure(mdl, work, n, a.gpu_runtime))
            if base_env:
                base_rounds[n].append(measure(mdl, work, n, a.gpu_runtime, base_env))
            if n == "gemm" and not pocl:
                own_gemm.append(measure(mdl, work, n, a.gpu_runtime, NO_VENDOR_BLAS))
    med = {n: median_of(v) for n, v in rounds.items()}
    device = next(iter(med.values()))["device"] if med else "?"
    api = next(iter(med.values()))["api"] if med else "?"

    peers = {}
    for n in ("mlp", "transformer"):
        if n in names and not pocl:
            peers[n] = run_peer(work, n, WORKLOADS[n][2])
    bandwidth, bandwidth_src = a.bandwidth, "given (--bandwidth)"
    if bandwidth is None and "chain" in names:
        if pocl:
            bandwidth, bandwidth_src = host_copy_gbps(SIZES[size]["chain"]), \
                "NumPy's host copy (PoCL's device memory is host memory)"
        else:
            got = run_peer(work, "copy", SIZES[size]["chain"])
            if "gbps" in got:
                bandwidth, bandwidth_src = got["gbps"], "a device-to-device copy in PyTorch"
    load_after = os.getloadavg()

    L = ["# GPU benchmarks", ""]
    L.append("Generated by `bench/gpu_bench.py %s` on %s; device: %s (%s); sizes: %s; "
             "load average %.2f before, %.2f after; medians of %d rounds."
             % (" ".join(sys.argv[1:]), datetime.date.today().isoformat(), device, api, size,
                load_before[0], load_after[0], a.rounds))
    L.append("")
    L.append("| workload | wall per call | kernel time per call | launches per call | kernels "
             "| bytes in per call | bytes out per call | peer (PyTorch on the GPU) | ratio |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    labels = {"mlp": "MLP 784-1024-1024-10, batch 64",
              "transformer": "transformer encoder layer (d 256, seq 128, batch 8)",
              "gemm": "GEMM %d^3 f32" % SIZES[size]["gemm"],
              "chain": "100 element-wise ops, %d floats" % SIZES[size]["chain"],
              "dense": "relu(x @ w + b), %d^2 inputs" % SIZES[size]["dense"],
              "reduce": "sum(x * x) + max(x) over %d floats" % SIZES[size]["reduce"]}
    for n in names:
        m = med[n]
        peer = peers.get(n, {})
        pt = peer.get("median_us")
        L.append("| %s | %s | %s | %.1f | %d | %s | %s | %s | %s |" % (
            labels[n], fmt(m["wall_us"], "us"), fmt(m["kernel_us"], "us"), m["launches"],
            m["kernels"], fmt(m["bytes_in"], "B"), fmt(m["bytes_out"], "B"),
            fmt(pt, "us") if pt else "n/a" + (" (%s)" % peer["error"] if "error" in peer else ""),
            "%.2f" % (m["wall_us"] / pt) if pt else "n/a"))
    L.append("")
    if base_env:
        base = {n: median_of(v) for n, v in base_rounds.items()}
        L.append("Against the baseline `%s` (same rounds, interleaved):" % a.baseline_hip_library)
        L.append("")
        L.append("| workload | wall per call | baseline | ratio | kernel time per call | baseline "
                 "| ratio | launches per call (baseline) |")
        L.append("|---|---|---|---|---|---|---|---|")
        for n in names:
            m, b = med[n], base[n]
            L.append("| %s | %s | %s | %.2f | %s | %s | %.2f | %.1f (%.1f) |" % (
                labels[n], fmt(m["wall_us"], "us"), fmt(b["wall_us"], "us"),
                m["wall_us"] / b["wall_us"], fmt(m["kernel_us"], "us"), fmt(b["kernel_us"], "us"),
                m["kernel_us"] / b["kernel_us"], m["launches"], b["launches"]))
        L.append("")
    if "gemm" in names:
        g = SIZES[size]["gemm"]
        flops = 2.0 * g ** 3
        mine = statistics.median(x["kernel_us"] for x in own_gemm) if own_gemm else med["gemm"]["kernel_us"]
        vendor = med["gemm"]["kernel_us"] if own_gemm else None
        L.append("GEMM %d^3: mdl's own kernel %.3g GFLOP/s%s." % (
            g, flops / (mine * 1e-6) / 1e9,
            "; the vendor BLAS through mdl %.3g GFLOP/s; ratio %.2f (target 0.90)" % (
                flops / (vendor * 1e-6) / 1e9, vendor / mine) if vendor else
            " (no vendor BLAS on %s)" % api))
    if "chain" in names:
        n = SIZES[size]["chain"]
        gbps = 2 * 4 * n / (med["chain"]["kernel_us"] * 1e-6) / 1e9
        L.append("Chain of 100 element-wise ops on %d floats: %.3g GB/s (input read and output "
                 "written once, per kernel time)%s." % (
                     n, gbps, "; the device's bandwidth %.3g GB/s (%s); ratio %.3f (target 0.80)"
                     % (bandwidth, bandwidth_src, gbps / bandwidth) if bandwidth else ""))
    report = "\n".join(L) + "\n"
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
