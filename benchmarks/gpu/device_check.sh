#!/usr/bin/env bash
# One pass on a GPU machine, inside a fixed time budget: install (a prebuilt
# wheel when it matches the sources, else a build for sm_90), the GPU test
# suites, the CKKS routines, a full-size bootstrap, compute-sanitizer, the NTT,
# HELR training, encrypted inference and BGV/BFV, then a one-screen summary.
# Every step is bounded by what is left of the budget and writes its log or
# JSON to a folder packed into $OUT/gpu_logs.tgz (or ./gpu-out/) at the end.
#
#   bash benchmarks/gpu/device_check.sh            # everything, <= 8 minutes
#   bash benchmarks/gpu/device_check.sh --quick    # tests and the headline numbers, <= 3.5 minutes
#   STEPS=tests,bootstrap BOOT_ORDERS=stc bash benchmarks/gpu/device_check.sh   # those steps only
#   STEPS=resnet20 bash benchmarks/gpu/device_check.sh    # ResNet-20 32x32 on the device (~5 min, its own run)
#   STEPS=ntt,ntt_profile bash benchmarks/gpu/device_check.sh   # the NTT and Nsight Compute's view of it
#   STEPS=ckks,ckks_split bash benchmarks/gpu/device_check.sh    # fused against three-pass base conversion
#   STEPS=ckks,ckks_old,bootstrap,bootstrap_old bash benchmarks/gpu/device_check.sh   # NTT/ModUp before and after 2026-11-28
#   STEPS=tests,ckks,ckks_digits,bootstrap,bootstrap_digits bash benchmarks/gpu/device_check.sh   # ModUp batched against digit by digit
#   STEPS=ntt_batch,ckks,ckks_poly,helr,helr_poly bash benchmarks/gpu/device_check.sh   # a batch's NTTs limb- against poly-major
#   STEPS=tests,racecheck bash benchmarks/gpu/device_check.sh   # shared-memory hazards in the self-test
#
# Prebuilding the wheel on a machine without a GPU (same Python minor version
# as the GPU machine's python3) saves the build there; it also fetches ringfire[serve]'s
# wheels into .whl/ (the service's GPU steps need them). Both folders go with the tree:
#   bash benchmarks/gpu/device_check.sh --prebuild /path/to/python3.12
set -uo pipefail
cd "$(dirname "$0")/../.."

source_hash() {  # what the compiled part is built from
  find cpp python/bindings CMakeLists.txt pyproject.toml -type f -not -name '*.pyc' | LC_ALL=C sort | xargs cat \
    | sha256sum | cut -d' ' -f1
}

if [[ ${1:-} == --prebuild ]]; then
  # ringfire[serve]'s packages, which the GPU machine's image lacks, as wheels for its Python
  # (3.12): the step below installs them beside the image's own, for the service's GPU tests and
  # benchmark. Best effort: the check runs without them (those two skip).
  rm -rf .whl && "${2:-python3}" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    "fastapi>=0.110" "uvicorn>=0.29" "blake3>=0.4" || echo "no wheels for ringfire[serve]: its GPU steps will skip" >&2
  rm -rf dist/gpu && mkdir -p dist/gpu
  # The hash of the sources the build starts from; a wheel whose sources changed while it built
  # gets none (it would claim sources it did not compile).
  before=$(source_hash)
  RINGFIRE_CUDA=ON SKBUILD_CMAKE_DEFINE="CMAKE_CUDA_ARCHITECTURES=90" "${2:-python3}" -m pip wheel --no-deps \
    -w dist/gpu . || exit $?
  if [[ $(source_hash) != "$before" ]]; then
    echo "the sources changed during the build: no SOURCE_HASH written, build again" >&2
    exit 1
  fi
  echo "$before" >dist/gpu/SOURCE_HASH && ls -la dist/gpu
  exit $?
fi

QUICK=0
[[ ${1:-} == --quick ]] && QUICK=1
BUDGET=$(( QUICK ? 210 : 480 ))
FINAL=${OUT:-gpu-out}
mkdir -p "$FINAL"
LOG=$(mktemp -d)
T0=$(date +%s)
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
export SKBUILD_CMAKE_DEFINE="CMAKE_CUDA_ARCHITECTURES=90"
trap 'python3 benchmarks/gpu/summary.py "$LOG" | tee "$LOG/summary.txt"; tar czf "$FINAL/gpu_logs.tgz" -C "$LOG" .' EXIT

