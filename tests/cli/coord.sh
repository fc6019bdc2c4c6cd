#!/usr/bin/env bash
# synor coordinator over HTTP with curl, on a temporary SQLite store: every
# endpoint refuses a missing, wrong or revoked token (401) and the wrong
# role (403); a consumer cannot see or cancel another's job (404); a
# provider cannot report on a task it does not hold (409) nor with a wrong
# checksum (400); oversized (413) and malformed (400) requests change
# nothing; a job flows through by hand (claim, upload, done, result in
# shard order, one ledger entry per task); long-polls end with 204; the
# metrics, the dashboard and the market answer; after kill -9 and a
# restart everything acknowledged is there; SIGTERM exits 0; TLS when
# openssl is present. Skipped (77) in a build without the coordinator.
# The store is a temporary SQLite file, or the (empty) PostgreSQL database
# SYNOR_COORD_DB names (tests/cli/netstore_pg.sh sets it).
# usage: coord.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
DB=${SYNOR_COORD_DB:-$tmp/store.db}
KIND=sqlite; case $DB in postgres*) KIND=postgresql ;; esac
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
command -v curl >/dev/null || { echo "coord: curl not installed; skipped"; exit 77; }

# start NAME ARGS...: a coordinator in the background; $pid, $port, $scheme
start() {
  local name=$1; shift
  "$S" coordinator --db "$DB" --port 0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!; pids+=("$pid"); port=
  for _ in $(seq 300); do
    port=$(sed -n 's|^synor coordinator: listening on https\{0,1\}://127.0.0.1:\([0-9]*\) (store '$KIND')$|\1|p' "$tmp/$name.out")
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# req TOKEN METHOD PATH [curl args...]: status on stdout, body in $tmp/body
req() {
  local tok=$1 m=$2 path=$3; shift 3
  local auth=()
  [ -n "$tok" ] && auth=(-H "Authorization: Bearer $tok")
  curl -s --max-time 30 -X "$m" -o "$tmp/body" -w '%{http_code}' "${auth[@]}" "$@" \
    "http://127.0.0.1:$port$path"
}
get() { "$JC" -g "$1" <"$tmp/body"; }

if ! start main --operator-token-file "$tmp/op.tok" --max-json 4KiB --max-blob 64KiB --lease-timeout 3600 \
     --market "$tmp/market" --log "$tmp/main.log"; then
  if grep -q "built without the compute network" "$tmp/main.err"; then
    echo "coord: built without the coordinator; skipped"; exit 77
  fi
  cat "$tmp/main.err"; exit 1
fi
OP=$(cat "$tmp/op.tok")
check "token file is 0600" test "$(stat -c %a "$tmp/op.tok")" = 600
check "operator token shape" bash -c "[[ '$OP' =~ ^syn_[0-9a-f]{64}$ ]]"
check "health without a token" test "$(req "" GET /health)" = 200

mk() { # mk ROLE OWNER -> the token
  req "$OP" POST /v1/tokens -d "{\"role\":\"$1\",\"owner\":\"$2\"}" >/dev/null; get token
}
ALICE=$(mk consumer alice); CAROL=$(mk consumer carol)
BOB=$(mk provider bob); MAL=$(mk provider mallory)
check "tokens issued" test ${#ALICE} = 68 -a ${#BOB} = 68 -a ${#MAL} = 68

# ---- every endpoint refuses a missing or wrong token
WRONG=syn_$(printf '0%.0s' $(seq 64))
endpoints=("GET /v1/tokens" "POST /v1/tokens" "DELETE /v1/tokens/1" "GET /v1/ledger"
  "GET /v1/events" "GET /v1/devices" "POST /v1/devices" "POST /v1/heartbeat"
  "GET /v1/tasks/next?device=dev-1" "GET /v1/tasks/next?device=dev-1&max=2" "POST /v1/results" "POST /v1/tasks/t-1/result?lease=L" "POST /v1/tasks/t-1/fail?lease=L"
  "GET /v1/earnings" "PUT /v1/blobs" "GET /v1/blobs/00" "POST /v1/jobs" "GET /v1/jobs"
  "GET /v1/jobs/j-1" "GET /v1/jobs/j-1/result" "DELETE /v1/jobs/j-1" "GET /metrics"
  "GET /dashboard" "GET /v1/market/book" "POST /v1/market/orders" "GET /v1/nothing")
for e in "${endpoints[@]}"; do
  set -- $e
  check "$e: no token" test "$(req "" "$1" "$2" -d '{}')" = 401
  check "$e: wrong token" test "$(req "$WRONG" "$1" "$2" -d '{}')" = 401
  check "$e: malformed header" test "$(curl -s -o /dev/null -w '%{http_code}' -X "$1" -H "Authorization: Basic $ALICE" -d '{}' "http://127.0.0.1:$port$2")" = 401
done
check "dashboard: token in the query" test "$(req "" GET "/dashboard?token=$WRONG")" = 401

# ---- roles
check "consumer cannot issue tokens" test "$(req "$ALICE" POST /v1/tokens -d '{"role":"operator","owner":"x"}')" = 403
check "provider cannot submit jobs" test "$(req "$BOB" GET /v1/jobs)" = 403
check "consumer cannot take tasks" test "$(req "$ALICE" GET '/v1/tasks/next?device=dev-1')" = 403
check "consumer cannot take a batch" test "$(req "$ALICE" GET '/v1/tasks/next?device=dev-1&max=4')" = 403
check "consumer cannot post results" test "$(req "$ALICE" POST /v1/results -d '{}')" = 403
check "consumer cannot heartbeat" test "$(req "$ALICE" POST /v1/heartbeat -d '{"devices":[]}')" = 403
check "consumer: no metrics" test "$(req "$ALICE" GET /metrics)" = 403
check "consumer: no dashboard" test "$(req "" GET "/dashboard?token=$ALICE")" = 403

# ---- a job: input blob, submission
printf 'input-data-0123456789' >"$tmp/in.bin"
check "blob stored" test "$(req "$ALICE" PUT /v1/blobs --data-binary @"$tmp/in.bin")" = 201
SHA=$(get sha256)
check "blob sha256" test "$SHA" = "$(sha256sum "$tmp/in.bin" | cut -c1-64)"
JOB='{"name":"t","kernel":"sum-f32","params":{"n":5},"shards":[{"inputs":["'$SHA'"]},{"inputs":["'$SHA'"],"params":{"n":6}}],"replicas":1,"budget":"1.000000","ref":"r1"}'
check "job submitted" test "$(req "$ALICE" POST /v1/jobs -d "$JOB")" = 201
J=$(get id)
check "job tasks" test "$(get tasks)" = 2
check "same ref: same job" test "$(req "$ALICE" POST /v1/jobs -d "$JOB")" = 200 -a "$(get id)" = "$J"

# ---- malformed and oversized requests change nothing
count_jobs() { req "$ALICE" GET /v1/jobs >/dev/null; "$JC" -g jobs.1.id <"$tmp/body" >/dev/null 2>&1 && echo 2+ || echo 1; }
check "malformed JSON" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":')" = 400
check "unknown field" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"x","shards":[{}],"budget":"1","bogus":1}')" = 400
check "unknown field named" grep -q bogus "$tmp/body"
check "bad budget" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"x","shards":[{}],"budget":"-1"}')" = 400
check "bad replicas" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"x","shards":[{}],"budget":"1","replicas":9}')" = 400
check "over budget" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"x","shards":[{},{}],"budget":"0.010000"}')" = 400
check "unknown input" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"x","shards":[{"inputs":["'$(printf 'a%.0s' $(seq 64))'"]}],"budget":"1"}')" = 404
check "consumer cannot submit known answers" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"x","shards":[{"expect":"'$SHA'"}],"budget":"1"}')" = 403
head -c 100000 /dev/zero >"$tmp/big.bin"
check "oversized blob" test "$(req "$ALICE" PUT /v1/blobs --data-binary @"$tmp/big.bin")" = 413
BIGSHA=$(sha256sum "$tmp/big.bin" | cut -c1-64)
check "oversized blob not stored" test "$(req "$ALICE" GET /v1/blobs/$BIGSHA)" = 404
python3 -c 'print("{\"kernel\":\"x\",\"name\":\"" + "a"*5000 + "\",\"shards\":[{}],\"budget\":\"1\"}")' >"$tmp/big.json"
check "oversized JSON" test "$(req "$ALICE" POST /v1/jobs --data-binary @"$tmp/big.json")" = 413
check "chunked oversized JSON" test "$(req "$ALICE" POST /v1/jobs -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/big.json")" = 413
check "still one job" test "$(count_jobs)" = 1

