#!/usr/bin/env bash
# synor rewards and synor earnings: record (breakdown, duplicates), payout,
# balance, list, policy; usage errors exit 2; a bad policy file is named by
# file:line:col; read-only commands create nothing; earnings from a market
# populated with `synor market` trades, and the no-trades error.
# usage: rewards.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
L=$tmp/ledger
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
RW() { "$S" rewards --ledger "$L" "$@"; }
REC=(record --id c1 --contributor alice --device nvidia-h100-sxm --tflops-s 3600 --gb 12.5
     --available-hours 1 --uptime 99.5 --reputation 70)

check help        [ "$(rc "$S" rewards --help)" = 0 ]
check help-sub    [ "$(rc "$S" rewards record --help)" = 0 ]
check help-earn   [ "$(rc "$S" earnings --help)" = 0 ]
check no-sub      [ "$(rc "$S" rewards)" = 2 ]
check bad-sub     [ "$(rc "$S" rewards frob)" = 2 ]
check bad-flag    [ "$(rc RW record --id x --contributor a --device nvidia-h100-sxm --frob 1)" = 2 ]
check bad-flag-m  grep -q "unknown option '--frob'" "$tmp/err"
check twice       [ "$(rc RW record --id x --id y --contributor a --device nvidia-h100-sxm)" = 2 ]
check no-value    [ "$(rc RW record --id)" = 2 ]
check missing     [ "$(rc RW record --id x --device nvidia-h100-sxm)" = 2 ]
check both-work   [ "$(rc RW record --id x --contributor a --device nvidia-h100-sxm --tflops-s 1 --gflops-s 1)" = 2 ]
check bad-num     [ "$(rc RW record --id x --contributor a --device nvidia-h100-sxm --gb 1.2345)" = 2 ]
check bad-num-m   grep -q "gb: '1.2345' has more than 3 decimals" "$tmp/err"
check neg-num     [ "$(rc RW record --id x --contributor a --device nvidia-h100-sxm --gb -1)" = 2 ]
check bad-uptime  [ "$(rc RW record --id x --contributor a --device nvidia-h100-sxm --uptime 100.01)" = 2 ]
check bad-rep     [ "$(rc RW record --id x --contributor a --device nvidia-h100-sxm --reputation 101)" = 2 ]
check late-ledger [ "$(rc "$S" rewards balance --ledger "$L")" = 2 ]
check late-msg    grep -q -- "--ledger goes before the command" "$tmp/err"
check no-ledger   [ "$(rc "$S" rewards record --id x --contributor a --device nvidia-h100-sxm)" = 2 ]
check nothing-yet [ ! -e "$L" ]

# the worked example of docs/REWARDS.md
check record      [ "$(rc RW "${REC[@]}")" = 0 ]
check rec-base    grep -q 'base  *0.016200 USD' "$tmp/out"
check rec-rep     grep -q 'reputation  *0.006480 USD  (reputation 70: x1.4000)' "$tmp/out"
check rec-up      grep -q 'uptime bonus  *0.004164 USD  (uptime 99.50%: +18.36%)' "$tmp/out"
check rec-amount  grep -q 'amount  *0.026844 USD' "$tmp/out"
check dup         [ "$(rc RW "${REC[@]}")" = 0 ]
check dup-word    grep -q '^duplicate: id c1 is in the ledger already (seq 1)' "$tmp/out"
check dup-orig    grep -q 'amount  *0.026844 USD' "$tmp/out"
check dup-json    [ "$(rc RW "${REC[@]}" --json)" = 0 ]
check dup-json-ok "$JC" <"$tmp/out"
check dup-true    grep -q '"duplicate":true,.*"amount_ticks":26844,.*"balance_ticks":26844' "$tmp/out"
check dup-other   [ "$(rc RW record --id c1 --contributor alice --device nvidia-h100-sxm --gb 1)" = 1 ]
check dup-other-m grep -q 'id c1: already in the ledger (seq 1) with other fields' "$tmp/err"
check cpu-tflops  [ "$(rc RW record --id c2 --contributor bob --device amd-epyc-9654 --tflops-s 1)" = 1 ]
check cpu-msg     grep -q 'amd-epyc-9654 is a CPU: give its work with --gflops-s' "$tmp/err"
check cpu         [ "$(rc RW record --id c2 --contributor bob --device amd-epyc-9654 --gflops-s 100000 --available-hours 2)" = 0 ]
check cpu-amount  grep -q 'amount  *0.001200 USD' "$tmp/out"
check unknown-dev [ "$(rc RW record --id c3 --contributor bob --device nope)" = 1 ]
check unknown-msg grep -q "no profile 'nope'" "$tmp/err"
check too-much    [ "$(rc RW record --id c3 --contributor bob --device nvidia-h100-sxm --tflops-s 100000000 --available-hours 1)" = 1 ]

