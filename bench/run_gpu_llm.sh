#!/usr/bin/env bash
# run_gpu_llm.sh - the LLM engine's and the trainer's CUDA paths on a real
# NVIDIA GPU, in one command, on a build that already exists (it builds
# nothing): the devices; the GPU tests without the CUDA mock
# (test_llm_cuda_mock with SYNOR_LLMCU_REAL=1, test_runtime_memory's
# cuda_kernels_match_the_cpu); bench_llm at the stories15M and stories110M
# shapes (generated weights, vocab 32000), F32 and Q8_0, CPU only against
# every layer on the GPU, prefill (pp) and decode (tg); bench_train one
# short run on the CPU and with --cuda 1; bench_gpu_gemm s 8192 with the
# runtime's copies pageable and staged (cuda_staging). Each phase runs under `timeout`;
# a failed phase is reported and the next one runs. About 3 minutes on a
# 16-core machine with one GPU. A summary of every phase is printed last.
# llm_plan: `synor generate --gpu-layers plan --report` on the stories15M
# and stories110M shapes (the split planner's decision per phase, and the
# run's utilization report and timeline). ONLY (a comma list of tests,
# bench, plan, train, gemm; default all) picks groups: `... build 16 plan`
# is the planner alone, well under 60 s.
#
#   bash bench/run_gpu_llm.sh [BUILD_DIR (default build)] [THREADS (default nproc, at most 16)] [ONLY]
set -u
B=${1:-build}
T=${2:-$(nproc)}
ONLY=${3:-all}
want() { [[ $ONLY == all || ,$ONLY, == *,$1,* ]]; }
((T > 16)) && T=16
# BUILD_DIR relative to where this is run from, or else to the source tree
B=$(cd "$B" 2>/dev/null && pwd) || B=$(cd "$(dirname "$0")/../$B" 2>/dev/null && pwd) ||
  { echo "run_gpu_llm: no build directory '${1:-build}'" >&2; exit 2; }
cd "$(dirname "$0")/.." || exit 2
for f in synor bench/bench_llm; do
  [[ -x $B/$f ]] || { echo "run_gpu_llm: $B/$f is missing: build first (cmake --build $B)" >&2; exit 2; }
done

# cuBLAS where CUDA installs it, if the loader does not know it already;
# never the CUDA mock of the tests.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.1[123]'; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda-13.0/targets/x86_64-linux/lib /usr/local/cuda-12/targets/x86_64-linux/lib; do
    if ls "$d"/libcublas.so.1[123] >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      break
    fi
  done
fi
export LD_LIBRARY_PATH="$(printf '%s' "${LD_LIBRARY_PATH:-}" | tr ':' '\n' | grep -v cuda-mock | paste -sd: -)"

tmp=$(mktemp -d /tmp/synor-gpu-llm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
summary=()
t_start=$SECONDS

# phase NAME SECONDS CMD...: runs CMD under timeout, output indented
# and kept in $tmp/NAME.log; records OK / FAIL (rc) / TIMEOUT / SKIP (77).
phase() {
  local name=$1 secs=$2 rc t0=$SECONDS
  shift 2
  echo
  echo "=== $name  (limit ${secs}s)"
  echo "\$ $*"
  timeout -k 5 "$secs" "$@" >"$tmp/$name.log" 2>&1
  rc=$?
  sed 's/^/  /' "$tmp/$name.log"
  local st
  case $rc in
    0) st=OK ;;
    77) st=SKIP ;;
    124|137) st="TIMEOUT after ${secs}s" ;;
    *) st="FAIL (exit $rc)" ;;
  esac
  summary+=("$(printf '%-28s %-22s %4ds' "$name" "$st" $((SECONDS - t0)))")
  return $rc
}

echo "run_gpu_llm: build $B, $T threads, $(date -u +%FT%TZ)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

phase devices 30 "$B/synor" devices

# The GPU tests, on the real driver (the tests' own CTest entries use the mock).
if ! want tests; then
  :
elif [[ -x $B/tests/test_llm_cuda_mock ]]; then
  phase test_llm_cuda_real 120 env SYNOR_LLMCU_REAL=1 "$B/tests/test_llm_cuda_mock"
else
  echo "(no $B/tests/test_llm_cuda_mock: a build without tests; the GPU tests are skipped)"
fi
if want tests && [[ -x $B/tests/test_runtime_memory ]]; then
  phase test_runtime_memory 120 "$B/tests/test_runtime_memory"
fi
if want tests && [[ -x $B/tests/test_train_cuda_mock ]]; then
  phase test_train_cuda_real 120 env SYNOR_TRAINCU_REAL=1 "$B/tests/test_train_cuda_mock"
fi

