"""The benchmark workloads, shared by bench/run_all.py (which writes the mdl
programs, weights and inputs) and bench/peers.py (which runs the same
computation in PyTorch and NumPy on the same weights and inputs).

Everything is generated from fixed seeds into a work directory:
  mlp.mdl, mlp.safetensors, mlp_x64.npy, mlp_x1.npy      MLP 784-1024-1024-10, ReLU
  transformer.mdl, transformer.safetensors, tf_x.npy      one encoder layer
  chain_1000.mdl, chain_1000000.mdl, chain_x*.npy          100 element-wise ops
  rnn.mdl, rnn.safetensors, rnn_h0.npy                     50 steps of tanh(h @ w + b)
  matmul_N.mdl, mm_a_N.npy, mm_b_N.npy                     one product (GEMM efficiency)
  compile_N.mdl                                            generated programs of N operations
Runs under /usr/bin/python3 (Debian's NumPy).
"""
import json
import os
import re
import struct

import numpy as np

# --- what `mdl run --repeat N --timings` prints --------------------------------
# Numbers may come in exponent form (a median of 1.07e+06 us, a phase of
# 3.8e-05 ms).
_NUMBER = r"[\d.]+(?:e[-+]?\d+)?"


def repeat_median_us(stderr):
    """The median us per call of `--repeat`, or None."""
    m = re.search(r"repeat \d+: min %s us, median (%s) us" % (_NUMBER, _NUMBER), stderr)
    return float(m.group(1)) if m else None


def timing_phases(stderr):
    """{phase: ms} of `--timings`, or None."""
    m = re.search(r"timings \(ms\):(.*)", stderr)
    if not m:
        return None
    return {k: float(v) for k, v in re.findall(r"(\w+)=(%s)" % _NUMBER, m.group(1))}


def to_runnable(phases):
    """Parse (or import) to runnable: every phase but the run, ms."""
    return sum(v for k, v in phases.items() if k != "run")


# --- safetensors (the subset mdl reads: F32 tensors) -------------------------


def write_safetensors(path, tensors):
    """{name: (safetensors dtype, shape, bytes)} -> a safetensors file."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def save_safetensors(path, tensors):
    """{name: array} -> a safetensors file of F32 tensors."""
    arrays = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}
    write_safetensors(path, {k: ("F32", a.shape, a.tobytes()) for k, a in arrays.items()})


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = np.frombuffer(data[lo:hi], dtype=np.float32).reshape(info["shape"])
    return out


# --- MLP 784-1024-1024-10 ------------------------------------------------------

MLP_PROGRAM = """\
# MLP 784-1024-1024-10 with ReLU (bench/workloads.py).
param w1 : f32[784, 1024] = load("mlp.safetensors", "w1")
param b1 : f32[1024] = load("mlp.safetensors", "b1")
param w2 : f32[1024, 1024] = load("mlp.safetensors", "w2")
param b2 : f32[1024] = load("mlp.safetensors", "b2")
param w3 : f32[1024, 10] = load("mlp.safetensors", "w3")
param b3 : f32[10] = load("mlp.safetensors", "b3")

fn main(x: f32[B, 784]) -> f32[B, 10] {
  let h1 = relu(x @ w1 + b1)
  let h2 = relu(h1 @ w2 + b2)
  return h2 @ w3 + b3
}
"""


def mlp_weights():
    rng = np.random.default_rng(1)
    def layer(i, o):
        bound = 1 / np.sqrt(i)
        return (rng.uniform(-bound, bound, (i, o)).astype(np.float32),
                rng.uniform(-bound, bound, o).astype(np.float32))
    w1, b1 = layer(784, 1024)
    w2, b2 = layer(1024, 1024)
    w3, b3 = layer(1024, 10)
    return {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "w3": w3, "b3": b3}


# --- Transformer encoder layer ---------------------------------------------------

TF = {"batch": 8, "seq": 128, "d": 256, "heads": 4, "ffn": 1024}

TRANSFORMER_PROGRAM = """\
# One transformer encoder layer, as PyTorch's nn.TransformerEncoderLayer
# (post-norm, ReLU, batch first): d_model 256, 4 heads, FFN 1024
# (bench/workloads.py; the weights are the PyTorch layer's).
param wqkv : f32[256, 768] = load("transformer.safetensors", "wqkv")
param bqkv : f32[768] = load("transformer.safetensors", "bqkv")
param wo : f32[256, 256] = load("transformer.safetensors", "wo")
param bo : f32[256] = load("transformer.safetensors", "bo")
param w1 : f32[256, 1024] = load("transformer.safetensors", "w1")
param b1 : f32[1024] = load("transformer.safetensors", "b1")
param w2 : f32[1024, 256] = load("transformer.safetensors", "w2")
param b2 : f32[256] = load("transformer.safetensors", "b2")
param g1 : f32[256] = load("transformer.safetensors", "g1")
param be1 : f32[256] = load("transformer.safetensors", "be1")
param g2 : f32[256] = load("transformer.safetensors", "g2")
param be2 : f32[256] = load("transformer.safetensors", "be2")

