"""The seed-000 CKKS routines on the GPU against the CPU, with the share of
NTT in each (seed 000 Fig. 9), the matMul application, and the throughput of
several contexts (one stream each) running at once.

Latency: each call is followed by a device synchronisation (what a caller
waiting for one result sees). Throughput: 16 calls queued, one
synchronisation. CPU numbers use every core of the machine.

    python benchmarks/gpu/ckks_gpu.py [--sets seed000,n16l24] [--json out.json] [--quick]
"""

import argparse
import json
import sys
import threading
import time
import warnings

import numpy as np

import ringfire as rf
from ringfire import ckks
from ringfire.bench import median_ms

SETS = {
    "n13": dict(poly_degree=1 << 13, coeff_bits=[60, 40], special_bits=[60], scale_bits=40,
                doc="seed 000 matMul: N=2^13, Q=60+40, P=60"),
    "seed000": dict(poly_degree=1 << 15, coeff_bits=[60] + [40] * 7, special_bits=[60], scale_bits=40,
                    doc="seed 000 Fig. 17: N=2^15, L=8 (Q=60+7x40), P=60"),
    "n16l24": dict(poly_degree=1 << 16, coeff_bits=[60] + [40] * 23, special_bits=[60] * 3, scale_bits=40,
                   doc="N=2^16, 24 limbs (Q=60+23x40), P=3x60 (dnum=6)"),
    # The same Q with the special primes a user gets by default: special_bits
    # omitted, ringfire chooses their count (and the digits) with its key-switching
    # cost model (rlwe/key_switch_shape.h): 6x60, dnum=3, 128-bit.
    "n16l24auto": dict(poly_degree=1 << 16, coeff_bits=[60] + [40] * 23 + [60], scale_bits=40,
                       doc="N=2^16, 24 limbs (Q=60+23x40), special primes chosen by ringfire (6x60, dnum=3)"),
    # Two digits, the fewest the 128-bit bound allows (log2 QP = 1520 of 1747;
    # one digit would need P >= 980 bits): the fewest NTTs, the largest P.
    "n16l24d2": dict(poly_degree=1 << 16, coeff_bits=[60] + [40] * 23, special_bits=[60] * 9, scale_bits=40,
                     dnum=2, doc="N=2^16, 24 limbs (Q=60+23x40), P=9x60, dnum=2"),
    # The shape of the 100x artifact's key-switching numbers (L=44, dnum=3, 15
    # special primes), for comparison with published GPU results. log2(QP) is
    # above the 128-bit bound at N=2^16 (as in that artifact): timing only.
    "n16l45": dict(poly_degree=1 << 16, coeff_bits=[55] + [45] * 44, special_bits=[60] * 15, scale_bits=45,
                   dnum=3, insecure_no_security_check=True,
                   doc="N=2^16, 45 limbs (Q=55+44x45), P=15x60, dnum=3 (100x's shape; beyond 128-bit: timing only)"),
}
# MulLinRS_fused: relinearize_rescale, one key switch that also divides by the last prime.
ROUTINES = ["MulLin", "MulLinRS", "MulLinRS_fused", "SqrLinRS", "MulLinRSModSwAdd", "Rotate"]


def say(msg):
    print(msg, file=sys.stderr, flush=True)


def routines(ctx, keys):
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(1)
    x, y, z = (rng.uniform(-1, 1, ctx.slots) for _ in range(3))
    a, b = ctx.encrypt(x, keys), ctx.encrypt(y, keys)
    c = ctx.encrypt(ctx.encode(z, scale=ev.rescale(ev.relinearize(ev.multiply(a, b))).scale), keys)
    mul_lin = lambda: ev.relinearize(ev.multiply(a, b))  # noqa: E731
    mul_lin_rs = lambda: ev.rescale(ev.relinearize(ev.multiply(a, b)))  # noqa: E731

    def modsw_add():
        r = mul_lin_rs()
        return ev.add(r, ev.mod_switch(c, r.level))

    return {"MulLin": mul_lin, "MulLinRS": mul_lin_rs,
            "MulLinRS_fused": lambda: ev.relinearize_rescale(ev.multiply(a, b)),
            "SqrLinRS": lambda: ev.rescale(ev.relinearize(ev.square(a))),
            "MulLinRSModSwAdd": modsw_add, "Rotate": lambda: ev.rotate(a, 1)}, (a, b)


def make(params, device):
    p = {k: v for k, v in params.items() if k != "doc"}
    ctx = ckks.Context(**p, device=device)
    sk, keys = ctx.keygen(rotations=[1])
    return ctx, sk, keys


