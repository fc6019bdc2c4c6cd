#!/usr/bin/env bash
# synor mpi and synor run --mpi: the data-parallel and pipeline graphs, and
# two workload files, on 1, 2 and 4 MPI ranks of this machine (mpirun), each
# compared with the one-rank run: the same checksum to the last digit (the
# kernels do not depend on the rank count), no difference from the serial
# computation, and the messages the bookkeeping implies.
# Without MPI (not built with it, or no mpirun) the one-rank runs are still
# checked, then the test reports a skip.
# usage: mpi.sh SYNOR_BIN SOURCE_DIR [JSON_CHECK_BIN]
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
# ASan builds: LeakSanitizer would report what Open MPI keeps after
# MPI_Finalize; its libraries have no frame pointers, so naming them for the
# suppressions (tests/lsan.supp) needs the slow unwinder, seconds per
# process. Leaks are checked in one run across ranks below (and on one rank
# by test_mpi_runtime), not in every run.
asan=${ASAN_OPTIONS:-}
[ -n "$asan" ] && export ASAN_OPTIONS="$asan:detect_leaks=0"
field() { sed -n "s/.*$1 \([^ ]*\).*/\1/p" "$tmp/out" | head -1; }

# one rank, no mpirun
check dp1          [ "$(rc "$S" mpi data-parallel)" = 0 ]
check dp1-exact    grep -q "max |difference| from the serial computation: 0$" "$tmp/out"
check dp1-tasks    grep -q "45 tasks on 1 of 1 rank " "$tmp/out"
dp_sum=$(field checksum)
check dp1-sum      [ -n "$dp_sum" ]
mpi_built=0; grep -q "transport: MPI" "$tmp/out" && mpi_built=1
check pp1          [ "$(rc "$S" mpi pipeline)" = 0 ]
check pp1-exact    grep -q "max |difference| from the serial computation: 0$" "$tmp/out"
check pp1-tasks    grep -q "32 tasks on 1 of 1 rank " "$tmp/out"
pp_sum=$(field checksum)
check pp1-sum      [ -n "$pp_sum" ]
check pp1-plan     [ "$(rc "$S" mpi pipeline --mpi-placement plan --strategy heft)" = 0 ]
check pp1-plan-sum [ "$(field checksum)" = "$pp_sum" ]
# other sizes give other results (the checksum depends on the data)
check dp1-other    [ "$(rc "$S" mpi data-parallel --dim 64 --steps 2)" = 0 ]
check dp1-differs  [ "$(field checksum)" != "$dp_sum" ]
# workload files (synor run --mpi): one rank gives synor run's checksum
export XDG_DATA_HOME=$tmp/xdg
A=$SRC/workloads/attention-block-fp32.json; M=$SRC/workloads/mlp-fp32.json
"$S" run "$A" --cpu-workers 1 --opencl off --no-perfmodel >"$tmp/plain" 2>&1
plain_a=$(sed -n 's/.*checksum of the results \([^ ]*\).*/\1/p' "$tmp/plain")
check wa1          [ "$(rc "$S" run --mpi "$A")" = 0 ]
check wa1-tasks    grep -q "15 tasks on 1 of 1 rank " "$tmp/out"
wa_sum=$(field "checksum of the results")
check wa1-plain    [ "$(printf '%g' "$wa_sum")" = "$plain_a" ]
check wm1          [ "$(rc "$S" run --mpi "$M")" = 0 ]
wm_sum=$(field "checksum of the results")
check wm1-sum      [ -n "$wm_sum" ]
check w-bad-opt    [ "$(rc "$S" run --mpi "$A" --trace x.json)" = 2 ]
check w-bad-opt-m  grep -q "does not apply to --mpi" "$tmp/err"
check w-no-file    [ "$(rc "$S" run --mpi)" = 2 ]
check w-bad-place  [ "$(rc "$S" run --mpi "$A" --mpi-placement far)" = 2 ]
# usage errors
check bad-graph    [ "$(rc "$S" mpi ring)" = 2 ]
check bad-graph-m  grep -q "unknown graph 'ring'" "$tmp/err"
check bad-place    [ "$(rc "$S" mpi pipeline --mpi-placement random)" = 2 ]
check bad-strategy [ "$(rc "$S" mpi pipeline --mpi-placement plan --strategy fastest)" = 2 ]
check bad-dim      [ "$(rc "$S" mpi pipeline --dim 0)" = 2 ]
check no-graph     [ "$(rc "$S" mpi)" = 2 ]
check help         [ "$(rc "$S" mpi --help)" = 0 ]