check payout      [ "$(rc RW payout --id p1 --contributor alice --amount 0.001)" = 0 ]
check payout-bal  grep -q 'balance 0.025844 USD' "$tmp/out"
check payout-dup  [ "$(rc RW payout --id p1 --contributor alice --amount 0.001)" = 0 ]
check payout-dupw grep -q '^duplicate' "$tmp/out"
size=$(stat -c %s "$L/ledger.log")
check overdraw    [ "$(rc RW payout --id p2 --contributor alice --amount 1)" = 1 ]
check overdraw-m  grep -q "1.000000 USD is more than alice's balance of 0.025844 USD; nothing paid" "$tmp/err"
check unchanged   [ "$(stat -c %s "$L/ledger.log")" = "$size" ]
check pay-usage   [ "$(rc RW payout --id p3 --contributor alice --amount 0)" = 2 ]

check balance     [ "$(rc RW balance alice)" = 0 ]
check balance-v   grep -q '^alice  *0.025844 USD' "$tmp/out"
check balances    [ "$(rc RW balance --json)" = 0 ]
while read -r line; do check balances-j "$JC" <<<"$line"; done <"$tmp/out"
check bal-bob     grep -q '"contributor":"bob","balance_usd":"0.001200","balance_ticks":1200' "$tmp/out"
check bal-nobody  [ "$(rc RW balance carol)" = 1 ]
check list        [ "$(rc RW list)" = 0 ]
check list-n      [ "$(grep -c -E '^ +[0-9]+  (reward|payout)' "$tmp/out")" = 3 ]
check list-json   [ "$(rc RW list --contributor alice --json)" = 0 ]
check list-json-n [ "$(wc -l <"$tmp/out")" = 2 ]
while read -r line; do check list-line "$JC" <<<"$line"; done <"$tmp/out"
check ro-missing  [ "$(rc "$S" rewards --ledger "$tmp/nope" balance)" = 1 ]
check ro-msg      grep -q "no ledger here" "$tmp/err"
check ro-nothing  [ ! -e "$tmp/nope" ]
check ro-list     [ "$(rc "$S" rewards --ledger "$tmp/nope" list)" = 1 ]
check ro-nothing2 [ ! -e "$tmp/nope" ]

# a torn last record (a crash mid-write) is cut on the next write open
head -c $(( $(stat -c %s "$L/ledger.log") - 5 )) "$L/ledger.log" >"$tmp/torn" && cp "$tmp/torn" "$L/ledger.log"
check torn-ro     [ "$(rc RW balance alice)" = 0 ]
check torn-ro-bal grep -q '^alice  *0.026844 USD' "$tmp/out"
check torn-note   grep -q 'ignored (read-only) a torn record' "$tmp/err"
check torn-retry  [ "$(rc RW payout --id p1 --contributor alice --amount 0.001)" = 0 ]
check torn-cut    grep -q 'cut a torn record at byte' "$tmp/err"
check torn-new    grep -q '^payout p1: seq 3' "$tmp/out"

