"""``ringfire demo``: what ringfire is for, in well under a minute on two CPU cores.

Five steps, one line each with its time and what it checked against an independent
reference (NumPy, Python integers, a truth table):

1. handwritten digits classified by a CNN that never sees them: the images are
   encrypted, the model runs on the ciphertexts, the key holder answers the ReLU rounds;
2. a CKKS bootstrap (on the toy ring: small and insecure by design, so it takes a second);
3. an exact BGV dot product of two encrypted integer vectors;
4. FHEW/TFHE NAND gates at 128-bit security, one bootstrap each;
5. CKKS arithmetic at 128-bit security: products, a rotation, a constant.

``ringfire demo --tour`` shows the foundations under them (ring arithmetic, NTT, CRT).
"""

from __future__ import annotations

import json
import time
import warnings
from importlib import resources

import numpy as np

from .. import _core


def _digits():
    """The bundled digits CNN's weights and 64 test images (tools/make_demo_data.py)."""
    with resources.files("ringfire").joinpath("data/digits_demo.npz").open("rb") as f:
        data = dict(np.load(f))
    images = data.pop("images").astype(np.float64)[:, None] / 16.0  # (64, 1, 8, 8) in [0, 1]
    return {k: v.astype(np.float64) for k, v in data.items() if k != "labels"}, images, data["labels"]


