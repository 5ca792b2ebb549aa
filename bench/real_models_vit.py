#!/usr/bin/python3
"""ViT-B/16 in bf16: mdl against torchvision's vit_b_16 in bf16, same weights,
same input, same run (issue 14).

  bench/real_models_vit.py [--mdl build/bin/mdl] [--rounds 3] [--work DIR]
                           [--bf16-rate build/bench/bf16_rate] [--json OUT]

The mdl program (written into the work directory with its weights) is the
model torchvision builds: a 16x16 stride-16 patch embedding as a reshape and
a matrix product, a class token and position embeddings, 12 pre-norm
encoder layers (d 768, 12 heads, MLP 3072 with exact GELU, layernorm eps
1e-6), the final layernorm and the classification head; batch 1, 224x224,
every weight and activation bf16. Layernorm and softmax statistics are
computed in f32, as PyTorch's CPU kernels compute them for bf16 tensors
(mdl's kernels do the same, and the JIT's fused rows widen on load).

Every round runs each contender once, in turn, in a fresh process that
warms up and then times its calls: mdl (`mdl run --repeat N`, compilation
excluded), PyTorch eager as a user gets it (its default threads) and in
its best setting (2 threads, OMP_WAIT_POLICY=passive; eager and
torch.jit.trace + freeze). Reported: the median over rounds of each
process's median, mdl's ratio to the fastest PyTorch figure, GFLOP/s from
counted FLOPs, the limit (FLOPs at the machine's bf16 matrix rate,
measured with oneDNN by bench/bf16_rate), mdl's compile time, and the
largest difference between mdl's logits and PyTorch's.

Also importable: bench/real_models.py can call measure() (a dict of every
figure) and report(), or use vit_program(), write_vit() and vit_flops().
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import real_models_util as U  # noqa: E402

VIT = {"layers": 12, "d": 768, "heads": 12, "mlp": 3072, "patch": 16, "image": 224,
       "classes": 1000}


def tokens():
    return (VIT["image"] // VIT["patch"]) ** 2 + 1  # 197


# --- The model ---------------------------------------------------------------------

def vit_program():
    L, d, h, m = VIT["layers"], VIT["d"], VIT["heads"], VIT["mlp"]
    t, dh, g = tokens(), d // VIT["heads"], VIT["image"] // VIT["patch"]
    p = VIT["patch"]
    out = ["# ViT-B/16 in bf16 (bench/real_models_vit.py): torchvision's vit_b_16, batch 1.",
           "# The weights are torchvision's (seeded), transposed for x @ w."]
    def param(name, shape):
        out.append('param %s : bf16[%s] = load("vit.safetensors", "%s")'
                   % (name, ", ".join(str(s) for s in shape), name))
    param("patch_w", [3 * p * p, d])
    param("patch_b", [d])
    param("cls", [1, d])
    param("pos", [t, d])
    for i in range(L):
        for name, shape in (("g1", [d]), ("be1", [d]), ("wqkv", [d, 3 * d]), ("bqkv", [3 * d]),
                            ("wo", [d, d]), ("bo", [d]), ("g2", [d]), ("be2", [d]),
                            ("w1", [d, m]), ("b1", [m]), ("w2", [m, d]), ("b2", [d])):
            param("%s_%d" % (name, i), shape)
    param("gf", [d])
    param("bef", [d])
    param("head_w", [d, VIT["classes"]])
    param("head_b", [VIT["classes"]])
    out.append("")
    out.append("# One pre-norm encoder layer (torchvision's EncoderBlock).")
    out.append("fn block(x: bf16[%d, %d], g1: bf16[%d], be1: bf16[%d], wqkv: bf16[%d, %d], "
               "bqkv: bf16[%d], wo: bf16[%d, %d], bo: bf16[%d], g2: bf16[%d], be2: bf16[%d], "
               "w1: bf16[%d, %d], b1: bf16[%d], w2: bf16[%d, %d], b2: bf16[%d]) -> bf16[%d, %d] {"
               % (t, d, d, d, d, 3 * d, 3 * d, d, d, d, d, d, d, m, m, m, d, d, t, d))
    out.append("  let qkv = layernorm(x, g1, be1, eps = 1e-6) @ wqkv + bqkv")
    out.append("  let q = transpose(reshape(qkv[:, 0:%d], [%d, %d, %d]), perm = [1, 0, 2])"
               % (d, t, h, dh))
    out.append("  let k = transpose(reshape(qkv[:, %d:%d], [%d, %d, %d]), perm = [1, 2, 0])"
               % (d, 2 * d, t, h, dh))
    out.append("  let v = transpose(reshape(qkv[:, %d:%d], [%d, %d, %d]), perm = [1, 0, 2])"
               % (2 * d, 3 * d, t, h, dh))
    out.append("  let p = softmax(q @ k * %r, axis = -1)" % (1 / dh ** 0.5))
    out.append("  let ctx = reshape(transpose(p @ v, perm = [1, 0, 2]), [%d, %d])" % (t, d))
    out.append("  let a = x + (ctx @ wo + bo)")
    out.append("  let f = gelu(layernorm(a, g2, be2, eps = 1e-6) @ w1 + b1) @ w2 + b2")
    out.append("  return a + f")
    out.append("}")
    out.append("")
    out.append("fn main(img: bf16[1, 3, %d, %d]) -> bf16[1, %d] {"
               % (VIT["image"], VIT["image"], VIT["classes"]))
    out.append("  # 16x16 patches, channel-major inside a patch (the convolution's weight")
    out.append("  # order), one row per patch: the stride-16 convolution as a product.")
    out.append("  let patches = reshape(transpose(reshape(img, [3, %d, %d, %d, %d]), "
               "perm = [1, 3, 0, 2, 4]), [%d, %d])" % (g, p, g, p, g * g, 3 * p * p))
    out.append("  let x = concat([cls, patches @ patch_w + patch_b], axis = 0) + pos")
    for i in range(L):
        args = ", ".join("%s_%d" % (n, i) for n in ("g1", "be1", "wqkv", "bqkv", "wo", "bo",
                                                    "g2", "be2", "w1", "b1", "w2", "b2"))
        out.append("  let x = block(x, %s)" % args)
    out.append("  let c = layernorm(x[0:1], gf, bef, eps = 1e-6)")
    out.append("  return c @ head_w + head_b")
    out.append("}")
    return "\n".join(out) + "\n"


def torch_vit():
    """torchvision's vit_b_16 with seeded random weights, in bf16, eval mode."""
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.vit_b_16().eval()
    # torchvision initializes the head to zeros: random weights make the
    # logits (what is compared) depend on everything before them.
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 0.02)
        model.heads.head.bias.normal_(0, 0.02)
    return model.to(torch.bfloat16)


