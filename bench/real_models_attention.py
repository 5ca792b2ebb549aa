#!/usr/bin/python3
"""The corpus attention block in bf16 (jax_mha_attention_block_bf16.hlo):
mdl running the HLO text against the same expression in PyTorch bf16, same
inputs, same run (issue 14).

  bench/real_models_attention.py [--mdl build/bin/mdl] [--rounds 5]
                                 [--corpus ../shared/corpus/hlo] [--json OUT]

The HLO is JAX's scaled dot-product attention of 12 heads of 128 x 64:
scores = q @ k^T * 0.125 (bf16), max and exp in bf16, their sum in f32
rounded to bf16, the division in bf16, then @ v. PyTorch computes exactly
that, written out (torch.bmm, amax, exp, sum of the f32 conversion, div,
bmm), as a user would without a fused attention kernel.

Every round runs each contender once, in turn, in a fresh process that warms
up and then times its calls: mdl (`mdl run FILE.hlo --repeat N`), PyTorch
eager with its defaults and in its best setting (2 threads,
OMP_WAIT_POLICY=passive; eager and torch.jit.trace + freeze). Reported: the
median over rounds of each process's median, mdl's ratio to the fastest
PyTorch figure, GFLOP/s from counted FLOPs (the two products), the limit
(those FLOPs at the machine's bf16 matrix rate, bench/bf16_rate), and the
largest difference between mdl's result and PyTorch's.

Importable: bench/real_models.py can call measure() and report().
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import real_models_util as U  # noqa: E402

HLO = "jax_mha_attention_block_bf16.hlo"
HEADS, SEQ, DIM = 12, 128, 64


def inputs():
    """q, k, v: float32 arrays of bf16 values, [1, 12, 128, 64]."""
    rng = np.random.default_rng(21)
    return [U.round_bf16(rng.standard_normal((1, HEADS, SEQ, DIM)).astype(np.float32))
            for _ in range(3)]


def write_inputs(work):
    os.makedirs(work, exist_ok=True)
    names = []
    for name, x in zip("qkv", inputs()):
        path = os.path.join(work, "attn_%s.npy" % name)
        U.save_bf16_npy(path, x)
        names.append("%s.1=%s" % (name, path))
    return names


def attention_flops():
    return 2 * (2 * HEADS * SEQ * SEQ * DIM)


def peer_main(mode, threads, repeat, save):
    import torch
    if threads:
        torch.set_num_threads(threads)

    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            q, k, v = q.reshape(HEADS, SEQ, DIM), k.reshape(HEADS, SEQ, DIM), v.reshape(HEADS, SEQ, DIM)
            s = torch.bmm(q, k.transpose(1, 2)) * 0.125
            m = s.amax(-1, keepdim=True)
            e = torch.exp(s - m)
            d = e.float().sum(-1, keepdim=True).to(torch.bfloat16)
            return torch.bmm(e / d, v).reshape(1, HEADS, SEQ, DIM)

    args = tuple(torch.from_numpy(x).to(torch.bfloat16) for x in inputs())
    U.time_peer_model(Attention().eval(), args, mode, repeat, save, 0.5)


def run_torch(mode, threads, extra, repeat, save=None):
    return U.run_peer(os.path.abspath(__file__), ["--peer", mode], threads, extra, repeat, save)


def measure(mdl, work, corpus, rounds=5, repeat=500, rate_tool=None, log=sys.stderr):
    """Everything the report gives, as a dict."""
    return U.compare_with_torch(
        "attention", mdl, os.path.join(corpus, HLO), write_inputs(work), run_torch, work, rounds,
        repeat, repeat, attention_flops(),
        "attention block in bf16 (%s: 12 heads, 128 x 64)" % HLO, rate_tool, log)


def report(res, rounds):
    U.report_comparison(res, rounds, "us")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    U.add_common_arguments(ap, os.path.join(HERE, "..", "build", "bin", "mdl"), 5, 500)
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "corpus", "hlo"))
    a = ap.parse_args()
    if a.peer:
        peer_main(a.peer, a.threads, a.repeat, a.save)
        return 0
    res = measure(a.mdl, a.work or tempfile.mkdtemp(prefix="mdl-attn-"), a.corpus, a.rounds,
                  a.repeat, a.bf16_rate)
    report(res, a.rounds)
    U.write_json(a.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
