#!/usr/bin/python3
"""Bad input never crashes `mdl`: every case must end in exit code 0 or 1
with, for exit 1, at least one diagnostic carrying a code. A signal, an
abort or an exit code other than 0/1 fails the test.

Cases: random bytes, every prefix-truncation point of every conformance
program (sampled), NUL bytes and invalid UTF-8, a 100 MB source file,
10,000 levels of nesting of each kind, garbage weight and input files.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

FAILURES = []


def check(mdl, args, what, expect_codes=None, timeout=600):
    t0 = time.time()
    try:
        p = subprocess.run([mdl] + args + ["--diagnostics=json"], capture_output=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        FAILURES.append("%s: timed out after %ds" % (what, timeout))
        return None
    dt = time.time() - t0
    if p.returncode not in (0, 1):
        FAILURES.append("%s: exit code %d\n%s" % (what, p.returncode, p.stderr[-2000:]))
        return None
    codes = []
    for line in p.stderr.decode("utf-8", "replace").splitlines():
        try:
            codes.append(json.loads(line)["code"])
        except (ValueError, KeyError):
            FAILURES.append("%s: stderr line is not a JSON diagnostic: %r" % (what, line[:200]))
            return None
    if p.returncode == 1 and not codes:
        FAILURES.append("%s: exit 1 without a diagnostic" % what)
    if expect_codes and not set(codes) & set(expect_codes):
        FAILURES.append("%s: expected one of %s, got %s" % (what, expect_codes, codes[:5]))
    return dt, codes


def write(dirname, name, data):
    path = os.path.join(dirname, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--conformance", required=True)
    ap.add_argument("--big-mb", type=int, default=100)
    a = ap.parse_args()
    rng = random.Random(1234)
    programs = []
    for sub in ("run", "errors"):
        d = os.path.join(a.conformance, sub)
        for f in sorted(os.listdir(d)):
            if f.endswith(".mdl"):
                programs.append(open(os.path.join(d, f), "rb").read())
    with tempfile.TemporaryDirectory() as tmp:
        # Random bytes, some printable-heavy so they get past the lexer.
        for i in range(60):
            n = rng.randint(0, 4000)
            if i % 2:
                alphabet = b"abcdefxyz0123456789 \n\t()[]{}+-*/%@<>=!&|,.:;#\"fn let on if for"
                data = bytes(rng.choice(alphabet) for _ in range(n))
            else:
                data = bytes(rng.getrandbits(8) for _ in range(n))
            check(a.mdl, ["check", write(tmp, "rand%d.mdl" % i, data)], "random bytes #%d" % i)
        # Truncations and single-byte mutations of real programs.
        for k, src in enumerate(programs):
            for cut in sorted(set([1, len(src) // 3, len(src) // 2, len(src) - 2] +
                                  [rng.randint(0, len(src)) for _ in range(4)])):
                check(a.mdl, ["check", write(tmp, "trunc.mdl", src[:cut])],
                      "program %d truncated at %d" % (k, cut))
            for _ in range(4):
                b = bytearray(src)
                b[rng.randrange(len(b))] = rng.getrandbits(8)
                check(a.mdl, ["check", write(tmp, "mut.mdl", bytes(b))], "program %d mutated" % k)
        check(a.mdl, ["check", write(tmp, "nul.mdl", b"fn main() -> f32 {\x00 return 1.0 }\n")],
              "NUL byte", ["E0001"])
        check(a.mdl, ["check", write(tmp, "utf8.mdl", b"fn main() -> f32 { return \xff\xfe 1.0 }\n")],
              "invalid UTF-8", ["E0001"])
        # Deep nesting, 10,000 levels of each kind.
        n = 10000
        deep = {
            "parentheses": "fn main() -> f32 { return " + "(" * n + "1.0" + ")" * n + " }\n",
            "brackets": "fn main() -> f32 { return " + "[" * n + "1.0" + "]" * n + " }\n",
            "unary minus": "fn main() -> f32 { return " + "-" * n + "1.0 }\n",
            "unary not": "fn main() -> bool { return " + "!" * n + "true }\n",
            "calls": "fn main() -> f32 { return " + "relu(" * n + "1.0" + ")" * n + " }\n",
            "blocks": "fn main() -> f32 {\n" + "on host {\n" * n + "let x = 1.0\n" + "}\n" * n +
                      "return x }\n",
            "ifs": "fn main() -> f32 { return " + "if true { yield " * n + "1.0" + " }" * n + " }\n",
            "binary chain": "fn main() -> f32 { return 1.0" + " + 1.0" * (10 * n) + " }\n",
        }
        for what, text in deep.items():
            r = check(a.mdl, ["check", write(tmp, "deep.mdl", text.encode())],
                      "10,000 levels of " + what)
            if r:
                print("nesting %-14s %.2fs  %s" % (what, r[0], r[1][:1]))
        # A 100 MB source: many small functions.
        path = os.path.join(tmp, "big.mdl")
        body = "fn layer%d(x: f32[4]) -> f32[4] {\n  let y = x * 2.0 + 1.0\n  return relu(y)\n}\n"
        with open(path, "w") as f:
            written, i = 0, 0
            while written < a.big_mb * 1000 * 1000:
                s = body % i
                f.write(s)
                written += len(s)
                i += 1
            f.write("fn main() -> f32[4] { return layer0(ones(f32[4])) }\n")
        r = check(a.mdl, ["check", path], "%d MB source" % a.big_mb, timeout=900)
        if r:
            print("%d MB source (%d functions): %.1fs, codes %s" % (a.big_mb, i, r[0], r[1][:3]))
        os.remove(path)
        # Garbage weight files and inputs.
        write(tmp, "w.safetensors", bytes(rng.getrandbits(8) for _ in range(100)))
        prog = write(tmp, "w.mdl", b'param w : f32[2] = load("w.safetensors", "w")\n'
                                   b"fn main() -> f32[2] { return w }\n")
        check(a.mdl, ["run", prog], "garbage safetensors", ["E0401"])
        check(a.mdl, ["check", prog], "garbage safetensors (check)", ["E0401"])
        write(tmp, "w.safetensors", b"\xff" * 8 + b"{}")
        check(a.mdl, ["run", prog], "huge safetensors header length", ["E0401"])
        os.remove(os.path.join(tmp, "w.safetensors"))
        check(a.mdl, ["run", prog], "missing weight file", ["E0401"])
        inp = write(tmp, "x.npy", b"\x93NUMPY\x01\x00" + b"\xff" * 40)
        prog2 = write(tmp, "in.mdl", b"fn main(x: f32[2]) -> f32[2] { return x }\n")
        check(a.mdl, ["run", prog2, "--input", "x=" + inp], "garbage .npy input", ["E0402"])
        check(a.mdl, ["run", prog2], "missing input", ["E0402"])
        check(a.mdl, ["run", os.path.join(tmp, "nonexistent.mdl")], "missing source", ["E0106"])
    if FAILURES:
        for f in FAILURES:
            print("FAIL: " + f)
        sys.exit(1)
    print("robustness: all cases ended in a diagnostic or success")


if __name__ == "__main__":
    main()
