#!/usr/bin/env bash
# synor train --device opencl and --device cpu,opencl (the replicas' matrix
# products on an OpenCL device, alone or beside CPU replicas): the run
# completes with its files, says where the products ran, and its loss curve
# is the CPU-only run's within 1e-4 (relative) at every step; --balance
# prints a split of the whole batch, which --rows repeats bit for bit; bad
# devices and splits are named. PoCL's CPU
# device is enough; without any OpenCL device the test is skipped.
# usage: train_opencl.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

if ! "$S" devices 2>/dev/null | grep -qE "^[^ ]+ +[a-z]+ +opencl "; then
  echo "skip: no OpenCL device (synor devices lists none; PoCL's CPU device counts: pocl-opencl-icd)"
  exit 77
fi
cat "$SRC"/README.md "$SRC"/docs/*.md | LC_ALL=C tr -cd '\11\12\15\40-\176' >"$tmp/corpus.txt"
small=(--vocab 400 --dim 32 --hidden 64 --layers 2 --heads 4 --kv-heads 2 --seq-len 32 --batch 6
       --workers 2 --replicas 3 --steps 12 --eval-every 6 --ckpt-every 6 --quiet)
# the same curve: column 2 (loss) and 3 (val_loss) of every step within 1e-4
same_curve() {
  paste -d, <(cut -d, -f1-3 "$1") <(cut -d, -f1-3 "$2") | awk -F, '
    NR == 1 { next }
    { n++; if ($1 != $4) bad++
      for (i = 2; i <= 3; i++) { a = $i; b = $(i + 3)
        if ((a == "") != (b == "")) bad++
        else if (a != "" && (a - b > 1e-4 * b || b - a > 1e-4 * b)) bad++ } }
    END { exit !(n == 12 && !bad) }'
}

check cpu          [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/c" "${small[@]}")" = 0 ]
check ocl          [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/o" "${small[@]}" --device opencl)" = 0 ]
check ocl-line     grep -q "matrix products on opencl0 (" "$tmp/err"
check ocl-files    test -s "$tmp/o/model.gguf" -a -e "$tmp/o/ckpt-12.bin"
check ocl-curve    same_curve "$tmp/c/log.csv" "$tmp/o/log.csv"
check mixed        [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/m" "${small[@]}" --device cpu,opencl:0)" = 0 ]
check mixed-line   grep -q "replica 2's matrix products on opencl0 (.*), replicas 0-1's on the CPU workers" "$tmp/err"
check mixed-curve  same_curve "$tmp/c/log.csv" "$tmp/m/log.csv"
check mixed-model  test -s "$tmp/m/model.bin"
check balance      [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/b" "${small[@]}" --steps 3 --device cpu,opencl --balance)" = 0 ]
rows=$(grep -o "[0-9]* rows at" "$tmp/err" | awk '{ s += $1; n++ } END { print n ":" s }')
check balance-rows [ "$rows" = "3:6" ]
# the split it printed, given back with --rows: the same run, bit for bit
split=$(grep -o -- "--rows [0-9,]* repeats it" "$tmp/err" | cut -d' ' -f2)
check rows         [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/b2" "${small[@]}" --steps 3 --device cpu,opencl --rows "$split")" = 0 ]
check rows-same    cmp -s <(cut -d, -f1-3 "$tmp/b/log.csv") <(cut -d, -f1-3 "$tmp/b2/log.csv")
check rows-count   [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" "${small[@]}" --rows 3,3)" = 1 ]
check rows-msg     grep -q -- "--rows gives 2 counts for 3 replicas" "$tmp/err"
check rows-bad     [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" --rows 3,,3)" = 2 ]
check bad-device   [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" --device opencl:two)" = 2 ]
check bad-msg      grep -q "opencl:K" "$tmp/err"
check no-device    [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" "${small[@]}" --device opencl:9)" = 1 ]
check no-dev-msg   grep -q "OpenCL device 9 asked" "$tmp/err"
check one-replica  [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" "${small[@]}" --replicas 1 --device cpu,opencl)" = 1 ]
check one-msg      grep -q "needs 2 replicas or more" "$tmp/err"

echo "train_opencl: $pass passed, $fail failed"
[ "$fail" = 0 ]
