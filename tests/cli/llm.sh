#!/usr/bin/env bash
# synor model, synor generate, synor quantize: a model built here from a
# text, described, run, converted between formats and types; bad input.
# usage: llm.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() {
    local name=$1; shift
    if "$@"; then pass=$((pass+1)); else
        fail=$((fail+1)); echo "FAIL $name"; [ -s "$tmp/err" ] && tail -n 3 "$tmp/err" | sed 's/^/    stderr: /'
    fi
}
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

# a model with generated weights and a vocabulary trained on the README
check synth         [ "$(rc "$S" model synth "$tmp/m.gguf" --preset tiny --text "$SRC/README.md")" = 0 ]
check synth-mode    [ "$(stat -c %a "$tmp/m.gguf")" = 644 ]
check info          [ "$(rc "$S" model info "$tmp/m.gguf")" = 0 ]
check info-shape    grep -q "dim 64, hidden 160, 2 layers, 4 heads" "$tmp/out"
check info-type     grep -qE "^weights: +F32" "$tmp/out"
check info-vocab    grep -q "512 pieces" "$tmp/out"

# generation: the prompt, then tokens; figures on standard error
check gen           [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16)" = 0 ]
check gen-prompt    grep -q "^Synor places" "$tmp/out"
check gen-longer    [ "$(wc -c <"$tmp/out")" -gt 14 ]
check gen-figures   grep -qE "generated [0-9]+ tokens in [0-9.]+ s" "$tmp/err"
cp "$tmp/out" "$tmp/greedy"
check gen-determ    [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --quiet --threads 1)" = 0 ]
check gen-same      cmp -s "$tmp/out" "$tmp/greedy"
check gen-quiet     [ ! -s "$tmp/err" ]
check gen-sampled   [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 16 --temp 0.9 --seed 3 --quiet)" = 0 ]
cp "$tmp/out" "$tmp/s3"
check gen-seed      [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 16 --temp 0.9 --seed 3 --quiet)" = 0 ]
check gen-seed-same cmp -s "$tmp/out" "$tmp/s3"

# per-request fields through the scheduler: a JSON object, one a schema allows (its properties
# in order; numbers end within 16 digits, so the greedy answer closes), penalties; a schema
# keyword the constraint cannot honour names the file, line:column, path and keyword
JC=$3
check gen-json      [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 120 --json)" = 0 ]
check gen-json-obj  [ "$(tail -c +13 "$tmp/out" | head -c 1)" = '{' ]
check gen-json-fig  grep -q "one request through the scheduler (a JSON object)" "$tmp/err"
printf '%s' '{"type":"object","properties":{"kind":{"enum":["red","blue"]},"n":{"type":"integer"},"ok":{"type":"boolean"}},"required":["kind","n","ok"]}' >"$tmp/s.json"
check gen-schema    [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 120 --json-schema "$tmp/s.json" --quiet)" = 0 ]
tail -c +13 "$tmp/out" >"$tmp/answer"
check gen-schema-kind grep -qxE 'red|blue' <("$JC" -g kind <"$tmp/answer")
check gen-schema-n  grep -qxE -- '-?[0-9]{1,16}' <("$JC" -g n <"$tmp/answer")
check gen-schema-ok grep -qxE 'true|false' <("$JC" -g ok <"$tmp/answer")
printf '%s' '{"type":"object","properties":{"a":{"pattern":"x"}}}' >"$tmp/bad.json"
check gen-schema-bad [ "$(rc "$S" generate -m "$tmp/m.gguf" -p x --json-schema "$tmp/bad.json")" = 1 ]
check gen-schema-msg grep -qF "bad.json:1:47: #/properties/a: keyword \"pattern\" is not supported" "$tmp/err"
check gen-schema-none [ "$(rc "$S" generate -m "$tmp/m.gguf" -p x --json-schema "$tmp/none.json")" = 1 ]
check gen-json-spec [ "$(rc "$S" generate -m "$tmp/m.gguf" -p x --json --lookup 2)" = 2 ]
check gen-pen       [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --frequency-penalty 2 --quiet)" = 0 ]
check gen-pen-differs [ -n "$(cmp "$tmp/out" "$tmp/greedy" 2>&1)" ]
check gen-pen-range [ "$(rc "$S" generate -m "$tmp/m.gguf" -p x --presence-penalty 3)" = 2 ]
# --logit-bias: +100 makes one token every greedy pick (4 tokens: its piece twice what 2 give)
check gen-bias2     [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 2 --logit-bias 300=100 --quiet)" = 0 ]
two=$(tail -c +13 "$tmp/out")
check gen-bias4     [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 4 --logit-bias 300=100 --quiet)" = 0 ]
check gen-bias-same [ -n "$two" ] && [ "$(tail -c +13 "$tmp/out")" = "$two$two" ]
check gen-bias-vocab [ "$(rc "$S" generate -m "$tmp/m.gguf" -p x --logit-bias 99999=1)" = 1 ]
check gen-bias-msg  grep -q "logit_bias: token 99999 is outside the vocabulary of 512" "$tmp/err"
check gen-bias-bad  [ "$(rc "$S" generate -m "$tmp/m.gguf" -p x --logit-bias 3=101)" = 2 ]

