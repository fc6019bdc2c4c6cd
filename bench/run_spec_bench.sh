#!/usr/bin/env bash
# run_spec_bench.sh - issue 12's speculative-decoding bar: tokens/s of a
# target alone against the same target with a draft (synor generate
# --draft), greedy, with the acceptance rate and k of each row; medians of
# --runs rounds, each round running every configuration once (interleaved).
#
#   bash bench/run_spec_bench.sh [--bin DIR] [--preset stories15m|stories110m]
#        [--target-type f32|f16|q8_0] [--drafts "q8_0 q4_0 lookup q4_0+lookup skip6"]
#        [--k "2 3 4"] [--lookup N] [--seed S] [--tokens N] [--runs N]
#        [--threads N] [--prompt TEXT] [--dir DIR] [--nice N]
#        [--target FILE] [--temp T] [--seed-sample S]
#
# The pair: the preset's shape (default stories110m) with generated weights
# (synor model synth --unshared --seed 7 --text README.md; an untied
# classifier, so greedy text does not repeat one token), the target in
# --target-type (default f32), each draft the same weights quantized
# (synor quantize). Generated weights give an unrelated or a truncated
# model an acceptance near 0, so "the same model, quantized" is the only
# high-acceptance model draft they offer (docs/BENCHMARKS.md). Other
# drafts: "lookup" (generate --lookup N, no draft model: n-grams of the
# context propose what followed them), "T+lookup" (the lookup, and the
# type-T copy for the rounds it has no match), "skipL" (the target's first
# L layers with its final norm and classifier, Q8_0: synth --layers L with
# the same seed). --seed S: the weights' seed (default 7).
#
# A trained pair: --target FILE takes that model as the target instead
# (e.g. one `synor train` wrote; T's quantized copies are made from it),
# and a draft may be a model file (any name with a '/': a smaller model
# trained with the target's tokenizer). DRAFT@P runs that draft with
# --draft-pmin P (the draft stops proposing where it is unsure), e.g.
# --drafts "q8_0 /runs/small/model.gguf /runs/small/model.gguf@0.5".
# --temp T > 0 samples (--seed-sample S, default 1) instead of greedy: the
# texts then differ from the alone run's (the standard rule draws another
# random stream), so they are not compared; the rate is tokens/s of
# whatever each run generated. DRAFT+same runs that draft with
# --same-draws (the sampler's own draws: the alone run's text, compared).
#
# Rates are end to end (the prompt included, as `generate --draft` reports
# them): alone = generated / (prefill + decode seconds). Every speculative
# run's text is compared with the target's own (greedy: identical, or the
# script fails). Also printed per configuration: the draft's time a step
# and the check's time (k + 1 rows), against the target's decode step, and
# each round's speed-up against the alone run of that round (runs next to
# each other in time: on a loaded machine the steadier figure).
# --dir DIR keeps the models in DIR (made once, reused); default a
# temporary directory. --nice N: the runs under nice -n N (default 0).
# The load average is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
bin= preset=stories110m ttype=f32 drafts="q8_0" ks="2 3 4" ntok=200 runs=3 threads=2
prompt="Once upon a time" dir= niceness=0 lookup=3 seed=7 target= temp=0 sseed=1
usage="usage: $0 [--bin DIR] [--preset P] [--target-type T] [--drafts \"T ...\"] [--k \"K ...\"]
       [--lookup N] [--seed S] [--tokens N] [--runs N] [--threads N] [--prompt TEXT] [--dir DIR]
       [--nice N] [--target FILE] [--temp T] [--seed-sample S]"
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --target-type) ttype=$2; shift 2 ;;
    --drafts) drafts=$2; shift 2 ;;
    --k) ks=$2; shift 2 ;;
    --lookup) lookup=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --tokens) ntok=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --nice) niceness=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --temp) temp=$2; shift 2 ;;
    --seed-sample) sseed=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ]; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
  cmake --build build-bench -j"$(nproc)" --target synor >/dev/null
  bin=build-bench
