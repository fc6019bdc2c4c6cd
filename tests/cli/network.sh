#!/usr/bin/env bash
# The compute network end to end (issue 15's bar): a coordinator and 5
# agents on this machine, a job of about 1,000 tasks (334 sgemm shards x 3
# replicas; two agents claim 4 tasks at a time, the batch protocol), one
# agent returning wrong results, two agents killed mid-run
# (one exits 137 in the middle of a task, one is sent SIGKILL): the job
# completes with right results (checked with a triple loop), the cheating
# provider earns nothing and its reputation falls below the honest ones',
# the killed agents' tasks are run by others after their leases lapse, and
# no task is in the ledger twice. On SQLite, and on PostgreSQL: the URL in
# SYNOR_TEST_PG_URL, else a throwaway cluster started with
# scripts/pg_test_server.sh (that part skipped, saying why, when
# PostgreSQL's binaries are absent). Skipped (77) when this synor has no
# `coordinator` command (built without libmicrohttpd/nettle, or before the
# coordinator's branch is merged).
# usage: network.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
SHARDS=${SYNOR_E2E_SHARDS:-334}
pass=0; fail=0
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
"$S" coordinator --help >/dev/null 2>&1 || { echo "network: no synor coordinator in this build; skipped"; exit 77; }
"$S" agent --help >/dev/null 2>&1 || { echo "network: no synor agent in this build; skipped"; exit 77; }
command -v curl >/dev/null || { echo "network: curl not installed; skipped"; exit 77; }

"$S" submit --make-sgemm-job "$SHARDS" --dir "$tmp/job" --m 32 --n 32 --k 32 --replicas 3 \
  --seed 15 >/dev/null || exit 1

