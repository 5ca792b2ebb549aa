#!/usr/bin/python3
"""Every operation the mpc device implements, through `mdl run`: each is
computed secret-shared (`on sec`, then revealed) and in the clear on the
host in the same program, and the two results compared within the error
that docs/mpc.md states for the operation. Both backends.

  translate_test.py --mdl BIN

Prints PASS/FAIL per operation and backend; FAIL makes the exit code 1.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

# name, expression over x (f32[4, 6]), y (f32[4, 6]), v (f32[6]), absolute
# tolerance (fixed point with 18 fractional bits; approximations per
# docs/mpc.md over these input ranges).
CASES = [
    ("add", "x + y", 1e-5),
    ("sub_public", "x - 1.5", 1e-5),
    ("neg", "-x", 1e-5),
    ("mul", "x * y", 2e-5),
    ("mul_public", "x * 0.3", 2e-5),
    ("div_public", "x / 4.0", 2e-5),
    ("div", "x / (y * y + 1.0)", 2e-3),
    ("matmul", "x @ transpose(y)", 5e-5),
    ("matmul_vector", "x @ v", 5e-5),
    ("lt", "select(x < y, 1.0, 0.0)", 0),
    ("ge", "select(x >= 0.25, x, y)", 1e-5),
    ("maximum", "maximum(x, y)", 1e-5),
    ("minimum", "minimum(x, 0.5)", 1e-5),
    ("clip", "clip(x, -0.5, 0.75)", 1e-5),
    ("abs", "abs(x)", 1e-5),
    ("relu", "relu(x)", 1e-5),
    ("exp", "exp(x)", 2e-3),
    ("sqrt", "sqrt(x * x + 0.5)", 2e-3),
    ("rsqrt", "rsqrt(x * x + 0.5)", 2e-3),
    ("tanh", "tanh(x)", 2e-3),
    ("sigmoid", "sigmoid(x)", 2e-3),
    ("gelu", "gelu(x)", 3e-3),
    ("gelu_tanh", "gelu(x, approximate = true)", 3e-3),
    ("softmax", "softmax(x, axis = -1)", 2e-3),
    ("softmax_axis0", "softmax(x, axis = 0)", 2e-3),
    ("layernorm", "layernorm(x, v, v * 0.5)", 5e-3),
    ("sum", "sum(x, axis = 1)", 5e-5),
    ("sum_all", "sum(x)", 5e-5),
    ("mean", "mean(x, axis = 0, keepdims = true)", 5e-5),
    ("max_axes", "max(x, axis = [0, 1])", 1e-5),
    ("min_axis", "min(x, axis = 1)", 1e-5),
    ("argmax", "cast(argmax(x, axis = 1), f32)", 0),
    ("argmin_flat", "cast(argmin(x), f32)", 0),
    ("reshape", "reshape(x, [6, 4])", 1e-5),
    ("transpose", "transpose(x)", 1e-5),
    ("broadcast", "broadcast_to(v, [4, 6]) + x", 1e-5),
    ("expand_squeeze", "squeeze(expand_dims(x, 0), 0)", 1e-5),
    ("concat", "concat([x, y], axis = 1)", 1e-5),
    ("stack", "stack([x, y], axis = 0)", 1e-5),
    ("slice", "x[1:3, ::2]", 1e-5),
    ("index", "x[2]", 1e-5),
    ("gather", "gather(x, [3, 0, 0], axis = 0)", 1e-5),
    ("pad", "pad(x, [[1, 0], [0, 2]], value = 0.5)", 1e-5),
    ("zeros_full", "x + zeros(f32[4, 6]) + full(f32[6], 0.25)", 1e-5),
]


def program(expr):
    return """device host = cpu()
device sec = mpc()

fn main(x: f32[4, 6], y: f32[4, 6], v: f32[6]) -> (f32[...], f32[...]) {
  let s = %s on sec
  let p = %s on host
  return reveal(s), p
}
""" % (expr, expr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(3)
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        ins = {"x": rng.uniform(-2, 2, (4, 6)), "y": rng.uniform(-2, 2, (4, 6)),
               "v": rng.uniform(0.5, 1.5, 6)}
        args = []
        for k, arr in ins.items():
            f = os.path.join(work, k + ".npy")
            np.save(f, arr.astype(np.float32))
            args += ["--input", "%s=%s" % (k, f)]
        for name, expr, tol in CASES:
            src = os.path.join(work, name + ".mdl")
            with open(src, "w") as f:
                f.write(program(expr).replace("(f32[...], f32[...])", result_types(a.mdl, expr, work)))
            for backend in ("interp", "jit"):
                out = os.path.join(work, "%s.%s" % (name, backend))
                p = subprocess.run([a.mdl, "run", src, "--backend", backend, "--quiet",
                                    "--out", out] + args, capture_output=True, text=True,
                                   timeout=300)
                if p.returncode != 0:
                    print("FAIL: %s (%s): exit %d\n%s" % (name, backend, p.returncode, p.stderr))
                    failures += 1
                    continue
                secret = np.load(os.path.join(out, "0.npy")).astype(np.float64)
                plain = np.load(os.path.join(out, "1.npy")).astype(np.float64)
                err = float(np.max(np.abs(secret - plain))) if plain.size else 0.0
                ok = secret.shape == plain.shape and err <= tol
                print("%s: %s (%s): max error %.3g (bound %.3g)" %
                      ("PASS" if ok else "FAIL", name, backend, err, tol))
                failures += not ok
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


def result_types(mdl, expr, work):
    """The expression's type as mdl infers it: `mdl check` of a program that
    declares f32 names the real type in E0209 (or none when it is f32)."""
    src = os.path.join(work, "probe.mdl")
    with open(src, "w") as f:
        f.write("fn main(x: f32[4, 6], y: f32[4, 6], v: f32[6]) -> f32 {\n"
                "  return %s\n}\n" % expr)
    p = subprocess.run([mdl, "check", src], capture_output=True, text=True)
    m = re.search(r"result 0 is (\S+\[[^\]]*\]|\S+) but", p.stderr)
    t = m.group(1) if m else "f32"
    return "(%s, %s)" % (t, t)


if __name__ == "__main__":
    main()