fi
S=$bin/synor
[ -x "$S" ] || { echo "$0: $S: no such executable" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$dir" ] || dir=$tmp
mkdir -p "$dir"
P=$preset-s$seed
T=$dir/$P-$ttype.gguf
src=$dir/$P-f32.gguf
if [ -n "$target" ]; then
  [ -s "$target" ] || { echo "$0: --target $target: no such file" >&2; exit 1; }
  P=$(basename "$target"); P=${P%.*}
  T=$target src=$target
elif [ ! -s "$T" ]; then
  "$S" model synth "$dir/$P-f32.gguf" --preset "$preset" --unshared --seed "$seed" \
    --text README.md >/dev/null
  [ "$ttype" = f32 ] || "$S" quantize "$dir/$P-f32.gguf" "$T" --type "$ttype" >/dev/null
fi
# a draft model's file: a path as given, else the target's copy of that type
dfile() { case $1 in */*) echo "$1" ;; *) echo "$dir/$P-$1.gguf" ;; esac; }
# a configuration's generate options: the draft model (if any), the lookup (if any), p_min
dopts() {
  local d=${1%@*} pm= sd=
  [ "$d" = "$1" ] || pm="--draft-pmin ${1##*@}"
  case $d in *+same) d=${d%+same} sd=--same-draws ;; esac
  case $d in
    lookup) echo "--lookup $lookup $sd" ;;
    *+lookup) echo "--draft $(dfile "${d%+lookup}") --lookup $lookup $pm $sd" ;;
    *) echo "--draft $(dfile "$d") $pm $sd" ;;
  esac
}
for d in $drafts; do
  m=${d%@*}
  m=${m%+same}
  m=${m%+lookup}
  case $m in */*) [ -s "$m" ] || { echo "$0: draft $m: no such file" >&2; exit 1; }; continue ;; esac
  [ "$m" != lookup ] && [ ! -s "$dir/$P-$m.gguf" ] || continue
  [ -z "$target" ] || case $m in skip*) echo "$0: $m: not with --target" >&2; exit 1 ;; esac
  case $m in
    skip*) "$S" model synth "$dir/$P-$m.gguf" --preset "$preset" --unshared --seed "$seed" \
             --text README.md --layers "${m#skip}" --type q8_0 >/dev/null ;;
    *) "$S" quantize "$src" "$dir/$P-$m.gguf" --type "$m" >/dev/null ;;
  esac
done
gen() { nice -n "$niceness" "$S" generate -m "$T" -p "$prompt" -n "$ntok" --threads "$threads" \
  --temp "$temp" --seed "$sseed" "$@"; }
# a configuration's file name: the draft's path flattened
cname() { echo "$1-k$2" | tr '/@' '_='; }
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
how=greedy
awk -v t="$temp" 'BEGIN {exit !(t > 0)}' && how="sampled at temperature $temp (seed $sseed)"
if [ -n "$target" ]; then
  echo "target $target, $ntok tokens $how after \"$prompt\", $threads threads, $runs rounds"
else
  echo "target $preset $ttype (seed $seed), $ntok tokens $how after \"$prompt\", $threads threads, $runs rounds"
