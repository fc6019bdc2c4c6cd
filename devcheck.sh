#!/usr/bin/env bash
# Device check (issue 11 item 7, h-wide): is the 16-core machine's "CPU only" simulator fidelity
# ~1 now that bench_sim_fidelity keeps the runtime off the GPU (cfg.cuda = 0 without --cuda), and
# are the per-op simulated busy times non-negative with --opencl? Needs .devpkg/b/bench/
# bench_sim_fidelity built from branch h-wide (and .devpkg/lib6.tar.xz as for gpu6b.sh). < 2 min.
# What tells:
#   cpu.txt, every workload line: real_cuda_tasks=0.0 (no task on the GPU) and
#     model_other_devices=0; ratio_dynamic near 1 (the 2-vCPU VM: 0.95-1.05; before: MLP 15.7,
#     GEMM 2048 3.6); each op= line's ratio near 1 (before: 35-1000 for matmul, gelu, gemm).
#   cuda.txt (only where a GPU is open; --cuda: the run and the fabric both have it):
#     real_cuda_tasks > 0, model_other_devices=0, no negative sim_busy_ms; the ratios are what the
#     simulator makes of CPU + GPU placement (new figures, no goal yet).
#   opencl.txt: no negative sim_busy_ms (before: op=gemm sim_busy_ms=-60.366), real_cuda_tasks=0.0;
#     its sharing: line's cpu_alone_ms (before 3.666, maybe with GPU tiles in it) is the CPU's now.
#   cuda.txt's and cpu.txt's real_busy_ms for matmul/gemm differ by ~30-100x (the GPU's vs the CPU's
#     kernels): the cause of the 100x (the "CPU only" run had run them on the GPU).
D=$(cd "$(dirname "$0")" && pwd) || exit 2
[ -d "$D/.devpkg" ] || D=$(dirname "$D") # at the repo root or in .devpkg/
cd "$D" || exit 2
OUT=${OUT:-/tmp/outwide}; mkdir -p "$OUT"
P=$PWD/.devpkg; B=$P/b; T0=$SECONDS
rm -rf /tmp/devlib; mkdir -p /tmp/devlib && tar -xJf $P/lib6.tar.xz -C /tmp/devlib lib || exit 3
export LD_LIBRARY_PATH=/tmp/devlib/lib
F=$B/bench/bench_sim_fidelity
ROWS="workloads/mlp-fp32.json --tiled gemm:1024:256 --tiled gemm:2048:256 --tiled cholesky:2048:256"
short() { grep -E "workload=|op=" | sed 's/ real_min_ms.*sim_dynamic_ms=/ sim=/; s/ sim_heft.*ratio_dynamic=/ ratio=/; s/ ratio_heft.*dispatch_us=/ dispatch_us=/; s/ host_before.*after_openblas_ms=[0-9.]*//; s/ host_before.*sim_nohost_ms=[0-9.]* ratio_nohost=[0-9.]*//' | cut -c1-220; }
echo "machine: $(nproc) cores, $(uptime)" | tee $OUT/machine.txt
nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | tee -a $OUT/machine.txt
for w in 16 4; do
  timeout 35 $F --runs 11 --workers $w --measure-cache /tmp/mcwide.json $ROWS 2>&1 |
    sed "s/^/w$w /" | tee -a $OUT/cpu.txt | short
  echo "cpu w$w rc=${PIPESTATUS[0]} [$((SECONDS - T0)) s]"
done
timeout 20 $F --runs 7 --workers 16 --cuda --measure-cache /tmp/mcwide.json \
  workloads/mlp-fp32.json --tiled gemm:2048:256 2>&1 | tee $OUT/cuda.txt | short
echo "cuda rc=${PIPESTATUS[0]} [$((SECONDS - T0)) s]"
timeout 25 $F --runs 7 --workers 0 --opencl --measure-cache /tmp/mcwide.json \
  --sharing-cache /tmp/scwide.json workloads/mlp-fp32.json --tiled gemm:1024:256 \
  --tiled cholesky:2048:256 2>&1 | tee $OUT/opencl.txt | short
echo "opencl rc=${PIPESTATUS[0]} [$((SECONDS - T0)) s]"
echo "negative sim_busy_ms lines: $(cat $OUT/*.txt | grep -c 'sim_busy_ms=-')"
echo "[$((SECONDS - T0)) s] done"
