#!/usr/bin/env bash
# synor plan --market DIR: a plan priced by the live order book, its quote,
# --budget, and --buy as one all-or-none basket of bids.
# usage: plan_market.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
D=$tmp/mk
H=gpu/nvidia-h100-sxm/eu-west
C=cpu/amd-epyc-9654/eu-west
W=$SRC/workloads/pipeline-4x8-60gb.json
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; cat "$tmp/out" "$tmp/err"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
M() { "$S" market --dir "$D" "$@" >/dev/null; }
P() { "$S" plan --workload "$W" --fabric four-h100 "$@"; }

# usage
check no-region   [ "$(rc P --market "$D")" = 2 ]
check no-region-m grep -q -- '--market needs --region' "$tmp/err"
check buy-owner   [ "$(rc P --market "$D" --region eu-west --buy)" = 2 ]
check owner-alone [ "$(rc P --market "$D" --region eu-west --owner bob)" = 2 ]
check no-market   [ "$(rc P --region eu-west)" = 2 ]
check compare     [ "$(rc P --market "$D" --region eu-west --compare)" = 2 ]
check bad-budget  [ "$(rc P --market "$D" --region eu-west --budget 1.1234567)" = 2 ]
check missing-dir [ "$(rc P --market "$D" --region eu-west)" = 1 ]
check ro-nothing  [ ! -e "$D" ]

# three H100 device-hours on offer (2 at 2.00, 1 at 3.00), bob's own ask aside
M place --owner alice --resource $H --side ask --price 2.00 --qty 2 --id 1
M place --owner carol --resource $H --side ask --price 3.00 --qty 1 --id 2
M place --owner bob --resource $H --side ask --price 1.00 --qty 5 --id 3
hash0=$("$S" market --dir "$D" replay | grep -o '"state_hash":"[0-9a-f]*"')
check quote       [ "$(rc P --market "$D" --region eu-west)" = 0 ]
# to anyone, 8 device-hours: one stage per H100, the cheapest four
check quote-h100  grep -q "$H .*8 device-hour(s) on offer, 4 device(s) in the fabric, 4 used: 4 device-hour(s) at up to 1.00, 4.00" "$tmp/out"
check quote-cpu   grep -q "$C .*not on the market" "$tmp/out"
check quote-total grep -q 'market total 4.00 USD' "$tmp/out"
# eu-west is not a region of the economics data: no carbon figure, said so
check no-carbon   grep -q 'carbon: no grid intensity for region eu-west' "$tmp/out"
# bob's own ask is not for him: the 4-stage pipeline gets 3 H100s, the
# fourth is past the book's depth
check quote-bob   [ "$(rc P --market "$D" --region eu-west --budget 6.99 --buy --owner bob)" = 3 ]
check bob-own     grep -q "$H .*3 device-hour(s) on offer, 4 device(s) in the fabric, 3 used: 3 device-hour(s) at up to 3.00, 7.00" "$tmp/out"
check over-budget grep -q 'over the budget of 6.99 USD: nothing bought' "$tmp/err"
check unchanged   [ "$("$S" market --dir "$D" replay | grep -o '"state_hash":"[0-9a-f]*"')" = "$hash0" ]
check buy         [ "$(rc P --market "$D" --region eu-west --buy --owner bob)" = 0 ]
check bought      grep -q 'bought: 1 bid(s) filled at once in 2 trade(s), 3 device-hour(s) for leases of 1 h, 7.00 USD' "$tmp/out"
# bob's own ask crossed his bid: self-trade prevention cancelled it
check self-trade  sh -c "! '$S' market --dir '$D' book $H | grep -q '1.000000'"
check trades      [ "$("$S" market --dir "$D" trades | grep -c '"event":"trade"')" = 2 ]
# the H100 book is empty now: nothing to rent, all on the CPU
check after       [ "$(rc P --market "$D" --region eu-west --owner bob --buy)" = 0 ]
check after-none  grep -q '0 device-hour(s) on offer, 4 device(s) in the fabric, 0 used' "$tmp/out"
check after-nil   grep -q 'nothing to buy' "$tmp/out"
# a deadline the plan cannot meet buys nothing
M place --owner alice --resource $H --side ask --price 2.00 --qty 4 --id 4
check deadline    [ "$(rc P --market "$D" --region eu-west --deadline 0.001 --buy --owner dave)" = 3 ]
check deadline-m  grep -q 'over the deadline.*nothing bought' "$tmp/err"

# a region the economics data knows: the plan's carbon at its annual intensity
M place --owner alice --resource gpu/nvidia-h100-sxm/DE --side ask --price 2.00 --qty 8 --id 5
check carbon      [ "$(rc P --market "$D" --region DE --strategy energy)" = 0 ]
check carbon-line grep -q "gCO2 at DE's .* gCO2/kWh" "$tmp/out"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
