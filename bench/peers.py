#!/usr/bin/python3
"""Times one workload in one peer, in its own process (bench/run_all.py
starts it with the environment of the setting being measured).

  peers.py --work DIR --workload mlp64|mlp1|transformer|chain1000|chain1000000|rnn
           --mode torch-eager|torch-jit|numpy [--threads N] [--repeat N]
           [--save OUT.npy]

Prints one JSON line: {"median_us": ..., "min_us": ...}. --threads sets
torch.set_num_threads (omitted: PyTorch's default, as a user gets it).
The computation is the mdl program's, on the same weights and inputs
(bench/workloads.py).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads as W  # noqa: E402


def build(workload, mode, work):
    """Returns (fn, args): fn(*args) runs the workload once."""
    if mode == "numpy":
        return build_numpy(workload, work)
    import torch
    if workload.startswith("mlp"):
        w = W.load_safetensors(os.path.join(work, "mlp.safetensors"))
        model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 10)).eval()
        with torch.no_grad():
            for i, layer in zip((1, 2, 3), (0, 2, 4)):
                model[layer].weight.copy_(torch.from_numpy(w["w%d" % i].T.copy()))
                model[layer].bias.copy_(torch.from_numpy(w["b%d" % i].copy()))
        x = torch.from_numpy(np.load(os.path.join(work, "mlp_x%s.npy" % workload[3:])))
    elif workload == "transformer":
        model, _ = W.torch_transformer()
        x = torch.from_numpy(np.load(os.path.join(work, "tf_x.npy")))
    elif workload.startswith("chain"):
        class Chain(torch.nn.Module):
            def forward(self, x):
                return W.chain_apply(torch, x)
        model = Chain().eval()
        x = torch.from_numpy(np.load(os.path.join(work, "chain_x%s.npy" % workload[5:])))
    elif workload == "rnn":
        w = W.load_safetensors(os.path.join(work, "rnn.safetensors"))
        class Rnn(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.from_numpy(w["w"].copy()), requires_grad=False)
                self.b = torch.nn.Parameter(torch.from_numpy(w["b"].copy()), requires_grad=False)
            def forward(self, h):
                for _ in range(50):
                    h = torch.tanh(h @ self.w + self.b)
                return h
        model = Rnn().eval()
        x = torch.from_numpy(np.load(os.path.join(work, "rnn_h0.npy")))
    else:
        raise SystemExit("unknown workload " + workload)
    if mode == "torch-jit":
        with torch.no_grad():
            model = torch.jit.freeze(torch.jit.trace(model, (x,)))
    def run(x=x):
        with torch.no_grad():
            return model(x)
    return run, ()


def build_numpy(workload, work):
    if workload.startswith("mlp"):
        w = W.load_safetensors(os.path.join(work, "mlp.safetensors"))
        x = np.load(os.path.join(work, "mlp_x%s.npy" % workload[3:]))
        def run():
            h = np.maximum(x @ w["w1"] + w["b1"], 0)
            h = np.maximum(h @ w["w2"] + w["b2"], 0)
            return h @ w["w3"] + w["b3"]
        return run, ()
    if workload.startswith("chain"):
        x = np.load(os.path.join(work, "chain_x%s.npy" % workload[5:]))
        return (lambda: W.chain_apply(np, x)), ()
    if workload == "rnn":
        w = W.load_safetensors(os.path.join(work, "rnn.safetensors"))
        h0 = np.load(os.path.join(work, "rnn_h0.npy"))
        def run():
            h = h0
            for _ in range(50):
                h = np.tanh(h @ w["w"] + w["b"])
            return h
        return run, ()
    if workload == "transformer":
        w = W.load_safetensors(os.path.join(work, "transformer.safetensors"))
        x = np.load(os.path.join(work, "tf_x.npy"))
        def ln(t, g, b):
            mu = t.mean(-1, keepdims=True)
            var = ((t - mu) ** 2).mean(-1, keepdims=True)
            return (t - mu) / np.sqrt(var + 1e-5) * g + b
        def run():
            qkv = x @ w["wqkv"] + w["bqkv"]
            q = qkv[:, :, :256].reshape(8, 128, 4, 64).transpose(0, 2, 1, 3)
            k = qkv[:, :, 256:512].reshape(8, 128, 4, 64).transpose(0, 2, 3, 1)
            v = qkv[:, :, 512:].reshape(8, 128, 4, 64).transpose(0, 2, 1, 3)
            s = q @ k * np.float32(0.125)
            s = np.exp(s - s.max(-1, keepdims=True))
            p = s / s.sum(-1, keepdims=True)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(8, 128, 256)
            a = ln(x + (ctx @ w["wo"] + w["bo"]), w["g1"], w["be1"])
            f = np.maximum(a @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"]
            return ln(a + f, w["g2"], w["be2"])
        return run, ()
    raise SystemExit("unknown workload " + workload)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--save")
    a = ap.parse_args()
    if a.mode != "numpy":
        import torch
        if a.threads:
            torch.set_num_threads(a.threads)
    fn, args = build(a.workload, a.mode, a.work)
    out = fn(*args)
    if a.save:
        np.save(a.save, np.asarray(out))
    # Warm up (the first tens of milliseconds of a process can be slow).
    t_end = time.perf_counter() + 0.3
    while time.perf_counter() < t_end:
        fn(*args)
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e6)
    print(json.dumps({"median_us": statistics.median(times), "min_us": min(times)}))


if __name__ == "__main__":
    main()
