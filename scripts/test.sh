#!/usr/bin/env bash
# test.sh - the whole test suite, as CI runs it (.ci/run calls this):
#   1. a warnings-as-errors build and every test;
#   2. every test again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the concurrency tests (label "concurrency") under ThreadSanitizer;
#   4. the libFuzzer harnesses (fuzz/, built with clang): each over its
#      committed seeds, then 10 s of mutation; any finding fails the run.
# Installs missing Debian packages first (scripts/setup.sh --deps-only
# --test-deps: with PyTorch, the reference of the trainer's test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --deps-only --test-deps

jobs=$(nproc)
run_suite() { # name, ctest args, cmake args...
  local dir=$1 label=$2
  shift 2
  echo "== $dir =="
  cmake -S . -B "$dir" -DSYNOR_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" $label
}

run_suite build-test "" -DCMAKE_BUILD_TYPE=RelWithDebInfo

echo "== install check: cmake --install, then an example built with pkg-config =="
inst=$(mktemp -d)
trap 'rm -rf "$inst"' EXIT
cmake --install build-test --prefix "$inst" >/dev/null
pcdir=$(dirname "$(find "$inst" -name synor.pc)")
cc examples/list_devices.c -o "$inst/list_devices" \
  $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs synor)
LD_LIBRARY_PATH=$(dirname "$pcdir") "$inst/list_devices"
"$inst/bin/synor" --version
# LeakSanitizer reports what PoCL's LLVM keeps alive until exit; the
# suppressions name only those libraries.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite build-asan "" -DCMAKE_BUILD_TYPE=Debug -DSYNOR_SANITIZE=address,undefined \
  -DSYNOR_BUILD_BENCH=OFF -DSYNOR_BUILD_EXAMPLES=OFF
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
run_suite build-tsan "-L concurrency" -DCMAKE_BUILD_TYPE=Debug -DSYNOR_SANITIZE=thread \
  -DSYNOR_BUILD_BENCH=OFF -DSYNOR_BUILD_EXAMPLES=OFF
echo "== build-fuzz: libFuzzer harnesses, the seeds of fuzz/corpus then 10 s each =="
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSYNOR_FUZZ=ON -DSYNOR_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSYNOR_WITH_OPENCL=OFF -DSYNOR_BUILD_TESTS=OFF \
  -DSYNOR_BUILD_BENCH=OFF -DSYNOR_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz
bash fuzz/run.sh build-fuzz 10
