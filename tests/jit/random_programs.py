#!/usr/bin/python3
"""Random programs, run on both backends: the interpreter is the oracle.

  random_programs.py --mdl BIN [--count N] [--seed S] [--keep DIR] [--dtype f32|bf16|f16]
  random_programs.py --mdl BIN --place hip [--gpu-runtime opencl] ...

Each program (a seed gives the same program every time) declares a few
random params of the element type (f32 unless --dtype says otherwise) and
chains 6 to 30 statements (4 to 14 for the halves) drawn from the operations
the JIT fuses or treats specially: element-wise arithmetic and math with
NumPy broadcasting, comparisons and select, reductions over the last or
first axis (with and without keepdims), views (transpose, slices, reshape,
expand_dims), matrix products, softmax and layernorm, casts, updates of
part of a tensor (dynamic_update_slice, alone or rewriting rows of a loop's
carried value, which the JIT does in place), `for` loops that carry a value
and `if` on a run-time condition. Some shapes are large
enough for the JIT to split loops among threads. Both backends must succeed
and give the same results within a tolerance that allows for vector math
and summation order (1e-4 relative to the result's magnitude; for bf16 and
f16, whose fused loops keep f32 between a load and a store where the
interpreter rounds every operation's result, a few units of the half's
precision: 2^-5).

Discontinuous operations (floor, ceil, sign, comparisons, casts to
integers) only ever see values both backends compute exactly (params, and
what abs, neg, relu, maximum, minimum, max/min reductions and views make
of them), so a rounding difference upstream cannot flip them.

With --place hip, the same programs compute on a GPU: main's body is placed
`on` a hip device, and both backends run it with --gpu-runtime (opencl by
default: PoCL runs the spir64 kernels on the CPU) and --fallback=error,
against the interpreter with the hip device on the CPU (libmdl_hip.so made
unloadable) as the oracle. --timings must show kernels launched on the GPU.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpuruntime"))
import gpu_programs  # noqa: E402 (the GPU drivers' tables, widening, missing devices)

SMALL = [1, 3, 7, 16, 33]
LARGE = [5, 8, 64, 130]
BIG = [(256, 640), (512, 320)]  # 2^17 points and more: threaded loops
DTYPE = "f32"  # --dtype
TOLERANCE = {"f32": 1e-4, "bf16": 2.0 ** -5, "f16": 2.0 ** -5}


class Val:
    def __init__(self, name, shape, exact):
        self.name, self.shape, self.exact = name, tuple(shape), exact


def ty(shape):
    return DTYPE + "[" + ", ".join(str(d) for d in shape) + "]"


def broadcastable(a, b):
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def bshape(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.params, self.lines, self.vals = [], [], []
        self.n = 0

    def fresh(self):
        self.n += 1
        return "v%d" % self.n

    def param(self, shape):
        name = "p%d" % len(self.params)
        r = self.r
        if r.random() < 0.5:
            init = "random_normal(seed = %d, std = %.2f)" % (r.randint(1, 10**6), r.uniform(0.2, 2))
        else:
            init = "random_uniform(seed = %d, lo = %.1f, hi = %.1f)" % (
                r.randint(1, 10**6), r.uniform(-3, 0), r.uniform(0.1, 3))
        self.params.append("param %s : %s = %s" % (name, ty(shape), init))
        v = Val(name, shape, True)
        self.vals.append(v)
        return v

    def emit(self, expr, shape, exact, indent="  "):
        name = self.fresh()
        self.lines.append("%slet %s = %s" % (indent, name, expr))
        v = Val(name, shape, exact)
        self.vals.append(v)
        return v

    def pick(self, pred=lambda v: True):
        cands = [v for v in self.vals if pred(v)]
        # Prefer recent values: longer chains, more fusion.
        cands = cands[-6:] if self.r.random() < 0.8 else cands
        return self.r.choice(cands) if cands else None

    def partner(self, a):
        """A value that broadcasts with a (a new param if none does)."""
        b = self.pick(lambda v: v is not a and broadcastable(v.shape, a.shape)
                      and bshape(v.shape, a.shape) == a.shape)
        if b is None or self.r.random() < 0.3:
            shape = list(a.shape)
            # drop leading axes or set some to 1
            if shape and self.r.random() < 0.4:
                shape = shape[self.r.randint(0, len(shape)):]
            shape = [d if self.r.random() < 0.6 else 1 for d in shape]
            b = self.param(shape)
        return b

    def statement(self):
        r = self.r
        a = self.pick()
        k = r.random()
        if k < 0.22:  # unary math
            f = r.choice(["tanh(%s)", "sigmoid(%s)", "relu(%s)", "gelu(%s)", "neg(%s)", "abs(%s)",
                          "sin(%s)", "cos(%s)", "sqrt(abs(%s) + 0.1)", "log(abs(%s) + 1.0)",
                          "exp(clip(%s, -4.0, 4.0))", "rsqrt(abs(%s) + 0.5)", "%s * %s",
                          "pow(abs(%s) + 0.1, 1.5)"])
            exact = a.exact and f in ("relu(%s)", "neg(%s)", "abs(%s)")
            return self.emit(f.replace("%s", a.name), a.shape, exact)
        if k < 0.42:  # binary with broadcasting
            b = self.partner(a)
            if r.random() < 0.5:
                a, b = b, a
            f = r.choice(["%s + %s", "%s - %s", "%s * %s", "maximum(%s, %s)", "minimum(%s, %s)",
                          "%s / (abs(%s) + 0.5)", "%s * 0.5 + %s * 2.0"])
            exact = a.exact and b.exact and f in ("maximum(%s, %s)", "minimum(%s, %s)")
            return self.emit(f % (a.name, b.name), bshape(a.shape, b.shape), exact)
        if k < 0.50:  # discontinuous operations on exact values
            e = self.pick(lambda v: v.exact)
            b = self.partner(e)
            c = self.pick(lambda v: broadcastable(v.shape, e.shape) and bshape(v.shape, e.shape) == e.shape)
            f = r.choice(["floor(%s)", "ceil(%s)", "sign(%s)", "cast(cast(%s * 4.0, i32), " + DTYPE + ")",
                          "select(%s > %s, %s, %s * 0.5)", "select(%s <= 0.0 || %s > 1.0, %s, 1.0)"])
            if f.startswith("select(%s >"):
                expr = f % (e.name, b.name, c.name, e.name)
                shape = bshape(bshape(e.shape, b.shape), c.shape)
                return self.emit(expr, shape, False)
            if f.startswith("select(%s <="):
                return self.emit(f % (e.name, e.name, c.name), bshape(e.shape, c.shape), False)
            return self.emit(f.replace("%s", e.name), e.shape, True)
        if k < 0.62 and len(a.shape) >= 1:  # reductions
            op = r.choice(["sum", "mean", "max", "min"])
            axis = r.choice([-1, 0]) if len(a.shape) >= 2 else -1
            keep = r.random() < 0.5
            ax = axis % len(a.shape)
            shape = [d for i, d in enumerate(a.shape) if i != ax] if not keep else \
                [1 if i == ax else d for i, d in enumerate(a.shape)]
            exact = a.exact and op in ("max", "min")
            expr = "%s(%s, axis = %d%s)" % (op, a.name, axis, ", keepdims = true" if keep else "")
            v = self.emit(expr, shape, exact)
            if not shape:  # scalars: broadcast back
                return self.emit("%s + %s" % (a.name, v.name), a.shape, False)
            return v
        if k < 0.72 and len(a.shape) == 2:  # views
            A, B = a.shape
            f = r.random()
            if f < 0.3:
                return self.emit("transpose(%s)" % a.name, (B, A), a.exact)
            if f < 0.55 and B > 1:
                lo = r.randint(0, B - 1)
                hi = r.randint(lo + 1, B)
                return self.emit("%s[:, %d:%d]" % (a.name, lo, hi), (A, hi - lo), a.exact)
            if f < 0.75 and A > 1:
                lo = r.randint(0, A - 1)
                hi = r.randint(lo + 1, A)
                return self.emit("%s[%d:%d]" % (a.name, lo, hi), (hi - lo, B), a.exact)
            if f < 0.9:
                flat = self.emit("reshape(%s, [-1])" % a.name, (A * B,), a.exact)
                return self.emit("reshape(%s, [%d, %d]) * 1.5" % (flat.name, A, B), (A, B), False)
            return self.emit("squeeze(expand_dims(%s, 0), 0)" % a.name, (A, B), a.exact)
        if k < 0.80 and len(a.shape) == 2:  # matrix products
            A, B = a.shape
            C = r.choice(SMALL + LARGE)
            w = self.param((B, C))
            if r.random() < 0.3:
                wt = self.param((C, B))
                return self.emit("%s @ transpose(%s)" % (a.name, wt.name), (A, C), False)
            return self.emit("%s @ %s" % (a.name, w.name), (A, C), False)
        if k < 0.86 and len(a.shape) >= 1 and a.shape[-1] > 1:  # neural
            if r.random() < 0.5:
                return self.emit("softmax(%s, axis = -1)" % a.name, a.shape, False)
            g = self.param((a.shape[-1],))
            b = self.param((a.shape[-1],))
            return self.emit("layernorm(%s, %s, %s)" % (a.name, g.name, b.name), a.shape, False)
        # (HLO-dialect updates: not on a hip device, which runs the core language)
        if k < 0.90 and a.shape and not self.place:  # updates of part of a tensor
            return self.update(a)
        if k < 0.95:  # a loop carrying a value
            b = self.partner(a)
            n = r.randint(1, 5)
            name = self.fresh()
            body = r.choice(["tanh(h * 0.5 + %s)", "h * 0.9 + sigmoid(%s) * cast(i, " + DTYPE + ")",
                             "maximum(h, %s) - 0.25"])
            self.lines.append("  let %s = for i in 0..%d carry (h = %s) {" % (name, n, a.name))
            self.lines.append("    yield " + body % b.name)
            self.lines.append("  }")
            v = Val(name, a.shape, False)
            self.vals.append(v)
            return v
        # a branch on a run-time condition
        b = self.partner(a)
        name = self.fresh()
        self.lines.append("  let %s = if sum(%s) > 0.0 {" % (name, a.name))
        self.lines.append("    yield %s * 2.0 + %s" % (a.name, b.name))
        self.lines.append("  } else {")
        self.lines.append("    yield tanh(%s) - %s" % (a.name, b.name))
        self.lines.append("  }")
        v = Val(name, a.shape, False)
        self.vals.append(v)
        return v

    def update(self, a):
        """dynamic_update_slice of a block (starts possibly out of range:
        clamped), or a loop rewriting one row of its carried value per step
        (computed in place by the JIT when nothing else reads it)."""
        r = self.r
        name = self.fresh()
        if r.random() < 0.5:
            block = [r.randint(1, d) for d in a.shape]
            u = self.param(block)
            starts = ", ".join(str(r.randint(-2, d + 1)) for d in a.shape)
            return self.emit("dynamic_update_slice(%s, %s, [%s])" % (a.name, u.name, starts),
                             a.shape, a.exact and u.exact)
        n, d0 = r.randint(1, 6), a.shape[0]
        rest = list(a.shape[1:])
        row = "reshape(h[i * 3 %% %d] * 0.5 + 1.0, [%s])" % (d0, ", ".join(str(x) for x in [1] + rest))
        starts = ", ".join(["i * 3 %% %d" % d0] + ["0"] * len(rest))
        init = a.name if r.random() < 0.5 else a.name + " * 1.0"
        self.lines.append("  let %s = for i in 0..%d carry (h = %s) {" % (name, n, init))
        self.lines.append("    yield dynamic_update_slice(h, %s, [%s])" % (row, starts))
        self.lines.append("  }")
        v = Val(name, a.shape, False)
        self.vals.append(v)
        return v

    def program(self, place=None):
        self.place = place
        r = self.r
        if r.random() < 0.2:
            shape = r.choice(BIG)
        else:
            shape = tuple(r.choice(SMALL + LARGE) for _ in range(r.choice([1, 2, 2, 2])))
        self.param(shape)
        if r.random() < 0.5:
            self.param(shape[1:] if len(shape) > 1 else shape)
        for _ in range(r.randint(6, 30) if DTYPE == "f32" else r.randint(4, 14)):
            self.statement()
        made = [v for v in self.vals if not v.name.startswith("p")]
        outs = made[-r.randint(1, 3):]
        if len(made) > len(outs) and r.random() < 0.7:
            outs = [r.choice(made[:-len(outs)])] + outs
        sig = ", ".join(ty(v.shape) for v in outs)
        head = "fn main() -> %s {" % (sig if len(outs) == 1 else "(" + sig + ")")
        ret = "  return " + ", ".join(v.name for v in outs)
        body = self.lines
        devices = []
        if place:
            # Every operation of main on the device (control flow stays
            # with the host program); the results return to the caller.
            devices = ["device gpu = %s(0)" % place]
            body = ["  on gpu {"] + ["  " + l for l in body] + ["  }"]
        return "\n".join(devices + self.params + [head] + body + [ret, "}"]) + "\n"


def run(mdl, path, backend, out, extra=(), env=None):
    return subprocess.run([mdl, "run", path, "--backend=" + backend, "--quiet", "--out", out] +
                          list(extra), capture_output=True, text=True, timeout=600, env=env)


def launched(stderr):
    """Why a GPU run's --timings do not show kernels launched, or None."""
    tables = gpu_programs.GPU_TABLE.findall(stderr)
    if not tables:
        return "--timings shows no GPU: the program did not run on one"
    idle = [t[0] for t in tables if int(t[2]) == 0]
    return "gpu %s launched no kernel" % ", ".join(idle) if idle else None


