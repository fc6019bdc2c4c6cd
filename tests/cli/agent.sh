#!/usr/bin/env bash
# synor agent and the consumer commands against a stand-in coordinator
# (tests/fake_coord.c, path in $FAKE_COORD): an sgemm job submitted, run by
# the agent and fetched with the right numbers (checked by a triple loop,
# synor submit --verify-sgemm); a cheating agent's results wrong; inputs
# whose checksum does not match refused (the task failed, no result); no
# claims outside the owner's hours while heartbeats go on; an agent killed
# mid-task whose saved result is uploaded again by the next start; the
# coordinator killed and restarted while an agent runs (it reconnects and
# takes the new job); a task released by a reclaimed agent with its
# checkpoint and resumed by the next (the fake keeps it); SIGTERM; tokens;
# usage errors. Skipped (77) without
# the fake (a build without libmicrohttpd or libcurl).
# usage: agent.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
[ -n "$FAKE_COORD" ] && [ -x "$FAKE_COORD" ] || { echo "agent: no fake coordinator built; skipped"; exit 77; }
command -v curl >/dev/null || { echo "agent: curl not installed; skipped"; exit 77; }

echo syn_test >"$tmp/tok"
# start_fake NAME ARGS...: a fake coordinator; its pid in $fpid, port in $port
start_fake() {
  local name=$1; shift
  "$FAKE_COORD" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  fpid=$!; pids+=("$fpid"); port=
  for _ in $(seq 200); do
    port=$(sed -n 's/^fake_coord: listening on \([0-9]*\)$/\1/p' "$tmp/$name.out")
    [ -n "$port" ] && return 0
    sleep 0.05
  done
  return 1
}
# state KEY: a number from the fake's /test/state
state() { curl -s "http://127.0.0.1:$port/test/state" | "$JC" -g "$1"; }
net() { echo --coordinator "http://127.0.0.1:$port" --token-file "$tmp/tok"; }
# wait_exit PID SECONDS: the exit status, or 124 after SECONDS
wait_exit() {
  local p=$1 n=$(($2 * 10))
  for _ in $(seq $n); do kill -0 "$p" 2>/dev/null || { wait "$p"; return $?; }; sleep 0.1; done
  return 124
}

# ---------------------------------------------------------- job files
"$S" submit --make-sgemm-job 6 --dir "$tmp/j6" --m 40 --n 30 --k 50 --seed 3 >"$tmp/mk.out"
check make_job_prints_path grep -q "j6/job.json" "$tmp/mk.out"
check make_job_writes_inputs test -f "$tmp/j6/a-000005.f32" -a -f "$tmp/j6/b.f32"
check make_job_sizes test "$(stat -c %s "$tmp/j6/a-000000.f32")" = 8000
"$JC" <"$tmp/j6/job.json" >/dev/null
check make_job_valid_json test $? = 0
check make_job_budget test "$("$JC" -g budget <"$tmp/j6/job.json")" = 0.600000
"$S" submit --make-sgemm-job 1 --dir "$tmp/j1" --m 8 --n 8 --k 8 >/dev/null
"$S" submit --make-sgemm-job 3 --dir "$tmp/j3" --m 16 --n 16 --k 16 --seed 9 >/dev/null

start_fake main --heartbeat-s 0.2 || { echo "fake coordinator did not start"; exit 1; }
P1=$port; F1=$fpid

# ---------------------------------------------------------- submit, run, fetch
job=$("$S" submit $(net) "$tmp/j6/job.json")
check submit_prints_id test "$job" = j-1
"$S" status $(net) "$job" >"$tmp/st.out"
check status_queued grep -q "^j-1: queued, 0/6 done" "$tmp/st.out"
"$S" agent $(net) --state-dir "$tmp/sd1" --max-tasks 6 --wait 2 --cpu-share 50% \
  2>"$tmp/a1.err" &