# the report of a CPU-only run, and the same tasks simulated on the local
# fabric beside it (detection's measurement cached under $tmp)
check sim           [ "$(XDG_CACHE_HOME=$tmp/cache rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 8 --threads 2 --report --simulate)" = 0 ]
check sim-same      [ "$(head -c 12 "$tmp/out")" = "Synor places" ]
check sim-real      grep -q "GENERATE REPORT (the engine's tasks, real run)" "$tmp/err"
check sim-head      grep -q "GENERATE REPORT (the same tasks, simulated)" "$tmp/err"
check sim-workers   grep -qE "^  cpu0\.1 .*simulated" "$tmp/err"
check sim-time      [ "$(grep -c "TIMELINE" "$tmp/err")" = 2 ]
check sim-ratio     grep -qE "^synor: simulated makespan [0-9.]+ ms vs real [0-9.]+ ms \(ratio [0-9.]+\)$" "$tmp/err"
check sim-noreport  [ "$(rc "$S" generate -m "$tmp/m.gguf" -n 4 --simulate)" = 2 ]
check sim-noreport-msg grep -q "simulate needs --report" "$tmp/err"

# the same weights as a llama2.c checkpoint generate the same text
check l2c           [ "$(rc "$S" model synth "$tmp/m.bin" --preset tiny --text "$SRC/README.md" --format llama2c)" = 0 ]
check l2c-tok       [ -s "$tmp/tokenizer.bin" ]
check l2c-gen       [ "$(rc "$S" generate -m "$tmp/m.bin" -p "Synor places" -n 16 --quiet)" = 0 ]
check l2c-same      cmp -s "$tmp/out" "$tmp/greedy"
check l2c-info      [ "$(rc "$S" model info "$tmp/m.bin")" = 0 ]
check l2c-format    grep -q "llama2.c v0" "$tmp/out"

# quantize: llama2.c -> GGUF F32 is lossless; Q8_0 and Q4_0 load and run
check conv          [ "$(rc "$S" quantize "$tmp/m.bin" "$tmp/c.gguf" --type f32)" = 0 ]
check conv-gen      [ "$(rc "$S" generate -m "$tmp/c.gguf" -p "Synor places" -n 16 --quiet)" = 0 ]
check conv-same     cmp -s "$tmp/out" "$tmp/greedy"
for t in q8_0 q4_0 f16 bf16; do
  check q-$t        [ "$(rc "$S" quantize "$tmp/m.gguf" "$tmp/$t.gguf" --type $t)" = 0 ]
  check q-$t-info   [ "$(rc "$S" model info "$tmp/$t.gguf")" = 0 ]
  T=$(echo $t | tr a-z A-Z)
  check q-$t-type   grep -qE "^weights: +$T," "$tmp/out"
  check q-$t-gen    [ "$(rc "$S" generate -m "$tmp/$t.gguf" -p "Synor" -n 8 --quiet)" = 0 ]