# ---- ownership between consumers
check "carol cannot read alice's job" test "$(req "$CAROL" GET /v1/jobs/$J)" = 404
check "carol cannot cancel it" test "$(req "$CAROL" DELETE /v1/jobs/$J)" = 404
check "carol cannot fetch its result" test "$(req "$CAROL" GET /v1/jobs/$J/result)" = 404
check "carol cannot read alice's blob" test "$(req "$CAROL" GET /v1/blobs/$SHA)" = 404
req "$CAROL" GET /v1/jobs >/dev/null
check "carol lists no jobs" test "$(cat "$tmp/body")" = '{"jobs":[]}'
check "result before done: 409" test "$(req "$ALICE" GET /v1/jobs/$J/result)" = 409

# ---- providers
check "bob registers" test "$(req "$BOB" POST /v1/devices -d '{"name":"bob-cpu0","kind":"cpu","gflops":50.5,"mem_bytes":1000000,"availability":"always","price":"0.010000"}')" = 201
BD=$(get id)
check "re-register: same id" test "$(req "$BOB" POST /v1/devices -d '{"name":"bob-cpu0","kind":"cpu"}')" = 201 -a "$(get id)" = "$BD"
check "bad availability" test "$(req "$BOB" POST /v1/devices -d '{"name":"x","kind":"cpu","availability":"sometimes"}')" = 400
check "mallory registers" test "$(req "$MAL" POST /v1/devices -d '{"name":"m0","kind":"cpu"}')" = 201
MD=$(get id)
check "mallory cannot use bob's device" test "$(req "$MAL" GET "/v1/tasks/next?device=$BD")" = 404
check "mallory cannot heartbeat bob's device" test "$(req "$MAL" POST /v1/heartbeat -d '{"devices":["'$BD'"]}')" = 404
check "bob heartbeats" test "$(req "$BOB" POST /v1/heartbeat -d '{"devices":["'$BD'"],"busy":false,"accepting":true}')" = 200
check "heartbeat period" test "$(get heartbeat_s)" = 5
check "bob claims" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD&wait=5")" = 200
T1=$(get task); L1=$(get lease)
check "task names its job" test "$(get job)" = "$J"
check "task params merged" test "$(get params.n)" = 5
check "task input" test "$(get inputs.0.sha256)" = "$SHA"
check "bob reads the input" test "$(req "$BOB" GET /v1/blobs/$SHA)" = 200
check "mallory cannot read it" test "$(req "$MAL" GET /v1/blobs/$SHA)" = 404
printf 'AAAA' >"$tmp/r1"; R1=$(sha256sum "$tmp/r1" | cut -c1-64)
up() { # up TOKEN TASK LEASE FILE SHA
  req "$1" POST "/v1/tasks/$2/result?lease=$3" -H "X-Synor-SHA256: $5" -H 'X-Synor-Elapsed-Ms: 7' \
    -H 'Content-Type: application/octet-stream' --data-binary @"$4"
}
check "mallory cannot upload bob's task" test "$(up "$MAL" "$T1" "$L1" "$tmp/r1" "$R1")" = 409
check "wrong lease" test "$(up "$BOB" "$T1" Lnot "$tmp/r1" "$R1")" = 409
check "wrong checksum" test "$(up "$BOB" "$T1" "$L1" "$tmp/r1" "$SHA")" = 400
check "missing checksum" test "$(req "$BOB" POST "/v1/tasks/$T1/result?lease=$L1" --data-binary @"$tmp/r1")" = 400
check "oversized result" test "$(up "$BOB" "$T1" "$L1" "$tmp/big.bin" "$BIGSHA")" = 413
check "heartbeat lists the lease" bash -c "[ \"\$(curl -s -H 'Authorization: Bearer $BOB' -d '{\"devices\":[\"$BD\"]}' http://127.0.0.1:$port/v1/heartbeat | '$JC' -g leases.0.lease)\" = '$L1' ]"
check "bob uploads" test "$(up "$BOB" "$T1" "$L1" "$tmp/r1" "$R1")" = 200
check "validated" test "$(get state)" = validated
check "twice: 409" test "$(up "$BOB" "$T1" "$L1" "$tmp/r1" "$R1")" = 409
check "second task" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD&wait=5")" = 200
T2=$(get task); L2=$(get lease)
check "shard params override" test "$(get params.n)" = 6
printf 'BBBBBB' >"$tmp/r2"; R2=$(sha256sum "$tmp/r2" | cut -c1-64)
check "bob uploads again" test "$(up "$BOB" "$T2" "$L2" "$tmp/r2" "$R2")" = 200
t0=$(date +%s%N)
check "nothing left: 204" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD&wait=1")" = 204
check "the long-poll waited" test $(( ($(date +%s%N) - t0) / 1000000 )) -ge 900
check "job done" test "$(req "$ALICE" GET /v1/jobs/$J)" = 200 -a "$(get state)" = done
check "job done count" test "$(get done)" = 2
check "job cost" test "$(get cost)" = 0.020000
check "result fetched" test "$(req "$ALICE" GET /v1/jobs/$J/result)" = 200
check "result in shard order" test "$(cat "$tmp/body")" = AAAABBBBBB
check "cancel a done job: 409" test "$(req "$ALICE" DELETE /v1/jobs/$J)" = 409
check "ledger" test "$(req "$OP" GET /v1/ledger)" = 200
check "one entry per task" bash -c "'$JC' -g entries.1.task <'$tmp/body' >/dev/null && ! '$JC' -g entries.2 <'$tmp/body' >/dev/null 2>&1"
check "entries name the tasks" test "$(get entries.0.task) $(get entries.1.task)" = "$T1 $T2"
check "bob's earnings" test "$(req "$BOB" GET /v1/earnings)" = 200 -a "$(get owner)" = bob
check "mallory earned nothing" test "$(req "$MAL" GET /v1/earnings)" = 200 -a "$(get balance)" = 0.000000
check "fail needs the lease" test "$(req "$MAL" POST "/v1/tasks/$T1/fail?lease=$L1" -d '{"error":"x"}')" = 409

