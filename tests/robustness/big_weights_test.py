#!/usr/bin/python3
"""A weight file larger than 4 GiB loads and runs with peak memory far below
its size: weights are memory-mapped and no offset or size is 32-bit.

The file is generated sparse (zero-filled, a few real values near its end),
so it takes almost no disk space, and deleted afterwards.
"""
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile

N = 1_200_000_000          # f32 elements: 4.8 GB of data
AT = 1_100_000_000         # where the real values sit (beyond 4 GiB)
LIMIT_KB = 512 * 1024      # peak RSS allowed: 512 MiB, about 10% of the file


def main():
    mdl = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.safetensors")
        header = json.dumps({"w": {"dtype": "F32", "shape": [N],
                                   "data_offsets": [0, 4 * N]}}).encode()
        header += b" " * ((8 - len(header) % 8) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            base = f.tell()
            f.seek(base + 4 * AT)
            f.write(struct.pack("<4f", 1.5, 2.5, 3.5, 4.5))
            f.truncate(base + 4 * N)
        size = os.path.getsize(path)
        assert size > 4 * 2**30, size
        prog = os.path.join(tmp, "big.mdl")
        with open(prog, "w") as f:
            f.write('param w : f32[%d] = load("big.safetensors", "w")\n' % N)
            f.write("fn main(x: f32[4]) -> (f32[4], f32) {\n")
            f.write("  let tail = w[%d:%d]\n" % (AT, AT + 4))
            f.write("  return tail * x, w[%d]\n}\n" % (N - 1))
        x = os.path.join(tmp, "x.npy")
        hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
        hdr += " " * (64 - 10 - len(hdr) - 1) + "\n"
        with open(x, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
            f.write(struct.pack("<4f", 2.0, 2.0, 2.0, 2.0))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        p = subprocess.run([mdl, "run", prog, "--input", "x=" + x], capture_output=True,
                           text=True, timeout=600)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if p.returncode != 0:
            print("FAIL: exit %d\n%s" % (p.returncode, p.stderr))
            sys.exit(1)
        if "[3. 5. 7. 9.]" not in p.stdout or "result 1: f32\n0." not in p.stdout:
            print("FAIL: wrong result:\n" + p.stdout)
            sys.exit(1)
        if peak > LIMIT_KB:
            print("FAIL: peak RSS %d KB for a %d-byte weight file" % (peak, size))
            sys.exit(1)
        c = subprocess.run([mdl, "check", prog], capture_output=True, text=True, timeout=600)
        if c.returncode != 0:
            print("FAIL: mdl check exit %d\n%s" % (c.returncode, c.stderr))
            sys.exit(1)
        print("PASS: %.2f GB weight file ran with peak RSS %.1f MB (before: %d KB)"
              % (size / 1e9, peak / 1024.0, before))


if __name__ == "__main__":
    main()
