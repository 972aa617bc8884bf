#!/usr/bin/env bash
# Builds the C++ library, its unit tests and the loaders' fuzz target under
# AddressSanitizer + UndefinedBehaviorSanitizer (float-cast-overflow included;
# any report aborts), then runs the tests and a fuzz run.
#
#   tools/sanitize.sh [FUZZ_INPUTS]       GCC, deterministic mutation driver (CI)
#   tools/sanitize.sh --libfuzzer SECONDS clang + libFuzzer, coverage-guided
#
# The CUDA backend is left out (nvcc does not take these flags); its kernel
# bodies are the RF_HD functions the CPU tests cover.
set -euo pipefail
cd "$(dirname "$0")/.."

flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow"
flags+=" -fno-sanitize-recover=undefined,float-cast-overflow"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

if [[ "${1:-}" == "--libfuzzer" ]]; then
  seconds="${2:-60}"
  cmake -S . -B build/libfuzzer -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
    -DRINGFIRE_CUDA=OFF -DRINGFIRE_BUILD_TESTS=OFF -DCMAKE_CXX_FLAGS="$flags -fsanitize=fuzzer-no-link" > /dev/null
  cmake --build build/libfuzzer --target ringfire -j 2
  mkdir -p build/libfuzzer/corpus
  # The corpus starts from valid objects of every kind (the standalone driver writes them).
  clang++ -std=c++20 $flags -Icpp/include cpp/tests/fuzz/fuzz_io.cpp build/libfuzzer/cpp/libringfire.a \
    -o build/libfuzzer/fuzz_io_seeds
  build/libfuzzer/fuzz_io_seeds --write-seeds build/libfuzzer/corpus
  clang++ -std=c++20 $flags -fsanitize=fuzzer -DRINGFIRE_LIBFUZZER -Icpp/include cpp/tests/fuzz/fuzz_io.cpp \
    build/libfuzzer/cpp/libringfire.a -o build/libfuzzer/fuzz_io
  build/libfuzzer/fuzz_io -max_total_time="$seconds" -max_len=65536 build/libfuzzer/corpus
  exit 0
fi

inputs="${1:-30000}"
cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRINGFIRE_BUILD_TESTS=ON -DRINGFIRE_CUDA=OFF \
  -DRINGFIRE_TESTS_UNOPTIMIZED=ON -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  > /dev/null
cmake --build build/sanitize -j 2 --target ringfire_tests fuzz_io
echo "== unit tests under ASan + UBSan (two shards side by side)"
shards=2
pids=()
trap 'kill "${pids[@]}" 2> /dev/null || true' EXIT  # an interrupted run leaves no shard behind
for ((shard = 0; shard < shards; ++shard)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard build/sanitize/cpp/tests/ringfire_tests --gtest_brief=1 \
    > "build/sanitize/unit_tests.$shard.log" 2>&1 &
  pids+=($!)
done
failed=0
for ((shard = 0; shard < shards; ++shard)); do
  wait "${pids[$shard]}" || failed=1
  cat "build/sanitize/unit_tests.$shard.log"
done
if ((failed)); then echo "unit tests under the sanitizers failed (above)"; exit 1; fi
echo "== fuzzing the loaders under ASan + UBSan ($inputs inputs)"
build/sanitize/cpp/tests/fuzz_io "$inputs"