# ---- batches: several tasks per claim, several results per request
check "heartbeat offers batches" test "$(req "$BOB" POST /v1/heartbeat -d '{"devices":["'$BD'"]}')" = 200 -a "$(get batch)" = true
check "third job" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"sum-f32","shards":[{"inputs":["'$SHA'"]},{"inputs":["'$SHA'"]},{"inputs":["'$SHA'"]}],"budget":"1"}')" = 201
J3=$(get id)
for m in 0 257 x -1; do check "max=$m: 400" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD&max=$m")" = 400; done
check "mallory cannot batch-claim bob's device" test "$(req "$MAL" GET "/v1/tasks/next?device=$BD&max=2")" = 404
check "bob claims two" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD&max=2")" = 200
TA=$(get tasks.0.task); LA=$(get tasks.0.lease); TB=$(get tasks.1.task); LB=$(get tasks.1.lease)
check "two tasks, not three" bash -c "! '$JC' -g tasks.2 <'$tmp/body' >/dev/null 2>&1"
check "batch task input" test "$(get tasks.1.inputs.0.sha256)" = "$SHA" -a "$(get tasks.0.job)" = "$J3"
check "bob claims the rest" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD&max=5")" = 200
TC=$(get tasks.0.task); LC=$(get tasks.0.lease)
check "one left, one given" bash -c "! '$JC' -g tasks.1 <'$tmp/body' >/dev/null 2>&1"
check "empty batch: 204" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD&max=5")" = 204
printf 'CC' >"$tmp/ra"; printf 'DDD' >"$tmp/rb"; printf 'E' >"$tmp/rc"
sha() { sha256sum "$1" | cut -c1-64; }
it() { printf '{"task":"%s","lease":"%s","sha256":"%s","bytes":%s}' "$1" "$2" "$3" "$4"; }
# batch FILE LINE PAYLOAD-FILES...: the body
batch() { local f=$1 line=$2; shift 2; { printf '%s\n' "$line"; cat "$@"; } >"$f"; }
post() { req "$1" POST /v1/results -H 'Content-Type: application/octet-stream' --data-binary @"$2"; }
batch "$tmp/b1" '{"results":['"$(it $TA $LA $(sha $tmp/ra) 2),$(it $TB $LB $(sha $tmp/rb) 3)"']}' "$tmp/ra" "$tmp/rb"
check "mallory's batch of bob's tasks: 200" test "$(post "$MAL" "$tmp/b1")" = 200
check "each item refused: 409" test "$(get results.0.accepted) $(get results.0.status) $(get results.1.status)" = "false 409 409"
batch "$tmp/bad" '{"results":['"$(it $TA $LA $(sha $tmp/ra) 2)"']}'
check "bytes missing: 400" test "$(post "$BOB" "$tmp/bad")" = 400
batch "$tmp/bad" '{"results":['"$(it $TA $LA $(sha $tmp/ra) 2)"']}' "$tmp/ra" "$tmp/rb"
check "bytes left over: 400" test "$(post "$BOB" "$tmp/bad")" = 400
batch "$tmp/bad" '{"results":[{"task":"'$TA'","lease":"'$LA'","sha256":"'$(sha $tmp/ra)'","bytes":2,"x":1}]}' "$tmp/ra"
check "unknown item field: 400" test "$(post "$BOB" "$tmp/bad")" = 400
printf '{"results":[]}' >"$tmp/bad"
check "no line: 400" test "$(post "$BOB" "$tmp/bad")" = 400
batch "$tmp/bad" '{"results":[]}'
check "empty batch: 400" test "$(post "$BOB" "$tmp/bad")" = 400
batch "$tmp/bad" '{"results":['"$(it $TA $LA $(sha $tmp/ra) 2),$(it t-x $LB $(sha $tmp/rb) 3)"']}' "$tmp/ra" "$tmp/rb"
check "a malformed item refuses the whole batch" test "$(post "$BOB" "$tmp/bad")" = 400
# a wrong checksum in the middle: that item refused, the others applied
batch "$tmp/b2" '{"results":['"$(it $TA $LA $(sha $tmp/ra) 2),$(it $TB $LB $(sha $tmp/ra) 3),$(it $TC $LC $(sha $tmp/rc) 1)"']}' "$tmp/ra" "$tmp/rb" "$tmp/rc"
check "bob's batch: 200" test "$(post "$BOB" "$tmp/b2")" = 200
check "items judged one by one" test "$(get results.0.accepted) $(get results.1.accepted) $(get results.1.status) $(get results.2.accepted)" = "true false 400 true"
check "item verdict" test "$(get results.0.state) $(get results.2.task)" = "validated $TC"
check "job not done yet" test "$(req "$ALICE" GET /v1/jobs/$J3)" = 200 -a "$(get done)" = 2
batch "$tmp/b3" '{"results":['"$(it $TB $LB $(sha $tmp/rb) 3),$(it $TA $LA $(sha $tmp/ra) 2)"']}' "$tmp/rb" "$tmp/ra"
check "the refused one again, and a repeat" test "$(post "$BOB" "$tmp/b3")" = 200 -a "$(get results.0.accepted) $(get results.1.status)" = "true 409"
check "batched job done" test "$(req "$ALICE" GET /v1/jobs/$J3)" = 200 -a "$(get state)" = done
check "batched result in shard order" test "$(req "$ALICE" GET /v1/jobs/$J3/result)" = 200 -a "$(cat "$tmp/body")" = CCDDDE
check "mallory still earned nothing" test "$(req "$MAL" GET /v1/earnings)" = 200 -a "$(get balance)" = 0.000000