# Models: generated weights (no vocabulary training: bytes, padded to 32000).
if want bench; then
phase synth 120 bash -c "
  set -e
  '$B/synor' model synth '$tmp/s15-f32.gguf'  --preset stories15m  --type f32  >/dev/null
  '$B/synor' model synth '$tmp/s15-q8.gguf'   --preset stories15m  --type q8_0 >/dev/null
  '$B/synor' model synth '$tmp/s110-f32.gguf' --preset stories110m --type f32  >/dev/null
  '$B/synor' model synth '$tmp/s110-q8.gguf'  --preset stories110m --type q8_0 >/dev/null
  ls -l '$tmp'/*.gguf"
elif want plan; then
phase synth 60 bash -c "
  set -e
  '$B/synor' model synth '$tmp/s15-f32.gguf'  --preset stories15m  --type f32  >/dev/null
  '$B/synor' model synth '$tmp/s110-f32.gguf' --preset stories110m --type f32  >/dev/null
  ls -l '$tmp'/*.gguf"
fi

# The split planner: per phase, how many layers the GPU runs, from a short
# calibration; then the run's report (a prompt of about 120 tokens, 64 new).
if want plan; then
  prompt="Once upon a time, in a small town by the sea, there lived a girl who loved to build boats out of old wood and rope."
  for m in s15-f32 s110-f32; do
    [[ -f $tmp/$m.gguf ]] || continue
    phase "llm_plan_$m" 40 "$B/synor" generate -m "$tmp/$m.gguf" -p "$prompt" -n 64 \
      --threads "$T" --gpu-layers plan --report
  done
fi

# bench_llm: pp 128 (one batch of 128 prompt tokens) and tg 64 (64 decode
# steps), median of 3 after a warm-up; CPU only, then every layer and the
# classifier on GPU 0.
for m in s15-f32 s15-q8 s110-f32 s110-q8; do
  want bench || break
  [[ -f $tmp/$m.gguf ]] || continue
  phase "llm_${m}_cpu" 90 "$B/bench/bench_llm" -m "$tmp/$m.gguf" -p 128 -n 64 -r 3 -t "$T" --no-kv
  phase "llm_${m}_gpu" 90 "$B/bench/bench_llm" -m "$tmp/$m.gguf" -p 128 -n 64 -r 3 -t "$T" \
    --no-kv --gpu-layers all
done
# A longer prompt on the larger model: where the GPU's GEMM counts most.
if want bench && [[ -f $tmp/s110-f32.gguf ]]; then
  phase llm_s110-f32_cpu_pp512 90 "$B/bench/bench_llm" -m "$tmp/s110-f32.gguf" -p 512 -n 0 -r 3 -t "$T" --no-kv
  phase llm_s110-f32_gpu_pp512 90 "$B/bench/bench_llm" -m "$tmp/s110-f32.gguf" -p 512 -n 0 -r 3 -t "$T" --no-kv --gpu-layers all
fi

# One short training run (stories15M's shape, vocab 512, 8 x 256 tokens a
# step): CPU workers, then the products on the GPU.
if want train && [[ -x $B/bench/bench_train ]]; then
  phase train_cpu 60 "$B/bench/bench_train" --threads "$T" --steps 6 --warmup 2
  phase train_cuda 60 "$B/bench/bench_train" --threads "$T" --steps 6 --warmup 2 --cuda 1
fi

row() {
  [[ -f $3 ]] || return 0
  local pp tg
  pp=$(awk '$1 == "pp" {print $4}' "$3")
  tg=$(awk '$1 == "tg" {print $4}' "$3")
  printf '  %-16s %-4s pp %10s   tg %10s\n' "$1" "$2" "${pp:--}" "${tg:--}"
}

# The runtime's host <-> GPU copies: the driver's pageable copies against
# page-locked staging (cfg.cuda_staging, 64 MiB buffers), on tiled SGEMM.
if want gemm && [[ -x $B/bench/bench_gpu_gemm ]]; then
  phase gemm_pageable 100 "$B/bench/bench_gpu_gemm" s 8192 2048 2
  phase gemm_staged 100 env SYNOR_CUDA_STAGING=67108864 "$B/bench/bench_gpu_gemm" s 8192 2048 2
fi

echo
echo "=== summary (total $((SECONDS - t_start)) s)"
printf '  %s\n' "${summary[@]}"
echo
echo "=== bench_llm rows (tokens/s, median)"
for m in s15-f32 s15-q8 s110-f32 s110-q8; do
  for dev in cpu gpu; do
    row "$m" "$dev" "$tmp/llm_${m}_${dev}.log"
  done
done
row "s110-f32 pp512" cpu "$tmp/llm_s110-f32_cpu_pp512.log"
row "s110-f32 pp512" gpu "$tmp/llm_s110-f32_gpu_pp512.log"
if [[ -f $tmp/gemm_pageable.log ]]; then
  echo
  echo "=== bench_gpu_gemm s 8192 (runtime copies pageable vs staged)"
  for v in pageable staged; do
    [[ -f $tmp/gemm_$v.log ]] && grep -E 'cublas_alone|runtime_mixed|check:' "$tmp/gemm_$v.log" | sed "s/^/  $v: /"
  done
fi
for m in s15-f32 s110-f32; do
  [[ -f $tmp/llm_plan_$m.log ]] || continue
  [[ $m == s15-f32 ]] && { echo; echo "=== split planner (synor generate --gpu-layers plan)"; }
  grep -E "^synor: (prefill|decode)|tokens/s decoding" "$tmp/llm_plan_$m.log" | sed "s/^/  $m: /"
done
if [[ -f $tmp/train_cpu.log ]]; then
  echo
  echo "=== bench_train"
  for d in cpu cuda; do
    [[ -f $tmp/train_$d.log ]] && printf '  %-5s %s\n' "$d" "$(grep -m1 '^{' "$tmp/train_$d.log" || tail -1 "$tmp/train_$d.log")"
  done
fi