fn main(x: f32[8, 128, 256]) -> f32[8, 128, 256] {
  let qkv = x @ wqkv + bqkv
  let q = transpose(reshape(qkv[:, :, 0:256], [8, 128, 4, 64]), perm = [0, 2, 1, 3])
  let k = transpose(reshape(qkv[:, :, 256:512], [8, 128, 4, 64]), perm = [0, 2, 3, 1])
  let v = transpose(reshape(qkv[:, :, 512:768], [8, 128, 4, 64]), perm = [0, 2, 1, 3])
  let p = softmax(q @ k * 0.125, axis = -1)
  let ctx = reshape(transpose(p @ v, perm = [0, 2, 1, 3]), [8, 128, 256])
  let a = layernorm(x + (ctx @ wo + bo), g1, be1)
  let f = relu(a @ w1 + b1) @ w2 + b2
  return layernorm(a + f, g2, be2)
}
"""


def torch_transformer():
    """The PyTorch layer (seeded) and the weights mdl loads, from it."""
    import torch
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(TF["d"], TF["heads"], TF["ffn"], dropout=0.0,
                                             batch_first=True).eval()
    sd = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    weights = {
        "wqkv": sd["self_attn.in_proj_weight"].T, "bqkv": sd["self_attn.in_proj_bias"],
        "wo": sd["self_attn.out_proj.weight"].T, "bo": sd["self_attn.out_proj.bias"],
        "w1": sd["linear1.weight"].T, "b1": sd["linear1.bias"],
        "w2": sd["linear2.weight"].T, "b2": sd["linear2.bias"],
        "g1": sd["norm1.weight"], "be1": sd["norm1.bias"],
        "g2": sd["norm2.weight"], "be2": sd["norm2.bias"],
    }
    return layer, weights


def transformer_input():
    rng = np.random.default_rng(2)
    return rng.standard_normal((TF["batch"], TF["seq"], TF["d"])).astype(np.float32)


# --- A chain of 100 element-wise operations ---------------------------------------

# Ten steps, repeated ten times: (mdl, numpy/torch) spellings of each.
CHAIN_STEPS = [
    ("x * 1.001", lambda m, x: x * 1.001),
    ("x + 0.01", lambda m, x: x + 0.01),
    ("maximum(x, -5.0)", lambda m, x: m.maximum(x, m.full_like(x, -5.0)) if m.__name__ == "torch" else m.maximum(x, np.float32(-5.0))),
    ("x - 0.02", lambda m, x: x - 0.02),
    ("x * 0.999", lambda m, x: x * 0.999),
    ("abs(x)", lambda m, x: m.abs(x)),
    ("x + 0.001", lambda m, x: x + 0.001),
    ("minimum(x, 5.0)", lambda m, x: m.minimum(x, m.full_like(x, 5.0)) if m.__name__ == "torch" else m.minimum(x, np.float32(5.0))),
    ("-x", lambda m, x: -x),
    ("tanh(x)", lambda m, x: m.tanh(x)),
]


def chain_program(n):
    lines = ["# 100 element-wise operations on %d floats (bench/workloads.py)." % n,
             "fn main(x: f32[%d]) -> f32[%d] {" % (n, n)]
    for i in range(100):
        lines.append("  let x = " + CHAIN_STEPS[i % 10][0])
    lines += ["  return x", "}", ""]
    return "\n".join(lines)


def chain_apply(module, x):
    for i in range(100):
        x = CHAIN_STEPS[i % 10][1](module, x)
    return x


def chain_input(n):
    return np.random.default_rng(3).standard_normal(n).astype(np.float32)


# --- RNN: 50 steps of tanh(h @ w + b) ----------------------------------------------

RNN_PROGRAM = """\
# A 50-step loop carrying a [64, 256] state through a matmul and a tanh
# (bench/workloads.py).
param w : f32[256, 256] = load("rnn.safetensors", "w")
param b : f32[256] = load("rnn.safetensors", "b")

