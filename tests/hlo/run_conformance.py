#!/usr/bin/python3
"""Runs the hand-written HLO equivalents of conformance programs
(tests/hlo/conformance/NAME.hlo) and checks their results against
../shared/conformance/run/NAME.expected, twice: running the .hlo directly,
and importing it (`mdl import`) and running the written .mdl.

  run_conformance.py --mdl BIN --conformance DIR [--backend jit|interp] [NAME.hlo ...]

Inputs come from NAME.inputs/ARG.npy (matched to the HLO parameters by
name); the MLP reads its weights from the conformance suite's safetensors
file. Tolerances are the suite's (|got - want| <= atol + rtol * |want|;
integers exactly). Prints PASS/FAIL per case; exits 1 on any failure.
"""
import argparse
import json
import os
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlo_util  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    types = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(data[b:e], dtype=types[v["dtype"]]).reshape(v["shape"])
    return out


def inputs_for(name, conformance, tmp):
    """[(position, npy path)] for the case's entry parameters, in order."""
    run = os.path.join(conformance, "run")
    if name == "mlp_safetensors":
        w = read_safetensors(os.path.join(run, "mlp_weights.safetensors"))
        files = []
        for i, k in enumerate(["w1", "b1", "w2", "b2"]):
            p = os.path.join(tmp, k + ".npy")
            np.save(p, w[k])
            files.append(p)
        files.append(os.path.join(run, "mlp_input.npy"))
        return files
    d = os.path.join(run, name + ".inputs")
    if not os.path.isdir(d):
        return []
    order = {"causal_attention": ["q", "k", "v"], "conv_pool": ["x", "w"],
             "layernorm_gelu": ["x", "g", "b"]}[name]
    return [os.path.join(d, a + ".npy") for a in order]


def check(outdir, expected):
    tol = {"rtol": 0.0, "atol": 0.0}
    for line in open(os.path.join(expected, "tolerance")):
        k, v = line.split()
        tol[k] = float(v)
    want = sorted(f for f in os.listdir(expected) if f.endswith(".npy"))
    got = sorted(f for f in os.listdir(outdir) if f.endswith(".npy")) if os.path.isdir(outdir) else []
    if want != got:
        return "results %s, expected %s" % (got, want)
    for f in want:
        err = hlo_util.close(np.load(os.path.join(outdir, f)), np.load(os.path.join(expected, f)),
                             tol["rtol"], tol["atol"])
        if err:
            return "%s: %s" % (f, err)
    return None


def run_case(mdl, hlo, conformance, backend):
    name = os.path.basename(hlo)[:-4]
    expected = os.path.join(conformance, "run", name + ".expected")
    with tempfile.TemporaryDirectory() as tmp:
        ins = inputs_for(name, conformance, tmp)
        args = ["--input=%d=%s" % (i, p) for i, p in enumerate(ins)]
        out1 = os.path.join(tmp, "hlo")
        p = hlo_util.run([mdl, "run", hlo, "--quiet", "--out", out1] + args + backend)
        if p.returncode != 0:
            return "mdl run %s: exit %d\n%s" % (hlo, p.returncode, p.stderr)
        err = check(out1, expected)
        if err:
            return "running the .hlo: " + err
        mdlfile = os.path.join(tmp, "imported", name + ".mdl")
        os.makedirs(os.path.dirname(mdlfile))
        p = hlo_util.run([mdl, "import", hlo, "-o", mdlfile])
        if p.returncode != 0:
            return "mdl import: exit %d\n%s" % (p.returncode, p.stderr)
        out2 = os.path.join(tmp, "mdl")
        p = hlo_util.run([mdl, "run", mdlfile, "--quiet", "--out", out2] + args + backend)
        if p.returncode != 0:
            return "mdl run of the imported .mdl: exit %d\n%s\n%s" % (
                p.returncode, p.stderr, open(mdlfile).read())
        err = check(out2, expected)
        if err:
            return "running the imported .mdl: " + err
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--conformance", required=True)
    ap.add_argument("--backend", help="mdl run --backend (default: mdl's default)")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    cases = a.cases or sorted(os.path.join(HERE, "conformance", f)
                              for f in os.listdir(os.path.join(HERE, "conformance"))
                              if f.endswith(".hlo"))
    failed = 0
    for hlo in cases:
        err = run_case(a.mdl, hlo, a.conformance,
                       ["--backend=" + a.backend] if a.backend else [])
        name = os.path.basename(hlo)
        if err:
            failed += 1
            print("FAIL: %s: %s" % (name, err))
        else:
            print("PASS: %s (.hlo and imported .mdl)" % name)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
