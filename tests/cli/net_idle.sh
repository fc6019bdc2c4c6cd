#!/usr/bin/env bash
# Idle-only preemption end to end (docs/AGENT.md "Preemption"): a real
# coordinator (60 s lease timeout: nothing comes back by expiry) and real
# agents.
# - Agent i1 runs with --availability idle --idle-threshold 90%: it takes
#   a 1024 x 256 x 512 sgemm task (4 row strips, one worker: a safe point
#   after each) and, by --test-fault pause-at 1, stops itself (SIGSTOP) at
#   its first safe point. The test makes the machine busy (one CPU burner
#   per core: their CPU time is "other processes" in /proc/stat), then
#   continues i1: that safe point judges the owner's limits, finds the
#   machine in use, stops there ("stopped at a safe point (1 of 4 row
#   strips done) ...: outside the owner's limits"), releases the task with
#   its checkpoint and takes no work ("outside the owner's limits").
# - Agent a2 (always available) resumes it from the checkpoint and
#   finishes; the result is right and bit for bit the result of the same
#   job run uninterrupted (a2 again); the ledger pays a2 alone.
# - The burners stop: i1 takes work again ("within the owner's limits
#   again"), judged before its next claim.
# Nothing here waits for a duration to decide: every step waits for a log
# line or a process state, with generous limits. The one thing the test
# cannot control is the machine's own load: if other processes already
# take more than 90% of its CPU time, i1 never starts (or never takes work
# again), which is right for an idle-only agent but leaves nothing to
# check: the test then says so and is skipped (77).
# Skipped (77) without the coordinator, the agent, curl or /proc/stat.
# usage: net_idle.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
pass=0; fail=0
tmp=$(mktemp -d)
burners=()
cleanup() {
  local p
  for p in "${burners[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in $(jobs -p); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
"$S" coordinator --help >/dev/null 2>&1 || { echo "net_idle: no synor coordinator in this build; skipped"; exit 77; }
"$S" agent --help >/dev/null 2>&1 || { echo "net_idle: no synor agent in this build; skipped"; exit 77; }
command -v curl >/dev/null || { echo "net_idle: curl not installed; skipped"; exit 77; }
[ -r /proc/stat ] || { echo "net_idle: no /proc/stat; skipped"; exit 77; }
cd "$tmp" || exit 1
# wait_for FILE PATTERN [SECONDS]: until grep finds PATTERN in FILE
wait_for() { local i; for i in $(seq $((${3:-60} * 20))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
skip() { echo "net_idle: $1; skipped"; exit 77; }
DB=${SYNOR_COORD_DB:-$tmp/net.db}
"$S" coordinator --db "$DB" --port 0 --operator-token-file op.tok --lease-timeout 60 >coord.out 2>coord.log &
for _ in $(seq 300); do grep -q listening coord.out && [ -s op.tok ] && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' coord.out | head -1)
check "coordinator up" test -n "$port"
export SYNOR_COORDINATOR=http://127.0.0.1:$port SYNOR_TOKEN_FILE=op.tok
OP=$(cat op.tok)
"$S" token create --role consumer --owner me -o me.tok >/dev/null
for p in i1 a2; do "$S" token create --role provider --owner $p -o $p.tok >/dev/null; done
ME=$(cat me.tok)
job() { curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$1"; }
op() { curl -s -H "Authorization: Bearer $OP" "$SYNOR_COORDINATOR$1"; }
result() { curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$1/result" -o "$2"; }

"$S" submit --make-sgemm-job 1 --dir a --m 1024 --k 256 --n 512 --seed 5 >/dev/null
j1=$(SYNOR_TOKEN_FILE=me.tok "$S" submit a/job.json 2>sub.err)
check "job submitted" test "$j1" = j-1

# i1: idle-only, paused at its first safe point
"$S" agent --token-file i1.tok --wait 1 --availability idle --idle-threshold 90% \
  --cpu-share 0.0001 --test-fault pause-at 1 2>i1.log &
ipid=$!
if ! wait_for i1.log "pause-at 1: stopping" 60; then
  grep -q "outside the owner's limits" i1.log && skip "the machine is busy (other processes take over 90% of its CPU time): the idle-only agent never started"
  check "i1 paused at its first safe point" false
fi
for _ in $(seq 200); do [ "$(awk '{print $3}' /proc/$ipid/stat 2>/dev/null)" = T ] && break; sleep 0.05; done
check "i1 stopped itself" test "$(awk '{print $3}' /proc/$ipid/stat 2>/dev/null)" = T

# the machine in use: one burner per core, then i1 goes on - once the burners have the CPUs
# (/proc/stat's busy share over half a second at least 95%: i1 judges a window of 0.1 s right
# after it goes on, which burners still starting could leave under its 90%)
for _ in $(seq "$(nproc)"); do bash -c 'while :; do :; done' & burners+=($!); done
busy_ticks() { awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat; }
for _ in $(seq 20); do
  read -r b0 t0 < <(busy_ticks); sleep 0.5; read -r b1 t1 < <(busy_ticks)
  [ $(( (b1 - b0) * 100 )) -ge $(( (t1 - t0) * 95 )) ] && break
done
kill -CONT $ipid
check "i1 stopped at the safe point: the machine in use" \
  wait_for i1.log "stopped at a safe point (1 of 4 row strips done) in .*: outside the owner's limits" 60
check "i1 released with a stored checkpoint" \
  wait_for i1.log "t-1: released (checkpoint of $((64 + 256 * 512 * 4)) bytes: stored)" 30
check "i1 takes no work" wait_for i1.log "outside the owner's limits: taking no work" 30
check "task-released event" grep -q '"kind":"task-released","subject":"t-1"' <<<"$(op /v1/events)"

# a2 (always available) resumes and finishes
timeout 120 "$S" agent --token-file a2.tok --wait 1 --max-tasks 1 2>a2.log
check "a2 exits 0" test $? = 0
check "a2 resumed from the checkpoint" grep -q "t-1: resumed from a checkpoint: 1 of 4 row strips were done" a2.log
check "job done" grep -q '"state":"done"' <<<"$(job j-1)"
result j-1 c1.bin
check "result right" "$S" submit --verify-sgemm a c1.bin
ledger=$(op /v1/ledger)
check "t-1 paid to a2 alone" test "$(grep -o '"provider":"[a-z0-9]*"' <<<"$ledger" | sort -u)" = '"provider":"a2"'

# the burners stop: i1 takes work again (judged before its next claim)
for p in "${burners[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
burners=()
if ! wait_for i1.log "within the owner's limits again: taking work" 90; then
  kill -TERM $ipid 2>/dev/null; wait $ipid
  echo "net_idle: $pass passed, $fail failed before the end"
  [ $fail = 0 ] || { for f in *.log; do echo "--- $f"; grep -v "^{" "$f"; done; exit 1; }
  skip "the machine stayed busy after the burners stopped: the idle-only agent did not take work again"
fi
pass=$((pass+1))
kill -TERM $ipid; wait $ipid
check "i1 stops with 0" test $? = 0
check "i1 summary: 0 done, 1 released" grep -q "0 done, .* 1 released, 0 resumed" i1.log

# the same job uninterrupted, by a2: the same bits
j2=$(SYNOR_TOKEN_FILE=me.tok "$S" submit a/job.json 2>>sub.err)
timeout 120 "$S" agent --token-file a2.tok --wait 1 --max-tasks 1 2>a2b.log
result "$j2" c2.bin
check "uninterrupted run done" test -s c2.bin
check "resumed result bit for bit the uninterrupted one" cmp -s c1.bin c2.bin

kill -TERM %1 2>/dev/null; wait %1
check "coordinator stops with 0" test $? = 0

echo "net_idle: $pass passed, $fail failed"
[ $fail = 0 ] || { for f in *.log; do echo "--- $f"; grep -v "^{" "$f"; done; }
[ $fail = 0 ]