# ---- cancel
check "second job" test "$(req "$ALICE" POST /v1/jobs -d '{"kernel":"sum-f32","shards":[{"inputs":["'$SHA'"]}],"budget":"1"}')" = 201
J2=$(get id)
check "alice cancels" test "$(req "$ALICE" DELETE /v1/jobs/$J2)" = 200
check "cancelled" test "$(req "$ALICE" GET /v1/jobs/$J2)" = 200 -a "$(get state)" = cancelled
check "nothing to claim" test "$(req "$BOB" GET "/v1/tasks/next?device=$BD")" = 204

# ---- operator views, metrics, dashboard, market
# both devices seen just now (the sections above take a while under sanitizers)
req "$MAL" POST /v1/heartbeat -d '{"devices":["'$MD'"]}' >/dev/null
req "$BOB" POST /v1/heartbeat -d '{"devices":["'$BD'"]}' >/dev/null
check "metrics" test "$(req "$OP" GET /metrics)" = 200
check "metrics: valid tasks" grep -qx 'synor_coord_tasks{state="valid"} 5' "$tmp/body"
check "metrics: devices online" grep -qx 'synor_coord_devices_online 2' "$tmp/body"
check "metrics: dispatch histogram" grep -qx 'synor_coord_dispatch_seconds_count 4' "$tmp/body"
check "metrics: 401s counted" grep -q '^synor_coord_http_responses_total{code="401"} [1-9]' "$tmp/body"
check "dashboard" test "$(req "" GET "/dashboard?token=$OP")" = 200
check "dashboard: sections" bash -c "grep -q '<table id=\"devices\">' '$tmp/body' && grep -q '<table id=\"jobs\">' '$tmp/body' && grep -q '<svg id=\"timeline\"' '$tmp/body' && grep -q bob-cpu0 '$tmp/body'"
check "dashboard: no external assets" bash -c "! grep -Eq 'src=|href=|<script' '$tmp/body'"
check "market order" test "$(req "$MAL" POST /v1/market/orders -d '{"resource":"gpu/nvidia-h100-sxm/eu-west","side":"ask","price":"2.490000","qty":8}')" = 201
check "market: bad side" test "$(req "$ALICE" POST /v1/market/orders -d '{"resource":"gpu/nvidia-h100-sxm/eu-west","side":"buy","price":"1","qty":1}')" = 400
check "market book" test "$(req "$ALICE" GET '/v1/market/book?resource=gpu/nvidia-h100-sxm/eu-west')" = 200
check "market best ask" test "$(get books.0.best_ask)" = 2.490000
check "dashboard: market" bash -c "curl -s 'http://127.0.0.1:$port/dashboard?token=$OP' | grep -q 'nvidia-h100-sxm/eu-west'"
check "events" test "$(req "$OP" GET /v1/events)" = 200
check "log lines are JSON" bash -c "head -20 '$tmp/main.log' | while read -r l; do printf '%s' \"\$l\" | '$JC' || exit 1; done"
check "log names no token" bash -c "! grep -q '${ALICE:4}' '$tmp/main.log'"

