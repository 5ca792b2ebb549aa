#!/usr/bin/python3
"""Runs one conformance case of ../shared/conformance through `mdl`.

  run_case.py --mdl BIN --case DIR/run/NAME.mdl --backend interp
  run_case.py --mdl BIN --case DIR/errors/NAME.mdl

A run case passes when `mdl run NAME.mdl --out TMP [--input ARG=...]` exits
0 and writes exactly the expected results: same dtype, same shape, values
within NAME.expected/tolerance (|got - want| <= atol + rtol * |want|;
integers and bools exactly).

An error case passes when `mdl check NAME.mdl --diagnostics=json` exits 1,
prints only well-formed JSON diagnostics, and every `# expect: CODE line N`
of NAME.expected appears among them.

Programs that declare an `mpc` device run like the others (the three
parties as threads of the one process); tests/mpc/process_mode.py runs them
as three processes over TLS.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode < 0 or p.returncode >= 128:
        fail("mdl crashed (exit %d): %s\nstderr:\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p


def run_case(mdl, path, backend, extra):
    base = path[:-len(".mdl")]
    cmd = [mdl, "run", path, "--backend=" + backend, "--quiet"] + extra
    inputs = base + ".inputs"
    if os.path.isdir(inputs):
        for f in sorted(os.listdir(inputs)):
            if f.endswith(".npy"):
                cmd.append("--input=%s=%s" % (f[:-4], os.path.join(inputs, f)))
    with tempfile.TemporaryDirectory() as out:
        cmd += ["--out", out]
        p = run(cmd)
        if p.returncode != 0:
            fail("exit %d\ncommand: %s\nstderr:\n%s" % (p.returncode, " ".join(cmd), p.stderr))
        expected = base + ".expected"
        tol = {"rtol": 0.0, "atol": 0.0}
        for line in open(os.path.join(expected, "tolerance")):
            k, v = line.split()
            tol[k] = float(v)
        want_files = sorted(f for f in os.listdir(expected) if f.endswith(".npy"))
        got_files = sorted(f for f in os.listdir(out) if f.endswith(".npy"))
        if want_files != got_files:
            fail("results %s, expected %s" % (got_files, want_files))
        for f in want_files:
            want = np.load(os.path.join(expected, f))
            got = np.load(os.path.join(out, f))
            if got.dtype != want.dtype:
                fail("%s: dtype %s, expected %s" % (f, got.dtype, want.dtype))
            if got.shape != want.shape:
                fail("%s: shape %s, expected %s" % (f, got.shape, want.shape))
            if want.dtype.kind in "biu":
                if not np.array_equal(got, want):
                    fail("%s: got\n%s\nexpected\n%s" % (f, got, want))
            else:
                g = got.astype(np.float64)
                w = want.astype(np.float64)
                bad = ~(np.abs(g - w) <= tol["atol"] + tol["rtol"] * np.abs(w))
                bad &= ~(np.isnan(g) & np.isnan(w))
                if bad.any():
                    fail("%s: %d of %d values out of tolerance; got\n%s\nexpected\n%s" %
                         (f, int(bad.sum()), bad.size, got, want))
    print("PASS")


def error_case(mdl, path, extra):
    base = path[:-len(".mdl")]
    expects = []
    for line in open(base + ".expected"):
        m = re.match(r"#\s*expect:\s*(\w+)\s+line\s+(\d+)", line)
        if m:
            expects.append((m.group(1), int(m.group(2))))
    if not expects:
        fail("no expectations in " + base + ".expected")
    p = run([mdl, "check", path, "--diagnostics=json"] + extra)
    if p.returncode != 1:
        fail("exit %d, expected 1\nstderr:\n%s" % (p.returncode, p.stderr))
    seen = []
    for line in p.stderr.splitlines():
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError:
            fail("not a JSON diagnostic: %r" % line)
        for key in ("code", "severity", "message", "file", "line", "column"):
            if key not in d:
                fail("diagnostic without %r: %s" % (key, line))
        seen.append((d["code"], d["line"]))
    for code, line in expects:
        if (code, line) not in seen:
            fail("expected %s on line %d; got %s\nstderr:\n%s" % (code, line, seen, p.stderr))
    print("PASS")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--backend", default="interp")
    ap.add_argument("--extra", action="append", default=[])
    a = ap.parse_args()
    if os.sep + "errors" + os.sep in a.case:
        error_case(a.mdl, a.case, a.extra)
    else:
        run_case(a.mdl, a.case, a.backend, a.extra)


if __name__ == "__main__":
    main()
