#!/usr/bin/env bash
# synor mpi: the data-parallel and pipeline graphs on 1, 2 and 4 MPI ranks of
# this machine (mpirun), each compared with the one-rank run: the same
# checksum to the last digit (the kernels have a fixed order), no difference
# from the serial computation, and the messages the bookkeeping implies.
# Without MPI (not built with it, or no mpirun) the one-rank runs are still
# checked, then the test reports a skip.
# usage: mpi.sh SYNOR_BIN SOURCE_DIR [JSON_CHECK_BIN]
S=$1
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
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
run() { local n=$1; shift; rc timeout 120 "${MPIRUN[@]}" -n "$n" "$S" mpi "$@"; }

for n in 2 4; do
  check dp$n         [ "$(run $n data-parallel)" = 0 ]
  check dp$n-ranks   grep -q "45 tasks on $n of $n ranks" "$tmp/out"
  check dp$n-sum     [ "$(field checksum)" = "$dp_sum" ]
  check dp$n-exact   grep -q "max |difference| from the serial computation: 0$" "$tmp/out"
  cp "$tmp/out" "$tmp/dp$n"
  check pp$n         [ "$(run $n pipeline)" = 0 ]
  check pp$n-ranks   grep -q "32 tasks on $n of $n ranks" "$tmp/out"
  check pp$n-sum     [ "$(field checksum)" = "$pp_sum" ]
  check pp$n-exact   grep -q "max |difference| from the serial computation: 0$" "$tmp/out"
  cp "$tmp/out" "$tmp/pp$n"
  check dp$n-plan     [ "$(run $n data-parallel --mpi-placement plan)" = 0 ]
  check dp$n-plan-sum [ "$(field checksum)" = "$dp_sum" ]
  check pp$n-plan     [ "$(run $n pipeline --mpi-placement plan)" = 0 ]
  check pp$n-plan-sum [ "$(field checksum)" = "$pp_sum" ]
done
# The messages the owner rule implies. Data-parallel, 2 ranks (shards 0, 2
# on rank 0; 1, 3 on rank 1), per step: g1 and g3 to rank 0 for the tree,
# the sum to rank 1 once (its second replica reads the cached copy); then
# W_1 and W_3 gathered: 3 x 3 + 2 = 11 messages of 64 KiB. Pipeline, 2
# ranks: 3 stage-to-stage hops and the gather per micro-batch, 8 x 4 = 32
# messages of 32 KiB.
check dp2-msgs grep -q "moved between ranks: 11 messages, 720896 bytes" "$tmp/dp2"
check pp2-msgs grep -q "moved between ranks: 32 messages, 1048576 bytes" "$tmp/pp2"
# 4 ranks: each micro-batch still crosses 3 hops plus the gather
check pp4-msgs grep -q "moved between ranks: 32 messages, 1048576 bytes" "$tmp/pp4"

# a rank that fails makes the run fail: a bad option on every rank
check bad-mpi  [ "$(run 2 pipeline --dim 5000)" != 0 ]

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
