#!/usr/bin/env bash
# The coordinator killed with SIGKILL at random moments under load, 20
# times (issue 15's bar; KILLS=N changes it): three agents (curl loops)
# claim and upload all along; after every restart each result an agent saw
# acknowledged (200) is in the ledger, no task is in it twice, and at the
# end the job is done with exactly one ledger entry per task and the
# ledger's total equal to the entries' sum.
# SYNOR_COORD_DB: the store (a fresh PostgreSQL database: netstore_pg.sh);
# default a SQLite file of its own. SYNOR_COORD_ARGS: more coordinator options;
# GAP_MS: the shortest load between two kills (50 ms).
# Skipped (77) without the coordinator or curl.
# usage: coord_crash.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d)
pid=; apids=()
cleanup() {
  touch "$tmp/stop"
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  for p in "${apids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
command -v curl >/dev/null || { echo "coord_crash: curl not installed; skipped"; exit 77; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
U=http://127.0.0.1:$port
start() {
  "$S" coordinator --db "${SYNOR_COORD_DB:-$tmp/store.db}" --port "$port" --operator-token-file "$tmp/op.tok" \
    --quiet --lease-timeout 2 --log "$tmp/log" ${SYNOR_COORD_ARGS:-} >"$tmp/out" 2>>"$tmp/err" &
  pid=$!
  for _ in $(seq 750); do
    [[ -s $tmp/out && $(<"$tmp/out") == *listening* ]] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.02
  done
  return 1
}
if ! start; then
  grep -q "built without the compute network" "$tmp/err" && { echo "coord_crash: built without the coordinator; skipped"; exit 77; }
  cat "$tmp/err"; exit 1
fi
OP=$(cat "$tmp/op.tok")
tok() { curl -s -H "Authorization: Bearer $OP" -d "{\"role\":\"$1\",\"owner\":\"$2\"}" $U/v1/tokens | "$JC" -g token 2>/dev/null; }
ALICE=$(tok consumer alice)
printf 'x' >"$tmp/in"
SHA=$(curl -s -X PUT -H "Authorization: Bearer $ALICE" --data-binary @"$tmp/in" $U/v1/blobs | "$JC" -g sha256)
N=60
shards=$(python3 -c "print(','.join(['{\"inputs\":[\"$SHA\"]}']*$N))")
J=$(curl -s -H "Authorization: Bearer $ALICE" -d "{\"kernel\":\"sum-f32\",\"shards\":[$shards],\"budget\":\"100\"}" $U/v1/jobs | "$JC" -g id)
check "job submitted" test -n "$J"

agent() { # agent N: claims and uploads until $tmp/stop; acknowledged tasks into ack.N
  local n=$1 t d b="$tmp/b.$1" r="$tmp/r.$1"
  t=$(tok provider "p$n")
  d=$(curl -s -H "Authorization: Bearer $t" -d "{\"name\":\"d\",\"kind\":\"cpu\"}" $U/v1/devices | "$JC" -g id 2>/dev/null)
  touch "$tmp/ready.$n"
  while [ ! -e "$tmp/stop" ]; do
    code=$(curl -s --max-time 5 -o "$b" -w '%{http_code}' -H "Authorization: Bearer $t" "$U/v1/tasks/next?device=$d&wait=1")
    if [ "$code" != 200 ]; then sleep 0.05; continue; fi
    task=$("$JC" -g task <"$b" 2>/dev/null); lease=$("$JC" -g lease <"$b" 2>/dev/null)
    printf '%s' "$task" >"$r"
    sha=$(sha256sum "$r" | cut -c1-64)
    code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t" \
      -H "X-Synor-SHA256: $sha" --data-binary @"$r" "$U/v1/tasks/$task/result?lease=$lease")
    [ "$code" = 200 ] && echo "$task" >>"$tmp/ack.$n"
  done
}
for n in 1 2 3; do agent $n & apids+=($!); done
for _ in $(seq 600); do [ -e "$tmp/ready.1" ] && [ -e "$tmp/ready.2" ] && [ -e "$tmp/ready.3" ] && break; sleep 0.05; done

ledger_tasks() { curl -s -H "Authorization: Bearer $OP" $U/v1/ledger | grep -o '"task":"t-[0-9]*"' | cut -d'"' -f4; }
# consistent: every acknowledged result in the ledger, no task in it twice.
# In bash with one curl: process starts are what costs on a loaded machine.
consistent() {
  # the acknowledgements first: an upload acknowledged after the ledger is
  # read would look lost
  local acked=() f t body missing=0
  for f in "$tmp"/ack.*; do [ -e "$f" ] && mapfile -t -O "${#acked[@]}" acked <"$f"; done
  # a sanitized coordinator on a loaded machine can be slow to answer right
  # after a restart: a few tries, and say which way it failed
  local try rc=0
  for try in 1 2 3 4; do
    body=$(curl -s --max-time 20 -H "Authorization: Bearer $OP" $U/v1/ledger) && { rc=0; break; }
    rc=$?; sleep 0.5
  done
  [ "$rc" = 0 ] || { echo "ledger not readable (curl exit $rc)"; return 1; }
  [[ $body == *'"entries":'* ]] || { echo "no ledger: $body"; return 1; }
  local -A seen=()
  while [[ $body =~ \"task\":\"(t-[0-9]+)\" ]]; do
    t=${BASH_REMATCH[1]}
    [ -n "${seen[$t]}" ] && { echo "task $t paid twice"; return 1; }
    seen[$t]=1
    body=${body#*"${BASH_REMATCH[0]}"}
  done
  for t in "${acked[@]}"; do [ -n "${seen[$t]}" ] || missing=$((missing+1)); done
  [ "$missing" = 0 ] || { echo "$missing acknowledged results lost"; return 1; }
}
# the kills begin once a result has been acknowledged, so there is always
# acknowledged work for them to lose (a sanitized coordinator on PostgreSQL
# on a loaded machine can take seconds to answer its first uploads; with the
# kills started at once, every one could land before any upload finished)
for _ in $(seq 600); do
  [ -n "$(cat "$tmp"/ack.* 2>/dev/null | head -n 1)" ] && break
  sleep 0.1
done
KILLS=${KILLS:-20}
for k in $(seq "$KILLS"); do
  # 50 to 249 ms of load between kills (a few claims and uploads each);
  # GAP_MS moves the start (netstore_pg.sh: a restart on PostgreSQL
  # reconnects its pool first, slow under sanitizers)
  gap=$((RANDOM % 200 + ${GAP_MS:-50}))
  sleep "$((gap / 1000)).$(printf '%03d' $((gap % 1000)))"
  kill -KILL "$pid"; wait "$pid" 2>/dev/null
  check "restart $k" start
  check "after kill $k: nothing acknowledged lost, nothing paid twice" consistent
done
check "some results before the end" test "$(cat "$tmp"/ack.* 2>/dev/null | wc -l)" -gt 0
# let the agents finish the job (leases of killed claims expire after 2 s)
for _ in $(seq 600); do
  st=$(curl -s -H "Authorization: Bearer $ALICE" $U/v1/jobs/$J | "$JC" -g state 2>/dev/null)
  [ "$st" = done ] && break
  sleep 0.1
done
touch "$tmp/stop"; wait "${apids[@]}" 2>/dev/null; apids=()
check "job done" test "$st" = done
check "consistent at the end" consistent
ledger_tasks >"$tmp/ledger"
check "one entry per task" test "$(sort -u "$tmp/ledger" | wc -l)" = $N -a "$(wc -l <"$tmp/ledger")" = $N
sum=$(curl -s -H "Authorization: Bearer $OP" $U/v1/ledger | python3 -c '
import json,sys; d=json.load(sys.stdin)
t=sum(int(e["amount"].replace(".","")) for e in d["entries"]); print(t == int(d["total"].replace(".","")))')
check "the ledger balances" test "$sum" = True
echo "coord_crash: $pass passed, $fail failed"
[ "$fail" = 0 ]
