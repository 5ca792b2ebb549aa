#!/usr/bin/python3
"""REPL latency benchmark: in one warm `mdl repl` session, each round
defines a new function and evaluates a small expression that calls it;
the target (issue: `mdl repl`) is under 50 ms for the two together.

  bench/repl_bench.py --mdl build/bin/mdl [--rounds 30] [--backend jit|interp]

The session is fed through a pipe (piped mode, `--timings`), one round at a
time, and each round is timed three ways:
  * end to end: from writing the two lines to the value being printed, as
    the client sees it (reading and checking the definition, then compiling
    and running the expression, printing);
  * compile: the REPL's own figure for the expression (parse, check, the
    pipeline, LLVM code generation for what the compile cache does not
    hold, loading), from its `repl: compile` line;
  * run: the call of the compiled expression, from its `repl: run` line.
Then the same expression is evaluated again (everything from the compile
cache). The first rounds warm up (the JIT library loads, oneDNN prepares)
and are not counted. Medians (and min, max) are printed; nothing asserts:
timed assertions do not belong in tests.
"""
import argparse
import os
import re
import select
import statistics
import subprocess
import sys
import time

COMPILE = re.compile(r"repl: compile ([0-9.]+) (ms|us) \((\d+) functions: (\d+) compiled, (\d+) from the cache\)")
RUN = re.compile(r"repl: run ([0-9.]+) (ms|us)")


def ms(value, unit):
    return float(value) / (1000.0 if unit == "us" else 1.0)


class Session:
    def __init__(self, mdl, backend):
        self.p = subprocess.Popen([mdl, "repl", "--timings", "--backend=" + backend],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.out = b""
        self.err = b""

    def evaluate(self, lines, timeout=120):
        """Sends `lines`; waits for the evaluation's `repl: run` line. Returns
        (end-to-end ms, compile ms, run ms, compiled, cached)."""
        start_err = len(self.err)
        t0 = time.perf_counter()
        self.p.stdin.write(("\n".join(lines) + "\n").encode())
        self.p.stdin.flush()
        end = time.time() + timeout
        while True:
            tail = self.err[start_err:].decode(errors="replace")
            run = RUN.search(tail)
            if run:
                wall = (time.perf_counter() - t0) * 1000.0
                comp = COMPILE.search(tail)
                return (wall, ms(*comp.group(1, 2)), ms(*run.group(1, 2)),
                        int(comp.group(4)), int(comp.group(5)))
            if "error[" in tail or time.time() > end or self.p.poll() is not None:
                sys.exit("repl_bench: the session failed (status %r):\n%s\n%s" % (
                    self.p.poll(), self.out[-1000:].decode(errors="replace"), tail[-2000:]))
            r, _, _ = select.select([self.p.stdout, self.p.stderr], [], [], 1.0)
            for f in r:
                data = os.read(f.fileno(), 65536)
                if f is self.p.stdout:
                    self.out += data
                else:
                    self.err += data

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def summary(name, values, unit="ms"):
    return "%-44s median %8.2f %s  (min %.2f, max %.2f)" % (
        name, statistics.median(values), unit, min(values), max(values))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--backend", default="jit", choices=["jit", "interp"])
    a = ap.parse_args()
    s = Session(a.mdl, a.backend)
    s.evaluate(["let v = [0.5, -1.0, 2.0, 3.5]"])  # one evaluation per call
    fresh, again = [], []
    for k in range(a.warmup + a.rounds):
        define = "fn scaled%d(x: f32[N]) { return tanh(x) * %d.0 + 1.0 }" % (k, k + 1)
        expr = "scaled%d(v) + 1.0" % k
        first = s.evaluate([define, expr])
        second = s.evaluate([expr])
        if k >= a.warmup:
            fresh.append(first)
            again.append(second)
    s.close()
    print("mdl repl, %s, %d rounds after %d of warm-up (one session)" %
          (a.backend, a.rounds, a.warmup))
    print("round: fn scaledK(x: f32[N]) { return tanh(x) * K + 1.0 }  then  scaledK(v) + 1.0")
    print(summary("define + evaluate, end to end", [r[0] for r in fresh]))
    print(summary("  the expression's compile (REPL's figure)", [r[1] for r in fresh]))
    print(summary("  the expression's run", [r[2] * 1000 for r in fresh], "us"))
    print("  functions compiled / from the cache: %s" %
          sorted(set("%d/%d" % (r[3], r[4]) for r in fresh)))
    print(summary("same expression again, end to end", [r[0] for r in again]))
    print(summary("  compile (all from the cache)", [r[1] for r in again]))
    print("  functions compiled / from the cache: %s" %
          sorted(set("%d/%d" % (r[3], r[4]) for r in again)))
    med = statistics.median(r[0] for r in fresh)
    print("target: define + evaluate under 50 ms: %s (median %.1f ms)" %
          ("met" if med < 50 else "NOT met", med))
    return 0


if __name__ == "__main__":
    sys.exit(main())