def vit_weights(model):
    """mdl's weights (float32 arrays holding bf16 values) from the model."""
    sd = {k: v.float().numpy() for k, v in model.state_dict().items()}
    d, p = VIT["d"], VIT["patch"]
    w = {"patch_w": sd["conv_proj.weight"].reshape(d, 3 * p * p).T,
         "patch_b": sd["conv_proj.bias"],
         "cls": sd["class_token"].reshape(1, d),
         "pos": sd["encoder.pos_embedding"].reshape(tokens(), d),
         "gf": sd["encoder.ln.weight"], "bef": sd["encoder.ln.bias"],
         "head_w": sd["heads.head.weight"].T, "head_b": sd["heads.head.bias"]}
    for i in range(VIT["layers"]):
        pre = "encoder.layers.encoder_layer_%d." % i
        w.update({
            "g1_%d" % i: sd[pre + "ln_1.weight"], "be1_%d" % i: sd[pre + "ln_1.bias"],
            "wqkv_%d" % i: sd[pre + "self_attention.in_proj_weight"].T,
            "bqkv_%d" % i: sd[pre + "self_attention.in_proj_bias"],
            "wo_%d" % i: sd[pre + "self_attention.out_proj.weight"].T,
            "bo_%d" % i: sd[pre + "self_attention.out_proj.bias"],
            "g2_%d" % i: sd[pre + "ln_2.weight"], "be2_%d" % i: sd[pre + "ln_2.bias"],
            "w1_%d" % i: sd[pre + "mlp.0.weight"].T, "b1_%d" % i: sd[pre + "mlp.0.bias"],
            "w2_%d" % i: sd[pre + "mlp.3.weight"].T, "b2_%d" % i: sd[pre + "mlp.3.bias"],
        })
    return w


def vit_input():
    x = np.random.default_rng(14).standard_normal((1, 3, VIT["image"], VIT["image"]))
    return U.round_bf16(x.astype(np.float32))


def write_vit(work):
    """vit.mdl, vit.safetensors, vit_x.npy (bf16) into `work`."""
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "vit.mdl"), "w") as f:
        f.write(vit_program())
    U.save_bf16_safetensors(os.path.join(work, "vit.safetensors"), vit_weights(torch_vit()))
    U.save_bf16_npy(os.path.join(work, "vit_x.npy"), vit_input())


def vit_flops():
    """Multiply-adds x 2 of the products, plus the attention products."""
    L, d, m, t = VIT["layers"], VIT["d"], VIT["mlp"], tokens()
    p = VIT["patch"]
    per_layer = 2 * t * d * 3 * d + 2 * 2 * t * t * d + 2 * t * d * d + 2 * 2 * t * d * m
    return L * per_layer + 2 * (t - 1) * 3 * p * p * d + 2 * d * VIT["classes"]


# --- Running -------------------------------------------------------------------------

def run_torch(mode, threads, extra, repeat, save=None):
    """torchvision's model in a fresh process (this script with --peer)."""
    return U.run_peer(os.path.abspath(__file__), ["--peer", mode], threads, extra, repeat, save)


def peer_main(mode, threads, repeat, save):
    import torch
    if threads:
        torch.set_num_threads(threads)
    x = torch.from_numpy(vit_input()).to(torch.bfloat16)
    U.time_peer_model(torch_vit(), (x,), mode, repeat, save, 1.0)


def measure(mdl, work, rounds=3, repeat=20, rate_tool=None, log=sys.stderr):
    """Everything the report gives, as a dict (see main): the logits equal
    PyTorch's within bf16 rounding, then the timed rounds."""
    write_vit(work)
    return U.compare_with_torch(
        "vit", mdl, os.path.join(work, "vit.mdl"), ["img=" + os.path.join(work, "vit_x.npy")],
        run_torch, work, rounds, repeat, max(3, repeat // 2), vit_flops(),
        "ViT-B/16 in bf16, batch 1 (torchvision vit_b_16)", rate_tool, log)


def report(res, rounds):
    U.report_comparison(res, rounds, "ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    U.add_common_arguments(ap, os.path.join(HERE, "..", "build", "bin", "mdl"), 3, 20)
    a = ap.parse_args()
    if a.peer:
        peer_main(a.peer, a.threads, a.repeat, a.save)
        return 0
    res = measure(a.mdl, a.work or tempfile.mkdtemp(prefix="mdl-vit-"), a.rounds, a.repeat,
                  a.bf16_rate)
    report(res, a.rounds)
    U.write_json(a.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
