#!/usr/bin/python3
"""The mpc device's parties as three `mdl run --mpc-party I` processes on
loopback, over TLS with the certificates `mdl mpc-certs` makes.

  process_mode.py --mdl BIN --conformance DIR

Checks, printing one PASS/FAIL line each (FAIL makes the exit code 1):
- mpc-certs writes the CA and three party certificates, refuses to replace
  them without --force (E0408), and replaces them with it;
- every conformance program with an mpc device gives its expected results
  in every party, on both backends, with its arguments spread over the
  parties (argument k given by party k mod 3); the three parties' results
  are identical;
- with the same --mpc-test-seed, three processes give exactly the results
  of the threads mode (all arguments given by party 0, as in threads mode);
- a party whose certificate another authority signed is refused: every
  party ends with a coded diagnostic, none hangs;
- a party killed during a run, and one stopped (SIGSTOP) during a run, end
  the run on the others with a coded diagnostic within the --mpc-timeout
  bound;
- an argument a party does not give may only enter the mpc device (E0402),
  and must have a static shape (E0402).
"""
import argparse
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

failures = 0


def check(ok, what, detail=""):
    global failures
    print(("PASS: " if ok else "FAIL: ") + what + ("" if ok or not detail else "\n" + detail))
    if not ok:
        failures += 1
    return ok


def free_ports(n):
    """n distinct loopback ports that were free a moment ago."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def peers():
    return ",".join("127.0.0.1:%d" % p for p in free_ports(3))


def start_parties(mdl, program, tls, party_args, extra=(), peer_list=None, tls_dirs=None):
    """Starts the three parties; party_args[i] are party i's own options."""
    peer_list = peer_list or peers()
    procs = []
    for i in range(3):
        cmd = [mdl, "run", program, "--mpc-party", str(i), "--mpc-peers", peer_list,
               "--mpc-tls", (tls_dirs[i] if tls_dirs else tls)] + list(extra) + party_args[i]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    return procs


def finish(procs, limit):
    """Waits for every party (killing them after `limit` seconds); returns
    [(exit code, stdout, stderr)] and whether they all ended in time."""
    deadline = time.time() + limit
    results, in_time = [], True
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            in_time = False
            p.kill()
            out, err = p.communicate()
        results.append((p.returncode, out, err))
    return results, in_time


def crashed(code):
    return code < 0 or code >= 128


def inputs_of(program):
    d = program[:-len(".mdl")] + ".inputs"
    return sorted(glob.glob(os.path.join(d, "*.npy")))


def expected_of(program):
    d = program[:-len(".mdl")] + ".expected"
    tol = {"rtol": 0.0, "atol": 0.0}
    for line in open(os.path.join(d, "tolerance")):
        k, v = line.split()
        tol[k] = float(v)
    return sorted(glob.glob(os.path.join(d, "*.npy"))), tol


def results_in(out_dir):
    return [np.load(f) for f in sorted(glob.glob(os.path.join(out_dir, "*.npy")))]


def certificates(mdl, work):
    tls = os.path.join(work, "certs")
    p = subprocess.run([mdl, "mpc-certs", tls], capture_output=True, text=True)
    names = ["ca.pem"] + ["party%d.%s" % (i, e) for i in range(3) for e in ("pem", "key")]
    made = p.returncode == 0 and all(os.path.exists(os.path.join(tls, n)) for n in names)
    check(made, "mpc-certs writes ca.pem and party0..2 .pem/.key", p.stdout + p.stderr)
    keymode = os.stat(os.path.join(tls, "party0.key")).st_mode & 0o777 if made else 0
    check(keymode == 0o600, "mpc-certs: private keys are readable by their owner only",
          "mode %o" % keymode)
    before = open(os.path.join(tls, "ca.pem")).read() if made else ""
    p = subprocess.run([mdl, "mpc-certs", tls], capture_output=True, text=True)
    kept = made and open(os.path.join(tls, "ca.pem")).read() == before
    check(p.returncode == 1 and "E0408" in p.stderr and kept,
          "mpc-certs refuses to replace certificates without --force (E0408)",
          "exit %d\n%s" % (p.returncode, p.stderr))
    p = subprocess.run([mdl, "mpc-certs", tls, "--force"], capture_output=True, text=True)
    check(p.returncode == 0 and open(os.path.join(tls, "ca.pem")).read() != before,
          "mpc-certs --force replaces them", p.stderr)
    return tls


