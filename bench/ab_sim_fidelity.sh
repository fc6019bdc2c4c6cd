#!/usr/bin/env bash
# ab_sim_fidelity.sh - one bench_sim_fidelity process of each of two builds
# (A: before, B: after), one after the other under `chrt -f 10`, their
# lines tagged bin=base / bin=new and appended to OUT; ORDER ab or ba. Run
# it under the FIFO lock, one call per process pair (docs/BENCHMARKS.md
# "Placing on PoCL as the runtime does"):
#   flock /tmp/synor-fifo.lock bash bench/ab_sim_fidelity.sh A_BUILD B_BUILD OUT ab \
#       --runs 11 --opencl --measure-cache M --sharing-cache S --tiled gemm:3072:256
# Summary per workload and build: medians over the calls' processes of
# every key=value figure, e.g. with python3 over the tagged lines.
set -euo pipefail
a=$1/bench/bench_sim_fidelity b=$2/bench/bench_sim_fidelity out=$3 order=$4
shift 4
one() {
  local tag=$1 bin=$2
  shift 2
  chrt -f 10 "$bin" "$@" 2>&1 | sed "s/^workload=/bin=$tag workload=/" >>"$out"
}
echo "# $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) order=$order $*" >>"$out"
if [[ $order == ab ]]; then
  one base "$a" "$@"; one new "$b" "$@"
else
  one new "$b" "$@"; one base "$a" "$@"
fi
echo "# end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
