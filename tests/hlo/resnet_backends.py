#!/usr/bin/python3
"""The corpus ResNet-50 (keras_jax_resnet50_predict_f32.hlo) on both
backends: the JIT, whose 53 convolutions with their bias, batch norm,
residual and relu run as oneDNN primitives (fused_convolution), against the
interpreter, which runs the operations as imported.

  resnet_backends.py --mdl BIN --corpus DIR

Two forms: the HLO file as it is (the weights are arguments, so the JIT
reads the kernels as they are or reorders them at every call), and its
`mdl import` with the weights turned into params loaded from a safetensors
file (load-time constants, whose kernels the JIT reorders once). Inputs are
deterministic and keep the batch norms' variances positive and the
predictions away from a one-hot softmax, so the comparison means something.
Checks: the predictions within 1e-4 of the largest, and every convolution
of the JIT on oneDNN (MDL_JIT_TRACE=1).
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlo_util  # noqa: E402

HLO = "keras_jax_resnet50_predict_f32.hlo"


def weights(args, rng):
    """Kernels scaled by their fan-in, positive vectors (batch-norm
    variances among them), a small classifier."""
    out = []
    for dt, shape in args:
        if len(shape) == 4 and shape[1] == 224:  # the image
            a = rng.standard_normal(shape)
        elif len(shape) == 4:
            a = rng.standard_normal(shape) * np.sqrt(1.0 / (shape[0] * shape[1] * shape[2]))
        elif len(shape) == 2:
            a = rng.standard_normal(shape) * 0.005
        else:
            a = rng.uniform(0.5, 1.5, shape)
        out.append(a.astype(np.float32))
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def params_form(mdl, hlo, tmp, values):
    """The imported program with its weight arguments as params; returns
    (path, the image argument's name, its value)."""
    imported = os.path.join(tmp, "resnet.mdl")
    p = hlo_util.run([mdl, "import", hlo, "-o", imported])
    if p.returncode != 0:
        raise RuntimeError("mdl import failed:\n" + p.stderr)
    src = open(imported).read()
    m = re.search(r"^fn main\((.*?)\) -> \((.*?)\) \{", src, re.M)
    args = re.findall(r"(\w+): (f32\[[0-9, ]*\])", m.group(1))
    decl, tensors, image = [], {}, None
    for (name, ty), a in zip(args, values):
        if a.ndim == 4 and a.shape[1] == 224:
            image = (name, ty, a)
            continue
        decl.append('param %s : %s = load("weights.safetensors", "%s")' % (name, ty, name))
        tensors[name] = a
    write_safetensors(os.path.join(tmp, "weights.safetensors"), tensors)
    body = src[m.end():]
    end = body.index("\n}\n")
    fn = re.sub(r"^  return (\w+),.*$", r"  return \1", body[:end], flags=re.M)
    out = os.path.join(tmp, "resnet_params.mdl")
    with open(out, "w") as f:
        f.write(src[:m.start()] + "\n".join(decl) + "\n\nfn main(%s: %s) -> (%s) {" % (
            image[0], image[1], re.match(r"\s*(\w+\[[^\]]*\])", m.group(2)).group(1)) + fn +
            body[end:])
    return out, image


def run(mdl, path, inputs, backend, out):
    env = dict(os.environ, MDL_JIT_TRACE="1")
    p = subprocess.run([mdl, "run", path, "-q", "--backend=" + backend, "--out", out] + inputs,
                       capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError("mdl run --backend=%s failed (exit %d):\n%s" % (
            backend, p.returncode, p.stderr[-3000:]))
    return np.load(os.path.join(out, "0.npy")), p.stderr


def check(name, jit, interp, trace):
    lines = re.findall(r"jit: convolution at line \d+:\d+: (.*)", trace)
    cpu = [l for l in lines if l.startswith("CPU kernel")]
    if len(lines) != 53 or cpu:
        return "%s: %d convolutions through oneDNN, expected 53 (%s)" % (
            name, len(lines) - len(cpu), cpu[:1])
    scale = float(np.abs(interp).max())
    if not scale > 0.05:
        return "%s: the predictions are degenerate (largest %g)" % (name, scale)
    err = hlo_util.close(jit, interp, 0, 1e-4 * scale)
    return "%s: %s" % (name, err) if err else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--corpus", required=True)
    a = ap.parse_args()
    hlo = os.path.join(a.corpus, HLO)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        args = hlo_util.entry_args(a.mdl, hlo)
        values = weights(args, np.random.default_rng(0))
        inputs = []
        for i, v in enumerate(values):
            f = os.path.join(tmp, "in%d.npy" % i)
            np.save(f, v)
            inputs.append("--input=%d=%s" % (i, f))
        want, _ = run(a.mdl, hlo, inputs, "interp", os.path.join(tmp, "hi"))
        got, trace = run(a.mdl, hlo, inputs, "jit", os.path.join(tmp, "hj"))
        failed.append(check("weights as arguments", got, want, trace))
        prog, (name, _, image) = params_form(a.mdl, hlo, tmp, values)
        np.save(os.path.join(tmp, "image.npy"), image)
        inputs = ["--input=%s=%s" % (name, os.path.join(tmp, "image.npy"))]
        want2, _ = run(a.mdl, prog, inputs, "interp", os.path.join(tmp, "pi"))
        got2, trace = run(a.mdl, prog, inputs, "jit", os.path.join(tmp, "pj"))
        failed.append(check("weights as params", got2, want2, trace))
        if hlo_util.close(want2, want, 0, 1e-5 * float(np.abs(want).max())):
            failed.append("the two forms differ on the interpreter")
    failed = [f for f in failed if f]
    for f in failed:
        print("FAIL: " + f)
    if not failed:
        print("PASS: ResNet-50 on the JIT (oneDNN) matches the interpreter, both forms")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
