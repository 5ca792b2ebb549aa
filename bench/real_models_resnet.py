#!/usr/bin/python3
"""ResNet-50, batch 1, f32: the corpus model exported from Keras/JAX
(keras_jax_resnet50_predict_f32.hlo) through mdl, against torchvision's
resnet50 on the same weights and input, in the same run.

  bench/real_models_resnet.py [--mdl build/bin/mdl] [--work DIR] [--rounds 5]
                              [--repeat 20] [--corpus ../shared/corpus/hlo]

What mdl runs: `mdl import` of the HLO file, with the entry's 320 weight
arguments turned into `param NAME : T = load("resnet50.safetensors", NAME)`
(load-time constants, as a deployment holds them and as torchvision's model
holds its own) and its result cut to the predictions (the HLO's
predict_step also returns its state arrays unchanged, which XLA aliases to
its inputs; mdl would copy them, 94 MB per call). The weights are
torchvision's initialization with batch-norm statistics measured on random
images (so that activations keep their scale through the 53 layers),
written in Keras's layout; the peer is torchvision's resnet50 with Keras's
choices where they differ (stride 2 in the first 1x1 convolution of a
stage, eps 1.001e-5, a softmax after the classifier), which makes it the
same function: the script checks mdl's predictions against it.

Contenders, interleaved, each round in fresh processes: mdl (`mdl run
--repeat N`, the median per call, compilation excluded), PyTorch eager as a
user gets it, eager with 2 threads and OMP_WAIT_POLICY=passive, and
torch.jit.trace + freeze with 2 threads and OMP_WAIT_POLICY=passive; then
mdl and trace + freeze on one thread each (on a busy machine the kernels'
efficiency shows there, whatever holds the other core).
Prints a Markdown table: medians over rounds, the ratio of mdl to the
fastest PyTorch mode, GFLOP/s from the counted 7.71 GFLOP (multiply-adds of
the convolutions and the classifier, times two) and the limit at 234 GFLOP/s
(BENCHMARKING.md's 2-core FP32 peak), mdl's compile time (parse to
runnable, cold and with a warm --cache-dir) and the oneDNN implementation
of each convolution (MDL_JIT_TRACE=1).

bench/real_models.py can import `prepare`, `measure` and `report`.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np

import workloads as W

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"  # Debian's NumPy and PyTorch live here
HLO = "keras_jax_resnet50_predict_f32.hlo"
PEAK_GFLOPS = 234.0  # BENCHMARKING.md: FP32 FMA peak of the 2-core machines
PEERS = [
    # name, mode, threads, extra environment
    ("torch eager (default)", "eager", 0, {}),
    ("torch eager (best)", "eager", 2, {"OMP_WAIT_POLICY": "passive"}),
    ("torch jit trace+freeze (best)", "jit", 2, {"OMP_WAIT_POLICY": "passive"}),
]


# --- The model: Keras's layer names, torchvision's modules -------------------

def keras_layers(hlo_text):
    """{param name: (layer, role)} from the HLO's metadata: each entry
    parameter is a convolution kernel or bias, a batch-norm gamma, beta,
    moving mean or variance, or the classifier's kernel or bias."""
    shapes = {}
    m = re.search(r"^ENTRY [^(]*\((.*?)\) ->", hlo_text, re.M)
    for name, dims in re.findall(r"(\S+?): f32\[([0-9,]*)\]", m.group(1)):
        shapes[name] = [int(x) for x in dims.split(",") if x]
    by_layer = {}
    role = {}
    for line in hlo_text.splitlines():
        conv = re.search(r"convolution\(%[^,]+, %([^)]+)\).*op_name=\"[^\"]*/(\w+)/conv_general",
                         line)
        if conv:
            role[conv.group(1)] = (conv.group(2), "kernel")
            continue
        dot = re.search(r" dot\(%[^,]+, %([^)]+)\).*op_name=\"[^\"]*/(\w+)/dot_general", line)
        if dot:
            role[dot.group(1)] = (dot.group(2), "kernel")
            continue
        r = re.search(r"reshape\(%(state_\d+__\d+_\.1)\).*op_name=\"[^\"]*/(\w+)/"
                      r"(reshape|broadcast_in_dim)", line)
        if r:
            by_layer.setdefault(r.group(2), []).append(r.group(1))
    def index(p):
        a, b = re.match(r"state_(\d+)__(\d+)_", p).groups()
        return int(a), int(b)
    for layer, params in by_layer.items():
        params = sorted(set(params), key=index)
        if layer.endswith("_bn"):
            trainable = [p for p in params if index(p)[0] == 0]
            moving = [p for p in params if index(p)[0] == 1]
            for p, r in zip(trainable, ("gamma", "beta")):
                role[p] = (layer, r)
            for p, r in zip(moving, ("mean", "var")):
                role[p] = (layer, r)
        else:
            for p in params:
                role[p] = (layer, "bias")
    missing = [p for p in shapes if p.startswith("state") and p not in role]
    if missing:
        raise SystemExit("cannot place parameters %s" % missing[:5])
    return role, shapes


