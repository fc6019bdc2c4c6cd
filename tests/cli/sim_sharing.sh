#!/usr/bin/env bash
# synor simulate on a fabric file whose device shares the host's cores
# ("host_sharing", docs/PLANNING.md "Devices that share the host's cores"):
# the dynamic strategy places on it as the runtime does (its place_scale);
# bad values are refused naming the file, the field and the value.
# usage: sim_sharing.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

fabric() { # $1: the shared device's extra fields
  cat >"$tmp/f.json" <<JSON
{"format": "synor-fabric/1", "name": "shared", "currency": "USD",
 "nodes": [{"name": "host"}],
 "devices": [
  {"name": "cpu", "profile": "amd-epyc-9654", "node": "host", "count": 2},
  {"name": "ocl", "profile": "intel-xeon-8480plus", "node": "host"$1}]}
JSON
}
{
  echo '{"format": "synor-workload/1", "name": "six", "tasks": ['
  for i in 0 1 2 3 4; do echo " {\"id\": \"t$i\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 4}},"; done
  echo ' {"id": "t5", "exec_s": {"cpu.0": 1, "cpu.1": 1, "ocl": 4}}]}'
} >"$tmp/w.json"
sim() { rc "$S" simulate --fabric "$tmp/f.json" --workload "$tmp/w.json" --strategy dynamic \
          --baseline none --trace "$tmp/t.json"; }
makespan() { grep -o '"makespan_s": *[0-9.e+-]*' "$tmp/t.json" | head -1 | sed 's/.*: *//'; }

# estimate 4 s on the shared device: the workers' queue always wins (3 s)
fabric ', "host_sharing": {"cpu_slowdown": 1, "slowdown": 1}'
check plain        [ "$(sim)" = 0 ]
check plain-json   "$JC" format synor-trace/1 <"$tmp/t.json"
check plain-3s     [ "$(makespan)" = 3 ]
# the runtime's estimate a quarter of it (place_scale): t1 and t4 go there, 4 s each
fabric ', "host_sharing": {"cpu_slowdown": 1, "slowdown": 1, "place_scale": 0.25}'
check scaled       [ "$(sim)" = 0 ]
check scaled-8s    [ "$(makespan)" = 8 ]
# contention charged: the same placement, the workers slowed while it runs
fabric ', "host_sharing": {"cpu_slowdown": 2, "slowdown": 1, "place_scale": 0.25}'
check charged      [ "$(sim)" = 0 ]
check charged-8s   [ "$(makespan)" = 8 ]
# bad values: the file, the field, the value
fabric ', "host_sharing": {"cpu_slowdown": 0.5, "slowdown": 1}'
check bad-rc       [ "$(sim)" != 0 ]
check bad-file     grep -q "f.json" "$tmp/err"
check bad-field    grep -q "devices\[1\].host_sharing.cpu_slowdown" "$tmp/err"
check bad-value    grep -q "0.5" "$tmp/err"
fabric ', "host_sharing": {"cpu_slowdown": 2, "slowdown": 1, "share": 3}'
check unknown-rc   [ "$(sim)" != 0 ]
check unknown-key  grep -q '"share"\|share' "$tmp/err"

# --fabric local --sharing-cache: PoCL beside the CPU workers where there is one
check opt-usage    [ "$(rc "$S" simulate --fabric seed --sharing-cache "$tmp/s.json")" = 2 ]
check opt-usage-m  grep -q "sharing-cache" "$tmp/err"
if [ "$(rc "$S" simulate --fabric local --tiled gemm --n 512 --strategy dynamic --baseline none \
          --no-perfmodel --sharing-cache "$tmp/s.json")" = 0 ] &&
   grep -q "No OpenCL CPU device here" "$tmp/out"; then
  echo "sim_sharing: no OpenCL CPU device (PoCL): --sharing-cache part skipped"
else
  check local-note   grep -q "an OpenCL CPU device that shares their cores" "$tmp/out"
  check local-cache  grep -q '"format": "synor-host-sharing/1"' "$tmp/s.json"
  # the second time the cache is read: same output
  cp "$tmp/out" "$tmp/first"
  check local-again  [ "$(rc "$S" simulate --fabric local --tiled gemm --n 512 --strategy dynamic \
                            --baseline none --no-perfmodel --sharing-cache "$tmp/s.json")" = 0 ]
  check local-same   cmp -s "$tmp/out" "$tmp/first"
fi

echo "sim_sharing: $pass passed, $fail failed"
[ "$fail" = 0 ]
