#!/usr/bin/env bash
# synor agent --devices all on a machine whose GPU is the CUDA test double
# (tests/cuda_mock, put first on LD_LIBRARY_PATH by CTest through
# CUDA_MOCK_DIR): it registers local-cpu0 and local-cuda0, and a task
# claimed for local-cuda0 runs its tiles on the runtime's cuda0 (sgemm
# wholly, spotrf's GEMM updates), one claimed for local-cpu0 on the CPU;
# the results are right either way (sgemm checked by synor submit
# --verify-sgemm, the Cholesky factor by L L^T = A on sampled entries);
# the devices work at the same time (a claim loop each: a task of one
# started while another device's ran).
# Skipped (77) without the coordinator, curl or the mock.
# usage: agent_cuda.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
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
"$S" coordinator --help >/dev/null 2>&1 || { echo "agent_cuda: no synor coordinator in this build; skipped"; exit 77; }
"$S" agent --help >/dev/null 2>&1 || { echo "agent_cuda: no synor agent in this build; skipped"; exit 77; }
command -v python3 >/dev/null || { echo "agent_cuda: python3 not installed; skipped"; exit 77; }
[ -n "${CUDA_MOCK_DIR:-}" ] && [ -e "$CUDA_MOCK_DIR/libcuda.so.1" ] ||
  { echo "agent_cuda: run through ctest (CUDA_MOCK_DIR names the CUDA test double); skipped"; exit 77; }

"$S" coordinator --db "$tmp/store.db" --port 0 --operator-token-file "$tmp/op.tok" --quiet \
  >"$tmp/c.out" 2>"$tmp/c.err" &
pids+=($!)
port=
for _ in $(seq 300); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$tmp/c.out")
  [ -n "$port" ] && break; sleep 0.05
done
[ -n "$port" ] || { cat "$tmp/c.err"; exit 1; }
U="--coordinator http://127.0.0.1:$port"
"$S" token $U --token-file "$tmp/op.tok" create --role consumer --owner carol -o "$tmp/carol.tok" >/dev/null
"$S" token $U --token-file "$tmp/op.tok" create --role provider --owner gpu-owner -o "$tmp/p.tok" >/dev/null

# sgemm: 4 shards of 300 x 300 x 300 (2 x 2 x 2 tiles of 256)
"$S" submit --make-sgemm-job 4 --dir "$tmp/sg" --m 300 --n 300 --k 300 --seed 7 >/dev/null || exit 1
# spotrf: 4 shards of a 600 x 600 symmetric positive definite matrix (3 x 3
# tiles: one GEMM update). The agent claims for its devices at the same
# time (2 or 3 of them: local-opencl0 too where PoCL is installed), one
# task each, so 4 tasks of each kernel in a row give every device one of
# each.
mkdir -p "$tmp/po"
python3 - "$tmp/po" <<'EOF'
import array, json, sys
d = sys.argv[1]; n = 600
a = array.array("f", [float(n) if i == j else 1.0 / (1 + (i * 7 + j * 7) % 11)
                      for i in range(n) for j in range(n)])
open(d + "/a.f32", "wb").write(a.tobytes())
json.dump({"format": "synor-job/1", "name": "chol", "kernel": "spotrf", "params": {"n": n},
           "replicas": 1, "budget": "1.000000",
           "shards": [{"inputs": ["a.f32"]}] * 4}, open(d + "/job.json", "w"))
EOF
J1=$("$S" submit $U --token-file "$tmp/carol.tok" "$tmp/sg/job.json")
J2=$("$S" submit $U --token-file "$tmp/carol.tok" "$tmp/po/job.json")
check "jobs submitted" test -n "$J1" -a -n "$J2"

LD_LIBRARY_PATH="$CUDA_MOCK_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 120 \
  "$S" agent $U --token-file "$tmp/p.tok" --devices all --wait 1 --max-tasks 8 \
  --cpu-share 50% 2>"$tmp/a.err"
check "agent exits 0" test $? = 0
check "registered the CPU" grep -q "registered local-cpu0 as" "$tmp/a.err"
check "registered the mock GPU" grep -q "registered local-cuda0 as" "$tmp/a.err"
# per task: "KERNEL FOR-DEVICE RAN-ON"
sed -n 's/^.*task \(t-[0-9]*\): \([a-z0-9-]*\) for \([a-z0-9-]*\)$/\1 \2 \3/p' "$tmp/a.err" | sort >"$tmp/for"
sed -n 's/^.*task \(t-[0-9]*\): ran in [0-9]* ms on \([a-z0-9]*\),.*$/\1 \2/p' "$tmp/a.err" | sort >"$tmp/on"
join "$tmp/for" "$tmp/on" | cut -d' ' -f2- >"$tmp/ran"
check "eight tasks ran" test "$(wc -l <"$tmp/ran")" = 8
check "claimed for the GPU: ran on cuda0" bash -c "! grep 'local-cuda0' '$tmp/ran' | grep -qv ' cuda0$'"
check "claimed for the CPU: ran on the CPU" bash -c "! grep 'local-cpu0' '$tmp/ran' | grep -qv ' cpu$'"
check "an sgemm on the GPU" grep -qx 'sgemm local-cuda0 cuda0' "$tmp/ran"
check "a spotrf on the GPU" grep -qx 'spotrf local-cuda0 cuda0' "$tmp/ran"
check "an sgemm on the CPU" grep -qx 'sgemm local-cpu0 cpu' "$tmp/ran"
# one claim loop per device: a task of one device started while another's ran
check "the devices' tasks overlapped" awk '
  / task t-[0-9]+: [a-z0-9-]+ for local-/ { open++; if (open > 1) both = 1 }
  / task t-[0-9]+: (ran in|failed)/ { open-- }
  END { exit !both }' "$tmp/a.err"

"$S" status $U --token-file "$tmp/carol.tok" "$J1" --wait -o "$tmp/sg.bin" >/dev/null 2>"$tmp/s1.err"
check "sgemm job done" test $? = 0
check "sgemm results right" bash -c "'$S' submit --verify-sgemm '$tmp/sg' '$tmp/sg.bin' >/dev/null"
"$S" status $U --token-file "$tmp/carol.tok" "$J2" --wait -o "$tmp/po.bin" >/dev/null 2>"$tmp/s2.err"
check "spotrf job done" test $? = 0
check "L L^T = A" python3 - "$tmp/po" "$tmp/po.bin" <<'EOF'
import array, random, sys
n = 600
a = array.array("f"); a.frombytes(open(sys.argv[1] + "/a.f32", "rb").read())
r = array.array("f"); r.frombytes(open(sys.argv[2], "rb").read())
assert len(r) == 4 * n * n, len(r)
rnd = random.Random(15)
for s in range(4):
    L = r[s * n * n:(s + 1) * n * n]
    assert all(L[i * n + j] == 0 for i in range(0, n, 37) for j in range(i + 1, n, 13))
    for _ in range(150):
        i, j = rnd.randrange(n), rnd.randrange(n)
        x = sum(L[i * n + q] * L[j * n + q] for q in range(min(i, j) + 1))
        assert abs(x - a[i * n + j]) < 1e-2 * max(1, abs(a[i * n + j])), (s, i, j, x, a[i * n + j])
EOF

echo "agent_cuda: $pass passed, $fail failed"
[ "$fail" = 0 ]