# ---- revocation
CID=$(req "$OP" GET /v1/tokens >/dev/null; for i in 0 1 2 3 4 5; do [ "$(get tokens.$i.owner 2>/dev/null)" = carol ] && get tokens.$i.id; done)
check "revoke" test "$(req "$OP" DELETE /v1/tokens/$CID)" = 200
check "revoked token refused" test "$(req "$CAROL" GET /v1/jobs)" = 401
check "revoke unknown: 404" test "$(req "$OP" DELETE /v1/tokens/999)" = 404

# ---- kill -9 and restart: everything acknowledged is there
kill -KILL "$pid"; wait "$pid" 2>/dev/null
check "restart" start again --market "$tmp/market" --log "$tmp/again.log"
check "job kept" test "$(req "$ALICE" GET /v1/jobs/$J)" = 200 -a "$(get state)" = done
check "result kept" test "$(req "$ALICE" GET /v1/jobs/$J/result)" = 200 -a "$(cat "$tmp/body")" = AAAABBBBBB
check "ledger kept" bash -c "[ \"\$(curl -s -H 'Authorization: Bearer $OP' http://127.0.0.1:$port/v1/ledger | '$JC' -g total)\" != 0.000000 ]"
req "$OP" GET /v1/ledger >/dev/null
check "still one entry per task" bash -c "'$JC' -g entries.4 <'$tmp/body' >/dev/null && ! '$JC' -g entries.5 <'$tmp/body' >/dev/null 2>&1"
check "revocation kept" test "$(req "$CAROL" GET /v1/jobs)" = 401
check "market kept" test "$(req "$ALICE" GET '/v1/market/book?resource=gpu/nvidia-h100-sxm/eu-west')" = 200 -a "$(get books.0.best_ask)" = 2.490000
check "operator token not rewritten" test "$(cat "$tmp/op.tok")" = "$OP"

