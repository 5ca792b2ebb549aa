#!/usr/bin/python3
"""Convolutions of every form the JIT takes to oneDNN (and those it leaves
to the CPU kernel), run on both backends: the interpreter is the oracle.

  conv_forms.py --mdl BIN [--keep DIR] [CASE ...]

Each case is a small program: conv2d (NCHW) or convolution with dimension
labels (NHWC, NCHW, 1-D, 3-D, other layouts), strides, symmetric and
asymmetric padding, zero pads before it, kernel dilation, feature groups
and depthwise, then an epilogue (bias, batch norm in the form Keras
exports, scalars, a residual, relu, relu6, clip), in f32, bf16 (also with
an f32 result), f16 and f64, with the kernel a param (a load-time constant
that oneDNN's layout is made from once) or an argument, small and large
enough to be cut into slabs on the worker pool. Every case checks:
  - the JIT gives the interpreter's results: f32 and f64 within 1e-4 of the
    result's magnitude; bf16 within 3% (a few bf16 roundings: the JIT rounds
    once, after the epilogue, where the interpreter rounds after each
    operation); f16 within 0.2%; NaN where the interpreter has NaN;
  - which path ran (MDL_JIT_TRACE=1): oneDNN, or the CPU kernel, with the
    number of fused convolutions the program should have.
A case that names fused_convolution itself checks the operation's CPU
kernel (the reference) against the unfused expression on the interpreter.
Pooling cases (a zero pad, then reduce_window over whole rows of NHWC) check
that the pad folds into the pooling after a relu, and stays otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hlo"))
import hlo_util  # noqa: E402

TOL = {"f32": 1e-4, "f64": 1e-4, "bf16": 3e-2, "f16": 2e-3}


def ty(dt, shape):
    return "%s[%s]" % (dt, ", ".join(str(d) for d in shape)) if shape else dt


class Case:
    """A program, its inputs and params, and what must run it."""

    def __init__(self, name, dt, body, args, params=(), path="onednn", convs=1, slabs=None,
                 nan=False, ir=(), functions="", trace=()):
        self.name, self.dt, self.body, self.args, self.params = name, dt, body, args, params
        self.path, self.convs, self.slabs, self.nan = path, convs, slabs, nan
        self.ir = ir  # patterns `mdl ir --after=epilogues` must match
        self.functions = functions  # written before main
        self.trace = trace  # patterns the JIT's MDL_JIT_TRACE lines must match


def nhwc(name, dt, x, w, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1, epi="",
         extra=(), const=True, path="onednn", slabs=None, convs=1, out=None, labels=None):
    """A convolution with dimension labels and an epilogue expression `epi`
    over `y` (the convolution's result)."""
    labels = labels or "b01f_01io->b01f"
    params = [("w", dt, w)] if const else []
    args = [("x", dt, x)] + ([] if const else [("w", dt, w)]) + list(extra)
    attrs = 'dim_labels = "%s", strides = [%s], padding = [%s], rhs_dilation = [%s]' % (
        labels, ", ".join(map(str, stride)), ", ".join(map(str, pad)), ", ".join(map(str, dil)))
    if groups != 1:
        attrs += ", feature_groups = %d" % groups
    if out:
        attrs += ", dtype = %s" % out
    body = "  let y = convolution(x, w, %s)\n  return %s\n" % (attrs, epi or "y")
    return Case(name, dt, body, args, params, path, convs, slabs)


def cases():
    r = np.random.default_rng(7)
    n = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    u = lambda *s: r.uniform(0.5, 1.5, s).astype(np.float32)  # noqa: E731
    cs = []
    # conv2d, NCHW: bias and relu; stride and padding; a zero pad folded in.
    cs.append(Case("conv2d_bias_relu", "f32",
                   "  return relu(conv2d(x, w, stride = 1, padding = 1) + b)\n",
                   [("x", "f32", n(2, 3, 9, 9)), ("b", "f32", n(4, 1, 1))],
                   [("w", "f32", n(4, 3, 3, 3))]))
    cs.append(Case("conv2d_stride_kernel_argument", "f32",
                   "  return conv2d(x, w, stride = 2, padding = 0)\n",
                   [("x", "f32", n(1, 8, 20, 20)), ("w", "f32", n(16, 8, 3, 3))]))
    cs.append(Case("conv2d_zero_pad_folded", "f32",
                   "  let p = pad(x, [[0, 0], [0, 0], [1, 2], [2, 1]])\n"
                   "  return relu(conv2d(p, w))\n",
                   [("x", "f32", n(1, 4, 10, 11))], [("w", "f32", n(6, 4, 3, 3))]))
    # NCHW, one image, large: cut along the output features.
    cs.append(Case("conv2d_nchw_feature_slabs", "f32",
                   "  return relu(conv2d(x, w, padding = 1) * s + t)\n",
                   [("x", "f32", n(1, 32, 28, 28))],
                   [("w", "f32", n(64, 32, 3, 3)), ("s", "f32", u(64, 1, 1)),
                    ("t", "f32", n(64, 1, 1))], slabs=2))
    # NHWC as Keras exports it: bias, batch norm, residual, relu.
    keras = ("  let a = (y + b - m) * (rsqrt(v + 0.001) * g) + be\n")
    cs.append(Case("nhwc_keras_block", "f32",
                   "  let y = convolution(x, w, dim_labels = \"b01f_01io->b01f\", "
                   "padding = [1, 1, 1, 1])\n" + keras + "  return relu(a + r)\n",
                   [("x", "f32", n(1, 28, 28, 32)), ("r", "f32", n(1, 28, 28, 64))],
                   [("w", "f32", n(3, 3, 32, 64)), ("b", "f32", n(64)), ("m", "f32", n(64)),
                    ("v", "f32", u(64)), ("g", "f32", u(64)), ("be", "f32", n(64))], slabs=2))
    cs.append(nhwc("nhwc_batch_slabs", "f32", n(4, 16, 16, 16), n(3, 3, 16, 32),
                   pad=(1, 1, 1, 1), epi="relu(y * s + t)",
                   extra=[("s", "f32", u(32)), ("t", "f32", n(32))], slabs=2))
    cs.append(nhwc("nhwc_asymmetric_stride_dilation", "f32", n(1, 33, 31, 8), n(3, 3, 8, 16),
                   stride=(2, 2), pad=(0, 1, 2, 1), dil=(2, 2), epi="y - s",
                   extra=[("s", "f32", n(16))]))
    cs.append(nhwc("nhwc_kernel_argument_rows", "f32", n(1, 40, 40, 32), n(3, 3, 32, 32),
                   pad=(1, 1, 1, 1), const=False, epi="relu(y)", slabs=2))
    cs.append(nhwc("nhwc_groups", "f32", n(2, 12, 12, 16), n(3, 3, 4, 32), pad=(1, 1, 1, 1),
                   groups=4, epi="y * 0.5 + s", extra=[("s", "f32", n(32))]))
    cs.append(nhwc("nhwc_depthwise_relu6", "f32", n(1, 30, 30, 32), n(3, 3, 1, 32),
                   pad=(1, 1, 1, 1), groups=32, epi="minimum(maximum(y + b, 0.0), 6.0)",
                   extra=[("b", "f32", n(32))]))
    cs.append(nhwc("nhwc_clip", "f32", n(1, 9, 9, 8), n(1, 1, 8, 8),
                   epi="clip(y, -0.5, 0.75)"))
    cs.append(nhwc("conv1d", "f32", n(2, 50, 8), n(5, 8, 12), stride=(2,), pad=(2, 2), dil=(1,),
                   labels="b0f_0io->b0f", epi="relu(y)"))
    cs.append(nhwc("conv3d", "f32", n(1, 6, 7, 8, 4), n(3, 3, 3, 4, 8), stride=(1, 1, 1),
                   pad=(1, 1, 1, 1, 1, 1), dil=(1, 1, 1), labels="b012f_012io->b012f",
                   epi="relu(y)"))
    # Layouts other than NHWC and NCHW: oneDNN or the CPU kernel, same results.
    cs.append(nhwc("layout_fb01", "f32", n(4, 2, 9, 9), n(4, 4, 3, 3), pad=(1, 1, 1, 1),
                   labels="fb01_io01->bf01", path="any"))
    # bf16 on the bf16 instructions, f32 accumulation; an f32 result.
    cs.append(nhwc("bf16_bias_relu", "bf16", n(1, 20, 20, 32), n(3, 3, 32, 32),
                   pad=(1, 1, 1, 1), epi="relu(y + b)", extra=[("b", "bf16", n(32))]))
    cs.append(nhwc("bf16_residual_slabs", "bf16", n(1, 40, 40, 32), n(1, 1, 32, 64),
                   epi="relu(y * s + r)",
                   extra=[("s", "bf16", u(64)), ("r", "bf16", n(1, 40, 40, 64))], slabs=2))
    cs.append(nhwc("bf16_f32_result", "bf16", n(1, 12, 12, 16), n(3, 3, 16, 16),
                   pad=(1, 1, 1, 1), out="f32", epi="y + s", extra=[("s", "f32", n(16))]))
    cs.append(nhwc("bf16_depthwise_nchw", "bf16", n(1, 16, 14, 14), n(16, 1, 3, 3),
                   pad=(1, 1, 1, 1), groups=16, labels="bf01_oi01->bf01", path="any"))
    # f16: oneDNN 2.6 has no f16 convolution: converted to f32 around one.
    cs.append(nhwc("f16_residual_relu", "f16", n(1, 10, 10, 8), n(3, 3, 8, 8),
                   pad=(1, 1, 1, 1), epi="relu(y + r)", extra=[("r", "f16", n(1, 10, 10, 8))]))
    # What oneDNN cannot take: the CPU kernel, with the same epilogue.
    cs.append(nhwc("f64_cpu_kernel", "f64", n(1, 8, 8, 4), n(3, 3, 4, 4), pad=(1, 1, 1, 1),
                   epi="relu(y + 1.0)", path="cpu"))
    cs.append(Case("input_dilation_cpu_kernel", "f32",
                   "  return relu(convolution(x, w, dim_labels = \"b01f_01io->b01f\", "
                   "lhs_dilation = [2, 2], padding = [1, 1, 1, 1]))\n",
                   [("x", "f32", n(1, 6, 6, 4))], [("w", "f32", n(3, 3, 4, 4))], path="cpu"))
    cs.append(Case("batch_groups_cpu_kernel", "f32",
                   "  return convolution(x, w, dim_labels = \"b01f_01io->b01f\", "
                   "batch_groups = 2)\n",
                   [("x", "f32", n(4, 6, 6, 3))], [("w", "f32", n(3, 3, 3, 8))], path="cpu"))
    cs.append(nhwc("negative_padding_cpu_kernel", "f32", n(1, 10, 10, 4), n(3, 3, 4, 4),
                   pad=(-1, 0, 0, -1), path="cpu"))
    # NaN stays NaN through relu (oneDNN's own relu would make it 0).
    x = n(1, 8, 8, 8)
    x[0, 3, 3, 2] = np.nan
    c = nhwc("nan_through_relu", "f32", x, n(3, 3, 8, 8), pad=(1, 1, 1, 1), epi="relu(y)")
    c.nan = True
    cs.append(c)
    # A result read twice: no epilogue; arithmetic after the activation
    # stays outside.
    cs.append(Case("result_read_twice", "f32",
                   "  let y = conv2d(x, w, padding = 1)\n  return relu(y) + y\n",
                   [("x", "f32", n(1, 4, 8, 8))], [("w", "f32", n(4, 4, 3, 3))]))
    cs.append(Case("add_after_relu", "f32",
                   "  return relu(conv2d(x, w, padding = 1)) + r\n",
                   [("x", "f32", n(1, 4, 8, 8)), ("r", "f32", n(1, 4, 8, 8))],
                   [("w", "f32", n(4, 4, 3, 3))]))
    # Pooling as Keras exports it (a zero pad, then a max over windows of
    # whole rows of NHWC): the pad folds into the reduce_window after a
    # relu; sum pooling on the worker pool; a pad that is not zero stays.
    pool = ("  let y = relu(convolution(x, w, dim_labels = \"b01f_01io->b01f\", "
            "padding = [1, 1, 1, 1]))\n"
            "  let p = pad_general(y, %s, low = [0, 1, 1, 0], high = [0, 1, 1, 0])\n"
            "  return reduce_window([p], [i], window = [1, 3, 3, 1], strides = [1, 2, 2, 1], "
            "reducer = \"%s\")\n")
    cs.append(Case("pool_max_after_relu", "f32", pool % ("0.0", "max"),
                   [("x", "f32", n(2, 40, 40, 8)), ("i", "f32", np.float32(-1e30))],
                   [("w", "f32", n(3, 3, 8, 16))],
                   ir=[r"reduce_window %\d+, %\d+ \{window = \[1, 3, 3, 1\].*padding = "
                       r"\[0, 0, 1, 1, 1, 1, 0, 0\]"]))
    cs.append(Case("pool_sum_pad_kept", "f32", pool % ("1.0", "add"),
                   [("x", "f32", n(2, 40, 40, 8)), ("i", "f32", np.float32(0.5))],
                   [("w", "f32", n(3, 3, 8, 16))], ir=[r"pad_general"]))
    # A residual computed by the program and read last by the convolution:
    # the output takes its place (no copy). NCHW (gemm:jit, which has no sum
    # post-operation): the residual added after the primitive.
    block = ("  let r = relu(%s)\n  let h = relu(%s)\n  return relu(%s * s + r)\n")
    nhwc3 = "convolution(%s, w, dim_labels = \"b01f_01io->b01f\", padding = [1, 1, 1, 1])"
    cs.append(Case("residual_in_place", "f32",
                   block % (nhwc3 % "x", nhwc3 % "r", nhwc3 % "h"),
                   [("x", "f32", n(1, 20, 20, 16))],
                   [("w", "f32", n(3, 3, 16, 16) * 0.2), ("s", "f32", u(16))], convs=3,
                   trace=[r"computed in its residual's place"]))
    nchw3 = "conv2d(%s, w, padding = 1)"
    cs.append(Case("residual_after_gemm", "f32",
                   block % (nchw3 % "x", nchw3 % "r", nchw3 % "h"),
                   [("x", "f32", n(1, 16, 20, 20))],
                   [("w", "f32", n(16, 16, 3, 3) * 0.2), ("s", "f32", u(16, 1, 1))], convs=3,
                   trace=[r"residual added after it, computed in its residual's place"]))
    # In a function called from a loop (inlined), and in a branch.
    cs.append(Case("in_loop_and_branch", "f32",
                   "  let y = for i in 0..n carry (h = x) {\n    yield block(h)\n  }\n"
                   "  let z = if n > 2 { yield relu(conv2d(y, w, padding = 1) * 0.5) } "
                   "else { yield y }\n  return y, z\n",
                   [("x", "f32", n(1, 8, 12, 12)), ("n", "i64", np.int64(3))],
                   [("w", "f32", n(8, 8, 3, 3) * 0.2), ("b", "f32", n(8, 1, 1))], convs=2,
                   functions="fn block(h: f32[1, 8, 12, 12]) -> f32[1, 8, 12, 12] {\n"
                             "  return relu(conv2d(h, w, padding = 1) + b) + h\n}\n",
                   ir=[r"for .*\{\n(.*\n)*.*fused_convolution .*epilogue = \"add,relu\""]))
    # fused_convolution written out: its CPU kernel against the expression.
    cs.append(Case("fused_convolution_written", "f32",
                   "  let f = fused_convolution(x, w, s, r, dim_labels = \"b01f_01io->b01f\", "
                   "padding = [1, 1, 1, 1], epilogue = \"sub,residual,clip\", clip_lo = -1.0, "
                   "clip_hi = 2.0)\n"
                   "  let e = clip(convolution(x, w, dim_labels = \"b01f_01io->b01f\", "
                   "padding = [1, 1, 1, 1]) - s + r, -1.0, 2.0)\n  return f, e\n",
                   [("x", "f32", n(1, 7, 7, 5)), ("s", "f32", n(6)), ("r", "f32", n(1, 7, 7, 6))],
                   [("w", "f32", n(3, 3, 5, 6))], convs=2))
    return cs


def save(path, dt, a):
    if dt == "bf16":
        f = a.astype(np.float32)
        bits = (f.view(np.uint32) >> 16).astype(np.uint16)  # truncation: exact bf16 values
        np.save(path, bits.view(np.dtype("V2")))
    else:
        np.save(path, np.asarray(a).astype({"f16": np.float16, "f32": np.float32,
                                        "f64": np.float64, "i64": np.int64}[dt]))


def run_case(mdl, c, work):
    d = os.path.join(work, c.name)
    os.makedirs(d, exist_ok=True)
    decl = ""
    for name, dt, a in c.params:
        save(os.path.join(d, name + ".npy"), dt, a)
        decl += 'param %s : %s = load("%s.npy")\n' % (name, ty(dt, a.shape), name)
    sig = ", ".join("%s: %s" % (name, ty(dt, a.shape)) for name, dt, a in c.args)
    prog = os.path.join(d, "prog.mdl")
    with open(prog, "w") as f:
        f.write(decl + "\n" + c.functions + "\nfn main(%s) {\n%s}\n" % (sig, c.body))
    inputs = []
    for name, dt, a in c.args:
        save(os.path.join(d, name + ".npy"), dt, a)
        inputs.append("--input=%s=%s" % (name, os.path.join(d, name + ".npy")))
    outs, files, dtypes = {}, {}, {}
    trace = ""
    for backend in ("interp", "jit"):
        env = dict(os.environ, MDL_JIT_TRACE="1")
        p = subprocess.run([mdl, "run", prog, "-q", "--backend=" + backend, "--out",
                            os.path.join(d, backend)] + inputs, capture_output=True, text=True,
                           env=env, timeout=600)
        if p.returncode != 0:
            return "%s failed (exit %d):\n%s" % (backend, p.returncode, p.stderr[-2000:])
        files[backend] = sorted(os.listdir(os.path.join(d, backend)))
        # The element type as written (bf16 is widened to f32 when loaded).
        dtypes[backend] = [np.load(os.path.join(d, backend, f), mmap_mode="r").dtype
                           for f in files[backend]]
        outs[backend] = [hlo_util.load_npy(os.path.join(d, backend, f)) for f in files[backend]]
        if backend == "jit":
            trace = p.stderr
    if c.ir:
        p = subprocess.run([mdl, "ir", prog, "--after=epilogues"], capture_output=True,
                           text=True, timeout=600)
        for pattern in c.ir:
            if not re.search(pattern, p.stdout):
                return "the IR after epilogues has no match for %s:\n%s" % (pattern, p.stdout)
    for pattern in c.trace:
        if not re.search(pattern, trace):
            return "the JIT's trace has no match for %s:\n%s" % (pattern, trace)
    lines = re.findall(r"jit: convolution at line \d+:\d+: (.*)", trace)
    if len(lines) != c.convs:
        return "%d fused convolutions, expected %d:\n%s" % (len(lines), c.convs, trace)
    for line in lines:
        cpu = line.startswith("CPU kernel")
        if (c.path == "onednn" and cpu) or (c.path == "cpu" and not cpu):
            return "ran on %s, expected %s" % (line, c.path)
        if c.slabs and not cpu and "%d slabs" % c.slabs not in line:
            return "ran as '%s', expected %d slabs on the worker pool" % (line, c.slabs)
    if not files["interp"] or files["jit"] != files["interp"]:
        return "results %s, expected %s" % (files["jit"], files["interp"])
    tol = TOL[c.dt]
    for i, (got, want) in enumerate(zip(outs["jit"], outs["interp"])):
        if dtypes["jit"][i] != dtypes["interp"][i]:
            return "result %d: dtype %s, expected %s" % (i, dtypes["jit"][i], dtypes["interp"][i])
        if got.shape != want.shape:
            return "result %d: shape %s, expected %s" % (i, got.shape, want.shape)
        if c.nan and not np.isnan(want).any():
            return "the interpreter's result has no NaN"
        scale = max(1.0, float(np.nanmax(np.abs(want))))
        err = hlo_util.close(got.astype(np.float64), want.astype(np.float64), tol, tol * scale)
        if err:
            return "result %d: %s" % (i, err)
    if c.name == "fused_convolution_written":  # its CPU kernel against the expression
        f, e = outs["interp"]
        err = hlo_util.close(f.astype(np.float64), e.astype(np.float64), 1e-5, 1e-5)
        if err:
            return "fused_convolution's CPU kernel against the expression: " + err
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--keep")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="conv-forms-")
    failed = 0
    for c in cases():
        if a.names and c.name not in a.names:
            continue
        err = run_case(a.mdl, c, work)
        print("%s: %s%s" % ("FAIL" if err else "PASS", c.name, (": " + err) if err else ""))
        sys.stdout.flush()
        failed += bool(err)
    if not a.keep:
        subprocess.run(["rm", "-rf", work])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
