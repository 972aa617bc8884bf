"""NTT / iNTT / polynomial product on the GPU: time per call and per limb,
and the achieved memory bandwidth, for N = 2^12 .. 2^17.

GB/s counts the fewest bytes a transform must move (each 64-bit word read once
and written once: 16 bytes per coefficient); the shared-memory kernels make two
passes, so their ceiling in this metric is half the copy bandwidth. The copy
bandwidth is measured here (a large device-to-device copy through PyTorch or
CuPy when one is installed) so the percentage is against this card as found.

    python benchmarks/gpu/ntt_gpu.py [--json out.json] [--quick]
    python benchmarks/gpu/ntt_gpu.py --sizes 16 --limbs 24 --batch 3 --kernels shared,shared_poly

Kernels: shared (the default), shared_poly (the same, a batch's polynomials one
after another instead of limb-major), generic (pass shapes read at run time),
radix2 (one kernel per stage).
"""

import argparse
import json
import sys

from ringfire import _core


def copy_bandwidth_gbs():
    """Bytes read plus written per second by a 1 GiB device-to-device copy (median of 20)."""
    try:
        import torch
    except ImportError:
        return None
    src = torch.empty(1 << 27, dtype=torch.int64, device="cuda").random_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(20):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    times.sort()
    return 2 * src.numel() * 8 / times[len(times) // 2] / 1e9


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here as JSON")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and rounds")
    parser.add_argument("--bits", type=int, default=60)
    parser.add_argument("--sizes", help="log2 N, comma-separated (default 12-17; --quick 14,16)")
    parser.add_argument("--limbs", help="limb counts, comma-separated (default 1,32,64; --quick 1,32)")
    parser.add_argument("--kernels", help="kernels, comma-separated (default shared,generic,radix2)")
    parser.add_argument("--ops", help="ops, comma-separated (default ntt_forward,ntt_inverse,poly_multiply)")
    parser.add_argument("--batch", type=int, default=1, help="polynomials of LIMBS limbs a call, 1-16 (default 1)")
    args = parser.parse_args(argv)

    def ints(text):
        return [int(v) for v in text.split(",")]

    peak = copy_bandwidth_gbs()
    log_ns = ints(args.sizes) if args.sizes else [14, 16] if args.quick else [12, 13, 14, 15, 16, 17]
    limbs_list = ints(args.limbs) if args.limbs else [1, 32] if args.quick else [1, 32, 64]
    kernels = args.kernels.split(",") if args.kernels else ["shared", "generic", "radix2"]
    ops = args.ops.split(",") if args.ops else ["ntt_forward", "ntt_inverse", "poly_multiply"]
    batch = args.batch
    rows = []
    for log_n in log_ns:
        n = 1 << log_n
        for limbs in limbs_list:
            for op in ops:
                for kernel in kernels:
                    if op == "poly_multiply" and kernel == "radix2" and limbs > 1:
                        continue
                    t = _core.cuda_time_kernel(op, n, limbs, bits=args.bits, kernel=kernel,
                                               rounds=7 if args.quick else 15, calls=20, batch=batch)
                    # A transform moves 16 B per coefficient at least; a product reads two
                    # operands and writes one (24 B).
                    bytes_min = (24 if op == "poly_multiply" else 16) * n * limbs * batch
                    gbs = bytes_min / t["median_s"] / 1e9
                    row = dict(log_n=log_n, limbs=limbs, batch=batch, op=op, kernel=kernel,
                               us_per_call=t["median_s"] * 1e6,
                               us_per_limb=t["median_s"] * 1e6 / (limbs * batch),
                               min_us_per_call=t["min_s"] * 1e6, gb_per_s=gbs,
                               pct_of_copy=(100 * gbs / peak) if peak else None)
                    rows.append(row)
                    print(f"  N=2^{log_n} limbs={limbs:3d}x{batch} {op:14s} {kernel:11s} {row['us_per_call']:10.2f} us"
                          f"  {row['us_per_limb']:8.3f} us/limb  {gbs:7.0f} GB/s", file=sys.stderr, flush=True)

    print(f"device-to-device copy: {peak:.0f} GB/s (read + write)" if peak else "copy bandwidth: not measured")
    print(f"{'N':>6} {'limbs':>5} {'batch':>5} {'op':14} {'kernel':11} {'us/call':>10} {'us/limb':>9} {'GB/s':>7} "
          f"{'%copy':>6}")
    for r in rows:
        pct = f"{r['pct_of_copy']:6.1f}" if r["pct_of_copy"] is not None else "     -"
        print(f"{'2^' + str(r['log_n']):>6} {r['limbs']:5d} {r['batch']:5d} {r['op']:14} {r['kernel']:11} "
              f"{r['us_per_call']:10.2f} "
              f"{r['us_per_limb']:9.3f} {r['gb_per_s']:7.0f} {pct}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(copy_gb_per_s=peak, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