def compare(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return "dtype/shape %s%s vs %s%s" % (a.dtype, a.shape, b.dtype, b.shape)
    a64, b64 = gpu_programs.widen(a), gpu_programs.widen(b)
    scale = max(1.0, float(np.nanmax(np.abs(b64))) if b64.size else 1.0)
    tol = TOLERANCE[DTYPE]
    bad = ~((np.abs(a64 - b64) <= tol * scale + tol * np.abs(b64)) |
            (np.isnan(a64) & np.isnan(b64)) | (a64 == b64))
    if bad.any():
        i = np.argwhere(bad)[0]
        return "%d of %d elements differ, first at %s: got %r, oracle %r" % (
            int(bad.sum()), bad.size, tuple(int(x) for x in i), a64[tuple(i)], b64[tuple(i)])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write the programs here")
    ap.add_argument("--place", choices=["hip"], help="compute main on a device of this kind")
    ap.add_argument("--gpu-runtime", default="opencl", help="with --place hip (default: opencl)")
    ap.add_argument("--dtype", choices=sorted(TOLERANCE), default="f32",
                    help="element type of the params and values")
    a = ap.parse_args()
    global DTYPE
    DTYPE = a.dtype
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or tmp
        os.makedirs(where, exist_ok=True)
        # The runs compared with the oracle (the interpreter; with --place,
        # the interpreter with the device on the CPU).
        if a.place:
            gpu = ["--gpu-runtime=" + a.gpu_runtime, "--fallback=error", "--timings"]
            cpu_env = dict(os.environ, MDL_HIP_LIBRARY=os.path.join(tmp, "no-gpu-support.so"))
            runs = [("jit", gpu, None), ("interp", gpu, None), ("oracle", [], cpu_env)]
        else:
            runs = [("jit", [], None), ("oracle", [], None)]
        for s in range(a.seed, a.seed + a.count):
            src = Gen(s).program(a.place)
            path = os.path.join(where, "random_%d.mdl" % s)
            with open(path, "w") as f:
                f.write(src)
            res = {}
            for name, extra, env in runs:
                backend = "interp" if name == "oracle" else name
                out = os.path.join(tmp, "out_%d_%s" % (s, name))
                p = run(a.mdl, path, backend, out, extra, env)
                why = None if p.returncode == 0 else "exited %d" % p.returncode
                if not why and a.place and name != "oracle":
                    why = launched(p.stderr)
                missing = why and a.place and gpu_programs.unavailable(p.stderr, a.gpu_runtime)
                if missing and failures == 0:
                    # No OpenCL here at all (no loader, no platform), or no
                    # GPU for a vendor's runtime, as the other GPU drivers
                    # decide; never after a failure, which stands.
                    print("SKIP: " + missing)
                    return 77
                if why:
                    print("FAIL: seed %d: %s %s:\n%s\n%s" % (s, name, why, p.stderr[-2000:], src))
                    failures += 1
                    break
                res[name] = out
            if len(res) < len(runs):
                continue
            files = sorted(os.listdir(res["oracle"]))
            for name in res:
                if name == "oracle":
                    continue
                if not files or files != sorted(os.listdir(res[name])):
                    print("FAIL: seed %d: result files differ: %s vs %s" % (
                        s, sorted(os.listdir(res[name])), files))
                    failures += 1
                    break
                bad = None
                for f in files:
                    why = compare(np.load(os.path.join(res[name], f)),
                                  np.load(os.path.join(res["oracle"], f)))
                    if why:
                        bad = "FAIL: seed %d, %s, result %s: %s\n%s" % (s, name, f, why, src)
                        break
                if bad:
                    print(bad)
                    failures += 1
                    break
    print("%d random %s programs (seeds %d to %d)%s, %d failed" % (
        a.count, DTYPE, a.seed, a.seed + a.count - 1, " on " + a.place if a.place else "", failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
