#!/usr/bin/python3
"""A ViT-B/16-sized transformer (12 layers, d 768, 12 heads, MLP 3072, 197
tokens, f32, batch 1) for measuring compile time, in two forms:

  vit_b16_f32.hlo   XLA HLO text as JAX exports a jitted model: every layer
                    written out (no loop), parameters as entry arguments
  vit_b16_f32.mdl   the same model in mdl: one `layer` function called 12
                    times on slices of stacked weights

Both compute: patches of a [1, 224, 224, 3] image embedded by a product,
a class token and position embeddings, 12 pre-norm encoder layers
(layernorm, multi-head attention, residual; layernorm, MLP with tanh-gelu,
residual), a final layernorm and a 1000-way head on the class token.

  vit_program.py --out DIR [--inputs]

--inputs also writes the arguments (random, fixed seeds; about 350 MB) as
DIR/vit_in/NAME.npy with DIR/vit_hlo.args and DIR/vit_mdl.args, the
`--input NAME=FILE` options of each form. bench/compile_bench.py uses it.
"""
import argparse
import os

import numpy as np

D, HEADS, MLP, LAYERS, TOKENS, PATCH, IMAGE, CLASSES = 768, 12, 3072, 12, 197, 16, 224, 1000
HD = D // HEADS
GRID = IMAGE // PATCH

# Per layer: (name, shape).
LAYER_PARAMS = [("ln1_g", [D]), ("ln1_b", [D]), ("wqkv", [D, 3 * D]), ("bqkv", [3 * D]),
                ("wo", [D, D]), ("bo", [D]), ("ln2_g", [D]), ("ln2_b", [D]),
                ("w1", [D, MLP]), ("b1", [MLP]), ("w2", [MLP, D]), ("b2", [D])]
TOP_PARAMS = [("patch_w", [PATCH * PATCH * 3, D]), ("patch_b", [D]), ("cls", [1, 1, D]),
              ("pos", [1, TOKENS, D]), ("lnf_g", [D]), ("lnf_b", [D]), ("head_w", [D, CLASSES]),
              ("head_b", [CLASSES])]


def shape(s):
    return "f32[%s]" % ",".join(str(d) for d in s)


class Hlo:
    """Builds the ENTRY computation, one instruction per line."""

    def __init__(self):
        self.lines, self.n = [], 0

    def op(self, s, text):
        self.n += 1
        name = "%%v%d" % self.n
        self.lines.append("  %s = %s %s" % (name, shape(s), text))
        return name

    def const(self, v):
        self.n += 1
        name = "%%c%d" % self.n
        self.lines.append("  %s = f32[] constant(%r)" % (name, float(v)))
        return name

    def bcast(self, x, to, dims):
        return self.op(to, "broadcast(%s), dimensions={%s}" % (x, ",".join(map(str, dims))))

    def scalar(self, v, to):
        return self.bcast(self.const(v), to, [])

    def bin(self, kind, a, b, s):
        return self.op(s, "%s(%s, %s)" % (kind, a, b))

    def dot(self, a, b, s, lc, rc, lb=(), rb=()):
        extra = ""
        if lb:
            extra = ", lhs_batch_dims={%s}, rhs_batch_dims={%s}" % (
                ",".join(map(str, lb)), ",".join(map(str, rb)))
        return self.op(s, "dot(%s, %s)%s, lhs_contracting_dims={%d}, rhs_contracting_dims={%d}"
                       % (a, b, extra, lc, rc))

    def reduce(self, x, s, dims, fn, init):
        return self.op(s, "reduce(%s, %s), dimensions={%s}, to_apply=%s"
                       % (x, self.const(init), ",".join(map(str, dims)), fn))

    def layernorm(self, x, g, b):
        s, row = [1, TOKENS, D], [1, TOKENS]
        mean = self.bin("multiply", self.reduce(x, row, [2], "%add", 0.0),
                        self.scalar(1.0 / D, row), row)
        c = self.bin("subtract", x, self.bcast(mean, s, [0, 1]), s)
        var = self.bin("multiply", self.reduce(self.bin("multiply", c, c, s), row, [2], "%add", 0.0),
                       self.scalar(1.0 / D, row), row)
        r = self.op(row, "rsqrt(%s)" % self.bin("add", var, self.scalar(1e-6, row), row))
        n = self.bin("multiply", c, self.bcast(r, s, [0, 1]), s)
        return self.bin("add", self.bin("multiply", n, self.bcast(g, s, [2]), s),
                        self.bcast(b, s, [2]), s)

    def linear(self, x, w, b, n_in, n_out):
        s = [1, TOKENS, n_out]
        return self.bin("add", self.dot(x, w, s, 2, 0), self.bcast(b, s, [2]), s)

    def gelu(self, x, s):
        # JAX's default: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        x3 = self.bin("multiply", self.bin("multiply", x, x, s), x, s)
        inner = self.bin("add", x, self.bin("multiply", x3, self.scalar(0.044715, s), s), s)
        t = self.op(s, "tanh(%s)" % self.bin("multiply", inner,
                                              self.scalar(0.7978845608028654, s), s))
        half = self.bin("multiply", x, self.scalar(0.5, s), s)
        return self.bin("multiply", half, self.bin("add", t, self.scalar(1.0, s), s), s)

    def attention(self, x, p):
        s = [1, TOKENS, D]
        qkv = self.linear(x, p["wqkv"], p["bqkv"], D, 3 * D)
        heads = []
        for k in range(3):
            sl = self.op(s, "slice(%s), slice={[0:1], [0:%d], [%d:%d]}"
                         % (qkv, TOKENS, k * D, (k + 1) * D))
            r = self.op([1, TOKENS, HEADS, HD], "reshape(%s)" % sl)
            heads.append(self.op([1, HEADS, TOKENS, HD], "transpose(%s), dimensions={0,2,1,3}" % r))
        q, kk, v = heads
        ss = [1, HEADS, TOKENS, TOKENS]
        scores = self.bin("multiply", self.dot(q, kk, ss, 3, 3, (0, 1), (0, 1)),
                          self.scalar(1.0 / np.sqrt(HD), ss), ss)
        row = [1, HEADS, TOKENS]
        mx = self.reduce(scores, row, [3], "%max", float("-inf"))
        e = self.op(ss, "exponential(%s)" % self.bin("subtract", scores,
                                                     self.bcast(mx, ss, [0, 1, 2]), ss))
        sm = self.reduce(e, row, [3], "%add", 0.0)
        probs = self.bin("divide", e, self.bcast(sm, ss, [0, 1, 2]), ss)
        ctx = self.dot(probs, v, [1, HEADS, TOKENS, HD], 3, 2, (0, 1), (0, 1))
        t = self.op([1, TOKENS, HEADS, HD], "transpose(%s), dimensions={0,2,1,3}" % ctx)
        return self.linear(self.op(s, "reshape(%s)" % t), p["wo"], p["bo"], D, D)

    def layer(self, x, p):
        s = [1, TOKENS, D]
        x = self.bin("add", x, self.attention(self.layernorm(x, p["ln1_g"], p["ln1_b"]), p), s)
        h = self.linear(self.layernorm(x, p["ln2_g"], p["ln2_b"]), p["w1"], p["b1"], D, MLP)
        h = self.gelu(h, [1, TOKENS, MLP])
        return self.bin("add", x, self.linear(h, p["w2"], p["b2"], MLP, D), s)


