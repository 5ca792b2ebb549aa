#!/usr/bin/python3
"""bf16 and f16 on the JIT's fast paths against the interpreter (the oracle).

  halves.py --mdl BIN [--keep DIR] [NAME ...]

Each case is a small program (.mdl, or HLO text run directly) with random
inputs, run on both backends; the results must agree within the halves'
rounding: the JIT's products accumulate in f32 like the kernels but in
another order (oneDNN's bf16 kernels, or the f32 path for f16), and its
fused loops keep f32 between a load and a store where the interpreter rounds
every operation, so a result may differ by a few units in its last place:
|jit - interp| <= 2^-6 * max|interp| + 2^-7 * |interp|.

Cases: matrix products of every layout the runtime reads in place
(transposed operands, strided views such as the heads of a packed QKV
projection, batches with a shared operand, four-dimensional batches, a
single row or column, a contraction of one) and large enough to be cut
among threads, weights (kept in oneDNN's blocked layout) read directly,
through a function argument, batched or sliced; HLO dot_general with contracting and batch axes anywhere and
an f32 result from bf16 operands; HLO reduce with named reducers and
neutral or other inits; softmax, log_softmax and layernorm rows (short,
ViT-sized, longer than the row buffers hold) and fused chains around them.
Prints PASS/FAIL per case; exits 1 on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

TOL_SCALE, TOL_REL = 2.0 ** -6, 2.0 ** -7


def bits_bf16(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def save(path, dtype, array):
    if dtype == "bf16":
        np.save(path, bits_bf16(array).reshape(array.shape).view(np.dtype("V2")))
    else:
        np.save(path, array.astype({"f16": np.float16, "f32": np.float32}[dtype]))


def widen(a):
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        a = (a.reshape(-1).view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(a.shape)
    return a.astype(np.float64)


def mm(name, t, a, b, expr, out):
    """A one-statement .mdl program of inputs a and b."""
    return (name, "mdl", "fn main(a: %s[%s], b: %s[%s]) -> %s {\n  return %s\n}\n" % (
        t, ", ".join(map(str, a)), t, ", ".join(map(str, b)), out, expr), [(t, a), (t, b)])


CASES = [
    mm("mm_small", "bf16", (64, 96), (96, 80), "a @ b", "bf16[64, 80]"),
    mm("mm_threaded", "bf16", (197, 768), (768, 256), "a @ b", "bf16[197, 256]"),
    mm("mm_trans_b", "bf16", (130, 96), (72, 96), "a @ transpose(b)", "bf16[130, 72]"),
    mm("mm_trans_a", "bf16", (96, 130), (96, 72), "transpose(a) @ b", "bf16[130, 72]"),
    mm("mm_batched", "bf16", (6, 33, 40), (6, 40, 17), "a @ b", "bf16[6, 33, 17]"),
    mm("mm_shared_rhs", "bf16", (5, 33, 40), (40, 17), "a @ b", "bf16[5, 33, 17]"),
    mm("mm_shared_lhs", "bf16", (33, 40), (4, 40, 17), "a @ b", "bf16[4, 33, 17]"),
    mm("mm_batch4d", "bf16", (2, 3, 16, 8), (2, 3, 8, 16), "a @ b", "bf16[2, 3, 16, 16]"),
    mm("mm_row", "bf16", (300,), (300, 70), "a @ b", "bf16[70]"),
    mm("mm_column", "bf16", (70, 300), (300,), "a @ b", "bf16[70]"),
    mm("mm_outer", "bf16", (40, 1), (1, 50), "a @ b", "bf16[40, 50]"),
    mm("mm_f16", "f16", (197, 100), (100, 60), "a @ b", "f16[197, 60]"),
    mm("mm_f16_trans", "f16", (6, 20, 30), (6, 25, 30), "a @ transpose(b, [0, 2, 1])",
       "f16[6, 20, 25]"),
    ("mm_heads", "mdl", """
fn main(x: bf16[197, 2304]) -> bf16[197, 768] {
  let q = transpose(reshape(x[:, 0:768], [197, 12, 64]), perm = [1, 0, 2])
  let k = transpose(reshape(x[:, 768:1536], [197, 12, 64]), perm = [1, 2, 0])
  let v = transpose(reshape(x[:, 1536:2304], [197, 12, 64]), perm = [1, 0, 2])
  let p = softmax(q @ k * 0.125, axis = -1)
  return reshape(transpose(p @ v, perm = [1, 0, 2]), [197, 768])
}
""", [("bf16", (197, 2304))]),
    # Weights (globals) are kept in oneDNN's blocked layout for the run,
    # whether read directly, through a function's argument, batched, or as
    # a strided slice.
    ("mm_weights", "mdl", """
