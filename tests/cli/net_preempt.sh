#!/usr/bin/env bash
# Preemption end to end (docs/AGENT.md "Preemption", docs/NETWORK.md
# "Preemption"): a real coordinator with a 60 s lease timeout (so nothing
# here can come back by expiry) and real agents.
# - Agent p1 is reclaimed at its 2nd safe point (--test-fault reclaim-after
#   2) in a 1024 x 256 x 512 sgemm task (4 row strips; one worker, so a
#   safe point after each): it releases the task with a checkpoint of 2
#   strips and exits 0; the task is queued again at once; agent p2 (other
#   block heights) resumes it from the checkpoint ("resumed ... 2 of 4 row
#   strips"), the job is done and its result is bit for bit the result of
#   the same job run uninterrupted by p3; the ledger pays p2 alone, once;
#   p1 earns nothing and keeps its reputation; the events say
#   task-released.
# - A checkpoint sent with a wrong SHA-256 is ignored (event
#   checkpoint-ignored); the next agent starts over, same bits.
# - With --claim-max 4, a reclaim releases the tasks claimed but not
#   started too (3 released); another agent finishes the job.
# - Results in batches (not preemption, but the same agents): 8 quick tasks
#   claimed at once (--claim-max 8) go up through POST /v1/results, each
#   acknowledged ("in a batch of N"), none left in the state directory.
# - llm-generate reclaimed after 10 of its 40 tokens resumes on another
#   agent from the token ids and the sampler's state: the same tokens as
#   uninterrupted; the ledger pays only the agent that finished.
# - `synor agent --state-dir D --reclaim` sends SIGUSR1 to the agent of D:
#   it exits 0 (here between tasks: nothing to release).
# The store is SQLite, or the database SYNOR_COORD_DB names.
# Skipped (77) without the coordinator, the agent or curl.
# usage: net_preempt.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
pass=0; fail=0
tmp=$(mktemp -d)
cleanup() {
  local p
  for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
"$S" coordinator --help >/dev/null 2>&1 || { echo "net_preempt: no synor coordinator in this build; skipped"; exit 77; }
"$S" agent --help >/dev/null 2>&1 || { echo "net_preempt: no synor agent in this build; skipped"; exit 77; }
command -v curl >/dev/null || { echo "net_preempt: curl not installed; skipped"; exit 77; }
cd "$tmp" || exit 1
DB=${SYNOR_COORD_DB:-$tmp/net.db}
"$S" coordinator --db "$DB" --port 0 --operator-token-file op.tok --lease-timeout 60 >coord.out 2>coord.log &
for _ in $(seq 300); do grep -q listening coord.out && [ -s op.tok ] && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' coord.out | head -1)
check "coordinator up" test -n "$port"
export SYNOR_COORDINATOR=http://127.0.0.1:$port SYNOR_TOKEN_FILE=op.tok
OP=$(cat op.tok)
"$S" token create --role consumer --owner me -o me.tok >/dev/null
for p in p1 p2 p3; do "$S" token create --role provider --owner $p -o $p.tok >/dev/null; done
ME=$(cat me.tok)
job() { curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$1"; }
op() { curl -s -H "Authorization: Bearer $OP" "$SYNOR_COORDINATOR$1"; }
# agent OWNER LOG ARGS...: runs an agent to its end (60 s at most)
agent() { local o=$1 l=$2; shift 2; timeout 60 "$S" agent --token-file $o.tok --wait 1 "$@" 2>"$l"; }

"$S" submit --make-sgemm-job 1 --dir a --m 1024 --k 256 --n 512 --seed 3 >/dev/null
j1=$(SYNOR_TOKEN_FILE=me.tok "$S" submit a/job.json 2>sub.err)
check "job submitted" test "$j1" = j-1

# p1 (one worker: a safe point after each of the 4 row strips, whatever the
# machine) is reclaimed after 2 of them
t0=$(date +%s)
agent p1 p1.log --state-dir p1s --cpu-share 0.0001 --test-fault reclaim-after 2
check "reclaimed agent exits 0" test $? = 0
check "p1 stopped at a safe point" grep -q "stopped at a safe point (2 of 4 row strips done).*reclaims" p1.log
check "p1 released with a stored checkpoint" grep -q "t-1: released (checkpoint of $((64 + 2 * 256 * 512 * 4)) bytes: stored)" p1.log
check "p1 summary: 1 released" grep -q "0 done, .* 1 released, 0 resumed" p1.log
check "task-released event" grep -q '"kind":"task-released","subject":"t-1"' <<<"$(op /v1/events)"
check "job not done yet" grep -q '"done":0' <<<"$(job j-1)"

# p2 resumes it: the task came back at once, not after the 60 s lease timeout
agent p2 p2.log --max-tasks 1
check "p2 exits 0" test $? = 0
check "p2 resumed from the checkpoint" grep -q "t-1: resumed from a checkpoint: 2 of 4 row strips were done" p2.log
check "p2 summary: 1 done, 1 resumed" grep -q "1 done, .* 0 released, 1 resumed" p2.log
check "back well before the lease timeout" test $(( $(date +%s) - t0 )) -lt 45
check "job done" grep -q '"state":"done"' <<<"$(job j-1)"
SYNOR_TOKEN_FILE=me.tok "$S" fetch j-1 -o c1.bin 2>/dev/null || curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/j-1/result" -o c1.bin
check "result right" "$S" submit --verify-sgemm a c1.bin

# the same job uninterrupted, by p3: the same bits
j2=$(SYNOR_TOKEN_FILE=me.tok "$S" submit a/job.json 2>>sub.err)
agent p3 p3.log --max-tasks 1
curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$j2/result" -o c2.bin
check "uninterrupted run done" test -s c2.bin
check "resumed result bit for bit the uninterrupted one" cmp -s c1.bin c2.bin

# money: p2 paid once for t-1, p1 nothing, p1's reputation kept
ledger=$(op /v1/ledger)
check "one ledger entry for t-1" test "$(grep -o '"task":"t-1"' <<<"$ledger" | wc -l)" = 1
check "t-1 paid to p2" grep -q '"task":"t-1"[^}]*"provider":"p2"\|"provider":"p2"[^}]*"task":"t-1"' <<<"$ledger"
check "p1 earned nothing" grep -q '"balance":"0.000000"' <<<"$("$S" agent --token-file p1.tok --earnings)"
check "p1 reputation kept (50)" grep -q '"owner":"p1"[^}]*"reputation":50\|"reputation":50[^}]*"owner":"p1"' <<<"$(op /v1/devices)"

# a checkpoint with a wrong SHA-256 is ignored: the next agent starts over
j3=$(SYNOR_TOKEN_FILE=me.tok "$S" submit a/job.json 2>>sub.err)
agent p1 p1b.log --state-dir p1s --cpu-share 0.0001 --test-fault reclaim-bad-checkpoint 1
check "bad checkpoint: answered ignored" grep -q "released (checkpoint of .* bytes: ignored)" p1b.log
check "checkpoint-ignored event" grep -q '"kind":"checkpoint-ignored"' <<<"$(op /v1/events)"
agent p2 p2b.log --max-tasks 1
check "bad checkpoint: p2 did not resume" grep -q "1 done, .* 0 resumed" p2b.log
curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$j3/result" -o c3.bin
check "bad checkpoint: same bits" cmp -s c1.bin c3.bin

# a batch claim: the tasks not started are released with the running one
"$S" submit --make-sgemm-job 3 --dir b --m 600 --k 64 --n 512 --seed 4 >/dev/null
j4=$(SYNOR_TOKEN_FILE=me.tok "$S" submit b/job.json 2>>sub.err)
agent p1 p1c.log --claim-max 4 --cpu-share 0.0001 --test-fault reclaim-after 1
check "batch: 3 released" grep -q "0 done, .* 3 released" p1c.log
agent p3 p3c.log --max-tasks 3 --claim-max 4
check "batch: p3 finishes, resuming 1" grep -q "3 done, .* 1 resumed" p3c.log
curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$j4/result" -o c4.bin
check "batch: result right" "$S" submit --verify-sgemm b c4.bin

# results in batches: 8 quick tasks claimed at once go up in POST /v1/results
"$S" submit --make-sgemm-job 8 --dir c --m 32 --k 32 --n 32 --seed 6 >/dev/null
j5=$(SYNOR_TOKEN_FILE=me.tok "$S" submit c/job.json 2>>sub.err)
agent p2 p2e.log --max-tasks 8 --claim-max 8 --state-dir p2s
check "batch upload: 8 done" grep -q "stopped: 8 done, 0 failed, 0 refused" p2e.log
check "batch upload: in batches" grep -q "result accepted (validated, in a batch of [2-8])" p2e.log
check "batch upload: POST /v1/results" grep -q '"path":"/v1/results","status":200' coord.log
check "batch upload: nothing left in the state directory" test -z "$(ls p2s/pending)"
curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$j5/result" -o c5.bin
check "batch upload: result right" "$S" submit --verify-sgemm c c5.bin

# llm-generate: p1 is reclaimed at its 2nd safe point (after 2 segments of
# 5 of its 40 tokens); p2 resumes from the token ids and the sampler's
# state (the KV cache rebuilt): the same tokens as the same job run
# uninterrupted by p3; the ledger pays p2 alone for the task
"$S" model synth m.gguf --preset tiny --text "$SRC/README.md" >/dev/null
mkdir -p l
printf '{"format":"synor-job/1","kernel":"llm-generate","params":{"model":"tiny","prompt":"the compute network","n":40,"seed":7,"temperature":0.8},"shards":[{"inputs":[]}],"budget":"0.100000"}\n' >l/job.json
jl=$(SYNOR_TOKEN_FILE=me.tok "$S" submit l/job.json 2>>sub.err)
agent p1 p1l.log --state-dir p1s --cpu-share 0.0001 --model tiny=m.gguf --test-fault reclaim-after 2
tl=$(sed -n 's/.*task \(t-[0-9]*\): llm-generate for.*/\1/p' p1l.log | head -1)
check "llm: a task" test -n "$tl"
check "llm: p1 stopped after 10 of 40 tokens" grep -q "$tl: stopped at a safe point (10 of 40 tokens done).*reclaims" p1l.log
check "llm: released with a stored checkpoint" grep -q "$tl: released (checkpoint of [0-9]* bytes: stored)" p1l.log
agent p2 p2l.log --max-tasks 1 --model tiny=m.gguf
check "llm: p2 resumed 10 of 40 tokens" grep -q "$tl: resumed from a checkpoint: 10 of 40 tokens were done" p2l.log
curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$jl/result" -o l1.bin
check "llm: 40 tokens" test "$(stat -c %s l1.bin 2>/dev/null)" = 160
jl2=$(SYNOR_TOKEN_FILE=me.tok "$S" submit l/job.json 2>>sub.err)
agent p3 p3l.log --max-tasks 1 --model tiny=m.gguf
curl -s -H "Authorization: Bearer $ME" "$SYNOR_COORDINATOR/v1/jobs/$jl2/result" -o l2.bin
check "llm: resumed tokens bit for bit the uninterrupted ones" cmp -s l1.bin l2.bin
ledger=$(op /v1/ledger)
check "llm: one ledger entry for the task" test "$(grep -o "\"task\":\"$tl\"" <<<"$ledger" | wc -l)" = 1
check "llm: paid to p2" grep -q "\"task\":\"$tl\"[^}]*\"provider\":\"p2\"\|\"provider\":\"p2\"[^}]*\"task\":\"$tl\"" <<<"$ledger"

# --reclaim: SIGUSR1 to the agent of a state directory
"$S" agent --token-file p2.tok --state-dir p2s --wait 1 2>p2d.log &
apid=$!
for _ in $(seq 100); do grep -q "registered" p2d.log && break; sleep 0.1; done
"$S" agent --state-dir p2s --reclaim >reclaim.out
check "--reclaim sent" grep -q "reclaim sent to pid $apid" reclaim.out
wait $apid
check "reclaimed idle agent exits 0" test $? = 0
check "--reclaim without an agent fails" bash -c "! '$S' agent --state-dir p2s --reclaim 2>/dev/null"

kill -TERM %1 2>/dev/null; wait %1
check "coordinator stops with 0" test $? = 0

echo "net_preempt: $pass passed, $fail failed"
[ $fail = 0 ] || { for f in *.log; do echo "--- $f"; grep -v "^{" "$f"; done; }
[ $fail = 0 ]
