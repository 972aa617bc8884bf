#!/usr/bin/env bash
# Foundation benchmarks: NTT (1 and 2 threads), modular reductions, polynomial
# products. Prints tables and writes JSON next to this script under results/.
# Usage: benchmarks/run_foundation.sh [extra args for `ringfire bench ntt`]
set -euo pipefail
out="$(dirname "$0")/results"
mkdir -p "$out"
ringfire info
echo "== NTT, 1 thread"
ringfire bench ntt --threads 1 --limbs 1,8 "$@" --quiet | tee "$out/ntt_1thread.txt"
ringfire bench ntt --threads 1 --limbs 1,8 "$@" --json > "$out/ntt_1thread.json"
echo "== NTT, all threads, 1..64 limbs"
ringfire bench ntt --full --n 12,14,16,17 "$@" --json > "$out/ntt_full.json"
ringfire bench ntt --full --n 16 --quiet "$@"
echo "== modular reductions (ns per product, 1 thread)"
ringfire bench modmul --quiet | tee "$out/modmul.txt"
echo "== polynomial products, NTT vs Karatsuba-fused (1 thread)"
ringfire bench polymul --threads 1 --n 12,14,16 --limbs 1,8 --quiet | tee "$out/polymul.txt"