param w : bf16[256, 384] = random_normal(seed = 3, std = 0.05)
param wb : bf16[4, 64, 48] = random_normal(seed = 4, std = 0.1)
fn layer(x: bf16[100, 256], w: bf16[256, 384]) -> bf16[100, 384] {
  return x @ w
}
fn main(x: bf16[100, 256], y: bf16[4, 30, 64]) -> (bf16[100, 384], bf16[100, 384], bf16[4, 30, 48], bf16[100, 128], f32[100, 384]) {
  let a = layer(x, w)
  let b = layer(x * 0.5, w)
  return a, b, y @ wb, x @ w[:, 100:228], cast(a, f32) + cast(x @ w, f32)
}
""", [("bf16", (100, 256)), ("bf16", (4, 30, 64))]),
    ("dot_f32_result", "hlo", """HloModule m
ENTRY e {
  a = bf16[8,24,32]{2,1,0} parameter(0)
  b = bf16[8,32,20]{2,1,0} parameter(1)
  ROOT d = f32[8,24,20]{2,1,0} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
""", [("bf16", (8, 24, 32)), ("bf16", (8, 32, 20))]),
    ("dot_axes_anywhere", "hlo", """HloModule m
ENTRY e {
  a = bf16[7,5,3,9]{3,2,1,0} parameter(0)
  b = bf16[3,11,9,5]{3,2,1,0} parameter(1)
  ROOT d = bf16[5,3,7,11]{3,2,1,0} dot(a, b), lhs_batch_dims={1,2}, lhs_contracting_dims={3}, rhs_batch_dims={3,0}, rhs_contracting_dims={2}
}
""", [("bf16", (7, 5, 3, 9)), ("bf16", (3, 11, 9, 5))]),
    ("dot_two_contractions", "hlo", """HloModule m
ENTRY e {
  a = f16[6,4,10]{2,1,0} parameter(0)
  b = f16[10,4,12]{2,1,0} parameter(1)
  ROOT d = f16[6,12]{1,0} dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}
}
""", [("f16", (6, 4, 10)), ("f16", (10, 4, 12))]),
    ("reduce_named", "hlo", """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
mx {
  x = bf16[] parameter(0)
  y = bf16[] parameter(1)
  ROOT m = bf16[] maximum(x, y)
}
mn {
  x = bf16[] parameter(0)
  y = bf16[] parameter(1)
  ROOT m = bf16[] minimum(x, y)
}
addb {
  x = bf16[] parameter(0)
  y = bf16[] parameter(1)
  ROOT s = bf16[] add(x, y)
}
ENTRY e {
  p = bf16[4,96,130]{2,1,0} parameter(0)
  f = f32[4,96,130]{2,1,0} convert(p)
  z = f32[] constant(0)
  s = f32[4,96]{1,0} reduce(f, z), dimensions={2}, to_apply=add
  ninf = bf16[] constant(-inf)
  m = bf16[4,96]{1,0} reduce(p, ninf), dimensions={2}, to_apply=mx
  half = bf16[] constant(0.5)
  c = bf16[4,96]{1,0} reduce(p, half), dimensions={2}, to_apply=mx
  lead = bf16[96,130]{1,0} reduce(p, half), dimensions={0}, to_apply=mn
  one = bf16[] constant(1.5)
  kept = bf16[4,96]{1,0} reduce(p, one), dimensions={2}, to_apply=addb
  ROOT t = (f32[4,96]{1,0}, bf16[4,96]{1,0}, bf16[4,96]{1,0}, bf16[96,130]{1,0}, bf16[4,96]{1,0}) tuple(s, m, c, lead, kept)
}
""", [("bf16", (4, 96, 130))]),
    ("attention_hlo_idiom", "hlo", """HloModule m