fi
# one configuration's run: name; appends "rate accepted proposed draft_ms check_ms" (or
# "rate step_ms" alone) to $tmp/NAME
for r in $(seq "$runs"); do
  gen >"$tmp/alone.out" 2>"$tmp/alone.err"
  # prompt P tokens in A s (...), generated G tokens in D s (R tokens/s decoding)
  sed -n 's/.*prompt [0-9]* tokens in \([0-9.]*\) s.*generated \([0-9]*\) tokens in \([0-9.]*\) s.*/\1 \2 \3/p' \
    "$tmp/alone.err" | awk '{printf "%.2f %.2f\n", $2 / ($1 + $3), 1e3 * $3 / $2}' >>"$tmp/alone"
  for d in $drafts; do
    for k in $ks; do
      n=$(cname "$d" "$k")
      # shellcheck disable=SC2046
      gen $(dopts "$d") --speculate "$k" >"$tmp/$n.out" 2>"$tmp/$n.err" ||
        { echo "$0: $n: generate failed:" >&2; cat "$tmp/$n.err" >&2; exit 1; }
      { [ "$how" != greedy ] && case $d in *+same*) false ;; *) true ;; esac; } ||
        cmp -s "$tmp/alone.out" "$tmp/$n.out" ||
        { echo "$0: $n: the text differs from the target's own" >&2; exit 1; }
      sed -n 's/.*(\([0-9.]*\) tokens\/s), [0-9]* checks, acceptance [0-9.]* (\([0-9]*\) of \([0-9]*\)); draft \([0-9.]*\) ms a step, check \([0-9.]*\) ms.*/\1 \2 \3 \4 \5/p' \
        "$tmp/$n.err" | tr '\n' ' ' >>"$tmp/$n"
      # the lookup's checks and acceptance (or 0s)
      l=$(sed -n 's/.*lookup draft (n-gram [0-9]*): \([0-9]*\) of [0-9]* checks, acceptance [0-9.]* (\([0-9]*\) of \([0-9]*\)).*/\1 \2 \3/p' "$tmp/$n.err")
      # the rounds the draft stopped short (p_min), of the checks
      ps=$(sed -n 's/.*draft p_min [0-9.e+-]*: \([0-9]*\) of \([0-9]*\) checks stopped short.*/\1 \2/p' "$tmp/$n.err")
      echo "${l:-0 0 0} ${ps:-0 0}" >>"$tmp/$n"
    done
  done
  echo "round $r done (load $(cut -d' ' -f1 /proc/loadavg))"
done
# the raw figures stay beside the models (DIR/spec-runs/CONFIG: one line a round)
mkdir -p "$dir/spec-runs"
for f in "$tmp"/alone "$tmp"/*-k*; do case $f in *.out | *.err) ;; *) cp "$f" "$dir/spec-runs/" ;; esac; done
med() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
alone=$(cut -d' ' -f1 "$tmp/alone" | med)
step=$(cut -d' ' -f2 "$tmp/alone" | med)
printf '\n| draft | k | acceptance | tokens/s (median; rounds) | alone (median; rounds) | speed-up | per round | draft step / target step | check / target step | lookup: checks, acceptance | stopped short (p_min) |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for d in $drafts; do
  for k in $ks; do
    f=$tmp/$(cname "$d" "$k")
    rate=$(cut -d' ' -f1 "$f" | med)
    acc=$(awk '{a += $2; p += $3} END {if (p) printf "%.2f (%d/%d)", a / p, a, p; else print "- (0/0)"}' "$f")
    dms=$(cut -d' ' -f4 "$f" | med) cms=$(cut -d' ' -f5 "$f" | med)
    # each round's speed-up against the alone run of the same round
    per=$(paste -d' ' "$f" "$tmp/alone" | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $(NF - 1)}')
    lk=$(awk '{c += $6; a += $7; p += $8; n += 1} END {if (p) printf "%d a run, %.2f (%d/%d)", c / n, a / p, a, p; else print "-"}' "$f")
    ss=$(awk '{s += $9; c += $10} END {if (c) printf "%d of %d checks", s, c; else print "-"}' "$f")
    # a draft file by its last two path components
    dn=$(echo "$d" | awk -F/ '{print (NF > 1 ? $(NF - 1) "/" $NF : $0)}')
    printf '| %s | %s | %s | %s; %s | %s; %s | %s | %s | %s | %s | %s | %s |\n' "$dn" "$k" "$acc" "$rate" \
      "$(cut -d' ' -f1 "$f" | paste -sd' ')" "$alone" "$(cut -d' ' -f1 "$tmp/alone" | paste -sd' ')" \
      "$(awk -v a="$rate" -v b="$alone" 'BEGIN {printf "%.2f", a / b}')" "$per" \
      "$(awk -v a="$dms" -v b="$step" 'BEGIN {printf "%.2f", a / b}')" \
      "$(awk -v a="$cms" -v b="$step" 'BEGIN {printf "%.2f", a / b}')" "$lk" "$ss"
  done
done
echo
echo "target step (alone, median) $step ms; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
