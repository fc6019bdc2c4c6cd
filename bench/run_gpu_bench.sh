#!/usr/bin/env bash
# run_gpu_bench.sh - what issue 4 leaves for a machine with an NVIDIA GPU, in
# one command: build (Release, build-gpu/), list the devices, run the runtime
# tests that use a real GPU when one is present (test_runtime_memory's
# cuda_kernels_match_the_cpu), then bench/bench_gpu_gemm.c for single and
# double precision at growing sizes: cuBLAS alone, the runtime on the CPU
# cores alone, and the runtime on CPU + GPU, end to end from host memory.
#
#   bash bench/run_gpu_bench.sh [--sizes "4096 8192 16384"] [--nb 2048] [--iters 3]
#
# Needs what scripts/setup.sh installs (hwloc, OpenBLAS, pkg-config; OpenCL
# optional) and a CUDA driver with cuBLAS. Without a GPU it says so and
# exits 0 after the build and the tests (the GPU test skips).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes="4096 8192 16384" nb=2048 iters=3
while (($#)); do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --nb) nb=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "usage: $0 [--sizes \"N ...\"] [--nb NB] [--iters K]" >&2; exit 2 ;;
  esac
done
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-gpu -j"$(nproc)" >/dev/null
./build-gpu/synor devices
ctest --test-dir build-gpu -R 'test_runtime_memory|cuda_mock|gpu_gemm' --output-on-failure
./build-gpu/tests/test_runtime_memory 2>&1 | grep -E 'cuda_kernels_match_the_cpu|skipped: no CUDA' || true
for p in s d; do
  for n in $sizes; do
    echo "== bench_gpu_gemm $p $n $nb $iters"
    rc=0
    ./build-gpu/bench/bench_gpu_gemm "$p" "$n" "$nb" "$iters" || rc=$?
    if ((rc == 77)); then
      echo "no CUDA GPU here: nothing to measure"
      exit 0
    fi
    ((rc == 0)) || exit "$rc"
  done
done