mx {
  x = bf16[] parameter(0)
  y = bf16[] parameter(1)
  ROOT m = bf16[] maximum(x, y)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  s = bf16[3,50,70]{2,1,0} parameter(0)
  ninf = bf16[] constant(-inf)
  m = bf16[3,50]{1,0} reduce(s, ninf), dimensions={2}, to_apply=mx
  mb = bf16[3,50,70]{2,1,0} broadcast(m), dimensions={0,1}
  d = bf16[3,50,70]{2,1,0} subtract(s, mb)
  e = bf16[3,50,70]{2,1,0} exponential(d)
  ef = f32[3,50,70]{2,1,0} convert(e)
  z = f32[] constant(0)
  sum = f32[3,50]{1,0} reduce(ef, z), dimensions={2}, to_apply=add
  sb = bf16[3,50]{1,0} convert(sum)
  sbb = bf16[3,50,70]{2,1,0} broadcast(sb), dimensions={0,1}
  ROOT p = bf16[3,50,70]{2,1,0} divide(e, sbb)
}
""", [("bf16", (3, 50, 70))]),
    ("rows_bf16", "mdl", """
fn main(x: bf16[197, 768], g: bf16[768], b: bf16[768]) -> (bf16[197, 768], bf16[197, 768], bf16[197, 768]) {
  let y = layernorm(x * 2.0 + 0.5, g, b, eps = 1e-6)
  return y, softmax(x * 3.0, axis = -1), log_softmax(y, axis = -1)
}
""", [("bf16", (197, 768)), ("bf16", (768,)), ("bf16", (768,))]),
    ("rows_long", "mdl", """
fn main(x: bf16[9, 12000], h: f16[5, 7, 300]) -> (bf16[9, 12000], f16[5, 7, 300], f16[5, 7, 300]) {
  return softmax(x, axis = -1), softmax(h * 0.5, axis = -1), gelu(layernorm(h, h[0, 0], h[1, 1]))
}
""", [("bf16", (9, 12000)), ("f16", (5, 7, 300))]),
    ("chain_mixed", "mdl", """
fn main(x: bf16[300, 200], w: bf16[200, 64], h: f16[64]) -> (f32[300, 64], bf16[300], f16[300, 64]) {
  let y = gelu(x @ w + cast(h, bf16)) * 0.5
  let s = sum(cast(y, f32), axis = -1) / 64.0
  return cast(y, f32) - 1.0, max(y, axis = -1) + cast(s, bf16), cast(tanh(y), f16) * h
}
""", [("bf16", (300, 200)), ("bf16", (200, 64)), ("f16", (64,))]),
]


def run(mdl, path, backend, inputs, out):
    cmd = [mdl, "run", path, "--backend=" + backend, "--quiet", "--out", out]
    for i, f in enumerate(inputs):
        cmd.append("--input=%d=%s" % (i, f))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def compare(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return "dtype/shape %s%s vs %s%s" % (a.dtype, a.shape, b.dtype, b.shape)
    a64, b64 = widen(a), widen(b)
    scale = float(np.nanmax(np.abs(b64))) if b64.size else 0.0
    ok = (np.abs(a64 - b64) <= TOL_SCALE * scale + TOL_REL * np.abs(b64)) | \
         (np.isnan(a64) & np.isnan(b64)) | (a64 == b64)
    if not ok.all():
        i = tuple(int(x) for x in np.argwhere(~ok)[0])
        return "%d of %d elements differ, first at %s: jit %r, interp %r" % (
            int((~ok).sum()), ok.size, i, a64[i], b64[i])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--keep")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    rng = np.random.default_rng(14)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or tmp
        os.makedirs(where, exist_ok=True)
        for name, kind, src, inputs in CASES:
            if a.names and name not in a.names:
                continue
            path = os.path.join(where, name + "." + kind)
            with open(path, "w") as f:
                f.write(src)
            files = []
            for i, (t, shape) in enumerate(inputs):
                files.append(os.path.join(where, "%s_in%d.npy" % (name, i)))
                save(files[-1], t, rng.standard_normal(shape).astype(np.float32))
            outs, why = {}, None
            for backend in ("jit", "interp"):
                outs[backend] = os.path.join(tmp, "%s_%s" % (name, backend))
                p = run(a.mdl, path, backend, files, outs[backend])
                if p.returncode != 0:
                    why = "%s exited %d: %s" % (backend, p.returncode, p.stderr[-1500:])
                    break
            if not why:
                got = sorted(os.listdir(outs["jit"]))
                if not got or got != sorted(os.listdir(outs["interp"])):
                    why = "result files differ"
                for r in got if not why else []:
                    why = compare(np.load(os.path.join(outs["jit"], r)),
                                  np.load(os.path.join(outs["interp"], r)))
                    if why:
                        why = "result %s: %s" % (r, why)
                        break
            print("%s: %s%s" % ("FAIL" if why else "PASS", name, ": " + why if why else ""))
            failures += bool(why)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
