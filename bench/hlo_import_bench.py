#!/usr/bin/python3
"""HLO import benchmark: generates HLO text of a given size made mostly of
constant literals (as XLA prints them: f32 weights in nested braces) and
times `mdl import` on it, reporting throughput and peak resident memory.

  hlo_import_bench.py --mdl BIN [--importer BIN] --size 100M [--size 3G]
                     [--dir /tmp] [--keep]

Targets (issue 5): at least 150 MB/s, and peak RSS under 20% of the file
size. `--importer` (build/bench/hlo_import_bench, which links only the
importer) measures the importer's own memory as well: the `mdl` binary
carries a fixed resident size (its statically linked JIT, about 40 MB) that
does not depend on the file. The generated module is a small MLP-like computation over the
constants (dot, add, maximum, reduce), so the import also translates and
writes a program that uses every constant. Files are written to --dir and
deleted afterwards unless --keep. Prints one line per size:

  size=100.0MB constants=25 wall=0.52s throughput=192.3MB/s peak_rss=14.2MB (14.2% of file)
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time


def parse_size(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)", s.upper())
    if not m:
        raise ValueError("size like 100M or 3G")
    return int(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)])


def number_rows(cols, variants, rng):
    """A few distinct rows of `cols` f32 literals in XLA's spelling."""
    rows = []
    for _ in range(variants):
        vals = []
        for _ in range(cols):
            x = rng.gauss(0, 0.05)
            r = rng.random()
            if r < 0.02:
                vals.append("0")
            elif r < 0.1:
                vals.append("%.6g" % (x * 1e-4))  # exponent form
            else:
                vals.append(repr(float("%.8g" % x)))
        rows.append("{ " + ", ".join(vals) + " }")
    return rows


def generate(path, target, cols=1024):
    """Writes an HLO module of about `target` bytes; returns the constant count."""
    rng = random.Random(0)
    rows = number_rows(cols, 16, rng)
    row_bytes = sum(len(r) for r in rows) / len(rows) + 2
    # As many constants as needed, each at most ~64 MB of text and at least
    # `cols` rows (the computation slices a square block out of each).
    n = max(1, -(-target // 64_000_000))
    rows_per_const = max(cols, int(target / n / row_bytes))
    with open(path, "w") as f:
        f.write("HloModule bench_import, entry_computation_layout={(f32[8,%d]{1,0})->f32[8]{0}}\n\n"
                % cols)
        f.write("%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                "  %b = f32[] parameter(1)\n  ROOT %r = f32[] add(%a, %b)\n}\n\n")
        f.write("ENTRY %%main (x: f32[8,%d]) -> f32[8] {\n" % cols)
        f.write("  %%x = f32[8,%d]{1,0} parameter(0)\n" % cols)
        prev = "%x"
        for k in range(n):
            f.write("  %%w%d = f32[%d,%d]{1,0} constant({ " % (k, rows_per_const, cols))
            for r in range(rows_per_const):
                if r:
                    f.write(", ")
                f.write(rows[(r * 7 + k) % len(rows)])
            f.write(" })\n")
            # h = h @ w[:cols]: a square block of each constant.
            f.write("  %%s%d = f32[%d,%d]{1,0} slice(%%w%d), slice={[0:%d], [0:%d]}\n"
                    % (k, cols, cols, k, cols, cols))
            f.write("  %%h%d = f32[8,%d]{1,0} dot(%s, %%s%d), lhs_contracting_dims={1}, "
                    "rhs_contracting_dims={0}\n" % (k, cols, prev, k))
            prev = "%%h%d" % k
        f.write("  %zero = f32[] constant(0)\n")
        f.write("  ROOT %%out = f32[8]{0} reduce(%s, %%zero), dimensions={1}, to_apply=%%add\n"
                % prev)
        f.write("}\n")
    return n


def measure(cmd, path, outdir):
    out = os.path.join(outdir, "bench.mdl")
    t0 = time.time()
    p = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M"] + cmd + [path, "-o", out]
                       if cmd[-1] == "import" else ["/usr/bin/time", "-f", "MAXRSS %M"] + cmd +
                       [path, out], capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit("mdl import failed:\n" + p.stderr[-3000:])
    rss = int(re.search(r"MAXRSS (\d+)", p.stderr).group(1)) * 1024
    return wall, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--importer", help="build/bench/hlo_import_bench")
    ap.add_argument("--size", action="append", default=[])
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    failed = False
    for s in a.size or ["100M"]:
        target = parse_size(s)
        free = shutil.disk_usage(a.dir).free
        if free < 2.5 * target:
            sys.exit("not enough free space in %s for a %s file and its weights" % (a.dir, s))
        work = tempfile.mkdtemp(prefix="mdl-hlo-bench-", dir=a.dir)
        try:
            path = os.path.join(work, "bench.hlo")
            t0 = time.time()
            n = generate(path, target)
            size = os.path.getsize(path)
            gen = time.time() - t0
            # Read the file once so the first run does not measure the disk.
            subprocess.run(["cat", path], stdout=subprocess.DEVNULL)
            tools = [("mdl import", [a.mdl, "import"])]
            if a.importer:
                tools.append(("importer", [a.importer]))
            for label, cmd in tools:
                wall, rss = measure(cmd, path, work)
                mbs = size / 1e6 / wall
                pct = 100.0 * rss / size
                ok = mbs >= 150 and pct < 20
                failed |= not ok and (label == "importer" or not a.importer)
                print("%-10s size=%.1fMB constants=%d generate=%.1fs wall=%.2fs "
                      "throughput=%.1fMB/s peak_rss=%.1fMB (%.1f%% of file) %s"
                      % (label, size / 1e6, n, gen, wall, mbs, rss / 1e6, pct,
                         "OK" if ok else "BELOW TARGET"))
                sys.stdout.flush()
        finally:
            if not a.keep:
                shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