done
# speculative decoding: greedy output is the model's own, whatever the draft
check spec          [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --draft "$tmp/q8_0.gguf" --speculate 3)" = 0 ]
check spec-same     cmp -s "$tmp/out" "$tmp/greedy"
check spec-figures  grep -qE "acceptance [0-9.]+ \([0-9]+ of [0-9]+\); draft [0-9.]+ ms a step, check [0-9.]+ ms" "$tmp/err"
# the model as its own draft, every round fully accepted (the draft's last proposal folded into the
# next round's first batch): still the model's own text, every proposal accepted
check spec-self     [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --draft "$tmp/m.gguf" --speculate 5)" = 0 ]
check spec-self-same cmp -s "$tmp/out" "$tmp/greedy"
check spec-self-all grep -qE "acceptance 1.00 \(([0-9]+) of \1\)" "$tmp/err"
# sampled: the seed replays the same text
check spec-temp     [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 12 --temp 0.8 --seed 3 --draft "$tmp/q8_0.gguf")" = 0 ]
cp "$tmp/out" "$tmp/spec-temp"
check spec-temp-seed [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 12 --temp 0.8 --seed 3 --draft "$tmp/q8_0.gguf")" = 0 ]
check spec-temp-same cmp -s "$tmp/out" "$tmp/spec-temp"
# --same-draws: the sampled text is the one the seed gives without a draft
check plain-temp    [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 12 --temp 0.8 --seed 3)" = 0 ]
cp "$tmp/out" "$tmp/plain-temp"
check spec-draws    [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 12 --temp 0.8 --seed 3 --draft "$tmp/q8_0.gguf" --same-draws)" = 0 ]
check spec-draws-same cmp -s "$tmp/out" "$tmp/plain-temp"
check spec-draws-lookup [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 12 --temp 0.8 --seed 3 --lookup 2 --same-draws)" = 0 ]
check spec-draws-lookup-same cmp -s "$tmp/out" "$tmp/plain-temp"
check spec-draws-alone [ "$(rc "$S" generate -m "$tmp/m.gguf" --temp 0.8 --same-draws)" = 2 ]
check spec-draws-named grep -q -- "--same-draws needs" "$tmp/err"
# --draft-pmin: the draft stops where it is unsure; greedy text still the model's own
check spec-pmin     [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --draft "$tmp/q8_0.gguf" --draft-pmin 1)" = 0 ]
check spec-pmin-same cmp -s "$tmp/out" "$tmp/greedy"
check spec-pmin-line grep -qE "draft p_min 1: [0-9]+ of [0-9]+ checks stopped short of 4" "$tmp/err"
check spec-badpmin  [ "$(rc "$S" generate -m "$tmp/m.gguf" --draft "$tmp/q8_0.gguf" --draft-pmin 1.5)" = 2 ]
check spec-badpmin-named grep -q -- "--draft-pmin" "$tmp/err"
check spec-pmin-nodraft [ "$(rc "$S" generate -m "$tmp/m.gguf" --draft-pmin 0.5)" = 2 ]
check spec-badk     [ "$(rc "$S" generate -m "$tmp/m.gguf" --draft "$tmp/q8_0.gguf" --speculate 0)" = 2 ]
check spec-nodraft  [ "$(rc "$S" generate -m "$tmp/m.gguf" --draft "$tmp/none.gguf")" = 1 ]
# the lookup draft (n-grams of the context), alone and before a draft model: the model's own text
check spec-lookup   [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --lookup 3 --speculate 4)" = 0 ]
check spec-lookup-same cmp -s "$tmp/out" "$tmp/greedy"
check spec-lookup-only grep -q "draft lookup only, 4 proposed per check" "$tmp/err"
check spec-lookup-figures grep -qE "lookup draft \(n-gram 3\): [0-9]+ of [0-9]+ checks, acceptance [0-9.]+" "$tmp/err"
check spec-lookup-q4 [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --lookup 2 --draft "$tmp/q4_0.gguf" --speculate 3)" = 0 ]
check spec-lookup-q4-same cmp -s "$tmp/out" "$tmp/greedy"
check spec-lookup-q4-figures grep -q "draft gguf v3 Q4_0 + lookup" "$tmp/err"
check spec-lookup-temp [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor" -n 12 --temp 0.8 --seed 3 --lookup 2)" = 0 ]
check spec-badlookup [ "$(rc "$S" generate -m "$tmp/m.gguf" --lookup 1)" = 2 ]
check q-smaller     [ "$(stat -c %s "$tmp/q4_0.gguf")" -lt "$(stat -c %s "$tmp/q8_0.gguf")" ]

