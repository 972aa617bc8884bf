#!/usr/bin/env bash
# One pass on a GPU machine: build, the GPU test suites, the same under
# compute-sanitizer, and the benchmarks. Logs and JSON are packed into
# $OUT/gpu_logs.tgz (or ./gpu-out/gpu_logs.tgz) at the end.
# Run from the repository root:
#   bash benchmarks/gpu/device_check.sh [all or a comma list of tests,ntt,ckks]
set -uo pipefail
FINAL=${OUT:-gpu-out}; mkdir -p "$FINAL"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL/gpu_logs.tgz" -C "$OUT" .' EXIT
what=${1:-all}
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
export SKBUILD_CMAKE_DEFINE="CMAKE_CUDA_ARCHITECTURES=90"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
echo "== build"; start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps . >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
if [[ $what == all || $what == *tests* ]]; then
  echo "== GPU tests"
  ldd "$(python3 -c 'import ringfire._core as c; print(c.__file__)')" | grep -E "stdc|cuda" || true
  python3 -m pytest -q -rs tests/test_cuda.py tests/test_gpu_runtime.py tests/test_cli.py tests/test_readme.py \
    2>&1 | tee "$OUT/pytest.log" | tail -30
  echo "== compute-sanitizer (memcheck): self-test and the runtime tests"
  compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -x tests/test_cuda.py \
    tests/test_gpu_runtime.py -k "bit_identical or lazy or frames or streams or profiler" >"$OUT/sanitizer.log" 2>&1
  echo "sanitizer exit $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/sanitizer.log" | tail -4
fi
if [[ $what == all || $what == *ntt* ]]; then
  echo "== NTT benchmark"
  python3 benchmarks/gpu/ntt_gpu.py --json "$OUT/ntt_gpu.json" 2>"$OUT/ntt_progress.log" | tail -40
fi
if [[ $what == all || $what == *ckks* ]]; then
  echo "== CKKS routines"
  python3 benchmarks/gpu/ckks_gpu.py --json "$OUT/ckks_gpu.json" 2>"$OUT/ckks_progress.log" || tail -30 "$OUT/ckks_progress.log"
  echo "== ringfire bench ckks --device cuda --profile (CLI)"
  ringfire bench ckks --device cuda --profile --sets N14 --repeat 3 >"$OUT/cli_profile.txt" 2>"$OUT/cli_profile_progress.txt" \
    && tail -12 "$OUT/cli_profile.txt" || tail -20 "$OUT/cli_profile_progress.txt"
  ringfire bench ntt --device cuda --n 16 --limbs 1,32 | tail -10
fi
