"""Helpers shared by the real-model benchmarks (bench/real_models_vit.py,
bench/real_models_attention.py; bench/real_models.py imports them): bf16
arrays in the files mdl reads, running `mdl run --repeat` and a PyTorch
peer in fresh processes, the machine's bf16 matrix rate (bench/bf16_rate).
Runs under /usr/bin/python3 (Debian's NumPy and PyTorch).
"""
import functools
import json
import os
import statistics
import subprocess
import time

import numpy as np

import workloads as W

PY = "/usr/bin/python3"

# PyTorch as a user gets it, and in its best setting (BENCHMARKING.md).
PEERS = [
    # name, mode, threads, environment
    ("torch eager (default)", "torch-eager", 0, {}),
    ("torch eager (best)", "torch-eager", 2, {"OMP_WAIT_POLICY": "passive"}),
    ("torch jit trace+freeze (best)", "torch-jit", 2, {"OMP_WAIT_POLICY": "passive"}),
]


def to_bf16_bits(a):
    """float32 -> uint16 bf16 bits, rounded to nearest even (as torch)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(a):
    """float32 values rounded to bf16 (still float32)."""
    return from_bf16_bits(to_bf16_bits(a)).reshape(np.shape(a))


def save_bf16_npy(path, array):
    """bf16 as mdl reads it from .npy: two-byte void ('<V2')."""
    np.save(path, to_bf16_bits(array).reshape(np.shape(array)).view(np.dtype("V2")))


def save_bf16_safetensors(path, tensors):
    """{name: float32 array} -> a safetensors file of BF16 tensors."""
    W.write_safetensors(path, {name: ("BF16", np.shape(a), to_bf16_bits(a).tobytes())
                               for name, a in tensors.items()})


def load_npy(path):
    """np.load, with bf16 ('<V2') widened to float32."""
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        return from_bf16_bits(a.reshape(-1).view(np.uint16)).reshape(a.shape)
    return a


def env_with(extra):
    e = dict(os.environ)
    e.update(extra)
    return e


def run_mdl(mdl, program, inputs, repeat, extra_env=None):
    """(median us per call, parse-to-runnable ms) of `mdl run --repeat`."""
    cmd = [mdl, "run", program, "-q", "--repeat", str(repeat), "--timings"]
    cmd += ["--input=" + i for i in inputs]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env_with(extra_env or {}),
                       timeout=1800)
    median, phases = W.repeat_median_us(p.stderr), W.timing_phases(p.stderr)
    if p.returncode != 0 or median is None or phases is None:
        raise RuntimeError("mdl failed: %s\n%s" % (" ".join(cmd), p.stderr[-3000:]))
    return median, W.to_runnable(phases)


def run_peer(script, args, threads, extra, repeat, save=None):
    """A peer (`script --peer ...`) in a fresh process: median us, or None."""
    cmd = [PY, script] + args + ["--repeat", str(repeat)]
    if threads:
        cmd += ["--threads", str(threads)]
    if save:
        cmd += ["--save", save]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env_with(extra), timeout=1800)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])["median_us"]


def time_calls(fn, repeat, warm_s):
    """Median and minimum microseconds of `repeat` calls after `warm_s` of
    warm-up (the first tens of milliseconds of a process can be slow)."""
    t_end = time.perf_counter() + warm_s
    while time.perf_counter() < t_end:
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return {"median_us": statistics.median(times), "min_us": min(times)}


@functools.lru_cache(maxsize=None)
def bf16_rate(tool):
    """oneDNN's bf16 matrix rate on this machine (bench/bf16_rate), or None;
    measured once per process."""
    if not tool or not os.path.exists(tool):
        return None
    p = subprocess.run([tool], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def default_tool(mdl, name):
    """build/bench/NAME beside build/bin/mdl."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(mdl))), "bench", name)