# step NAME CAP_SECONDS COMMAND...: runs COMMAND (output to $LOG/NAME.log) for at
# most CAP seconds and never past the budget; skipped when under 10 s are left.
step() {
  local name=$1 cap=$2 start left limit rc
  shift 2
  if [[ -n ${STEPS:-} && $name != install && ,$STEPS, != *,$name,* ]]; then
    return 0
  fi
  start=$(date +%s)
  left=$(( T0 + BUDGET - start ))
  limit=$(( cap < left ? cap : left ))
  if (( limit < 10 )); then
    echo "== $name: skipped (budget spent)"
    echo "$name skipped 0" >>"$LOG/steps.txt"
    return 1
  fi
  echo "== $name (at $(( start - T0 )) s, limit $limit s)"
  timeout --kill-after=5 "$limit" "$@" >"$LOG/$name.log" 2>&1
  rc=$?
  echo "$name $rc $(( $(date +%s) - start ))" >>"$LOG/steps.txt"
  tail -n 4 "$LOG/$name.log"
  return $rc
}

install() {
  local wheel
  wheel=$(ls dist/gpu/ringfire-*-cp"$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"-*.whl \
          2>/dev/null | head -1)
  if [[ -n $wheel && -f dist/gpu/SOURCE_HASH && $(cat dist/gpu/SOURCE_HASH) == "$(source_hash)" ]]; then
    echo "prebuilt wheel $wheel matches the sources"
    python3 -m pip install -q --no-deps --force-reinstall "$wheel" || return 1
  else
    echo "building (no prebuilt wheel for these sources and this Python)"
    python3 -m pip install --no-build-isolation --no-deps . || return 1
  fi
  # The package's Python files from this tree (the wheel may predate them).
  local site
  site=$(cd /tmp && python3 -c 'import os, ringfire; print(os.path.dirname(ringfire.__file__))') || return 1
  cp -r python/ringfire/. "$site/"
  (cd /tmp && python3 -c 'import ringfire as rf, ringfire._core as c
print("cuda compiled:", c.cuda_compiled(), "devices:", c.cuda_device_count(), "available:", rf.cuda_available())
assert rf.cuda_available()')
}

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv | tee "$LOG/gpu.txt"
# ringfire[serve]'s wheels (--prebuild fetches them into .whl/), beside the image's packages.
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/serve-site \
    .whl/*.whl && export PYTHONPATH=/tmp/serve-site${PYTHONPATH:+:$PYTHONPATH}
fi
nproc >>"$LOG/gpu.txt"
step install 200 bash -c "$(declare -f source_hash install); install" || { tail -40 "$LOG/install.log"; exit 1; }
(cd /tmp && python3 -c 'import ringfire._core as c; print(c.__file__)') | xargs ldd | grep -E "stdc|cuda" >>"$LOG/gpu.txt"

TESTS=(tests/test_cuda.py tests/test_gpu_runtime.py tests/test_gpu_schemes.py tests/test_devices.py
       "tests/test_bgv.py::test_gpu_results_are_bit_identical_to_the_cpu" tests/test_cli.py::test_gpu_flags_fail_clearly_where_they_cannot_run
       tests/test_ckks_lookup.py::test_gpu_lookup_is_bit_identical)
# The service's GPU tests need ringfire[serve] (.whl/ above). Without it test_serve.py skips as a
# module, its test ids are not found and pytest would stop before running anything: leave them out.
# (test_serve.py's module-level imports: fastapi, uvicorn, httpx, onnx.)
if missing=$(cd /tmp && python3 -c 'import importlib.util as u
print(" ".join(m for m in ("fastapi", "uvicorn", "httpx", "onnx") if u.find_spec(m) is None))') && [[ -z $missing ]]; then
  TESTS+=(tests/test_serve.py::test_a_server_on_the_gpu_answers_bit_for_bit_as_the_cpu
          tests/test_serve.py::test_ringfire_serve_device_cuda_serves_a_client_in_another_process)
else
  echo "the service's GPU tests are left out: ${missing:-python3 failed} not importable (--prebuild's .whl/ brings" \
       "fastapi and uvicorn)" | tee -a "$LOG/gpu.txt"
fi
step tests 200 python3 -m pytest -q -rs -p no:cacheprovider --durations=8 "${TESTS[@]}"

if (( QUICK )); then
  step ckks 70 python3 benchmarks/gpu/ckks_gpu.py --quick --sets n16l24 --json "$LOG/ckks_gpu.json"
  step bootstrap 80 python3 benchmarks/gpu/bootstrap_gpu.py --orders cts --repeat 2 --json "$LOG/bootstrap_gpu.json"
  exit 0
fi

step ckks 150 python3 benchmarks/gpu/ckks_gpu.py --json "$LOG/ckks_gpu.json"
step bootstrap 150 python3 benchmarks/gpu/bootstrap_gpu.py --orders "${BOOT_ORDERS:-cts,stc}" \
  --json "$LOG/bootstrap_gpu.json"
# The same two benchmarks with the three-pass base conversion (RINGFIRE_CUDA_BASE_CONVERT=split),
# to measure the fused kernel against it on one device. Only when STEPS names them.
if [[ ,${STEPS:-}, == *,ckks_split,* ]]; then
  step ckks_split 110 env RINGFIRE_CUDA_BASE_CONVERT=split python3 benchmarks/gpu/ckks_gpu.py \
    --json "$LOG/ckks_gpu_split.json"
fi
# The same with the NTT passes' shapes read at run time (RINGFIRE_CUDA_NTT=generic), with ModUp's
# limbs scattered by a kernel of their own (RINGFIRE_CUDA_SCATTER=separate), with the first two (the
# kernels before 2026-11-28; ModUp's digits are batched only with the scatter in the NTT), and with
# ModUp's digits converted one by one (RINGFIRE_CUDA_MODUP=digits, the default before 2026-12-04; the
# self-test covers both). Only when STEPS names them.
# A batch's transforms polynomial-major (RINGFIRE_CUDA_NTT_ORDER=poly, the order before 2026-12-04;
# the default runs them limb-major so a limb's twiddles are read once per batch) likewise.
# HELR's run, here and as the default step below (its JSON path last).
HELR=(python3 benchmarks/logreg_helr.py --preset N16_BOOT --shape helr --iterations 4 --device cuda --profile --json)
for variant in generic:RINGFIRE_CUDA_NTT=generic separate:RINGFIRE_CUDA_SCATTER=separate digits:RINGFIRE_CUDA_MODUP=digits \
               old:RINGFIRE_CUDA_NTT=generic,RINGFIRE_CUDA_SCATTER=separate poly:RINGFIRE_CUDA_NTT_ORDER=poly; do
  name=${variant%%:*}
  IFS=, read -r -a settings <<<"${variant#*:}"
  if [[ ,${STEPS:-}, == *,ckks_$name,* ]]; then
    step "ckks_$name" 110 env "${settings[@]}" python3 benchmarks/gpu/ckks_gpu.py --json "$LOG/ckks_gpu_$name.json"
  fi
  if [[ ,${STEPS:-}, == *,bootstrap_$name,* ]]; then
    step "bootstrap_$name" 150 env "${settings[@]}" python3 benchmarks/gpu/bootstrap_gpu.py \
      --orders "${BOOT_ORDERS:-cts,stc}" --json "$LOG/bootstrap_gpu_$name.json"
  fi
  if [[ ,${STEPS:-}, == *,helr_$name,* ]]; then
    step "helr_$name" 110 env "${settings[@]}" "${HELR[@]}" "$LOG/helr_gpu_$name.json"
  fi
done
if [[ ,${STEPS:-}, == *,bootstrap_split,* ]]; then
  step bootstrap_split 100 env RINGFIRE_CUDA_BASE_CONVERT=split python3 benchmarks/gpu/bootstrap_gpu.py \
    --orders "${BOOT_ORDERS:-cts,stc}" --json "$LOG/bootstrap_gpu_split.json"
fi
# memcheck on the self-test (every Backend method, the scatter of ModUp included), the
# runtime, the fused key switch, BGV and BFV; 0 errors expected.
step sanitizer 80 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_cuda.py tests/test_gpu_runtime.py tests/test_gpu_schemes.py \
  -k "selftest_covers or 12 or bit_identical and N13 or lazy or frames or bgv and 13"
grep -s -E "ERROR SUMMARY" "$LOG/sanitizer.log" | tail -1
# Shared-memory hazards (racecheck) in the self-test's kernels at N = 2^12, the NTT's shared-memory
# passes among them. Only when STEPS names it.
if [[ ,${STEPS:-}, == *,racecheck,* ]]; then
  step racecheck 90 compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m pytest -q -x -p no:cacheprovider \
    tests/test_cuda.py -k "covers_odd_limb_counts and 3"
  grep -s -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOG/racecheck.log" | tail -1
fi
step ntt 40 python3 benchmarks/gpu/ntt_gpu.py --json "$LOG/ntt_gpu.json"
# A batch of three polynomials (ModUp's digits) limb-major beside polynomial-major. Only when
# STEPS names it.
if [[ ,${STEPS:-}, == *,ntt_batch,* ]]; then
  step ntt_batch 40 python3 benchmarks/gpu/ntt_gpu.py --sizes 16 --limbs 24,32 --batch 3 \
    --ops ntt_forward,ntt_inverse --kernels shared,shared_poly --json "$LOG/ntt_gpu_batch.json"
fi
step helr 110 "${HELR[@]}" "$LOG/helr_gpu.json"
step digits 40 bash -c "python3 benchmarks/nn_digits.py --device cuda,cpu --models cnn,mlp --modes client --json \
  >'$LOG/digits.json'"
# ResNet-20 at 32x32 without a client (inter packing, 18 bootstraps per image), random
# weights: the first image encodes the diagonals on the host (207 s on an H200's host), the
# second is the per-image time. About 5 minutes in all: only when STEPS names it.
if [[ ,${STEPS:-}, == *,resnet20,* ]]; then
  step resnet20 "${RESNET20_CAP:-380}" python3 benchmarks/nn_bootstrapped_inter.py --preset N16_BOOT --resolution 32 \
    --images 2 --device cuda --trace-layers --json "$LOG/resnet20_gpu.json"
fi
# Where the batched NTT's time goes (2^16 x 64 limbs, one head and one tail pass of
# the forward transform): Nsight Compute's throughput, occupancy, stall and
# instruction sections. Only when STEPS names it; needs a runtime with counters.
if [[ ,${STEPS:-}, == *,ntt_profile,* ]]; then
  step ntt_profile 90 ncu --clock-control none --kernel-name regex:ntt_pass_kernel --launch-skip 2 --launch-count 2 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section InstructionStats --section LaunchStats \
    python3 -c "from ringfire import _core; _core.cuda_time_kernel('ntt_forward', 1 << 16, 64, bits=60, kernel='shared', rounds=1, calls=1)"
fi
# The fused base conversions of a key switch under Nsight Compute, the same sections: the first two
# launches (ModUp's, every digit at once, and ModDown's, both sums). On 2026-12-04, skipping four
# launches, ncu profiled none and listed no base-conversion kernel among those launched at all: if
# it finds none again, find out where this script's key switch converts. Only when STEPS names it.
if [[ ,${STEPS:-}, == *,convert_profile,* ]]; then
  step convert_profile 90 ncu --clock-control none --kernel-name regex:base_convert_fused --launch-skip 0 \
    --launch-count 2 --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --section LaunchStats python3 -c "
import numpy as np, ringfire as rf
from ringfire import ckks
ctx = ckks.Context(poly_degree=1 << 16, coeff_bits=[60] + [40] * 23, special_bits=[60] * 3, scale_bits=40,
                   device='cuda')
sk, keys = ctx.keygen()
a = ctx.encrypt(np.linspace(-1, 1, ctx.slots), keys)
ev = ctx.evaluator(keys)
for _ in range(3): ev.relinearize_rescale(ev.multiply(a, a))
rf.cuda.synchronize()"
fi
for scheme in bgv bfv; do
  step "${scheme}_gpu" 25 bash -c "ringfire bench $scheme --device cuda --sets N16 --config default --repeat 3 --json \
    --quiet >'$LOG/${scheme}_gpu.json'"
  step "${scheme}_cpu" 25 bash -c "ringfire bench $scheme --sets N16 --config default --repeat 3 --json --quiet \
    >'$LOG/${scheme}_cpu.json'"
done
# The service with its model on the GPU against the same model in-process on the GPU (clients,
# keys and decryptions on the host): only with ringfire[serve]'s packages.
if python3 -c "import fastapi, uvicorn, blake3" 2>/dev/null; then
  step serve 120 python3 benchmarks/serve_load.py --skip-keys --server-device cuda --clients 8 --requests 3 \
    --json "$LOG/serve_gpu.json"
fi
echo "total $(( $(date +%s) - T0 )) s"