apid=$!; pids+=("$apid")
wait_exit $apid 60; rc=$?
check agent_max_tasks_exits_0 test $rc = 0
check agent_summary grep -q "stopped: 6 done, 0 failed" "$tmp/a1.err"
check agent_registered grep -q "registered local-cpu0 as dev-local-cpu0" "$tmp/a1.err"
check fake_saw_registration test "$(state registrations)" -ge 1
check fake_saw_6_results test "$(state results)" = 6
check no_bad_checksums test "$(state bad_checksum)" = 0
"$S" status $(net) "$job" >"$tmp/st.out"
check status_done grep -q "^j-1: done, 6/6 done, 0 failed" "$tmp/st.out"
check status_shards test "$(grep -c '^  shard' "$tmp/st.out")" = 6
"$S" status $(net) >"$tmp/list.out"
check status_lists_jobs grep -q "^j-1: done" "$tmp/list.out"
"$S" fetch $(net) "$job" -o "$tmp/r6" 2>/dev/null
check fetch_size test "$(stat -c %s "$tmp/r6")" = $((6 * 40 * 30 * 4))
"$S" submit --verify-sgemm "$tmp/j6" "$tmp/r6" >"$tmp/v.out"
check right_numbers test $? = 0
check verify_says_correct grep -q "all 6 shards correct" "$tmp/v.out"
check state_dir_ids grep -q '"id": "dev-local-cpu0"' "$tmp/sd1/devices.json"
check state_dir_no_pending test -z "$(ls "$tmp/sd1/pending")"
"$S" agent $(net) --earnings >"$tmp/earn.out"
check earnings grep -q '"balance"' "$tmp/earn.out"

# ---------------------------------------------------------- a cheating agent
job=$("$S" submit $(net) "$tmp/j3/job.json")
"$S" agent $(net) --max-tasks 3 --wait 2 --test-fault wrong-results 2>"$tmp/a2.err"
check cheat_exits_0 test $? = 0
check cheat_warned grep -q "for tests only" "$tmp/a2.err"
"$S" fetch $(net) "$job" -o "$tmp/r3" 2>/dev/null
"$S" submit --verify-sgemm "$tmp/j3" "$tmp/r3" >"$tmp/v3.out"
check cheat_results_wrong test $? = 1
check cheat_all_shards_wrong grep -q "3 of 3 shards wrong" "$tmp/v3.out"

# ---------------------------------------------------------- preemption (the release)
"$S" submit --make-sgemm-job 1 --dir "$tmp/jp" --m 600 --n 512 --k 16 --seed 5 >/dev/null
job=$("$S" submit $(net) "$tmp/jp/job.json")
"$S" agent $(net) --wait 1 --cpu-share 0.0001 --test-fault reclaim-after 1 2>"$tmp/ap1.err"
check reclaim_exits_0 test $? = 0
check fake_saw_release test "$(state releases)" = 1
check fake_kept_checkpoint test "$(state checkpoints)" = 1
"$S" agent $(net) --max-tasks 1 --wait 1 2>"$tmp/ap2.err"
check resumed_on_the_fake grep -q "resumed from a checkpoint: 1 of 3 row strips were done" "$tmp/ap2.err"
"$S" fetch $(net) "$job" -o "$tmp/rp" 2>/dev/null
"$S" submit --verify-sgemm "$tmp/jp" "$tmp/rp" >/dev/null
check resumed_result_right test $? = 0

