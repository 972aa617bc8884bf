"""Records one CKKS bootstrap as a backend trace (for `ringfire project` and docs/projection.md).

    python benchmarks/trace_bootstrap.py --preset N16_BOOT -o benchmarks/traces/ckks_bootstrap_N16_BOOT.json

N16_BOOT needs about 15 GB of memory and a minute or two; N12_BOOT_INSECURE runs in seconds. The
bootstrap is traced twice, as a dry run and for real, and the script checks that both recorded the
same calls and that the result decrypts to the input.
"""

import argparse
import time

import numpy as np

import ringfire as rf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="N16_BOOT")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    ctx = rf.ckks.Context.preset(args.preset)
    start = time.perf_counter()
    sk, keys = ctx.keygen(bootstrap=True)
    print(f"keygen: {time.perf_counter() - start:.1f} s")
    x = np.random.default_rng(1).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    with rf.trace(dry_run=True) as dry:
        ct.bootstrap()
    with rf.trace(workload=f"one bootstrap, {args.preset}") as real:
        y = ct.bootstrap()
    print(f"dry run: {dry!r}\nreal run: {real!r}")
    if dry.counts() != real.counts():
        raise SystemExit("the dry run recorded different calls from the real run")
    bits = -np.log2(np.abs(ctx.decrypt(y, sk).real - x).max())
    print(f"precision after the bootstrap: {bits:.1f} bits (max error)")
    real.save(args.output)
    print(real.table("primitive"))


if __name__ == "__main__":
    main()