# bad input: a clear message, a failure status, nothing written
check q-badtype     [ "$(rc "$S" quantize "$tmp/m.gguf" "$tmp/x.gguf" --type q5_k)" = 2 ]
check q-badtype-msg grep -q "q5_k" "$tmp/err"
check q-nofile      [ ! -e "$tmp/x.gguf" ]
check gen-nomodel   [ "$(rc "$S" generate -p x)" = 2 ]
check gen-missing   [ "$(rc "$S" generate -m "$tmp/none.gguf")" = 1 ]
check gen-miss-msg  grep -q "none.gguf: cannot open" "$tmp/err"
head -c 4000 "$tmp/m.gguf" >"$tmp/cut.gguf"
check gen-trunc     [ "$(rc "$S" generate -m "$tmp/cut.gguf")" = 1 ]
check gen-trunc-msg grep -q "cut.gguf" "$tmp/err"
check gen-badn      [ "$(rc "$S" generate -m "$tmp/m.gguf" -n -3)" = 2 ]
check gen-badtemp   [ "$(rc "$S" generate -m "$tmp/m.gguf" --temp hot)" = 2 ]
check synth-badfmt  [ "$(rc "$S" model synth "$tmp/y.gguf" --format onnx)" = 2 ]
check synth-badshape [ "$(rc "$S" model synth "$tmp/y.gguf" --dim 30 --heads 4)" = 1 ]
check synth-shape-msg grep -q "dim 30" "$tmp/err"
check synth-none    [ ! -e "$tmp/y.gguf" ]
# a chat model's template: written into the GGUF file (and kept by quantize), shown by info
check synth-ct      [ "$(rc "$S" model synth "$tmp/ct.gguf" --preset tiny --chat-template chatml)" = 0 ]
check synth-ct-info grep -q "^chat template: [0-9]* bytes" <("$S" model info "$tmp/ct.gguf")
check synth-ct-q    [ "$(rc "$S" quantize "$tmp/ct.gguf" "$tmp/ctq.gguf" --type q8_0)" = 0 ]
check synth-ct-q-info grep -q "^chat template: [0-9]* bytes" <("$S" model info "$tmp/ctq.gguf")
check synth-ct-none grep -q "^chat template: none" <("$S" model info "$tmp/m.gguf")
check synth-ct-bad  [ "$(rc "$S" model synth "$tmp/y.gguf" --chat-template jinja)" = 2 ]
check synth-ct-l2c  [ "$(rc "$S" model synth "$tmp/y.bin" --format llama2c --chat-template chatml)" = 2 ]
check synth-fim     [ "$(rc "$S" model synth "$tmp/fim.gguf" --preset tiny --fim)" = 0 ]
check synth-fim-info grep -q "^fill in the middle: tokens 259, 260, 261" <("$S" model info "$tmp/fim.gguf")
check synth-fim-l2c [ "$(rc "$S" model synth "$tmp/y.bin" --format llama2c --fim)" = 2 ]
check model-unknown [ "$(rc "$S" model frobnicate)" = 2 ]

# a conversation (--chat): a line of standard input is a user turn, answered in the model's chat
# template (plain here) through the scheduler with prefix caching. The first answer is the one
# generate gives the same prompt; the second the one a fresh run of the whole conversation gives,
# though its earlier positions came from the prefix cache
sys="You are Synor, the system that decides where every piece of a compute workload should run."
u1="Synor places"; u2="where does it run"
check chat1         [ "$(rc "$S" generate -m "$tmp/m.gguf" --chat --system "$sys" -p "$u1" -n 12 </dev/null)" = 0 ]
head -c -1 "$tmp/out" >"$tmp/a1"
check chat1-fig     grep -qE "^synor: turn 1: prompt [0-9]+ tokens, 0 of them from the prefix cache" "$tmp/err"
check chat1-tmpl    grep -q "template plain" "$tmp/err"
printf 'system: %s\nuser: %s\nassistant: ' "$sys" "$u1" >"$tmp/p1"
check chat1-gen     [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "$(cat "$tmp/p1")" -n 12 --quiet)" = 0 ]
check chat1-same    cmp -s <(tail -c +$(($(stat -c %s "$tmp/p1") + 1)) "$tmp/out" | head -c -1) "$tmp/a1"
printf '%s\n' "$u2" >"$tmp/turns"
check chat2         [ "$(rc "$S" generate -m "$tmp/m.gguf" --chat --system "$sys" -p "$u1" -n 12 <"$tmp/turns")" = 0 ]
check chat2-first   cmp -s <(head -c "$(stat -c %s "$tmp/a1")" "$tmp/out") "$tmp/a1"
tail -c +$(($(stat -c %s "$tmp/a1") + 2)) "$tmp/out" | head -c -1 >"$tmp/a2"
check chat2-reuse   grep -qE "^synor: turn 2: prompt [0-9]+ tokens, [1-9][0-9]* of them from the prefix cache" "$tmp/err"
{ cat "$tmp/p1" "$tmp/a1"; printf '\nuser: %s\nassistant: ' "$u2"; } >"$tmp/p2"
check chat2-gen     [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "$(cat "$tmp/p2")" -n 12 --quiet)" = 0 ]
check chat2-same    cmp -s <(tail -c +$(($(stat -c %s "$tmp/p2") + 1)) "$tmp/out" | head -c -1) "$tmp/a2"
# a line ending in a backslash goes on: one turn of two lines, then a second
printf 'first line \\\nsecond line\nnext\n' >"$tmp/turns"
check chat-cont     [ "$(rc "$S" generate -m "$tmp/m.gguf" --chat -n 2 <"$tmp/turns")" = 0 ]
check chat-cont-n   [ "$(grep -c "^synor: turn" "$tmp/err")" = 2 ]
# a chat model's own template (chatml), and bad use
check chat-ml       [ "$(rc "$S" generate -m "$tmp/ct.gguf" --chat -p hello -n 4 </dev/null)" = 0 ]
check chat-ml-name  grep -q "template chatml" "$tmp/err"
check chat-badtmpl  [ "$(rc "$S" generate -m "$tmp/m.gguf" --chat --chat-template jinja </dev/null)" = 2 ]
check chat-badtmpl-msg grep -q '"jinja" is not one of' "$tmp/err"
check chat-nochat   [ "$(rc "$S" generate -m "$tmp/m.gguf" --system hi)" = 2 ]
check chat-spec     [ "$(rc "$S" generate -m "$tmp/m.gguf" --chat --lookup 2 </dev/null)" = 2 ]