if [ "$mpi_built" = 0 ] || ! command -v mpirun >/dev/null; then
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ] || exit 1
  echo "SKIP: the runs across ranks need synor built with MPI and mpirun (libopenmpi-dev, openmpi-bin)"
  exit 77
fi

# Open MPI in a container: shared memory without the kernel's cross-memory
# attach (often blocked by ptrace rules), more ranks than cores, no binding.
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=none
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
# the first run across ranks (2 ranks, both graphs) is leak-checked
run() { # leak-check(0|1) ranks args...
  local leaks=$1 n=$2; shift 2
  if [ -n "$asan" ]; then
    if [ "$leaks" = 1 ]; then export ASAN_OPTIONS="$asan:fast_unwind_on_malloc=0"
    else export ASAN_OPTIONS="$asan:detect_leaks=0"; fi
  fi
  rc timeout 120 "${MPIRUN[@]}" -n "$n" "$S" mpi data-parallel pipeline "$@"
}
# block K of the output (1: data-parallel, 2: pipeline) into $tmp/b
block() { awk -v k="$1" '/^MPI RUN/{b++} b==k' "$tmp/out" >"$tmp/b"; }
bfield() { sed -n "s/.*$1 \([^ ]*\).*/\1/p" "$tmp/b" | head -1; }

for n in 2 4; do
  for place in owner plan; do
    t=$n-$place
    leaks=0; [ "$t" = 2-owner ] && leaks=1
    check run$t        [ "$(run $leaks $n --mpi-placement $place)" = 0 ]
    check blocks$t     [ "$(grep -c '^MPI RUN' "$tmp/out")" = 2 ]
    block 1; cp "$tmp/b" "$tmp/dp$t"
    check dp$t-sum     [ "$(bfield checksum)" = "$dp_sum" ]
    check dp$t-exact   grep -q "max |difference| from the serial computation: 0$" "$tmp/b"
    block 2; cp "$tmp/b" "$tmp/pp$t"
    check pp$t-sum     [ "$(bfield checksum)" = "$pp_sum" ]
    check pp$t-exact   grep -q "max |difference| from the serial computation: 0$" "$tmp/b"
  done
  # the owner rule spreads both graphs over every rank
  check dp$n-ranks grep -q "45 tasks on $n of $n ranks" "$tmp/dp$n-owner"
  check pp$n-ranks grep -q "32 tasks on $n of $n ranks" "$tmp/pp$n-owner"
done
# The messages the owner rule implies. Data-parallel, 2 ranks (shards 0, 2
# on rank 0; 1, 3 on rank 1), per step: g1 and g3 to rank 0 for the tree,
# the sum to rank 1 once (its second replica reads the cached copy); then
# W_1 and W_3 gathered: 3 x 3 + 2 = 11 messages of 64 KiB. Pipeline, 2
# ranks: 3 stage-to-stage hops and the gather per micro-batch, 8 x 4 = 32
# messages of 32 KiB; the same on 4 ranks.
check dp2-msgs    grep -q "moved between ranks: 11 messages, 720896 bytes" "$tmp/dp2-owner"
check dp2-cached  grep -q "rank 0: ran 31 tasks (gathers included), received 8 messages" "$tmp/dp2-owner"
check pp2-msgs    grep -q "moved between ranks: 32 messages, 1048576 bytes" "$tmp/pp2-owner"
check pp4-msgs    grep -q "moved between ranks: 32 messages, 1048576 bytes" "$tmp/pp4-owner"
# workload files across ranks: the one-rank checksums, to the last digit
wrun() { local n=$1; shift; rc timeout 120 "${MPIRUN[@]}" -n "$n" "$S" run --mpi "$@"; }
check wa2          [ "$(wrun 2 "$A")" = 0 ]
check wa2-ranks    grep -q "15 tasks on 2 of 2 ranks" "$tmp/out"
check wa2-moved    sh -c '! grep -q "moved between ranks: 0 messages" "$0"' "$tmp/out"
check wa2-sum      [ "$(field "checksum of the results")" = "$wa_sum" ]
check wa4-plan     [ "$(wrun 4 "$A" --mpi-placement plan --mpi-strategy peft)" = 0 ]
check wa4-plan-sum [ "$(field "checksum of the results")" = "$wa_sum" ]
check wm4          [ "$(wrun 4 "$M")" = 0 ]
check wm4-ranks    grep -q "16 tasks on 3 of 4 ranks" "$tmp/out"
check wm4-sum      [ "$(field "checksum of the results")" = "$wm_sum" ]
# the planned data-parallel run moves data too (HEFT spreads the shards)
check dp4-plan-moves sh -c '! grep -q "moved between ranks: 0 messages" "$0"' "$tmp/dp4-plan"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