def _cnn_onnx(p) -> bytes:
    """Conv 1->4 3x3 (pad 1), ReLU, 2x2 average pooling, Flatten, Gemm 64->10."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Conv", ["x", "Wc", "bc"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "Wf", "bf"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "digits_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(p[k].astype(np.float32), k) for k in ("Wc", "bc", "Wf", "bf")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def _cnn_numpy(p, x):
    """The same network in NumPy: the reference the encrypted logits are checked against."""
    padded = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
    conv = np.zeros((len(x), p["Wc"].shape[0], 8, 8))
    for ky in range(3):
        for kx in range(3):
            conv += p["Wc"][None, :, 0, ky, kx, None, None] * padded[:, None, ky:ky + 8, kx:kx + 8]
    act = np.maximum(conv + p["bc"][None, :, None, None], 0)
    pooled = act.reshape(len(x), -1, 4, 2, 4, 2).mean(axis=(3, 5))
    return pooled.reshape(len(x), -1) @ p["Wf"].T + p["bf"]


def _encrypted_digits(rf) -> tuple[str, dict]:
    params, images, labels = _digits()
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    model = rf.nn.load(_cnn_onnx(params), ctx)
    sk, keys = ctx.keygen()
    client = rf.nn.LocalClient(ctx, sk, keys)  # the key holder, answering the ReLU rounds
    enc = ctx.encrypt_batch(images, keys)
    logits = ctx.decrypt_batch(model(enc, client=client), sk)
    want = _cnn_numpy(params, images)
    agree = int(np.sum(np.argmax(logits, 1) == np.argmax(want, 1)))
    right = int(np.sum(np.argmax(logits, 1) == labels))
    err = float(np.max(np.abs(logits - want)))
    line = (f"{len(images)} handwritten digits encrypted and classified by a CNN (N = 2^13): the same class as the "
            f"model in NumPy for {agree}/{len(images)}, correct {right}/{len(images)}, logits within {err:.1e}")
    return line, {"digits_agree": agree, "digits_images": len(images), "digits_correct": right,
                  "digits_max_logit_error": err, "digits_ok": agree == len(images) and err < 1e-3}


def _bootstrap(rf) -> tuple[str, dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring says it is insecure: that is the point of it here
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE")
        sk, keys = ctx.keygen(bootstrap=True)
    x = np.random.default_rng(1).uniform(-1, 1, ctx.slots)
    spent = ctx.evaluator(keys).mod_switch(ctx.encrypt(x, keys), 0)  # every level used up
    start = time.perf_counter()
    fresh = spent.bootstrap()
    seconds = time.perf_counter() - start
    bits = float(-np.log2(np.max(np.abs(ctx.decrypt(fresh, sk) - x))))
    line = (f"a CKKS bootstrap on the toy ring (N = 2^12, insecure, for speed): level 0 -> {fresh.level} in "
            f"{seconds:.2f} s, {bits:.1f} bits of precision against NumPy (N16_BOOT, 128-bit: `ringfire bench "
            f"bootstrap`)")
    return line, {"bootstrap_bits": bits, "bootstrap_ok": bits > 15 and fresh.level > 0}


def _bgv_dot(rf) -> tuple[str, dict]:
    ctx = rf.bgv.Context(poly_degree=2**13, plain_bits=30)
    sk, keys = ctx.keygen(rotations="power_of_two", swap_rows=True)
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-1000, 1000, ctx.slots) for _ in range(2))
    got = int(np.asarray(ctx.decrypt(ctx.encrypt(a, keys).dot(ctx.encrypt(b, keys)), sk)).reshape(-1)[0])
    want = sum(int(u) * int(v) for u, v in zip(a, b))  # Python integers: no overflow, no rounding
    line = (f"an exact BGV dot product of two encrypted vectors of {ctx.slots} integers (N = 2^13): {got} "
            f"{'==' if got == want else '!='} {want} computed with Python integers")
    return line, {"bgv_dot_exact": got == want}


def _tfhe_gates(rf) -> tuple[str, dict]:
    ctx = rf.tfhe.Context("STD128")
    sk = ctx.keygen()
    x, y = ctx.encrypt([0, 0, 1, 1], sk), ctx.encrypt([0, 1, 0, 1], sk)
    start = time.perf_counter()
    out = ctx.nand(x, y)
    seconds = time.perf_counter() - start
    got = [int(v) for v in ctx.decrypt(out, sk)]
    ok = got == [1, 1, 1, 0]
    line = (f"FHEW/TFHE NAND on four encrypted bit pairs at 128-bit security: truth table {got} "
            f"({'right' if ok else 'WRONG'}), the four gates in {1e3 * seconds:.0f} ms (one bootstrap each)")
    return line, {"tfhe_nand_exact": ok}


def _ckks_arithmetic(rf) -> tuple[str, dict]:
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 60], scale_bits=40)
    sk, keys = ctx.keygen(rotations=[1])
    x = np.random.default_rng(3).uniform(-1, 1, ctx.slots)
    got = ctx.decrypt((ctx.encrypt(x, keys) * ctx.encrypt(x, keys) + 0.5).rotate(1) * 3, sk)
    bits = float(-np.log2(np.max(np.abs(got - 3 * np.roll(x * x + 0.5, -1)))))
    line = (f"CKKS on {ctx.slots} encrypted reals at 128-bit security (N = 2^14): (x * x + 0.5).rotate(1) * 3 "
            f"to {bits:.1f} bits against NumPy")
    return line, {"ckks_bits": bits, "ckks_ok": bits > 15}


STEPS = (_encrypted_digits, _bootstrap, _bgv_dot, _tfhe_gates, _ckks_arithmetic)


def run_demo(json_output: bool = False) -> int:
    import ringfire as rf

    say = (lambda *a: None) if json_output else print
    say("ringfire demo: computing on data that stays encrypted (CPU, "
        f"{_core.num_threads()} threads)\n")
    report: dict = {}
    total = time.perf_counter()
    for number, step in enumerate(STEPS, 1):
        start = time.perf_counter()
        line, checks = step(rf)
        seconds = time.perf_counter() - start
        report.update(checks)
        report[f"{step.__name__.strip('_')}_seconds"] = seconds
        say(f"{number}. [{seconds:5.1f} s] {line}")
    report["seconds"] = time.perf_counter() - total
    report["ok"] = all(v for k, v in report.items() if k.endswith(("_ok", "_exact")))
    if json_output:
        print(json.dumps(report, indent=2))
    else:
        say(f"\n{'All checks passed' if report['ok'] else 'SOME CHECKS FAILED'} in {report['seconds']:.1f} s.")
        say("Next: examples/ (tutorials), `ringfire bench ckks|bgv|tfhe|bootstrap`, `ringfire infer model.onnx`, "
            "`ringfire serve`, `ringfire demo --tour` (the ring arithmetic underneath).")
    return 0 if report["ok"] else 1