# GPU layers: a bad count is a usage error; on the CUDA test doubles (built
# beside the binary, tests/cuda-mock) every layer on the "GPU" gives the
# CPU's greedy text, with a line saying what ran there
check gpu-bad-arg   [ "$(rc "$S" generate -m "$tmp/m.gguf" --gpu-layers x)" = 2 ]
mock=$(dirname "$S")/tests/cuda-mock
if [[ -e $mock/libcuda.so.1 && -e $mock/libcublas.so.13 ]]; then
  check gpu-gen     [ "$(LD_LIBRARY_PATH=$mock rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers all)" = 0 ]
  check gpu-same    cmp -s "$tmp/out" "$tmp/greedy"
  check gpu-line    grep -qE "2 of 2 layers and the classifier on cuda0" "$tmp/err"
  check gpu-some    [ "$(LD_LIBRARY_PATH=$mock rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers 1 --quiet)" = 0 ]
  check gpu-some-same cmp -s "$tmp/out" "$tmp/greedy"
  # the GPU layers' keys and values go into an F16 cache on the host too
  check gpu-kv16    [ "$(LD_LIBRARY_PATH=$mock rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers all --kv-type f16 --quiet)" = 0 ]
  check gpu-kv16-same cmp -s "$tmp/out" "$tmp/greedy"
  check gpu-nodev   [ "$(LD_LIBRARY_PATH=$mock rc "$S" generate -m "$tmp/m.gguf" -n 4 --gpu-layers 1 --gpu 3)" = 1 ]
  check gpu-nodev-msg grep -q "has 1 CUDA device" "$tmp/err"
  # the split planner and the report: the same text; the decision, the
  # per-layer table, the report's processors (workers and the GPU), the
  # GPU's products and copies
  check plan        [ "$(LD_LIBRARY_PATH=$mock rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers plan --report --threads 2)" = 0 ]
  check plan-same   cmp -s "$tmp/out" "$tmp/greedy"
  check plan-prefill grep -qE "^synor: prefill: [0-2] of 2 layers on the GPU.*: estimate [0-9.]+ ms" "$tmp/err"
  check plan-decode grep -qE "^synor: decode \(1 row\): [0-2] of 2 layers on the GPU" "$tmp/err"
  check plan-table  grep -qE "^  classifier +[0-9.]+ ms +[0-9.]+ ms" "$tmp/err"
  check report-head grep -q "GENERATE REPORT" "$tmp/err"
  check report-cpu  grep -qE "^  cpu/0 " "$tmp/err"
  check report-gpu  grep -qE "^  cuda0 .*(sgemm|sgemv|\(idle\))" "$tmp/err"
  check report-time grep -q "TIMELINE" "$tmp/err"
  # a fixed split: prefill on the GPU, decode on the CPU, the same text;
  # and the GPU's products show in the report's data movement
  check split       [ "$(LD_LIBRARY_PATH=$mock rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers all --split 2,0 --report)" = 0 ]
  check split-same  cmp -s "$tmp/out" "$tmp/greedy"
  check split-copies grep -q "host->gpu (activations)" "$tmp/err"
  check split-sgemm grep -qE "^  cuda0 .*sgemm" "$tmp/err"
  # the same run simulated: the GPU's products on a GPU device of the
  # local fabric, the copies as edges
  check sim-gpu     [ "$(LD_LIBRARY_PATH=$mock XDG_CACHE_HOME=$tmp/cache rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers all --split 2,0 --report --simulate)" = 0 ]
  check sim-gpu-same cmp -s "$tmp/out" "$tmp/greedy"
  check sim-gpu-dev grep -qE "^  local-.* simulated .*matmul x[0-9]+" "$tmp/err"
  check sim-gpu-gaps grep -qE "barrier task on the first worker: [0-9.]+ us within a batch" "$tmp/err"
  check sim-gpu-ratio grep -qE "^synor: simulated makespan [0-9.]+ ms vs real [0-9.]+ ms \(ratio [0-9.]+\)$" "$tmp/err"
  # one CPU worker (a loaded machine can leave a second one without a
  # task): the CPU's own profile stands for it
  check sim-one     [ "$(LD_LIBRARY_PATH=$mock XDG_CACHE_HOME=$tmp/cache rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers all --split 2,0 --report --simulate --threads 1)" = 0 ]
  check sim-one-ratio grep -qE "^synor: simulated makespan [0-9.]+ ms vs real [0-9.]+ ms \(ratio [0-9.]+\)$" "$tmp/err"
  check split-big   [ "$(LD_LIBRARY_PATH=$mock rc "$S" generate -m "$tmp/m.gguf" -n 4 --gpu-layers 1 --split 2,0)" = 1 ]
  check split-big-msg grep -q "prefill 2: the context has 1 layer on a GPU" "$tmp/err"