fn main(h0: f32[64, 256]) -> f32[64, 256] {
  let h = for i in 0..50 carry (h = h0) {
    yield tanh(h @ w + b)
  }
  return h
}
"""


def rnn_weights():
    rng = np.random.default_rng(4)
    return {"w": (rng.standard_normal((256, 256)) / 16).astype(np.float32),
            "b": (rng.standard_normal(256) * 0.1).astype(np.float32)}


def rnn_input():
    return np.random.default_rng(5).standard_normal((64, 256)).astype(np.float32)


# --- One matrix product -------------------------------------------------------------

def matmul_program(n):
    return ("# One %dx%d product (bench/workloads.py).\n"
            "fn main(a: f32[%d, %d], b: f32[%d, %d]) -> f32[%d, %d] {\n"
            "  return a @ b\n}\n" % (n, n, n, n, n, n, n, n))


# --- Compile latency: generated programs ---------------------------------------------

def compile_program(n_ops):
    """A program of about n_ops IR operations: functions of 25 statements,
    each statement a dense layer step `h = tanh(h @ w + c) * k + h` or an
    element-wise step, called in a chain from main (4 operations and 2
    constants per statement on average)."""
    per_fn = 25
    statements = max(1, n_ops // 6)
    fns, body = [], []
    for s in range(statements):
        if s % 5 == 0:
            body.append("  let h = tanh(h @ w + %d.5) * 0.%d + h" % (s % 7, 1 + s % 8))
        else:
            body.append("  let h = maximum(h * 0.%d - %d.25, h / %d.0)" % (1 + s % 9, s % 5, 2 + s % 3))
        if len(body) == per_fn or s == statements - 1:
            fns.append(body)
            body = []
    out = ["# A generated program of about %d operations (bench/workloads.py)." % n_ops]
    for i, b in enumerate(fns):
        out.append("fn layer%d(h: f32[16, 64], w: f32[64, 64]) -> f32[16, 64] {" % i)
        out += b
        out += ["  return h", "}"]
    out.append("fn main(x: f32[16, 64], w: f32[64, 64]) -> f32[16, 64] {")
    out.append("  let h = x")
    for i in range(len(fns)):
        out.append("  let h = layer%d(h, w)" % i)
    out += ["  return h", "}", ""]
    return "\n".join(out)


def write_all(work, with_torch=True):
    """Writes every program, weight file and input into `work`."""
    os.makedirs(work, exist_ok=True)
    def text(name, s):
        with open(os.path.join(work, name), "w") as f:
            f.write(s)
    text("mlp.mdl", MLP_PROGRAM)
    save_safetensors(os.path.join(work, "mlp.safetensors"), mlp_weights())
    rng = np.random.default_rng(6)
    for b in (1, 64):
        np.save(os.path.join(work, "mlp_x%d.npy" % b), rng.standard_normal((b, 784)).astype(np.float32))
    if with_torch:
        _, tw = torch_transformer()
        save_safetensors(os.path.join(work, "transformer.safetensors"), tw)
    text("transformer.mdl", TRANSFORMER_PROGRAM)
    np.save(os.path.join(work, "tf_x.npy"), transformer_input())
    for n in (1000, 1000000):
        text("chain_%d.mdl" % n, chain_program(n))
        np.save(os.path.join(work, "chain_x%d.npy" % n), chain_input(n))
    text("rnn.mdl", RNN_PROGRAM)
    save_safetensors(os.path.join(work, "rnn.safetensors"), rnn_weights())
    np.save(os.path.join(work, "rnn_h0.npy"), rnn_input())
    for n in (256, 512, 1024, 2048):
        text("matmul_%d.mdl" % n, matmul_program(n))
        r = np.random.default_rng(7)
        np.save(os.path.join(work, "mm_a_%d.npy" % n), r.standard_normal((n, n)).astype(np.float32))
        np.save(os.path.join(work, "mm_b_%d.npy" % n), r.standard_normal((n, n)).astype(np.float32))
    for n in (10, 100, 1000, 10000):
        text("compile_%d.mdl" % n, compile_program(n))
    r = np.random.default_rng(8)
    np.save(os.path.join(work, "compile_x.npy"), r.standard_normal((16, 64)).astype(np.float32))
    np.save(os.path.join(work, "compile_w.npy"), (r.standard_normal((64, 64)) / 8).astype(np.float32))