def public_arguments(mdl, program, tls):
    """The arguments that a party must hold to run `program`: those read
    outside the mpc device (a GPU layer's input), as E0402 names them."""
    p = subprocess.run([mdl, "run", program, "--mpc-party", "0", "--mpc-peers", peers(),
                        "--mpc-tls", tls, "--mpc-timeout", "0.5"],
                       capture_output=True, text=True, timeout=60)
    return set(re.findall(r"E0402\]: argument '(\w+)' is not given to this party", p.stderr))


def conformance_runs(mdl, conformance, tls, work):
    programs = [p for p in sorted(glob.glob(os.path.join(conformance, "run", "*.mdl")))
                if re.search(r"^\s*device\s+\w+\s*=\s*mpc\s*\(", open(p).read(), re.M)]
    check(len(programs) >= 3, "the conformance suite has mpc programs (%d)" % len(programs))
    for program in programs:
        name = os.path.basename(program)
        wanted, tol = expected_of(program)
        public = public_arguments(mdl, program, tls)
        for backend in ("interp", "jit"):
            party_args = [[], [], []]
            for k, f in enumerate(inputs_of(program)):
                arg = os.path.basename(f)[:-len(".npy")]
                for i in (range(3) if arg in public else [k % 3]):
                    party_args[i] += ["--input", "%s=%s" % (arg, f)]
            outs = []
            for i in range(3):
                outs.append(os.path.join(work, "%s.%s.p%d" % (name, backend, i)))
                party_args[i] += ["--out", outs[i], "--quiet"]
            procs = start_parties(mdl, program, tls, party_args, ["--backend", backend])
            res, in_time = finish(procs, 120)
            what = "%s (%s): three processes" % (name, backend)
            if not check(in_time and all(r[0] == 0 for r in res), what + " exit 0",
                         "\n".join("party %d: exit %d\n%s" % (i, r[0], r[2])
                                   for i, r in enumerate(res))):
                continue
            got = [results_in(o) for o in outs]
            same = all(len(g) == len(got[0]) and
                       all(np.array_equal(a, b) for a, b in zip(g, got[0])) for g in got)
            check(same, what + ": every party has the same revealed results")
            want = [np.load(f) for f in wanted]
            ok = len(got[0]) == len(want)
            detail = ""
            for g, w in zip(got[0], want):
                if g.dtype != w.dtype or g.shape != w.shape:
                    ok, detail = False, "%s%s vs %s%s" % (g.dtype, g.shape, w.dtype, w.shape)
                elif not np.all(np.abs(g.astype(np.float64) - w) <=
                                tol["atol"] + tol["rtol"] * np.abs(w)):
                    ok, detail = False, "got\n%s\nexpected\n%s" % (g, w)
            check(ok, what + ": results within the expected tolerance", detail)
    return programs


def same_seed(mdl, program, tls, work):
    """Threads and processes with one test seed: the same bits."""
    ins = []
    for f in inputs_of(program):
        ins += ["--input", "%s=%s" % (os.path.basename(f)[:-4], f)]
    seed = ["--mpc-test-seed", "12345", "--quiet"]
    threads_out = os.path.join(work, "seed.threads")
    p = subprocess.run([mdl, "run", program, "--out", threads_out] + seed + ins,
                       capture_output=True, text=True)
    if not check(p.returncode == 0, "threads mode with a test seed runs", p.stderr):
        return
    outs = [os.path.join(work, "seed.p%d" % i) for i in range(3)]
    party_args = [ins + ["--out", outs[0]], ["--out", outs[1]], ["--out", outs[2]]]
    res, in_time = finish(start_parties(mdl, program, tls, party_args, seed), 120)
    if not check(in_time and all(r[0] == 0 for r in res), "processes with a test seed run",
                 "\n".join(r[2] for r in res)):
        return
    want = results_in(threads_out)
    for i in range(3):
        got = results_in(outs[i])
        check(len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want)),
              "same seed: party %d's results are bit for bit those of the threads mode" % i)
    # Without a seed the randomness is fresh: the revealed values agree to
    # within truncation's error, but the shares, and so the low bits, differ.