# ---- SIGTERM: a clean exit
kill -TERM "$pid"; wait "$pid"; rc=$?
check "SIGTERM exits 0" test "$rc" = 0

# ---- usage errors
"$S" coordinator --port 1 >/dev/null 2>&1; check "no --db: 2" test $? = 2
"$S" coordinator --db "$tmp/x.db" --tls-cert a >/dev/null 2>&1; check "cert without key: 2" test $? = 2
for v in 0 -1 abc 1025; do
  err=$("$S" coordinator --db "$tmp/x.db" --db-calls "$v" 2>&1 >/dev/null); rc=$?
  check "--db-calls $v: 2, named" test "$rc" = 2 -a -n "$(echo "$err" | grep -- "--db-calls")"
done

# ---- TLS
if command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
  if start tls --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem"; then
    check "TLS health" test "$(curl -s --cacert "$tmp/cert.pem" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/health")" = 200
    check "TLS auth" test "$(curl -s --cacert "$tmp/cert.pem" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ALICE" "https://127.0.0.1:$port/v1/jobs")" = 200
    check "no plain HTTP on the TLS port" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" != 200
    kill -TERM "$pid"; wait "$pid"
  else
    check "TLS start" false; cat "$tmp/tls.err"
  fi
else
  echo "coord: openssl absent: TLS not checked"
fi

echo "coord: $pass passed, $fail failed"
[ "$fail" = 0 ]
