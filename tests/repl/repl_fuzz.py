#!/usr/bin/python3
"""Bad input never crashes `mdl repl`: random bytes, truncated and mutated
sessions (the lit sessions of tests/lit/repl), conformance programs cut
anywhere, and a list of hostile inputs and commands, each fed to
`mdl repl --diagnostics=json` on standard input. Every case must end with
exit status 0 or 1, standard error must hold only JSON diagnostics with a
code, and an exit status of 1 needs at least one error. A signal, an abort,
another status or a timeout prints FAIL:.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

FAILURES = []


def check(mdl, data, what, cwd, extra=(), timeout=300):
    try:
        p = subprocess.run([mdl, "repl", "--diagnostics=json"] + list(extra), input=data,
                           capture_output=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        FAILURES.append("%s: timed out after %ds" % (what, timeout))
        return
    if p.returncode not in (0, 1):
        FAILURES.append("%s: exit status %d\n%s" % (what, p.returncode, p.stderr[-2000:]))
        return
    errors = 0
    for line in p.stderr.decode("utf-8", "replace").splitlines():
        try:
            d = json.loads(line)
            d["code"]
        except (ValueError, KeyError, TypeError):
            FAILURES.append("%s: stderr line is not a JSON diagnostic: %r" % (what, line[:200]))
            return
        errors += d.get("severity") == "error"
    if p.returncode == 1 and not errors:
        FAILURES.append("%s: exit status 1 without an error" % what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--sessions", required=True, help="folder of .test REPL sessions")
    ap.add_argument("--conformance", required=True)
    a = ap.parse_args()
    mdl = os.path.abspath(a.mdl)
    rng = random.Random(4321)
    # The sessions without their :save and :load lines: a mutated path
    # must not write outside the scratch folder.
    sessions = [b"\n".join(l for l in open(os.path.join(a.sessions, f), "rb").read().split(b"\n")
                           if not l.startswith((b":save", b":load")))
                for f in sorted(os.listdir(a.sessions)) if f.endswith(".test")]
    programs = []
    for sub in ("run", "errors"):
        d = os.path.join(a.conformance, sub)
        for f in sorted(os.listdir(d)):
            if f.endswith(".mdl"):
                programs.append(open(os.path.join(d, f), "rb").read())
    cases = 0
    with tempfile.TemporaryDirectory() as cwd:
        # Random bytes; half of them from the characters of sessions.
        alphabet = b"abcxyz0123456789 \n\t()[]{}+-*/%@<>=!&|,.:;#\"_ fn let on if for while :type :ir :time"
        for i in range(40):
            n = rng.randint(0, 3000)
            if i % 2:
                data = bytes(rng.choice(alphabet) for _ in range(n))
            else:
                data = bytes(rng.getrandbits(8) for _ in range(n))
            check(mdl, data, "random bytes #%d" % i, cwd)
            cases += 1
        # Sessions cut anywhere, and with single bytes changed.
        for k, s in enumerate(sessions):
            for j in range(4):
                cut = rng.randint(0, len(s))
                check(mdl, s[:cut], "session %d cut at %d" % (k, cut), cwd)
                b = bytearray(s)
                for _ in range(3):
                    b[rng.randrange(len(b))] = rng.choice(alphabet)
                check(mdl, bytes(b), "session %d mutated (#%d)" % (k, j), cwd)
                cases += 2
        # Conformance programs typed in, cut anywhere, then their main run.
        for k, src in enumerate(programs[::3]):
            cut = rng.randint(0, len(src))
            check(mdl, src[:cut] + b"\nmain()\n", "program %d cut at %d" % (k, cut), cwd)
            cases += 1
        # Hostile inputs and commands.
        hostile = [
            b"\x00\x00\x00\n1 + 1\n",
            b"\xff\xfe\xc3(\n\xed\xa0\x80\n",
            b"x" * 1000000 + b"\n",
            b"(" * 10000 + b"1" + b")" * 10000 + b"\n",
            b"[" * 5000 + b"\n",
            b"\"unterminated\n\"\n",
            b":\n::\n:ir\n:ir x bogus\n:ir 1 fuse fuse\n:type\n:time\n:load\n:save\n",
            b":load /\n:load /dev/null\n:load /nonexistent/x.mdl\n:load \"\"\n",
            b":save /proc/no/such/dir/x.mdl\n:save /dev/null\n:save .\n:save sub/\n",
            b"let\nlet x\nlet x =\nfn\ndevice\nconst\nparam\nimport\n",
            b"import \"/nonexistent.mdl\"\nimport \"/dev/null\"\nimport \"\"\n",
            b"_\n_ + 1\nlet _ = 3\n_\n",
            b"return 1\nyield 2\n}\n{\n)\n]\n",
            b"let x = 1\nconst x = 2\nlet x = 3\nx\n",
            b"fn f(x: f32[N]) { return f(x) }\nf([1.0])\n",
            b"device d = hip(0)\ndevice d = cpu()\nlet a = 1 on d\na\n",
            b"device s = mpc(parties = 3)\nlet q = [1.0] on s\nreveal(q)\n",
            b"ones(f32[100000000000, 100000000000])\n",
            b"let z = zeros(f32[0])\nz\nsum(z)\n:save zero.mdl\n",
            b"fn main() { return 1 }\n:devices\n:reset\n:reset\n:devices\nmain()\n",
            b"1 +\n",
            b"if true { yield 1 }\nelse\n",
        ]
        for k, data in enumerate(hostile):
            check(mdl, data, "hostile input #%d" % k, cwd)
            check(mdl, data, "hostile input #%d (interpreter)" % k, cwd, ["--backend=interp"])
            cases += 2
    for f in FAILURES:
        print("FAIL: " + f)
    print("%d cases, %d failures" % (cases, len(FAILURES)))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