fi
# OpenCL layers (PoCL's CPU device where no GPU has OpenCL): the same
# greedy text; skipped where no OpenCL device exists
if [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers all --gpu opencl0)" = 0 ]; then
  check ocl-same    cmp -s "$tmp/out" "$tmp/greedy"
  check ocl-figures grep -qE "2 of 2 layers and the classifier on opencl0 .* OpenCL kernel calls" "$tmp/err"
  check ocl-report  [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --gpu-layers all --gpu opencl0 --report)" = 0 ]
  check ocl-report-dev grep -qE "^  opencl0 .*OpenCL, real" "$tmp/err"
elif grep -q "OpenCL device" "$tmp/err"; then
  echo "llm: no OpenCL device here ($(tail -1 "$tmp/err")): OpenCL layers skipped"
else
  check ocl-run false
fi
check gpu-badname   [ "$(rc "$S" generate -m "$tmp/m.gguf" -n 4 --gpu-layers all --gpu vulkan0)" = 2 ]
check gpu-badname-msg grep -q "openclN" "$tmp/err"
check split-nogpu   [ "$(rc "$S" generate -m "$tmp/m.gguf" -n 4 --split 1,0)" = 2 ]
check split-badarg  [ "$(rc "$S" generate -m "$tmp/m.gguf" -n 4 --gpu-layers all --split 1)" = 2 ]

# the F16 KV cache: the tiny model's greedy text is the F32 cache's (also
# with a draft model, whose context takes the same type); a bad type is a
# usage error naming the value
check kv16          [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --quiet --kv-type f16)" = 0 ]
check kv16-same     cmp -s "$tmp/out" "$tmp/greedy"
check kv32          [ "$(rc "$S" generate -m "$tmp/m.gguf" -p "Synor places" -n 16 --quiet --kv-type F32)" = 0 ]
check kv32-same     cmp -s "$tmp/out" "$tmp/greedy"
check kv-bad        [ "$(rc "$S" generate -m "$tmp/m.gguf" -n 4 --kv-type f8)" = 2 ]
check kv-bad-msg    grep -q "kv-type: KV type 'f8': expected f32 or f16" "$tmp/err"
check kv-help       bash -c '"$0" generate --help | grep -q -- "--kv-type f32|f16"' "$S"

echo "llm: $pass passed, $fail failed"
[ "$fail" = 0 ]
