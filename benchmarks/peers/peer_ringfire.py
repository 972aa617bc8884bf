#!/usr/bin/env python3
"""ringfire's own side of the peer comparison (same routines and JSON as peer_*.py).

Used two ways:
  * imported by benchmarks/ckks_vs_peers.py, which calls ``run_ours(params)``;
  * as a script, with the same CLI as the peer scripts:
        python benchmarks/peers/peer_ringfire.py --n 16384 --coeff-bits 60,40,40,40,40,40,40 \
            --special-bits 60 --threads 2 --json

Only the public ``ringfire.ckks`` API is used (Context, keygen, encode, encrypt,
decrypt, evaluator: multiply/square/relinearize/rescale/mod_switch/add/rotate).
If ``ringfire.ckks`` cannot be imported, run_ours raises ImportError (the driver
reports ringfire as unavailable) and the script prints a JSON document with all
results null.
"""
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

DEFAULTS = {
    "n": 1 << 14,
    "coeff_bits": [60] + [40] * 6,
    "special_bits": [60],
    "scale_bits": 40,
    "dnum": None,
    "threads": 1,
    "repeat": 5,
    "keygen_repeat": None,
    "matmul_repeat": 1,
    "skip_matmul": False,
    "only_matmul": False,
    "seed": 1234,
    "json": True,
}


def _version(rf):
    v = getattr(rf, "__version__", None)
    if v:
        return v
    try:
        from importlib.metadata import version
        return version("ringfire")
    except Exception:  # noqa: BLE001
        return "unknown"


