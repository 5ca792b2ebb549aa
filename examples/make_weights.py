#!/usr/bin/python3
"""Writes examples/mlp.safetensors, the weights of examples/mlp.mdl.

Uses only the Python standard library: the safetensors format is an 8-byte
little-endian header length, a JSON header, then the raw little-endian data.
Values come from a fixed-seed generator so the file is reproducible.
"""
import json
import os
import random
import struct

def tensor(rng, shape, scale):
    n = 1
    for d in shape:
        n *= d
    return [rng.uniform(-scale, scale) for _ in range(n)]

def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        data = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)

def main():
    rng = random.Random(7)
    here = os.path.dirname(os.path.abspath(__file__))
    write_safetensors(os.path.join(here, "mlp.safetensors"), {
        "w1": ([64, 32], tensor(rng, [64, 32], 0.25)),
        "b1": ([32], tensor(rng, [32], 0.1)),
    })

if __name__ == "__main__":
    main()
