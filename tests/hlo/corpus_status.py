#!/usr/bin/python3
"""Imports every file of the HLO corpus (../shared/corpus/hlo) and checks the
status each one must have:

  runs       imports, and `mdl run` runs the entry end to end on generated
             inputs, writing one result per ROOT leaf; `mdl import` writes an
             .mdl whose run gives the same results.
  runs-fill  the same with --fill-elided=zeros (its dump elides constants);
             without the flag it is rejected with E0601 'elided-constant'.
  heavy      imports and checks (`mdl check`: IR verified, specialized and
             placed) and its .mdl checks too; running needs more memory or
             time than a test may take, so it runs only with --heavy.
  E0601      rejected with E0601 diagnostics naming exactly these constructs
             (and no other error).

  corpus_status.py --mdl BIN --corpus DIR [--backend jit|interp] [--heavy] [FILE ...]
Prints PASS/FAIL per file; exits 1 on any failure.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlo_util  # noqa: E402

BACKEND = []  # set from --backend
HALF_TOL = 2.0 ** -6  # a few units of a bf16's last place
COLLECTIVES = {"all-reduce", "all-gather", "partition-id"}
EXPECT = {
    "jax_argsort_sort_gather_bf16": "runs",
    "jax_depthwise_conv_bf16": "runs",
    "jax_diffrax_ode_solver_cond_while_call": "runs-fill",
    "jax_issue26021_f64_linalg": {"custom-call:lapack_dgeqrf_ffi", "custom-call:lapack_dorgqr_ffi",
                                  "custom-call:lapack_dtrsm_ffi"},
    "jax_llama31_405b_fp8_spmd_train_step": COLLECTIVES | {
        "custom-call:te_fused_attn_forward_ffi", "custom-call:te_fused_attn_backward_ffi",
        "type:f8e4m3fn", "type:f8e5m2"},
    "jax_maxtext_transformer_train_step_before_opt": "heavy",
    "jax_mha_attention_block_bf16": "runs",
    "jax_pjit_attention_softmax_sharded": "runs",
    "jax_scan_while_loop_stackframes": "runs",
    "keras_jax_dlrm_mlp_test_step_f32": "runs-fill",
    "keras_jax_resnet50_predict_f32": "runs",
    "pytorch_xla_mobilenet_v2_train_step": "heavy",
    "tfcompile_fully_connected_relu_model": "runs",
    "xla_2017_isolated_convolution": "runs",
    "xla_2020_select_and_scatter_multiline": "runs",
    "xla_cpu_parallel_dots_custom_fusions": "runs",
    "xla_fuzz_rand_34_while_elementwise": "runs",
    "xla_gpu_scheduled_triton_fusion": "runs",
    "xla_runner_dynamic_shape_tiled_layout": {"dynamic-shape"},
    "xla_runner_while_no_module_header": "runs",
    "xla_test_case_conditional_tuples": "runs",
    "xla_test_constant_types": {"custom-call:Pin", "type:s16"},
    "xla_test_if_conditional": "runs",
    "xla_test_import_all_ops_dtypes": {
        "after-all", "all-gather", "all-reduce", "all-to-all", "async-done", "async-start",
        "async-update", "cholesky", "collective-broadcast", "collective-permute", "complex",
        "convolution", "custom-call:CustomCallConsumeTuple", "custom-call:CustomCallTuple",
        "custom-call:SetBound", "custom-call:foo", "dynamic-shape", "fft", "get-dimension-size",
        "imag", "infeed", "outfeed", "partition-id", "real", "reduce", "reduce-scatter", "rng",
        "rng-bit-generator", "scan", "set-dimension-size", "stochastic-convert", "topk",
        "triangular-solve", "type:c128", "type:c64", "type:f4e2m1fn", "type:f8e3m4",
        "type:f8e4m3", "type:f8e4m3b11fnuz", "type:f8e4m3fn", "type:f8e4m3fnuz", "type:f8e5m2",
        "type:f8e5m2fnuz", "type:f8e8m0fnu", "type:s16", "type:s4", "type:token", "type:u16",
        "type:u4"},
    "xla_test_while_loops": {"custom-call:foo"},
}


def diagnostics(stderr):
    out = []
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def rejected(mdl, path, want):
    p = hlo_util.run([mdl, "check", path, "--diagnostics=json"])
    if p.returncode != 1:
        return "expected exit 1 with E0601, got %d" % p.returncode
    errors = [d for d in diagnostics(p.stderr) if d["severity"] == "error"]
    other = [d for d in errors if d["code"] != "E0601"]
    if other:
        return "errors other than E0601: %s" % [(d["code"], d["message"]) for d in other[:3]]
    got = set()
    for d in errors:
        msg = d["message"]
        if d["line"] <= 0:
            return "E0601 without a line: " + msg
        start = msg.find("'")
        got.add(msg[start + 1:msg.find("'", start + 1)])
    if got != want:
        return "E0601 names %s; expected %s" % (sorted(got - want) or "no extra",
                                                sorted(want - got) or "none missing")
    return None


def run_entry(mdl, path, extra, tmp, tag):
    args = hlo_util.entry_args(mdl, path, extra)
    rng = np.random.default_rng(0)
    cmd = [mdl, "run", path, "--quiet", "--out", os.path.join(tmp, tag)] + extra + BACKEND
    for i, (dt, shape) in enumerate(args):
        f = os.path.join(tmp, "in%d.npy" % i)
        if not os.path.exists(f):
            hlo_util.write_input(f, dt, shape, rng)
        cmd.append("--input=%d=%s" % (i, f))
    return hlo_util.run(cmd, timeout=3600)


def results(d):
    return {f: hlo_util.load_npy(os.path.join(d, f)) for f in sorted(os.listdir(d))
            if f.endswith(".npy")}


def runs(mdl, path, extra, heavy):
    with tempfile.TemporaryDirectory() as tmp:
        ir = hlo_util.run([mdl, "check", path] + extra)
        if ir.returncode != 0:
            return "mdl check failed:\n" + ir.stderr[-2000:]
        name = os.path.basename(path)[:-4]
        mdlfile = os.path.join(tmp, "imported", name + ".mdl")
        os.makedirs(os.path.dirname(mdlfile))
        p = hlo_util.run([mdl, "import", path, "-o", mdlfile] + extra)
        if p.returncode != 0:
            return "mdl import failed:\n" + p.stderr[-2000:]
        p = hlo_util.run([mdl, "check", mdlfile])
        if p.returncode != 0:
            return "mdl check of the imported .mdl failed:\n" + p.stderr[-2000:]
        if heavy is False:
            return None
        p = run_entry(mdl, path, extra, tmp, "hlo")
        if p.returncode != 0:
            return "mdl run failed:\n" + p.stderr[-2000:]
        got = results(os.path.join(tmp, "hlo"))
        leaves = len(hlo_util.entry_results(mdl, path, extra))
        if len(got) != leaves:
            return "%d results, expected %d" % (len(got), leaves)
        p = run_entry(mdl, mdlfile, [], tmp, "mdl")
        if p.returncode != 0:
            return "running the imported .mdl failed:\n" + p.stderr[-2000:]
        again = results(os.path.join(tmp, "mdl"))
        for f, a in got.items():
            # bf16 and f16 compute in f32 inside the JIT's fused loops and
            # round where a value is stored: two spellings of one program
            # fused differently agree within the halves' rounding.
            tol = HALF_TOL if hlo_util.is_half_npy(os.path.join(tmp, "hlo", f)) else 1e-6
            err = hlo_util.close(again.get(f, np.zeros(0)), a, tol, tol)
            if err:
                return "the imported .mdl gives other results: %s: %s" % (f, err)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdl", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--heavy", action="store_true", help="also run the heavy files")
    ap.add_argument("--backend", help="mdl run --backend (default: mdl's default)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.backend:
        BACKEND.append("--backend=" + a.backend)
    names = [os.path.basename(f)[:-4] if f.endswith(".hlo") else os.path.basename(f)
             for f in a.files] or sorted(
        f[:-4] for f in os.listdir(a.corpus) if f.endswith(".hlo"))
    failed = 0
    for name in names:
        path = os.path.join(a.corpus, name + ".hlo")
        want = EXPECT.get(name)
        if want is None:
            err = "no expected status for this file"
        elif isinstance(want, set):
            err = rejected(a.mdl, path, want)
        elif want == "runs-fill":
            err = rejected(a.mdl, path, {"elided-constant"}) or runs(
                a.mdl, path, ["--fill-elided=zeros"], True)
        elif want == "heavy":
            err = runs(a.mdl, path, [], a.heavy)
        else:
            err = runs(a.mdl, path, [], True)
        status = want if isinstance(want, str) else "E0601"
        if err:
            failed += 1
            print("FAIL: %s (%s): %s" % (name, status, err))
        else:
            print("PASS: %s (%s)" % (name, status if status != "heavy" or a.heavy else
                                     "heavy: imported and checked, not run"))
        sys.stdout.flush()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