def torch_module(model, layer):
    """The torchvision module of a Keras layer name (conv2_block1_1_conv)."""
    if layer in ("conv1_conv", "conv1_bn"):
        return model.conv1 if layer.endswith("conv") else model.bn1
    if layer == "predictions":
        return model.fc
    m = re.match(r"conv(\d)_block(\d+)_(\d)_(conv|bn)", layer)
    stage, block, idx, kind = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
    b = getattr(model, "layer%d" % (stage - 1))[block - 1]
    if idx == 0:
        return b.downsample[0 if kind == "conv" else 1]
    return getattr(b, ("conv%d" if kind == "conv" else "bn%d") % idx)


def torch_resnet50():
    """torchvision's resnet50 with Keras's strides (the first 1x1 of a
    stage), batch-norm eps and a softmax after the classifier."""
    import torch
    import torchvision
    model = torchvision.models.resnet50()
    for stage in (model.layer2, model.layer3, model.layer4):
        stage[0].conv1.stride = (2, 2)
        stage[0].conv2.stride = (1, 1)
    for mod in model.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.eps = 1.001e-5

    class WithSoftmax(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return torch.softmax(self.net(x), dim=1)

    return model, WithSoftmax(model)


def prepare(work, mdl, corpus):
    """Writes resnet50.mdl, resnet50.safetensors, resnet50_x.npy (NHWC) and
    resnet50_torch.pt (the peer's state) into `work`."""
    import torch
    torch.manual_seed(0)
    hlo = os.path.join(corpus, HLO)
    text = open(hlo).read()
    role, shapes = keras_layers(text)
    model, _ = torch_resnet50()
    # Batch-norm statistics of random images, so activations keep their scale.
    model.train()
    for mod in model.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.momentum = None  # a cumulative average
            mod.reset_running_stats()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, 3, 224, 224))
    model.eval()
    with torch.no_grad():
        model.fc.weight.mul_(4.0)  # logits of a few units, not a flat softmax
    # Keras's weights: kernels HWIO; convolution biases zero (torchvision's
    # convolutions have none; the batch norm that follows absorbs one).
    tensors = {}
    for p, (layer, r) in role.items():
        mod = torch_module(model, layer)
        shape = shapes[p]
        if r == "kernel":
            w = mod.weight.detach().numpy()
            a = w.transpose(2, 3, 1, 0) if w.ndim == 4 else w.T
        elif r == "bias":
            a = (mod.bias.detach().numpy() if layer == "predictions"
                 else np.zeros(shape, np.float32))
        else:
            a = {"gamma": mod.weight, "beta": mod.bias, "mean": mod.running_mean,
                 "var": mod.running_var}[r].detach().numpy()
        if list(a.shape) != shape:
            raise SystemExit("%s (%s %s): shape %s, expected %s" % (p, layer, r, a.shape, shape))
        tensors[p] = a.astype(np.float32)
    imported = os.path.join(work, "resnet50_import.mdl")
    subprocess.run([mdl, "import", hlo, "-o", imported], check=True, capture_output=True)
    src = open(imported).read()
    m = re.search(r"^fn main\((.*?)\) -> \((.*?)\) \{", src, re.M)
    args = re.findall(r"(\w+): (f32\[[0-9, ]*\])", m.group(1))
    decl, inputs = [], []
    for name, ty in args:
        hlo_name = next((p for p in tensors if re.sub(r"\W", "_", p) == name), None)
        if hlo_name is None:
            inputs.append("%s: %s" % (name, ty))
            continue
        decl.append('param %s : %s = load("resnet50.safetensors", "%s")' % (name, ty, name))
        tensors[name] = tensors.pop(hlo_name)
    if len(inputs) != 1:
        raise SystemExit("expected one input besides the weights, found %s" % inputs)
    body = src[m.end():]
    end = body.index("\n}\n")
    fn = re.sub(r"^  return (\w+),.*$", r"  return \1", body[:end], flags=re.M)
    out = (src[:m.start()] + "\n".join(decl) +
           "\n\nfn main(%s) -> (f32[1, 1000]) {" % inputs[0] + fn + body[end:])
    open(os.path.join(work, "resnet50.mdl"), "w").write(out)
    W.save_safetensors(os.path.join(work, "resnet50.safetensors"), tensors)
    x = torch.randn(1, 3, 224, 224)
    np.save(os.path.join(work, "resnet50_x.npy"), x.permute(0, 2, 3, 1).contiguous().numpy())
    torch.save({"model": model.state_dict(), "x": x}, os.path.join(work, "resnet50_torch.pt"))
    return inputs[0].split(":")[0]