# run DB LABEL: the whole scenario on one store
run() {
  local db=$1 L=$2 d="$tmp/$2"
  mkdir -p "$d"
  "$S" coordinator --db "$db" --port 0 --operator-token-file "$d/op.tok" --lease-timeout 3 \
    --quiet >"$d/c.out" 2>"$d/c.err" &
  local cp=$!; pids+=("$cp")
  local port=
  for _ in $(seq 200); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$d/c.out")
    [ -n "$port" ] && break; sleep 0.05
  done
  check "${L}_coordinator_up" test -n "$port"
  [ -n "$port" ] || return
  local U="--coordinator http://127.0.0.1:$port"
  "$S" token $U --token-file "$d/op.tok" create --role consumer --owner carol -o "$d/carol.tok" >/dev/null
  for p in p1 p2 p3 p4 p5; do
    "$S" token $U --token-file "$d/op.tok" create --role provider --owner $p -o "$d/$p.tok" >/dev/null
  done
  local t0=$(date +%s.%N)
  local job=$("$S" submit $U --token-file "$d/carol.tok" "$tmp/job/job.json")
  check "${L}_submitted" test -n "$job"
  local ag=()
  for p in p1 p2 p3 p4 p5; do
    local extra=()
    [ $p = p1 ] || [ $p = p2 ] && extra=(--claim-max 4) # the batch protocol
    [ $p = p3 ] && extra=(--test-fault wrong-results)
    [ $p = p4 ] && extra=(--test-fault die-after 40)
    "$S" agent $U --token-file "$d/$p.tok" --state-dir "$d/s-$p" --wait 2 --cpu-share 50% \
      --quiet "${extra[@]}" 2>"$d/$p.err" &
    ag+=($!); pids+=($!)
  done
  # p5: SIGKILL once a quarter of the tasks are done
  local total=$((SHARDS * 3)) killed=0
  for _ in $(seq 1200); do
    local done_n=$("$S" status $U --token-file "$d/carol.tok" "$job" --json 2>/dev/null | "$JC" -g done)
    if [ "${done_n:-0}" -ge $((total / 4)) ]; then kill -KILL "${ag[4]}"; killed=1; break; fi
    sleep 0.1
  done
  check "${L}_p5_killed_mid_run" test $killed = 1
  timeout 300 "$S" status $U --token-file "$d/carol.tok" "$job" --wait -o "$d/r.bin" \
    2>"$d/w.err" >/dev/null
  local wrc=$? t1=$(date +%s.%N)
  echo "network ($L): $total tasks, job done in $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s"
  check "${L}_job_done" test $wrc = 0
  "$S" submit --verify-sgemm "$tmp/job" "$d/r.bin" >"$d/v.out"
  check "${L}_results_right" test $? = 0
  wait "${ag[3]}"; check "${L}_p4_died_137" test $? = 137
  check "${L}_p4_left_a_result" test -n "$(ls "$d/s-p4/pending/"*.json 2>/dev/null)"
  for i in 0 1 2; do kill -TERM "${ag[$i]}"; done
  for i in 0 1 2; do wait "${ag[$i]}"; done
  # the cheater: no earnings, reputation below the honest providers'
  "$S" agent $U --token-file "$d/p3.tok" --earnings >"$d/e3.json"
  check "${L}_cheater_earns_nothing" test "$("$JC" -g balance <"$d/e3.json")" = 0.000000
  "$S" agent $U --token-file "$d/p1.tok" --earnings >"$d/e1.json"
  check "${L}_honest_earns" test "$("$JC" -g balance <"$d/e1.json")" != 0.000000
  local op="Authorization: Bearer $(cat "$d/op.tok")"
  curl -s -H "$op" "http://127.0.0.1:$port/v1/devices" >"$d/dev.json"
  local rep1= rep3=
  for i in 0 1 2 3 4; do
    local o=$("$JC" -g devices.$i.owner <"$d/dev.json" 2>/dev/null)
    [ "$o" = p1 ] && rep1=$("$JC" -g devices.$i.reputation <"$d/dev.json")
    [ "$o" = p3 ] && rep3=$("$JC" -g devices.$i.reputation <"$d/dev.json")
  done
  check "${L}_cheater_reputation_fell" test -n "$rep3" -a -n "$rep1" && test "${rep3:-0}" -lt "${rep1:-0}"
  # the ledger: no task twice, every shard paid at least its majority
  curl -s -H "$op" "http://127.0.0.1:$port/v1/ledger" >"$d/ledger.json"
  grep -o '"task":"t-[0-9]*"' "$d/ledger.json" | sort >"$d/ledger.tasks"
  check "${L}_ledger_no_task_twice" test -z "$(uniq -d "$d/ledger.tasks")"
  local paid=$(wc -l <"$d/ledger.tasks")
  check "${L}_ledger_pays_majorities" test "$paid" -ge $((2 * SHARDS)) -a "$paid" -le $((3 * SHARDS))
  kill -TERM $cp; wait $cp
  check "${L}_coordinator_stops_0" test $? = 0
}

run "$tmp/net.db" sqlite
# PostgreSQL: the URL given, else a throwaway cluster (scripts/pg_test_server.sh)
pg=${SYNOR_TEST_PG_URL:-}
pgdir=
if [ -z "$pg" ] && [ -f "$SRC/scripts/pg_test_server.sh" ]; then
  pgdir=$(mktemp -d /tmp/synor-pg-XXXXXX)
  chmod 755 "$pgdir" # the cluster runs as the user postgres
  pg=$(bash "$SRC/scripts/pg_test_server.sh" start "$pgdir/c" 2>"$tmp/pg.err")
  rc=$?
  if [ $rc != 0 ]; then
    echo "network: no PostgreSQL cluster ($(head -c 200 "$tmp/pg.err")); PostgreSQL part skipped"
    pg=
  fi
fi
if [ -n "$pg" ]; then
  run "$pg" postgresql
fi
[ -n "$pgdir" ] && bash "$SRC/scripts/pg_test_server.sh" stop "$pgdir/c" && rm -rf "$pgdir"
echo "network: $pass passed, $fail failed"
[ $fail = 0 ]
