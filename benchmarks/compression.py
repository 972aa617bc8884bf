"""Compressed objects (``to_bytes(compress=True)``): what they save and what loading
them costs, for a ciphertext and the relinearization key of each preset from N = 2^13 to
2^16. Load times are medians; "streaming" is the decoder before the bounded one (the
frame fed to a ``decompressobj`` in 1 MiB pieces and measured afterwards), kept here as
the reference the bounded decoder is compared with.

    python benchmarks/compression.py [--repeat 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import zstandard

import ringfire as rf
from ringfire import io as rio

PRESETS = ["N13_D2", "N14_D6", "N15_D16", "N16_D30"]


def streaming_decompress(blob: bytes) -> bytes:
    """The previous decoder (reference only: it measures the output after decoding)."""
    frame = blob[rio._ZSTD_HEADER.size:]
    reader = zstandard.ZstdDecompressor().decompressobj()
    out = bytearray()
    for start in range(0, len(frame), 1 << 20):
        out += reader.decompress(frame[start:start + (1 << 20)])
    return bytes(out)


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for preset in PRESETS:
        ctx = rf.ckks.Context.preset(preset)
        sk, keys = ctx.keygen()
        for kind, obj in (("ciphertext", ctx.encrypt(np.linspace(-1, 1, ctx.slots), keys)), ("relin key", keys.relin)):
            plain, packed = obj.to_bytes(), obj.to_bytes(compress=True)
            assert ctx.load(packed).to_bytes() == plain
            assert streaming_decompress(packed) == rio.decompress(packed, len(plain))
            row = dict(preset=preset, kind=kind, bytes=len(plain), compressed=len(packed),
                       saving=1 - len(packed) / len(plain),
                       load_plain_ms=median_ms(lambda: ctx.load(plain), args.repeat),
                       load_compressed_ms=median_ms(lambda: ctx.load(packed), args.repeat),
                       decompress_ms=median_ms(lambda: rio.decompress(packed, len(plain)), args.repeat),
                       streaming_decompress_ms=median_ms(lambda: streaming_decompress(packed), args.repeat))
            rows.append(row)
            print(f"{preset:8} {kind:10} {row['bytes'] / 2**20:8.2f} MiB  saves {100 * row['saving']:5.1f} %  load "
                  f"{row['load_plain_ms']:7.2f} / {row['load_compressed_ms']:7.2f} ms (plain / compressed)  "
                  f"decompress {row['decompress_ms']:7.2f} ms (streaming reference {row['streaming_decompress_ms']:7.2f})",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
