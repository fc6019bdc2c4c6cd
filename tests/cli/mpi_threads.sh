#!/usr/bin/env bash
# The MPI layer's threads across ranks, short enough for ThreadSanitizer
# (label "concurrency", tests/CMakeLists.txt): one job of 4 ranks running
# both ready graphs with 2 workers per rank (the progress thread posting
# and testing messages while workers pack sends and unpack receives), each
# compared with the one-rank run. tests/cli/mpi.sh is the full test.
# usage: mpi_threads.sh SYNOR_BIN SOURCE_DIR [JSON_CHECK_BIN]
S=$1
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
# ASan builds: what Open MPI keeps after MPI_Finalize is not this test's
# business (tests/cli/mpi.sh checks leaks across ranks once)
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
sums() { sed -n 's/.*checksum \([^ ]*\).*/\1/p' "$tmp/out" | tr '\n' ' '; }

check one      [ "$(rc "$S" mpi data-parallel pipeline --cpu-workers 2)" = 0 ]
one=$(sums)
check one-two  [ "$(echo $one | wc -w)" = 2 ]
if ! grep -q "transport: MPI" "$tmp/out" || ! command -v mpirun >/dev/null; then
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ] || exit 1
  echo "SKIP: needs synor built with MPI and mpirun (libopenmpi-dev, openmpi-bin)"
  exit 77
fi
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
check four      [ "$(rc timeout 200 "${MPIRUN[@]}" -n 4 "$S" mpi data-parallel pipeline --cpu-workers 2)" = 0 ]
check four-sums [ "$(sums)" = "$one" ]
check four-exact [ "$(grep -c 'max |difference| from the serial computation: 0$' "$tmp/out")" = 2 ]
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