# --- One contender, in its own process ---------------------------------------

def peer(work, mode, threads, repeat, save=None):
    import torch
    if threads:
        torch.set_num_threads(threads)
    model, net = torch_resnet50()
    state = torch.load(os.path.join(work, "resnet50_torch.pt"))
    model.load_state_dict(state["model"])
    net.eval()
    x = state["x"]
    with torch.no_grad():
        if mode == "jit":
            net = torch.jit.freeze(torch.jit.trace(net, (x,)))
        out = net(x)
        if save:
            np.save(save, out.numpy())
        t_end = time.perf_counter() + 0.5
        while time.perf_counter() < t_end:
            net(x)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            net(x)
            times.append((time.perf_counter() - t0) * 1e6)
    print(json.dumps({"median_us": statistics.median(times), "min_us": min(times)}))


def run_mdl(mdl, work, arg, repeat, extra=(), env=None):
    cmd = [mdl, "run", os.path.join(work, "resnet50.mdl"), "-q", "--timings",
           "--input=%s=%s" % (arg, os.path.join(work, "resnet50_x.npy"))] + list(extra)
    if repeat:
        cmd += ["--repeat", str(repeat)]
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=e)
    if p.returncode != 0:
        raise RuntimeError("mdl failed: %s\n%s" % (" ".join(cmd), p.stderr[-3000:]))
    return p.stderr


median_us = W.repeat_median_us


def compile_ms(stderr):
    """Parse to runnable: every phase of --timings but the run."""
    phases = W.timing_phases(stderr)
    return W.to_runnable(phases), phases


