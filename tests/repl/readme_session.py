#!/usr/bin/python3
"""The REPL session that README.md shows is what `mdl repl` prints.

The fenced block of README.md that starts with the REPL's greeting is read
as a terminal transcript: lines after the prompts `mdl> ` and `...> ` are
the inputs, the other lines what mdl prints. The inputs are piped into
`mdl repl` (which prints no prompts when not on a terminal), in a scratch
folder, with standard error merged into standard output, and the output is
compared with the transcript as tests/readme/check_readme.py compares
commands: a line `...` stands for any number of lines, numbers compare
within a relative 1e-5, trailing spaces are dropped. FAIL: when they differ.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "readme"))
from check_readme import matches  # noqa: E402

GREETING = "mdl repl: :help lists the commands, Ctrl-D leaves"


def transcript(readme):
    lines, inside, block = open(readme, encoding="utf-8").read().splitlines(), False, None
    for line in lines:
        if line.startswith("```"):
            if block is not None:
                return block
            inside = not inside
            continue
        if inside and block is None and line == GREETING:
            block = []
        elif block is not None:
            block.append(line.rstrip())
    return block


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--readme", required=True)
    a = ap.parse_args()
    block = transcript(a.readme)
    if not block:
        print("FAIL: README.md shows no REPL session (a block starting with %r)" % GREETING)
        return 1
    inputs = [l[5:] for l in block if l.startswith(("mdl> ", "...> "))]
    want = [l for l in block if not l.startswith(("mdl> ", "...> "))]
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([os.path.abspath(a.mdl), "repl"], input="\n".join(inputs) + "\n",
                           cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
    got = [l.rstrip() for l in r.stdout.splitlines()]
    if matches(want, got):
        print("ok: the README's REPL session (%d inputs)" % len(inputs))
        return 0
    print("FAIL: the README's REPL session prints something else than the README shows")
    print("--- README shows:\n" + "\n".join(want))
    print("--- mdl repl prints (exit status %d):\n%s" % (r.returncode, "\n".join(got)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