def arguments():
    """[(name, shape)] in entry order: the image, the top parameters, then
    each layer's."""
    args = [("image", [1, IMAGE, IMAGE, 3])]
    args += [(n, s) for n, s in TOP_PARAMS]
    for l in range(LAYERS):
        args += [("l%d_%s" % (l, n), s) for n, s in LAYER_PARAMS]
    return args


def hlo_text():
    h = Hlo()
    args = arguments()
    for i, (n, s) in enumerate(args):
        h.lines.append("  %%%s = %s parameter(%d)" % (n, shape(s), i))
    a = {n: "%" + n for n, _ in args}
    r = h.op([1, GRID, PATCH, GRID, PATCH, 3], "reshape(%image)")
    t = h.op([1, GRID, GRID, PATCH, PATCH, 3], "transpose(%s), dimensions={0,1,3,2,4,5}" % r)
    patches = h.op([1, GRID * GRID, PATCH * PATCH * 3], "reshape(%s)" % t)
    s196 = [1, GRID * GRID, D]
    emb = h.bin("add", h.dot(patches, a["patch_w"], s196, 2, 0), h.bcast(a["patch_b"], s196, [2]),
                s196)
    x = h.op([1, TOKENS, D], "concatenate(%s, %s), dimensions={1}" % (a["cls"], emb))
    x = h.bin("add", x, a["pos"], [1, TOKENS, D])
    for l in range(LAYERS):
        x = h.layer(x, {n: a["l%d_%s" % (l, n)] for n, _ in LAYER_PARAMS})
    x = h.layernorm(x, a["lnf_g"], a["lnf_b"])
    cls = h.op([1, D], "reshape(%s)" % h.op([1, 1, D], "slice(%s), slice={[0:1], [0:1], [0:%d]}"
                                           % (x, D)))
    out = h.bin("add", h.dot(cls, a["head_w"], [1, CLASSES], 1, 0),
                h.bcast(a["head_b"], [1, CLASSES], [1]), [1, CLASSES])
    h.lines.append("  ROOT %%out = f32[1,%d] copy(%s)" % (CLASSES, out))
    head = ["HloModule vit_b16_f32", "",
            "%add (a: f32[], b: f32[]) -> f32[] {",
            "  %a = f32[] parameter(0)", "  %b = f32[] parameter(1)",
            "  ROOT %s = f32[] add(%a, %b)", "}", "",
            "%max (a: f32[], b: f32[]) -> f32[] {",
            "  %a = f32[] parameter(0)", "  %b = f32[] parameter(1)",
            "  ROOT %m = f32[] maximum(%a, %b)", "}", ""]
    sig = ", ".join("%s: %s" % (n, shape(s)) for n, s in args)
    return "\n".join(head + ["ENTRY %%main (%s) -> f32[1,%d] {" % (sig, CLASSES)] + h.lines +
                     ["}", ""])