# the policy
check policy      [ "$(rc "$S" rewards policy)" = 0 ]
check policy-rate grep -q '"per_tflop_s": "0.000001000000"' "$tmp/out"
sed -n '/^{/,/^}/p' "$tmp/out" >"$tmp/policy.json"
check policy-json "$JC" <"$tmp/policy.json"
check policy-file [ "$(rc "$S" rewards --policy "$tmp/policy.json" policy)" = 0 ]
check policy-orig grep -q "origin: $tmp/policy.json" "$tmp/out"
sed 's/"max": "0.2000"/"max": "0.25"/' "$tmp/policy.json" >"$tmp/bad.json"
check bad-policy  [ "$(rc "$S" rewards --policy "$tmp/bad.json" policy)" = 1 ]
check bad-pol-msg grep -qE "bad.json:[0-9]+:[0-9]+: uptime_bonus.max: \"0.25\" is outside \[0.0000, 0.2000\]" "$tmp/err"
check bad-pol-rec [ "$(rc "$S" rewards --ledger "$L" --policy "$tmp/bad.json" "${REC[@]}")" = 1 ]
check pol-usage   [ "$(rc "$S" rewards policy extra)" = 2 ]

# earnings from a market with trades (synor market), and without
M=$tmp/market
R=gpu/nvidia-h100-sxm/eu-west
"$S" market --dir "$M" place --owner alice --resource $R --side ask --price 2.49 --qty 8 --id 1 >/dev/null
"$S" market --dir "$M" place --owner bob --resource $R --side bid --price 2.6 --qty 3 --id 2 >/dev/null
"$S" market --dir "$M" place --owner carol --resource gpu/nvidia-h100-sxm/us-east --side ask --price 2 --qty 5 --id 3 >/dev/null
"$S" market --dir "$M" place --owner dave --resource gpu/nvidia-h100-sxm/us-east --side bid --price 2 --qty 1 --id 4 >/dev/null
E() { "$S" earnings --market "$M" "$@"; }
before=$(ls -l "$M" | md5sum)
check earn        [ "$(rc E --device nvidia-h100-sxm --hours-per-day 8)" = 0 ]
check earn-price  grep -q 'price: 2.367500 USD per device-hour, the 24 h VWAP of gpu/nvidia-h100-sxm/\* (2 books, 4 device-hours traded)' "$tmp/out"
check earn-50     grep -qE '^ +50%  +288.266800 +14.413340 +- +273.853460$' "$tmp/out"
check earn-date   grep -qE '^newest trade used: 20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC$' "$tmp/out"
check earn-100    grep -qE '^ +100%  +576.533600 +28.826680 +- +547.706920$' "$tmp/out"
check earn-json   [ "$(rc E --device nvidia-h100-sxm --hours-per-day 8 --region eu-west --electricity 0.15 --pue 1.2 --json)" = 0 ]
check earn-json-v "$JC" <"$tmp/out"
check earn-last   grep -qE '"last_trade_time":[1-9][0-9]{18},' "$tmp/out"
check earn-elec   grep -q '"utilisation_bp":10000,"gross_usd":"606.364800","fee_usd":"30.318240","electricity_usd":"30.683520","net_usd":"545.363040"' "$tmp/out"
check earn-ro     [ "$(ls -l "$M" | md5sum)" = "$before" ]
check no-trades   [ "$(rc E --device nvidia-a100-80gb --hours-per-day 8)" = 1 ]
check no-trades-m grep -q "no recent trades of gpu/nvidia-a100-80gb/\* in $M" "$tmp/err"
check no-region   [ "$(rc E --device nvidia-h100-sxm --hours-per-day 8 --region ap-south)" = 1 ]
check no-region-m grep -q "no recent trades of gpu/nvidia-h100-sxm/ap-south in $M" "$tmp/err"
check no-market   [ "$(rc "$S" earnings --device nvidia-h100-sxm --hours-per-day 8 --market "$tmp/none")" = 1 ]
check no-market-c [ ! -e "$tmp/none" ]
check earn-hours  [ "$(rc E --device nvidia-h100-sxm --hours-per-day 25)" = 2 ]
check earn-zero   [ "$(rc E --device nvidia-h100-sxm --hours-per-day 0)" = 2 ]
check earn-pue    [ "$(rc E --device nvidia-h100-sxm --hours-per-day 8 --pue 1.5)" = 2 ]
check earn-miss   [ "$(rc "$S" earnings --device nvidia-h100-sxm --hours-per-day 8)" = 2 ]
check earn-flag   [ "$(rc E --device nvidia-h100-sxm --hours-per-day 8 --frob)" = 2 ]

echo "rewards.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
