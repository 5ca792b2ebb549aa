#!/usr/bin/python3
"""The outputs the README shows are the outputs mdl prints.

Every fenced block of README.md whose lines start with `$ mdl ...` is run
from the repository's root (with the `mdl` under test first on PATH,
standard error merged into standard output) and compared with the lines
shown after the command:
  * a line `...` stands for any number of lines (the README elides);
  * numbers compare within a relative 1e-5 (the last digits of vector math
    differ between CPUs); everything else compares exactly, after trailing
    spaces are dropped.
A command whose output differs prints both and FAIL:, so ctest fails.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def blocks(text):
    """(command, expected lines, line number) for each `$ mdl` in a fence."""
    out, inside, cmd = [], False, None
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if cmd:
                out.append(cmd)
            inside, cmd = not inside, None
            continue
        if not inside:
            continue
        if line.startswith("$ mdl "):
            if cmd:
                out.append(cmd)
            cmd = (line[2:], [], no)
        elif cmd:
            cmd[1].append(line.rstrip())
    return out


def same_line(want, got):
    wt, gt = NUMBER.split(want), NUMBER.split(got)
    wn, gn = NUMBER.findall(want), NUMBER.findall(got)
    if wt != gt or len(wn) != len(gn):
        return False
    for a, b in zip(wn, gn):
        x, y = float(a), float(b)
        if abs(x - y) > 1e-5 * max(abs(x), abs(y), 1e-30) and a != b:
            return False
    return True


def matches(want, got):
    """Does `got` match `want`, where a `...` line matches any lines?"""
    if not want:
        return not got
    if want[0] == "...":
        return any(matches(want[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and same_line(want[0], got[0]) and matches(want[1:], got[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--repo", required=True)
    args = ap.parse_args()
    readme = os.path.join(args.repo, "README.md")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(args.mdl)) + os.pathsep + env.get("PATH", "")
    cases = blocks(open(readme, encoding="utf-8").read())
    failed = 0
    for cmd, want, no in cases:
        while want and want[-1] == "":
            want.pop()
        r = subprocess.run(shlex.split(cmd), cwd=args.repo, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        got = [l.rstrip() for l in r.stdout.splitlines()]
        if matches(want, got):
            print("ok: README.md:%d: %s" % (no, cmd))
            continue
        failed += 1
        print("FAIL: README.md:%d: `%s` prints something else than the README shows" % (no, cmd))
        print("--- README shows:\n" + "\n".join(want))
        print("--- mdl prints (exit status %d):\n%s" % (r.returncode, "\n".join(got)))
    if not cases:
        print("FAIL: no `$ mdl` commands found in README.md")
        return 1
    print("%d commands, %d differ" % (len(cases), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