def run_ours(params):
    """Measure ringfire on one parameter set; returns the peer JSON schema as a dict.

    ``params`` keys (missing ones take DEFAULTS): n, coeff_bits, special_bits,
    scale_bits, dnum, threads, repeat, keygen_repeat, matmul_repeat, skip_matmul,
    only_matmul, seed.  Raises ImportError when ringfire.ckks is not available.
    """
    p = dict(DEFAULTS)
    p.update({k: v for k, v in params.items() if v is not None or k == "dnum"})
    p["coeff_bits"] = list(p["coeff_bits"])
    # "auto": the shape a user gets without special_bits (the last coeff_bits entry sizes
    # the special primes, their count and dnum chosen for speed); a list: exactly those.
    p["special_bits"] = p["special_bits"] if p["special_bits"] == "auto" else list(p["special_bits"])
    if p["keygen_repeat"] is None:
        p["keygen_repeat"] = p["repeat"] if p["n"] < (1 << 16) else min(p["repeat"], 3)
    args = types.SimpleNamespace(**p)

    import numpy as np
    import ringfire as rf
    import ringfire.ckks  # noqa: F401  (ImportError propagates: "ringfire unavailable")

    rf.set_num_threads(int(args.threads))
    rep = C.Report("ringfire", _version(rf), args)

    if args.special_bits == "auto":
        ctx = rf.ckks.Context(poly_degree=args.n, coeff_bits=args.coeff_bits + [60], scale_bits=args.scale_bits,
                              security=128)
    else:
        ctx = rf.ckks.Context(poly_degree=args.n, coeff_bits=args.coeff_bits, scale_bits=args.scale_bits,
                              special_bits=args.special_bits, dnum=args.dnum, security=128)
    rep.params["shape"] = {"special_primes": len(ctx.params.p_primes), "dnum": ctx.params.dnum}
    slots = getattr(ctx, "slots", args.n // 2)

    # keygen = secret + public + relinearization keys (no Galois keys), like the peers.
    rep.run("keygen", lambda: C.median_ms(lambda: ctx.keygen(rotations=[]), args.keygen_repeat))
    sk, keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys)

    x, y, z = C.random_inputs(slots, args.seed)

    def encrypt(v):
        return ctx.encrypt(v, keys)  # encode + public-key encrypt

    def decrypt(ct):
        return ctx.decrypt(ct, sk)  # decrypt + decode

    a, b, c = encrypt(x), encrypt(y), encrypt(z)

    def mul_lin(u, v):
        return ev.relinearize(ev.multiply(u, v))

    # MulLinRS is what ``u * v`` runs: relinearize_rescale divides by P * q_L in
    # one ModDown. The two-step chain is measured too (MulLinRS_two_steps).
    def mul_lin_rs(u, v):
        return ev.relinearize_rescale(ev.multiply(u, v))

    def mul_lin_rs_two_steps(u, v):
        return ev.rescale(ev.relinearize(ev.multiply(u, v)))

    def sqr_lin_rs(u):
        return ev.relinearize_rescale(ev.square(u))

    # The fresh addend is encrypted (untimed) at the scale a MulLinRS result carries,
    # Delta^2 / q_last, as for SEAL, so the add never has to reconcile scales.
    try:
        c_add = ctx.encrypt(ctx.encode(z, scale=mul_lin_rs(a, b).scale), keys)
    except Exception as e:  # noqa: BLE001
        c_add = c
        rep.note("could not encrypt the ModSwAdd addend at the product's scale (%s); used a fresh "
                 "ciphertext at the default scale" % type(e).__name__)

    def mul_lin_rs_modsw_add(u, v, w):
        r = mul_lin_rs(u, v)
        return ev.add(r, ev.mod_switch(w, r.level))

    def rotate(u):
        return ev.rotate(u, 1)

    if not args.only_matmul:
        R = args.repeat
        rep.run("encrypt", lambda: C.median_ms(lambda: encrypt(x), R))
        rep.run("decrypt", lambda: C.median_ms(lambda: decrypt(a), R))
        rep.run("MulLin", lambda: C.median_ms(lambda: mul_lin(a, b), R))
        rep.run("MulLinRS", lambda: C.median_ms(lambda: mul_lin_rs(a, b), R))
        rep.run("MulLinRS_two_steps", lambda: C.median_ms(lambda: mul_lin_rs_two_steps(a, b), R))
        rep.run("SqrLinRS", lambda: C.median_ms(lambda: sqr_lin_rs(a), R))
        rep.run("MulLinRSModSwAdd", lambda: C.median_ms(lambda: mul_lin_rs_modsw_add(a, b, c_add), R))
        rep.run("Rotate", lambda: C.median_ms(lambda: rotate(a), R))
        checks = [
            ("encrypt_decrypt", lambda: decrypt(a), x),
            ("MulLinRS", lambda: decrypt(mul_lin_rs(a, b)), x * y),
            ("MulLinRSModSwAdd", lambda: decrypt(mul_lin_rs_modsw_add(a, b, c_add)), x * y + z),
            ("Rotate", lambda: decrypt(rotate(a)), np.roll(x, -1)),
        ]
        for key, got, want in checks:
            try:
                rep.precision[key] = C.precision_bits(got(), want)
            except Exception as e:  # noqa: BLE001
                rep.note("precision %s failed: %s: %s" % (key, type(e).__name__, str(e)[:200]))
        if rep.precision.get("Rotate") is not None and rep.precision["Rotate"] < 5:
            rep.note("Rotate(1) does not match a left rotation (out[i] = in[i+1]) -- check direction")
    if not args.skip_matmul:
        for key, dims in C.MATMULS.items():
            rep.run(key, lambda dims=dims, key=key: C.matmul_driver(
                rep, key, dims, encrypt, mul_lin, ev.add, ev.rescale, decrypt, slots, args.seed))
    return rep.doc()


def main():
    t = C.pin_threads()
    os.environ.setdefault("RINGFIRE_NUM_THREADS", str(t))
    args = C.parse_args(__doc__)
    params = {k: getattr(args, k) for k in DEFAULTS}
    try:
        doc = run_ours(params)
    except ImportError as e:
        C.emit_error_and_exit("ringfire", None, args, "ringfire.ckks unavailable: %s" % e)
        return
    import json
    print(json.dumps(doc, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