def compare_with_torch(tag, mdl, program, inputs, run_torch, work, rounds, repeat, peer_repeat,
                       flops, workload, rate_tool, log):
    """One bf16 workload against the PyTorch peers (PEERS), as the
    attention block and the ViT report it: mdl's output against PyTorch
    eager's, then `rounds` interleaved rounds of `mdl run --repeat` and the
    peers (`run_torch(mode, threads, env, repeat, save=None)` runs one in a
    fresh process), medians, the ratio to the fastest peer, and the limit at
    the machine's bf16 matrix rate."""
    mdl = os.path.abspath(mdl)
    load_before = os.getloadavg()
    out = os.path.join(work, tag + "_out")
    subprocess.run([mdl, "run", program, "-q", "--out", out] + ["--input=" + i for i in inputs],
                   check=True)
    saved = os.path.join(work, tag + "_torch.npy")
    run_torch("torch-eager", 0, {}, 1, save=saved)
    got = load_npy(os.path.join(out, "0.npy")).astype(np.float64)
    want = np.load(saved).astype(np.float64)

    times = {"mdl": []}
    compile_ms = []
    for r in range(rounds):
        print("%s: round %d of %d" % (tag, r + 1, rounds), file=log)
        t, c = run_mdl(mdl, program, inputs, repeat)
        times["mdl"].append(t)
        compile_ms.append(c)
        for name, mode, threads, extra in PEERS:
            t = run_torch(mode, threads, extra, peer_repeat)
            if t is not None:
                times.setdefault(name, []).append(t)
    rate = bf16_rate(rate_tool or default_tool(mdl, "bf16_rate"))
    med = {k: statistics.median(v) for k, v in times.items()}
    best = min(v for k, v in med.items() if k != "mdl")
    res = {"workload": workload, "flops": flops, "times_us": med, "ratio": med["mdl"] / best,
           "compile_ms": statistics.median(compile_ms),
           "max_abs_diff": float(np.abs(got - want).max()),
           "max_abs_ref": float(np.abs(want).max()),
           "load": [load_before[0], os.getloadavg()[0]], "bf16_rate": rate}
    if rate:
        res["limit_us"] = flops / (rate["gflops"] * 1e9) * 1e6
    return res


def report_comparison(res, rounds, unit):
    """Prints what compare_with_torch measured, times in `unit` ("us" or
    "ms")."""
    scale, digits = (1.0, 1) if unit == "us" else (1e3, 2)
    flops = res["flops"]
    print("%s: %.3g GFLOP, median of %d interleaved rounds; load average %.2f before, %.2f after"
          % (res["workload"], flops / 1e9, rounds, res["load"][0], res["load"][1]))
    for k, v in res["times_us"].items():
        print("  %-32s %9.*f %s  %7.1f GFLOP/s" % (k, digits, v / scale, unit, flops / v / 1e3))
    print("  ratio mdl / fastest PyTorch: %.2f" % res["ratio"])
    print("  mdl compile (parse to runnable): %.0f ms" % res["compile_ms"])
    rate = res.get("bf16_rate")
    if rate:
        print("  limit at oneDNN's bf16 rate (%.0f GFLOP/s on %d threads, %s): %.*f %s"
              % (rate["gflops"], rate["threads"], rate["impl"], digits,
                 res["limit_us"] / scale, unit))
    print("  results: max |mdl - PyTorch| %.3g (largest |PyTorch| %.3g)"
          % (res["max_abs_diff"], res["max_abs_ref"]))


def time_peer_model(model, args, mode, repeat, save, warm_s):
    """In a peer process (`--peer MODE`): `model` on the tuple `args` in
    PyTorch's `mode` (torch-eager, or torch-jit: traced and frozen), its
    output saved to `save` when asked, then its times printed as JSON (what
    run_peer reads)."""
    import torch
    with torch.no_grad():
        if mode == "torch-jit":
            model = torch.jit.freeze(torch.jit.trace(model, args))
        out = model(*args)
        if save:
            np.save(save, out.float().numpy())
        print(json.dumps(time_calls(lambda: model(*args), repeat, warm_s)))


def add_common_arguments(ap, mdl_default, rounds, repeat):
    """The options every real-model script takes, the peers' hidden ones
    included."""
    import argparse
    ap.add_argument("--mdl", default=mdl_default)
    ap.add_argument("--bf16-rate", default=None, help="bench/bf16_rate (default: beside mdl)")
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)


def write_json(path, res):
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