# ---------------------------------------------------------- outside the owner's hours
h=$((10#$(date -u +%H)))
s=$(((h + 2) % 24)); e=$(((h + 3) % 24)); [ $e = 0 ] && e=24
job=$("$S" submit $(net) "$tmp/j1/job.json")
claims=$(state claims); nacc=$(state heartbeats_not_accepting)
"$S" agent $(net) --state-dir "$tmp/sd2" --availability "utc:$s-$e" --wait 1 2>"$tmp/a3.err" &
apid=$!; pids+=("$apid")
sleep 2.5
kill -TERM $apid
wait_exit $apid 30; rc=$?
check sigterm_exits_0 test $rc = 0
check outside_hours_logged grep -q "outside the owner's limits" "$tmp/a3.err"
check outside_hours_no_claim test "$(state claims)" = "$claims"
check hours_registered test "$(state last_availability)" = "utc:$s-$e"
check heartbeats_say_not_accepting test "$(state heartbeats_not_accepting)" -gt "$nacc"

# ---------------------------------------------------------- killed mid-task, restarted
"$S" agent $(net) --state-dir "$tmp/sd2" --wait 2 --test-fault die-after 0 2>"$tmp/a4.err"
check die_after_exits_137 test $? = 137
check pending_result_kept test -n "$(ls "$tmp/sd2/pending/"*.json 2>/dev/null)"
results=$(state results)
"$S" agent $(net) --state-dir "$tmp/sd2" --max-tasks 1 --wait 1 2>"$tmp/a5.err"
check restart_exits_0 test $? = 0
check reuploaded grep -q "1 uploaded again" "$tmp/a5.err"
check reupload_reached_fake test "$(state results)" = $((results + 1))
check pending_dropped test -z "$(ls "$tmp/sd2/pending/"*.json 2>/dev/null)"
"$S" fetch $(net) "$job" -o "$tmp/r1" 2>/dev/null
"$S" submit --verify-sgemm "$tmp/j1" "$tmp/r1" >/dev/null
check reuploaded_result_right test $? = 0

# ---------------------------------------------------------- checksum mismatch
start_fake corrupt --corrupt-blobs
"$S" submit $(net) "$tmp/j1/job.json" >/dev/null
"$S" agent $(net) --max-tasks 1 --wait 2 2>"$tmp/a6.err"
check corrupt_exits_0 test $? = 0
check corrupt_failed_task test "$(state fails)" = 1
check corrupt_no_result test "$(state results)" = 0
check corrupt_reason grep -q "checksum mismatch" <(state last_fail)
check corrupt_summary grep -q "0 done, 1 failed" "$tmp/a6.err"
kill -TERM $fpid

# ---------------------------------------------------------- uploads failing
start_fake failing --fail-results 7
job=$("$S" submit $(net) "$tmp/j1/job.json")
"$S" agent $(net) --state-dir "$tmp/sd3" --max-tasks 1 --wait 2 2>"$tmp/a9.err"
check failing_uploads_exit_0 test $? = 0
check failing_upload_retried grep -q "upload: .*HTTP 503.*retrying" "$tmp/a9.err"
check failing_upload_finally_accepted grep -q "result accepted" "$tmp/a9.err"
check failing_upload_one_result test "$(state results)" = 1
check failing_upload_dropped test -z "$(ls "$tmp/sd3/pending/"*.json 2>/dev/null)"
kill -TERM $fpid

# ---------------------------------------------------------- SIGTERM during a task
"$S" submit --make-sgemm-job 1 --dir "$tmp/big" --m 1000 --n 1000 --k 1000 >/dev/null
start_fake big
"$S" submit $(net) "$tmp/big/job.json" >/dev/null
"$S" agent $(net) --wait 2 2>"$tmp/a10.err" &
apid=$!; pids+=("$apid")
for _ in $(seq 200); do [ "$(state claims)" = 1 ] && break; sleep 0.02; done
kill -TERM $apid
wait_exit $apid 60; rc=$?
check sigterm_mid_task_exits_0 test $rc = 0
check sigterm_mid_task_finished test "$(state results)" = 1
check sigterm_mid_task_summary grep -q "stopped: 1 done" "$tmp/a10.err"
kill -TERM $fpid

# ---------------------------------------------------------- coordinator down, then up
port=$P1
"$S" agent $(net) --state-dir "$tmp/sd1" --wait 1 2>"$tmp/a7.err" &
apid=$!; pids+=("$apid")
hb=$(state heartbeats)
for _ in $(seq 100); do [ "$(state heartbeats)" -gt $((hb + 1)) ] && break; sleep 0.1; done
check heartbeating test "$(state heartbeats)" -gt $((hb + 1))
kill -KILL $F1; wait $F1 2>/dev/null
sleep 2
start_fake restarted --port $P1 --heartbeat-s 0.2
check fake_restarted_same_port test "$port" = "$P1"
job=$("$S" submit $(net) "$tmp/j3/job.json")
timeout 60 "$S" submit $(net) "$tmp/j3/job.json" --wait -o "$tmp/r3b" 2>"$tmp/w.err" >/dev/null
check wait_done test $? = 0
check wait_progress grep -q "j-2: done, 3/3 done" "$tmp/w.err"
"$S" submit --verify-sgemm "$tmp/j3" "$tmp/r3b" >/dev/null
check after_restart_right test $? = 0
kill -TERM $apid
wait_exit $apid 30; rc=$?
check reconnected_agent_stops_0 test $rc = 0
check heartbeat_failure_logged grep -q "heartbeat: .*127.0.0.1" "$tmp/a7.err"
check heartbeat_recovery_logged grep -q "answers again" "$tmp/a7.err"
check no_reregistration_needed test "$(state registrations)" = 0
timeout 60 "$S" status $(net) "$job" --wait -o "$tmp/r3c" 2>"$tmp/sw.err"
check status_wait_done test $? = 0
check status_wait_fetched cmp -s "$tmp/r3b" "$tmp/r3c"
check first_job_also_done test "$("$S" status $(net) "$job" | head -1 | cut -d, -f1)" = "$job: done"

# ---------------------------------------------------------- tokens
"$S" token $(net) create --role consumer --owner bob -o "$tmp/bob" >"$tmp/tk.out"
check token_written grep -q "^syn_" "$tmp/bob"
check token_mode test "$(stat -c %a "$tmp/bob")" = 600
"$S" token $(net) list >"$tmp/tl.out"
check token_listed grep -q '"id":1' "$tmp/tl.out"
"$S" status --coordinator "http://127.0.0.1:$port" --token-file "$tmp/bob" >/dev/null
check bob_can_read test $? = 0
"$S" token $(net) revoke 1 >/dev/null
"$S" status --coordinator "http://127.0.0.1:$port" --token-file "$tmp/bob" 2>"$tmp/401.err"
check revoked_refused test $? = 1
check revoked_says_401 grep -q "HTTP 401" "$tmp/401.err"
echo syn_wrong >"$tmp/bad"
"$S" agent --coordinator "http://127.0.0.1:$port" --token-file "$tmp/bad" 2>"$tmp/a8.err"
check agent_wrong_token_fails test $? = 1
check agent_wrong_token_says grep -q "HTTP 401" "$tmp/a8.err"

# ---------------------------------------------------------- usage errors
"$S" agent --token-file "$tmp/tok" 2>/dev/null; check agent_no_coordinator test $? = 2
"$S" agent $(net) --cpu-share 0 2>/dev/null; check cpu_share_zero test $? = 2
"$S" agent $(net) --cpu-share 150% 2>/dev/null; check cpu_share_over test $? = 2
"$S" agent $(net) --idle-threshold 0 2>/dev/null; check idle_threshold_zero test $? = 2
"$S" agent $(net) --idle-threshold 101% 2>/dev/null; check idle_threshold_over test $? = 2
"$S" agent $(net) --availability utc:25-3 2>/dev/null; check bad_hours test $? = 2
"$S" agent $(net) --test-fault bogus 2>/dev/null; check bad_fault test $? = 2
"$S" agent $(net) --model nameonly 2>/dev/null; check bad_model test $? = 2
"$S" fetch $(net) j-1 2>/dev/null; check fetch_needs_o test $? = 2
printf '{"format":"synor-job/1","kernel":"sgemm","shards":[],"x":1}' >"$tmp/bad.json"
"$S" submit $(net) "$tmp/bad.json" 2>"$tmp/bj.err"; check bad_job_fails test $? = 1
check bad_job_names_place grep -q 'bad.json:1:54: job: unknown field "x"' "$tmp/bj.err"
printf '{"format":"synor-job/1","kernel":"sgemm","budget":"1","shards":[{"inputs":["nope.f32"]}]}' >"$tmp/nf.json"
"$S" submit $(net) "$tmp/nf.json" 2>"$tmp/nf.err"; check missing_input_fails test $? = 1
check missing_input_named grep -q "nope.f32" "$tmp/nf.err"
"$S" fetch $(net) j-99 -o "$tmp/x" 2>"$tmp/404.err"; check fetch_unknown test $? = 1
check fetch_unknown_404 grep -q "HTTP 404" "$tmp/404.err"

echo "agent: $pass passed, $fail failed"
[ $fail = 0 ]
