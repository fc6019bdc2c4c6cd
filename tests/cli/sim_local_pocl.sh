#!/usr/bin/env bash
# synor simulate / whatif --fabric local hold the OpenCL CPU device (PoCL)
# that detection finds beside the CPU workers, without --sharing-cache:
# the shared-core factors are measured once and cached beside the
# detection's measured peaks ($XDG_CACHE_HOME/synor/host-sharing.json);
# --opencl off leaves it out. Parts that need PoCL are skipped with a
# message where there is none.
# usage: sim_local_pocl.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache XDG_DATA_HOME=$tmp/data
SC=$XDG_CACHE_HOME/synor/host-sharing.json
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
sim() { rc "$S" simulate --fabric local --tiled gemm --n 512 --strategy dynamic --baseline none \
          --no-perfmodel --cpu-workers 2 "$@"; }

# usage errors name the option
check bad-opencl     [ "$(sim --opencl some)" = 2 ]
check bad-opencl-m   grep -q "\-\-opencl 'some': off or all" "$tmp/err"
check off-and-cache  [ "$(sim --opencl off --sharing-cache "$tmp/s.json")" = 2 ]
check off-cache-m    grep -q "exclude each other" "$tmp/err"
check not-local      [ "$(rc "$S" simulate --fabric seed --opencl off)" = 2 ]
check not-local-m    grep -q "\-\-opencl are options of the local fabric" "$tmp/err"

# --opencl off: the CPU workers alone, nothing measured for sharing
check off            [ "$(sim --opencl off)" = 0 ]
check off-note       grep -q "No OpenCL device (--opencl off): the CPU workers alone." "$tmp/out"
check off-no-cache   [ ! -e "$SC" ]
check off-devices    [ "$(grep -cE "^  cpu0\.[01] .* simulated " "$tmp/out")" = 2 ]

if [ "$(sim)" = 0 ] && grep -q "No OpenCL CPU device here" "$tmp/out"; then
  echo "sim_local_pocl: no OpenCL CPU device (PoCL): the default-PoCL part skipped"
  check none-no-cache [ ! -e "$SC" ]
else
  check default-note   grep -q "an OpenCL CPU device that shares their cores (factors from $SC)" "$tmp/out"
  check default-cache  "$JC" format synor-host-sharing/1 <"$SC"
  # three devices, all simulated: the two workers and PoCL (its runtime name)
  check default-devs   [ "$(grep -cE "^  (cpu\.[01]|opencl[0-9]+) .* simulated " "$tmp/out")" = 3 ]
  check default-real   sh -c '! grep -qE "^  (cpu|opencl).* real " "$0"' "$tmp/out"
  # the second time the cache is read (same output), and --sharing-cache
  # with that file is the same fabric
  cp "$tmp/out" "$tmp/first"
  check default-again  [ "$(sim)" = 0 ]
  check default-same   cmp -s "$tmp/out" "$tmp/first"
  check explicit       [ "$(sim --sharing-cache "$SC")" = 0 ]
  check explicit-same  cmp -s "$tmp/out" "$tmp/first"
  check all            [ "$(sim --opencl all)" = 0 ]
  check all-same       cmp -s "$tmp/out" "$tmp/first"
  # whatif with changes keeps the CPU workers alone, and says so
  check whatif-add     [ "$(rc "$S" whatif --tiled gemm --n 512 --no-perfmodel --cpu-workers 2 --add nvidia-h100-sxm)" = 0 ]
  check whatif-add-m   grep -q "No OpenCL CPU device (PoCL) with changes to the fabric" "$tmp/out"
fi

echo "sim_local_pocl: $pass passed, $fail failed"
[ "$fail" = 0 ]
