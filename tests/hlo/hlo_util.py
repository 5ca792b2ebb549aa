"""Helpers shared by the HLO test drivers: the entry's argument types (from
`mdl ir`), deterministic random inputs for them, running `mdl`, and the
conformance suite's comparison rule (|got - want| <= atol + rtol * |want|;
integers and bools exactly; NaN equals NaN)."""
import os
import re
import subprocess

import numpy as np

DTYPES = {"bool": np.bool_, "i8": np.int8, "u8": np.uint8, "i32": np.int32, "i64": np.int64,
          "f16": np.float16, "f32": np.float32, "f64": np.float64}


def run(cmd, timeout=1800, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode < 0 or p.returncode >= 128:
        raise RuntimeError("crashed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p


def entry_args(mdl, path, extra=()):
    """[(name, dtype, shape)] of `main`, from the IR's function header."""
    p = run([mdl, "ir", path] + list(extra))
    if p.returncode != 0:
        raise RuntimeError("mdl ir failed:\n" + p.stderr)
    m = re.search(r"^func @main\((.*?)\)( ->|\s*\{| loc)", p.stdout, re.M)
    if not m:
        raise RuntimeError("no main in the IR")
    args = []
    for a in re.finditer(r"%\d+: (\w+)(?:\[([^\]]*)\])?", m.group(1)):
        dims = [int(x) for x in a.group(2).split(",")] if a.group(2) else []
        args.append((a.group(1), tuple(dims)))
    return args


def entry_results(mdl, path, extra=()):
    """[(dtype, shape)] of `main`'s results, from the IR's function header."""
    p = run([mdl, "ir", path] + list(extra))
    if p.returncode != 0:
        raise RuntimeError("mdl ir failed:\n" + p.stderr)
    line = next(l for l in p.stdout.splitlines() if l.startswith("func @main("))
    i = line.find("-> (")
    if i < 0:
        return []
    depth, j = 0, i + 3
    items, cur = [], ""
    while j < len(line):
        c = line[j]
        if c in "([":
            depth += 1
            if depth == 1:
                j += 1
                continue
        elif c in ")]":
            depth -= 1
            if depth == 0:
                break
        if c == "," and depth == 1:
            items.append(cur)
            cur = ""
        else:
            cur += c
        j += 1
    if cur.strip():
        items.append(cur)
    out = []
    for it in items:
        m = re.match(r"\s*(\w+)(?:\[([^\]]*)\])?", it)
        dims = [int(x) for x in m.group(2).split(",")] if m.group(2) else []
        out.append((m.group(1), tuple(dims)))
    return out


def random_input(dtype, shape, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("i8", "u8", "i32", "i64"):
        return rng.integers(0, 4, size=shape).astype(DTYPES[dtype])
    if dtype == "bf16":
        raise ValueError("bf16 inputs are written by write_bf16")
    return rng.standard_normal(shape).astype(DTYPES[dtype])


def write_input(path, dtype, shape, rng):
    """Writes a random .npy for one argument (bf16 as raw 2-byte words)."""
    if dtype == "bf16":
        f = rng.standard_normal(shape).astype(np.float32)
        bits = (f.view(np.uint32) >> 16).astype(np.uint16)
        np.save(path, bits.reshape(shape).view(np.dtype("V2")))
        return
    np.save(path, random_input(dtype, shape, rng))


def load_npy(path):
    """np.load, with bf16 ('<V2') arrays widened to float32."""
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        a = (a.reshape(-1).view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(a.shape)
    return a


def is_half_npy(path):
    """Whether an .npy holds bf16 ('<V2') or f16 values."""
    a = np.load(path, mmap_mode="r")
    return (a.dtype.kind == "V" and a.dtype.itemsize == 2) or a.dtype == np.float16


def close(got, want, rtol, atol):
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if want.dtype.kind in "biu":
        return None if np.array_equal(got, want) else "values differ"
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    bad = ~(np.abs(g - w) <= atol + rtol * np.abs(w))
    bad &= ~(np.isnan(g) & np.isnan(w))
    if bad.any():
        return "%d of %d values out of tolerance (max diff %g)" % (
            int(bad.sum()), bad.size, float(np.nanmax(np.abs(g - w))))
    return None