def bench_set(name, params, reps, cpu_reps):
    rows = []
    cpu_ctx, _, cpu_keys = make(params, "cpu")
    say(f"== {name}: {params['doc']}, dnum={cpu_ctx.params.dnum}, {len(cpu_ctx.params.p_primes)} special primes")
    cpu_fns, _ = routines(cpu_ctx, cpu_keys)
    gpu_ctx, gpu_sk, gpu_keys = make(params, "cuda")
    gpu_fns, _ = routines(gpu_ctx, gpu_keys)
    sync = rf.cuda.synchronize
    for r in ROUTINES:
        cpu = median_ms(cpu_fns[r], cpu_reps, lambda: None)
        gpu = median_ms(gpu_fns[r], reps, sync)
        queued = median_ms(lambda: [gpu_fns[r]() for _ in range(16)], max(3, reps // 4), sync) / 16
        with rf.cuda.profile() as prof:
            for _ in range(5):
                gpu_fns[r]()
        row = dict(set=name, routine=r, cpu_ms=cpu, gpu_ms=gpu, gpu_queued_ms=queued, speedup=cpu / gpu,
                   ntt_share=prof.ntt_share(), kernel_ms=prof.total / 5 * 1e3,
                   by_kernel=prof.by_kernel())
        rows.append(row)
        say(f"  {r:18s} cpu {cpu:9.3f} ms  gpu {gpu:8.3f} ms  queued {queued:8.3f} ms  x{cpu / gpu:6.1f}  "
            f"NTT {100 * prof.ntt_share():4.1f}%  kernels {row['kernel_ms']:.3f} ms")
    return rows, gpu_ctx, gpu_keys


def matmul(params, device, dims=(10, 9, 8)):
    """C = A B on encrypted matrices, seed 000 Fig. 20: one ciphertext per element."""
    ctx, sk, keys = make(params, device)
    ev = ctx.evaluator(keys)
    m, n, k = dims
    rng = np.random.default_rng(2)
    vals = [rng.uniform(-1, 1, ctx.slots) for _ in range(4)]
    start = time.perf_counter()
    A = [[ctx.encrypt(vals[(i + t) % 4], keys) for t in range(k)] for i in range(m)]
    B = [[ctx.encrypt(vals[(t * 3 + j + 1) % 4], keys) for j in range(n)] for t in range(k)]
    out00 = None
    for i in range(m):
        for j in range(n):
            acc = ev.relinearize(ev.multiply(A[i][0], B[0][j]))
            for t in range(1, k):
                acc = ev.add(acc, ev.relinearize(ev.multiply(A[i][t], B[t][j])))
            got = ctx.decrypt(ev.rescale(acc), sk)
            if i == 0 and j == 0:
                out00 = got
    elapsed = time.perf_counter() - start
    want = sum(vals[t % 4] * vals[(t * 3 + 1) % 4] for t in range(k))
    return elapsed * 1e3, float(np.max(np.abs(out00 - want)))


def streams_scaling(params, counts, calls):
    """Aggregate MulLinRS per second with 1, 2, 4, ... contexts (one stream and one thread each)."""
    entries = []
    for _ in range(max(counts)):
        ctx, _, keys = make(params, "cuda")
        fns, _ = routines(ctx, keys)
        entries.append(fns["MulLinRS"])
    out = []
    for count in counts:
        barrier = threading.Barrier(count + 1)

        def worker(fn):
            barrier.wait()
            for _ in range(calls):
                fn()

        threads = [threading.Thread(target=worker, args=(entries[i],)) for i in range(count)]
        for t in threads:
            t.start()
        rf.cuda.synchronize()
        barrier.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        rf.cuda.synchronize()
        seconds = time.perf_counter() - start
        out.append(dict(streams=count, ops_per_s=count * calls / seconds))
        say(f"  {count} streams: {count * calls / seconds:9.1f} MulLinRS/s")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="n13,seed000,n16l24,n16l24auto,n16l24d2,n16l45")
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if not rf.cuda_available():
        sys.exit("no GPU: this benchmark needs the CUDA backend and a visible GPU")
    warnings.simplefilter("ignore", RuntimeWarning)
    reps = 10 if args.quick else 30
    result = dict(threads=rf.num_threads(), sets={}, matmul={}, streams=None)
    rows = []
    for name in args.sets.split(","):
        set_rows, _, _ = bench_set(name, SETS[name], reps, 3 if name.startswith("n16") else 7)
        rows += set_rows
        result["sets"][name] = SETS[name]["doc"]
    if not args.quick:
        for device in ("cuda", "cpu"):
            ms, err = matmul(SETS["n13"], device)
            result["matmul"][device] = dict(ms=ms, max_error=err)
            say(f"  matMul 10x9x8 on {device}: {ms:.1f} ms (max error {err:.1e})")
    say("== streams (seed000 MulLinRS)")
    result["streams"] = streams_scaling(SETS["seed000"], [1, 2, 4, 8], 20 if args.quick else 50)
    result["rows"] = rows

    print(f"CPU threads: {rf.num_threads()}")
    print(f"{'set':8} {'routine':18} {'CPU ms':>9} {'GPU ms':>8} {'queued':>8} {'speedup':>8} {'NTT':>6}")
    for r in rows:
        print(f"{r['set']:8} {r['routine']:18} {r['cpu_ms']:9.3f} {r['gpu_ms']:8.3f} {r['gpu_queued_ms']:8.3f} "
              f"{r['speedup']:7.1f}x {100 * r['ntt_share']:5.1f}%")
    for device, m in result["matmul"].items():
        print(f"matMul 10x9x8 N=2^13 on {device}: {m['ms']:.1f} ms")
    base = result["streams"][0]["ops_per_s"]
    print("streams: " + ", ".join(f"{s['streams']}: {s['ops_per_s']:.0f}/s ({s['ops_per_s'] / base:.2f}x)"
                                  for s in result["streams"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
