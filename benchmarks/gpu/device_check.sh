#!/usr/bin/env bash
# One pass on a GPU machine: build, the CUDA test suite, the same under
# compute-sanitizer, and the kernel benchmarks. Writes logs to $OUT (or ./gpu-out).
# Run from the repository root:  bash benchmarks/gpu/device_check.sh [quick]
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
export SKBUILD_CMAKE_DEFINE="CMAKE_CUDA_ARCHITECTURES=90"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
echo "== build"; start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps . >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
echo "== tests"
python3 -m pytest -q $(ls tests/test_cuda*.py tests/test_gpu*.py 2>/dev/null) 2>&1 | tee "$OUT/pytest.log" | tail -25
echo "== compute-sanitizer (memcheck) on the self-test"
compute-sanitizer --tool memcheck --error-exitcode 9 python3 -c "
from ringfire import _core
for n in (2**12, 2**16):
    r = _core.cuda_selftest(n=n, limbs=3, seed=5)
    print(n, 'all bit-identical' if all(r.values()) else sorted(k for k, v in r.items() if not v))
" >"$OUT/sanitizer.log" 2>&1; echo "sanitizer exit $?"; tail -8 "$OUT/sanitizer.log"
if [ "${1:-}" != "nobench" ]; then
  echo "== NTT benchmark"
  python3 benchmarks/gpu/ntt_gpu.py ${1:+--$1} --json "$OUT/ntt_gpu.json" 2>"$OUT/ntt_progress.log"
fi