def run_peer(work, mode, threads, extra, repeat, save=None):
    cmd = [PY, os.path.abspath(__file__), "--peer", mode, "--work", work, "--threads",
           str(threads), "--repeat", str(repeat)] + (["--save", save] if save else [])
    e = dict(os.environ)
    e.update(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=e)
    if p.returncode != 0:
        raise RuntimeError("peer failed: %s\n%s" % (" ".join(cmd), p.stderr[-3000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])["median_us"]


def conv_flops(hlo_text):
    """2 x multiply-adds of the convolutions and the classifier."""
    shapes = {}
    for name, dims in re.findall(r"%?([\w.]+): f32\[([0-9,]*)\]", hlo_text):
        shapes[name] = [int(x) for x in dims.split(",") if x]
    total = 0
    for out, w in re.findall(r"= f32\[([0-9,]*)\]\S* convolution\(%[^,]+, %([^)]+)\)", hlo_text):
        o = [int(x) for x in out.split(",")]
        k = shapes[w]
        total += 2 * o[0] * o[1] * o[2] * o[3] * k[0] * k[1] * k[2]
    for out, w in re.findall(r"= f32\[([0-9,]*)\]\S* dot\(%[^,]+, %([^)]+)\)", hlo_text):
        o = [int(x) for x in out.split(",")]
        total += 2 * o[0] * o[1] * shapes[w][0]
    return total


def measure(mdl, work, corpus, rounds, repeat, log=print):
    """Runs every contender `rounds` times, interleaved; returns the results."""
    arg = prepare(work, mdl, corpus)
    flops = conv_flops(open(os.path.join(corpus, HLO)).read())
    res = {"mdl": [], "flops": flops}
    for name, *_ in PEERS:
        res[name] = []
    # Correctness first: mdl's predictions against the peer's.
    ref = os.path.join(work, "torch_out.npy")
    run_peer(work, "eager", 0, {}, 1, save=ref)
    out = os.path.join(work, "mdl_out")
    trace = run_mdl(mdl, work, arg, 0, ["--out", out], env={"MDL_JIT_TRACE": "1"})
    got, want = np.load(os.path.join(out, "0.npy")), np.load(ref)
    res["max_abs_diff"] = float(np.abs(got - want).max())
    res["max_prob"] = float(want.max())
    res["same_top5"] = bool((np.argsort(-got[0])[:5] == np.argsort(-want[0])[:5]).all())
    res["kernels"] = sorted(set(re.findall(r"jit: convolution at [^:]+:\d+: (.*)", trace)))
    res["kernel_counts"] = {k: len(re.findall(re.escape(": " + k) + "\n", trace))
                            for k in res["kernels"]}
    log("mdl vs torch: max |diff| %.3g (largest probability %.3g), same top-5: %s" %
        (res["max_abs_diff"], res["max_prob"], res["same_top5"]))
    with tempfile.TemporaryDirectory() as cache:
        cold = [compile_ms(run_mdl(mdl, work, arg, 0, ["--cache-dir", cache]))[0]
                for _ in range(1)]
        warm = [compile_ms(run_mdl(mdl, work, arg, 0, ["--cache-dir", cache]))[0]
                for _ in range(3)]
    res["compile_cold_ms"] = cold[0]
    res["compile_warm_ms"] = statistics.median(warm)
    res["mdl 1 thread"], res["torch jit 1 thread"] = [], []
    for r in range(rounds):
        stderr = run_mdl(mdl, work, arg, repeat)
        res["mdl"].append(median_us(stderr))
        res.setdefault("compile_ms", []).append(compile_ms(stderr)[0])
        for name, mode, threads, extra in PEERS:
            res[name].append(run_peer(work, mode, threads, extra, repeat))
        # One thread each: the kernels' efficiency, whatever else holds a core.
        res["mdl 1 thread"].append(median_us(run_mdl(mdl, work, arg, repeat,
                                                     env={"OMP_NUM_THREADS": "1"})))
        res["torch jit 1 thread"].append(run_peer(work, "jit", 1, {}, repeat))
        log("round %d: mdl %.1f ms, %s; one thread: mdl %.1f ms, torch jit %.1f ms" % (
            r + 1, res["mdl"][-1] / 1e3, ", ".join(
                "%s %.1f ms" % (n, res[n][-1] / 1e3) for n, *_ in PEERS),
            res["mdl 1 thread"][-1] / 1e3, res["torch jit 1 thread"][-1] / 1e3))
    return res


def report(res):
    """Markdown lines for a measurement."""
    med = {k: statistics.median(res[k]) for k in ["mdl"] + [n for n, *_ in PEERS]}
    best = min(med[n] for n, *_ in PEERS)
    gflop = res["flops"] / 1e9
    limit_ms = gflop / PEAK_GFLOPS * 1e3
    lines = [
        "| workload | mdl | %s | ratio to fastest PyTorch | mdl GFLOP/s | limit |" %
        " | ".join(n for n, *_ in PEERS),
        "|---|---|%s---|---|---|" % ("---|" * len(PEERS)),
        "| ResNet-50 f32, batch 1 (corpus HLO, weights as params) | %.1f ms | %s | %.2f | %.0f |"
        " %.1f ms (%.2f GFLOP at %.0f GFLOP/s) |" % (
            med["mdl"] / 1e3, " | ".join("%.1f ms" % (med[n] / 1e3) for n, *_ in PEERS),
            med["mdl"] / best, gflop / (med["mdl"] / 1e6), limit_ms, gflop, PEAK_GFLOPS),
        "",
        "One thread each (OMP_NUM_THREADS=1; torch.set_num_threads(1), trace+freeze): mdl "
        "%.1f ms, PyTorch %.1f ms, ratio %.2f." % (
            statistics.median(res["mdl 1 thread"]) / 1e3,
            statistics.median(res["torch jit 1 thread"]) / 1e3,
            statistics.median(res["mdl 1 thread"]) / statistics.median(res["torch jit 1 thread"])),
        "",
        "Compile (parse to runnable): %.0f ms cold (median over rounds %.0f ms), %.0f ms with a "
        "warm --cache-dir. mdl's predictions against PyTorch's: max |difference| %.2g "
        "(largest probability %.2g), same top 5: %s." % (
            res["compile_cold_ms"], statistics.median(res["compile_ms"]),
            res["compile_warm_ms"], res["max_abs_diff"], res["max_prob"],
            "yes" if res["same_top5"] else "no"),
        "",
        "oneDNN implementations (MDL_JIT_TRACE=1): " + ", ".join(
            "%s x%d" % (k, n) for k, n in sorted(res["kernel_counts"].items())),
    ]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", default=os.path.join(ROOT, "build", "bin", "mdl"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus", "hlo"))
    ap.add_argument("--work")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer:
        peer(a.work, a.peer, a.threads, a.repeat, a.save)
        return
    work = a.work or tempfile.mkdtemp(prefix="resnet50-")
    os.makedirs(work, exist_ok=True)
    print("load average before: %.2f" % os.getloadavg()[0])
    res = measure(os.path.abspath(a.mdl), work, a.corpus, a.rounds, a.repeat)
    print("load average after: %.2f" % os.getloadavg()[0])
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)
    print("\n".join(report(res)))


if __name__ == "__main__":
    main()