def refused_certificate(mdl, program, tls, work):
    other = os.path.join(work, "other-ca")
    subprocess.run([mdl, "mpc-certs", other], capture_output=True, check=True)
    ins = []
    for f in inputs_of(program):
        ins += ["--input", "%s=%s" % (os.path.basename(f)[:-4], f)]
    t0 = time.time()
    procs = start_parties(mdl, program, tls, [ins, [], []], ["--mpc-timeout", "5", "--quiet"],
                          tls_dirs=[tls, tls, other])
    res, in_time = finish(procs, 60)
    took = time.time() - t0
    check(in_time, "refused certificate: every party ends (%.1f s)" % took)
    for i, (code, out, err) in enumerate(res):
        check(code == 1 and re.search(r"error\[E04\d\d\]", err) is not None and
              "result" not in out,
              "refused certificate: party %d ends with a coded diagnostic and no result" % i,
              "exit %d\n%s" % (code, err))
    check(any("certificate" in r[2] for r in res),
          "refused certificate: a party says it was the certificate",
          "\n".join(r[2] for r in res))


LONG_PROGRAM = """device host = cpu()
device sec = mpc()

fn main(x: f32[32, 32]) -> f32[32, 32] {
  let y = for i in 0..1000000 carry (h = to(x, sec)) {
    let n = relu(h @ h) * 0.01 on sec
    yield n
  }
  return reveal(y)
}
"""


def failing_peer(mdl, work, how):
    """Party 2 is killed or stopped mid-run: the others end within the bound."""
    program = os.path.join(work, "long.mdl")
    with open(program, "w") as f:
        f.write(LONG_PROGRAM)
    x = os.path.join(work, "x32.npy")
    np.save(x, (np.random.default_rng(1).standard_normal((32, 32)) * 0.1).astype(np.float32))
    tls = os.path.join(work, "certs")
    timeout = 3
    procs = start_parties(mdl, program, tls, [["--input", "x=" + x], [], []],
                          ["--mpc-timeout", str(timeout), "--quiet", "--backend", "interp"])
    time.sleep(2.0)  # connected and computing
    running = all(p.poll() is None for p in procs)
    t0 = time.time()
    os.kill(procs[2].pid, signal.SIGKILL if how == "killed" else signal.SIGSTOP)
    deadline = time.time() + timeout + 20
    ended = []
    for p in procs[:2]:
        try:
            out, err = p.communicate(timeout=max(0.1, deadline - time.time()))
            ended.append((p.returncode, err, time.time() - t0))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            ended.append((None, err, None))
    if how != "killed":
        os.kill(procs[2].pid, signal.SIGKILL)
    procs[2].communicate()
    check(running, "%s peer: the three parties were running when party 2 was %s" % (how, how))
    for i, (code, err, took) in enumerate(ended):
        check(code == 1 and re.search(r"error\[E04\d\d\]", err) is not None,
              "%s peer: party %d ends with a coded diagnostic%s" %
              (how, i, "" if took is None else " after %.1f s (bound: %d s + slack)" %
               (took, timeout)),
              "exit %s\n%s" % (code, err))


ABSENT_ON_HOST = """device host = cpu()
device sec = mpc()

fn main(x: f32[4], w: f32[4]) -> f32[4] {
  let s = x * w on sec
  let t = w + 1.0 on host
  return reveal(s) + t
}
"""

ABSENT_SYMBOLIC = """device host = cpu()
device sec = mpc()

fn main(x: f32[n], w: f32[n]) -> f32[n] {
  let s = x * w on sec
  return reveal(s)
}
"""


def absent_arguments(mdl, work):
    tls = os.path.join(work, "certs")
    w = os.path.join(work, "w4.npy")
    np.save(w, np.ones(4, np.float32))
    for name, text, needle in (("absent_on_host", ABSENT_ON_HOST, "outside the mpc device"),
                               ("absent_symbolic", ABSENT_SYMBOLIC, "shape is not static")):
        program = os.path.join(work, name + ".mdl")
        with open(program, "w") as f:
            f.write(text)
        # Party 0 holds x only; the check comes before any connection.
        p = subprocess.run([mdl, "run", program, "--mpc-party", "0", "--mpc-peers", peers(),
                            "--mpc-tls", tls, "--mpc-timeout", "2", "--input", "x=" + w],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 1 and "E0402" in p.stderr and needle in p.stderr,
              "%s: refused with E0402 (%s)" % (name, needle), "exit %d\n%s" % (p.returncode,
                                                                         p.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--conformance", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        tls = certificates(a.mdl, work)
        programs = conformance_runs(a.mdl, a.conformance, tls, work)
        if programs:
            logistic = [p for p in programs if "logistic" in p] or programs
            same_seed(a.mdl, logistic[0], tls, work)
            refused_certificate(a.mdl, logistic[0], tls, work)
        failing_peer(a.mdl, work, "killed")
        failing_peer(a.mdl, work, "stopped")
        absent_arguments(a.mdl, work)
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
