#!/usr/bin/env bash
# synor train: a model trained on the project's docs, its log, checkpoints,
# loss curve and exported files (run by synor generate); a run killed with
# SIGKILL and resumed gives the same loss curve and the same model as one
# that ran straight; bad input.
# usage: train.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'kill -9 $bg 2>/dev/null; rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

# ASCII only: the vocabulary of 400 must hold every distinct character of
# the corpus, whatever the docs come to contain
cat "$SRC"/README.md "$SRC"/docs/*.md | LC_ALL=C tr -cd '\11\12\15\40-\176' >"$tmp/corpus.txt"
small=(--vocab 400 --dim 32 --hidden 64 --layers 2 --heads 4 --kv-heads 2 --seq-len 32 --batch 4)

check train        [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/a" "${small[@]}" --steps 30 --eval-every 10 --ckpt-every 10)" = 0 ]
check train-files  test -s "$tmp/a/tokenizer.bin" -a -s "$tmp/a/model.bin" -a -s "$tmp/a/model.gguf" -a -s "$tmp/a/loss.svg"
check train-kept   test -e "$tmp/a/ckpt-30.bin" -a -e "$tmp/a/ckpt-20.bin" -a ! -e "$tmp/a/ckpt-10.bin"
check train-log    [ "$(wc -l <"$tmp/a/log.csv")" = 31 ]
check train-header grep -q "^step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s$" "$tmp/a/log.csv"
check train-val    grep -qE "^30,[0-9.]+,[0-9.]+," "$tmp/a/log.csv"
check train-params grep -qE "parameters \(dim 32, hidden 64, 2 layers" "$tmp/err"
check train-unigram grep -qE "unigram baseline [0-9.]+ nats/token" "$tmp/err"
check train-progress grep -qE "step 30/30  loss [0-9.]+  val [0-9.]+" "$tmp/err"
check train-svg    grep -q "<polyline" "$tmp/a/loss.svg"
check train-summary grep -qE "^trained 30 steps: validation loss [0-9.]+ nats/token \(perplexity [0-9.]+\), unigram baseline [0-9.]+" "$tmp/out"
check train-no-note sh -c "! grep -q 'not both multiples of 32' '$tmp/err'"
# the loss falls
first=$(sed -n 2p "$tmp/a/log.csv" | cut -d, -f2); last=$(sed -n 31p "$tmp/a/log.csv" | cut -d, -f2)
check train-learns awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.3) }'
check gen-gguf     [ "$(rc "$S" generate -m "$tmp/a/model.gguf" -p "The runtime" -n 8 --quiet)" = 0 ]
cp "$tmp/out" "$tmp/g1"
check gen-l2c      [ "$(rc "$S" generate -m "$tmp/a/model.bin" -p "The runtime" -n 8 --quiet)" = 0 ]
check gen-same     cmp -s "$tmp/out" "$tmp/g1"
check plot         [ "$(rc "$S" train plot "$tmp/a/log.csv" -o "$tmp/p.svg" --baseline 5)" = 0 ]
check plot-svg     grep -q "unigram baseline 5.000" "$tmp/p.svg"

# killed (SIGKILL) after a checkpoint, resumed: the same curve and model
big=("${small[@]}" --dim 64 --hidden 128 --seq-len 64 --batch 8 --steps 60 --eval-every 20 --ckpt-every 10 --quiet)
check straight     [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/r" "${big[@]}")" = 0 ]
"$S" train --corpus "$tmp/corpus.txt" --out "$tmp/k" "${big[@]}" >/dev/null 2>&1 &
bg=$!
for _ in $(seq 3000); do [ -e "$tmp/k/ckpt-20.bin" ] && break; sleep 0.01; done
kill -9 $bg 2>/dev/null; wait $bg 2>/dev/null
check killed       [ ! -e "$tmp/k/model.bin" ]
check resume       [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/k" "${big[@]}" --resume)" = 0 ]
check resume-msg   grep -q "resuming from .*ckpt-[0-9]*.bin" "$tmp/err"
check resume-log   [ "$(wc -l <"$tmp/k/log.csv")" = 61 ]
check resume-curve cmp -s <(cut -d, -f1-3 "$tmp/r/log.csv") <(cut -d, -f1-3 "$tmp/k/log.csv")
check resume-model cmp -s "$tmp/r/model.bin" "$tmp/k/model.bin"
# a torn newest checkpoint: named, skipped, the previous one used
head -c 5000 "$tmp/k/ckpt-60.bin" >"$tmp/t" && mv "$tmp/t" "$tmp/k/ckpt-60.bin"
check torn         [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/k" "${big[@]}" --resume)" = 0 ]
check torn-msg     grep -q "skipping .*ckpt-60.bin: .*torn or cut short" "$tmp/err"
check torn-prev    grep -q "resuming from .*ckpt-50.bin (step 50)" "$tmp/err"
check torn-model   cmp -s "$tmp/r/model.bin" "$tmp/k/model.bin"

# a shape that will not quantize is said so (and trains)
check note         [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/n" "${small[@]}" --dim 48 --hidden 80 --steps 2 --quiet)" = 0 ]
check note-msg     grep -q "dim 48 and hidden 80 are not both multiples of 32" "$tmp/err"

# bad input
check no-corpus    [ "$(rc "$S" train --out "$tmp/x")" = 2 ]
check bad-lr       [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" --lr fast)" = 2 ]
check bad-lr-msg   grep -q -- "--lr" "$tmp/err"
check bad-option   [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" --frobnicate 1)" = 2 ]
check missing      [ "$(rc "$S" train --corpus "$tmp/none.txt" --out "$tmp/x")" = 1 ]
check missing-msg  grep -q "none.txt" "$tmp/err"
check bad-shape    [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" "${small[@]}" --dim 30)" = 1 ]
check bad-shape-msg grep -q "n_heads 4 must divide dim 30" "$tmp/err"
head -c 300 "$SRC/README.md" >"$tmp/short.txt"
check short        [ "$(rc "$S" train --corpus "$tmp/short.txt" --out "$tmp/x" --vocab 300 --seq-len 128)" = 1 ]
check short-msg    grep -q "each needs at least seq_len + 1 = 129" "$tmp/err"
printf 'step,loss\n1,4\n2,oops\n' >"$tmp/bad.csv"
check plot-bad     [ "$(rc "$S" train plot "$tmp/bad.csv")" = 1 ]
check plot-bad-msg grep -q "bad.csv: line 3" "$tmp/err"

# --device cuda: on the CUDA test doubles (tests/cuda-mock beside the
# binary) the products run through cuBLAS and the run goes as on the CPU
check device-bad   [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/d" --device tpu)" = 2 ]
mock=$(dirname "$S")/tests/cuda-mock
if [[ -e $mock/libcuda.so.1 && -e $mock/libcublas.so.13 ]]; then
  check cuda-train [ "$(LD_LIBRARY_PATH=$mock rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/g" "${small[@]}" --steps 10 --eval-every 5 --ckpt-every 5 --device cuda)" = 0 ]
  check cuda-line  grep -q "matrix products on cuda0" "$tmp/err"
  check cuda-files test -s "$tmp/g/model.gguf" -a -e "$tmp/g/ckpt-10.bin"
  # the CPU workers and the GPU in one batch: the last replica on cuda0
  check mix-train  [ "$(LD_LIBRARY_PATH=$mock rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/m" "${small[@]}" --steps 4 --eval-every 2 --ckpt-every 2 --replicas 2 --device cpu,cuda)" = 0 ]
  check mix-line   grep -q "replica 1's matrix products on cuda0 .*replicas 0-0's on the CPU workers" "$tmp/err"
fi
check mix-bad      [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/m2" --device cpu,gpu)" = 2 ]
check mix-bad-msg  grep -q "cpu,cuda" "$tmp/err"

echo "train: $pass passed, $fail failed"
[ "$fail" = 0 ]
