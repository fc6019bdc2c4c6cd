#!/usr/bin/env bash
# Staged (model-parallel) jobs end to end (docs/JOBS.md "Staged jobs"): a
# real coordinator and two real agents run a 2-stage job, stage 0 the
# sgemm shards Y_i = X_i W1, stage 1 Z_i = Y_i W2 reading stage 0's
# validated results, with 2 replicas each (a quorum per shard). Before any
# agent starts, the stage-1 tasks are waiting (not claimable) and the
# stage-0 ones queued; the fetched result is the last stage's shards in
# order and is checked against X_i W1 W2 computed here (od + awk, double
# precision). Refusals: a first stage naming a stage, a stage naming
# itself, a shard out of range, kernel beside stages (client side). A
# cancelled staged job leaves no waiting task. The store is SQLite, or
# the database SYNOR_COORD_DB names.
# Skipped (77) without the coordinator, the agent or curl.
# usage: stages.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); SRC=$2
pass=0; fail=0
tmp=$(mktemp -d)
cleanup() {
  local p
  for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
"$S" coordinator --help >/dev/null 2>&1 || { echo "stages: no synor coordinator in this build; skipped"; exit 77; }
"$S" agent --help >/dev/null 2>&1 || { echo "stages: no synor agent in this build; skipped"; exit 77; }
command -v curl >/dev/null || { echo "stages: curl not installed; skipped"; exit 77; }
cd "$tmp" || exit 1
DB=${SYNOR_COORD_DB:-$tmp/net.db}
"$S" coordinator --db "$DB" --port 0 --operator-token-file op.tok --quiet >coord.out 2>coord.log &
for _ in $(seq 300); do grep -q listening coord.out && [ -s op.tok ] && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' coord.out | head -1)
check "coordinator up" test -n "$port"
export SYNOR_COORDINATOR=http://127.0.0.1:$port SYNOR_TOKEN_FILE=op.tok
"$S" token create --role consumer --owner me -o me.tok >/dev/null
"$S" token create --role provider --owner p1 -o p1.tok >/dev/null
"$S" token create --role provider --owner p2 -o p2.tok >/dev/null
ME=$(cat me.tok)

# inputs: X_i (4 x 5, three shards) and W1 (5 x 6) from one made job, W2 (6 x 7) from another
M=4; K=5; N=6; P=7; NS=3
"$S" submit --make-sgemm-job $NS --dir a --m $M --k $K --n $N --seed 1 >/dev/null
"$S" submit --make-sgemm-job 1 --dir b --m 1 --k $N --n $P --seed 2 >/dev/null
cp a/a-00000[0-2].f32 .; cp a/b.f32 w1.f32; cp b/b.f32 w2.f32
{
  echo '{"format": "synor-job/1", "name": "two-stage", "replicas": 2, "budget": "1.000000", "stages": ['
  echo "  {\"kernel\": \"sgemm\", \"params\": {\"m\": $M, \"n\": $N, \"k\": $K}, \"shards\": ["
  for i in 0 1 2; do echo "    {\"inputs\": [\"a-00000$i.f32\", \"w1.f32\"]}$([ $i -lt 2 ] && echo ,)"; done
  echo '  ]},'
  echo "  {\"kernel\": \"sgemm\", \"params\": {\"m\": $M, \"n\": $P, \"k\": $N}, \"shards\": ["
  for i in 0 1 2; do echo "    {\"inputs\": [{\"from_stage\": 0, \"shard\": $i}, \"w2.f32\"]}$([ $i -lt 2 ] && echo ,)"; done
  echo '  ]}'
  echo ']}'
} >job.json
id=$(SYNOR_TOKEN_FILE=me.tok "$S" submit job.json 2>sub.err)
check "submitted" test "$id" = j-1
st=$(curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/j-1")
check "12 tasks, 6 waiting before any agent" grep -q '"tasks":12,.*"waiting":6' <<<"$st"
check "stage 1 shards listed with their stage" test "$(grep -o '"stage":1' <<<"$st" | wc -l)" = 3
check "metrics: 6 tasks waiting" grep -qx 'synor_coord_tasks{state="waiting"} 6' \
  <<<"$(curl -s -H "Authorization: Bearer $(cat op.tok)" "$SYNOR_COORDINATOR/metrics")"

# the agents
for p in p1 p2; do "$S" agent --token-file $p.tok --quiet 2>$p.log & done
SYNOR_TOKEN_FILE=me.tok timeout 120 "$S" status j-1 --wait -o z.bin 2>wait.err
check "job done" test $? = 0
check "result: 3 shards of 4 x 7 f32" test "$(stat -c %s z.bin 2>/dev/null)" = $((NS * M * P * 4))
st=$(curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/j-1")
check "no task waiting at the end" grep -q '"waiting":0' <<<"$st"
check "metrics: none waiting at the end" grep -qx 'synor_coord_tasks{state="waiting"} 0' \
  <<<"$(curl -s -H "Authorization: Bearer $(cat op.tok)" "$SYNOR_COORDINATOR/metrics")"
check "every shard validated" test "$(grep -o '"state":"validated"' <<<"$st" | wc -l)" = 6

# Z_i = (X_i W1) W2 here, in double precision, within the quorum's tolerance
f32() { od -An -v -t f4 -w4 "$1" | tr -d ' '; }
{
  for i in 0 1 2; do f32 a-00000$i.f32 | sed "s/^/X$i /"; done
  f32 w1.f32 | sed 's/^/W1 /'; f32 w2.f32 | sed 's/^/W2 /'; f32 z.bin | sed 's/^/Z /'
} >vals
bad=$(awk -v M=$M -v K=$K -v N=$N -v P=$P -v NS=$NS '
  { v[$1, c[$1]++] = $2 }
  END {
    nb = 0
    for (s = 0; s < NS; s++) for (r = 0; r < M; r++) {
      for (j = 0; j < N; j++) { y[j] = 0; for (k = 0; k < K; k++) y[j] += v["X" s, r*K+k] * v["W1", k*N+j] }
      for (j = 0; j < P; j++) {
        z = 0; for (k = 0; k < N; k++) z += y[k] * v["W2", k*P+j]
        got = v["Z", (s*M + r)*P + j]; d = got - z; if (d < 0) d = -d
        m = 1; if (z > m || -z > m) m = (z < 0 ? -z : z)
        if (d > 1e-4 * m || got == "") nb++
      }
    }
    print nb + 0
  }' vals)
check "every element of Z = X W1 W2 right" test "$bad" = 0
check "values read" test "$(grep -c '^Z ' vals)" = $((NS * M * P))

# refusals (400, nothing stored)
post() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ME" -d "$1" "$SYNOR_COORDINATOR/v1/jobs"; }
W=$(sha256sum w1.f32 | cut -c1-64)
check "first stage naming a stage" test "$(post "{\"budget\":\"1\",\"stages\":[{\"kernel\":\"sgemm\",\"shards\":[{\"inputs\":[{\"from_stage\":0,\"shard\":0}]}]}]}")" = 400
check "a stage naming itself" test "$(post "{\"budget\":\"1\",\"stages\":[{\"kernel\":\"sgemm\",\"shards\":[{\"inputs\":[\"$W\"]}]},{\"kernel\":\"sgemm\",\"shards\":[{\"inputs\":[{\"from_stage\":1,\"shard\":0}]}]}]}")" = 400
check "a shard out of range" test "$(post "{\"budget\":\"1\",\"stages\":[{\"kernel\":\"sgemm\",\"shards\":[{\"inputs\":[\"$W\"]}]},{\"kernel\":\"sgemm\",\"shards\":[{\"inputs\":[{\"from_stage\":0,\"shard\":1}]}]}]}")" = 400
check "kernel beside stages" test "$(post "{\"budget\":\"1\",\"kernel\":\"sgemm\",\"stages\":[{\"kernel\":\"sgemm\",\"shards\":[{\"inputs\":[\"$W\"]}]}]}")" = 400
check "an object input outside stages" test "$(post "{\"budget\":\"1\",\"kernel\":\"sgemm\",\"shards\":[{\"inputs\":[{\"from_stage\":0,\"shard\":0}]}]}")" = 400
sed 's/"name": "two-stage",/"name": "x", "kernel": "sgemm",/' job.json >bad.json
SYNOR_TOKEN_FILE=me.tok "$S" submit bad.json >/dev/null 2>bad.err
check "client refuses kernel beside stages" test $? = 1
check "... naming the field" grep -q "stages" bad.err
check "still one job" test "$(curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs" | grep -o '"id":"j-' | wc -l)" = 1

# a cancelled staged job leaves nothing waiting (agents stopped first)
for p in $(jobs -p); do grep -q agent "/proc/$p/cmdline" 2>/dev/null && kill -TERM "$p" && wait "$p"; done
id=$(SYNOR_TOKEN_FILE=me.tok "$S" submit job.json 2>>sub.err)
check "second job" test "$id" = j-2
check "its later stage waits" grep -q '"waiting":6' <<<"$(curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/j-2")"
SYNOR_TOKEN_FILE=me.tok "$S" cancel j-2 >/dev/null
check "cancelled: nothing waiting" grep -q '"state":"cancelled".*"waiting":0' <<<"$(curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/j-2")"
coord=$(jobs -p | head -1)
kill -TERM "$coord"; wait "$coord"
check "coordinator stops with 0" test $? = 0
if [ "$fail" != 0 ]; then echo "--- coordinator"; tail -20 coord.log; cat sub.err wait.err p1.log 2>/dev/null | tail -20; fi
echo "stages: $pass passed, $fail failed"
[ "$fail" = 0 ]