def mdl_text():
    stacked = ", ".join("%s: f32[%d, %s]" % (n, LAYERS, ", ".join(map(str, s)))
                        for n, s in LAYER_PARAMS)
    calls = "\n".join("  let x = layer(x, %s)" % ", ".join("%s[%d]" % (n, l) for n, _ in LAYER_PARAMS)
                      for l in range(LAYERS))
    top = ", ".join("%s: f32[%s]" % (n, ", ".join(map(str, s))) for n, s in TOP_PARAMS)
    lp = ", ".join("%s: f32[%s]" % (n, ", ".join(map(str, s))) for n, s in LAYER_PARAMS)
    return """\
# A ViT-B/16-sized transformer, f32 (bench/vit_program.py writes it): 12
# pre-norm encoder layers, d {D}, {H} heads, MLP {M}, {T} tokens.
fn gelu(x: f32[T, N]) -> f32[T, N] {{
  return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
}}

fn layer(x: f32[{T}, {D}], {lp}) -> f32[{T}, {D}] {{
  let qkv = layernorm(x, ln1_g, ln1_b, eps = 1e-6) @ wqkv + bqkv
  let q = transpose(reshape(qkv[:, 0:{D}], [{T}, {H}, {HD}]), perm = [1, 0, 2])
  let k = transpose(reshape(qkv[:, {D}:{D2}], [{T}, {H}, {HD}]), perm = [1, 2, 0])
  let v = transpose(reshape(qkv[:, {D2}:{D3}], [{T}, {H}, {HD}]), perm = [1, 0, 2])
  let p = softmax(q @ k * {SCALE}, axis = -1)
  let ctx = reshape(transpose(p @ v, perm = [1, 0, 2]), [{T}, {D}])
  let x = x + (ctx @ wo + bo)
  return x + (gelu(layernorm(x, ln2_g, ln2_b, eps = 1e-6) @ w1 + b1) @ w2 + b2)
}}

fn main(image: f32[1, {I}, {I}, 3], {top}, {stacked}) -> f32[1, {C}] {{
  let patches = reshape(transpose(reshape(image, [{G}, {P}, {G}, {P}, 3]), perm = [0, 2, 1, 3, 4]), [{G2}, {PP3}])
  let x = concat([reshape(cls, [1, {D}]), patches @ patch_w + patch_b], axis = 0) + reshape(pos, [{T}, {D}])
{calls}
  let y = layernorm(x, lnf_g, lnf_b, eps = 1e-6)
  return reshape(y[0] @ head_w + head_b, [1, {C}])
}}
""".format(D=D, D2=2 * D, D3=3 * D, H=HEADS, HD=HD, M=MLP, T=TOKENS, I=IMAGE, C=CLASSES, G=GRID,
           P=PATCH, G2=GRID * GRID, PP3=PATCH * PATCH * 3, SCALE=repr(1.0 / np.sqrt(HD)), lp=lp,
           top=top, stacked=stacked, calls=calls)


def write_inputs(out):
    """Random arguments: weights scaled like trained ones (std 0.02)."""
    d = os.path.join(out, "vit_in")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(11)
    values = {}
    for n, s in arguments():
        if n.startswith("l") and n[1].isdigit():
            continue
        if n.endswith("_g"):
            values[n] = np.ones(s, np.float32)
        elif n == "image":
            values[n] = rng.standard_normal(s).astype(np.float32)
        else:
            values[n] = (rng.standard_normal(s) * 0.02).astype(np.float32)
    for n, s in LAYER_PARAMS:
        if n.endswith("_g"):
            values[n] = np.ones([LAYERS] + s, np.float32)
        else:
            values[n] = (rng.standard_normal([LAYERS] + s) * 0.02).astype(np.float32)
    paths = {}
    for n, v in values.items():
        paths[n] = os.path.join(d, n + ".npy")
        np.save(paths[n], v)
    # The HLO form takes each layer's parameters: slices of the stacked ones.
    hlo_args = []
    for n, s in arguments():
        if n.startswith("l") and n[1].isdigit():
            layer, pname = n[1:].split("_", 1)
            p = os.path.join(d, n + ".npy")
            np.save(p, values[pname][int(layer)])
            hlo_args.append("--input=%s=%s" % (n, p))
        else:
            hlo_args.append("--input=%s=%s" % (n, paths[n]))
    mdl_args = ["--input=%s=%s" % (n, paths[n]) for n in
                ["image"] + [t for t, _ in TOP_PARAMS] + [p for p, _ in LAYER_PARAMS]]
    with open(os.path.join(out, "vit_hlo.args"), "w") as f:
        f.write("\n".join(hlo_args) + "\n")
    with open(os.path.join(out, "vit_mdl.args"), "w") as f:
        f.write("\n".join(mdl_args) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--inputs", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "vit_b16_f32.hlo"), "w") as f:
        f.write(hlo_text())
    with open(os.path.join(a.out, "vit_b16_f32.mdl"), "w") as f:
        f.write(mdl_text())
    if a.inputs:
        write_inputs(a.out)


if __name__ == "__main__":
    main()
