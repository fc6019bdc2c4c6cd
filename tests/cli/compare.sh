#!/usr/bin/env bash
# synor cost compare: a job on the network against the clouds, on the
# fictional fixtures (tests/data/econ), each figure checked against the
# pricing engine (synor price, itself checked by hand in price.sh) or by
# hand; usage errors; the shipped data.
# usage: compare.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
D=$SRC/tests/data/econ
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; cat "$tmp/out" "$tmp/err"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
jget() { "$JC" -g "$1" <"$tmp/out"; }
C() { "$S" cost compare --econ-data "$D" --today 2025-06-01 "$@"; }
P() { "$S" price nvidia-h100-sxm --econ-data "$D" --today 2025-06-01 "$@" | sed -n 's/^  total  *\([0-9.]*\) USD.*/\1/p'; }

# usage
check help        [ "$(rc "$S" cost compare --help)" = 0 ]
check no-job      [ "$(rc C)" = 2 ]
check both        [ "$(rc C x.json --device-hours 1)" = 2 ]
check bad-hours   [ "$(rc C --device-hours -1)" = 2 ]
check bad-count   [ "$(rc C --device-hours 1 --count 0)" = 2 ]
check runs-alone  [ "$(rc C --device-hours 1 --runs 3)" = 2 ]
check dtype-alone [ "$(rc C --device-hours 1 --dtype fp16)" = 2 ]
check bad-opt     [ "$(rc C --device-hours 1 --frob 1)" = 2 ]
check bad-device  [ "$(rc C --device-hours 1 --device nope)" = 1 ]
check no-cloud    [ "$(rc C --device-hours 1 --device nvidia-rtx-4090)" = 1 ]
check no-cloud-m  grep -q 'no cloud instance in the data holds a nvidia-rtx-4090' "$tmp/err"

# 8 H100s for an hour: one p5.48xlarge (8 GPUs) at 98.32 USD/h on AWS
check job         [ "$(rc C --device-hours 1 --count 8 --from US-VA --json)" = 0 ]
check json        "$JC" format synor-cost-compare/1 <"$tmp/out"
check aws         [ "$(jget clouds.0.on_demand.usd)" = 98.320000 ]
check aws-n       [ "$(jget clouds.0.on_demand.instances)" = 1 ]
check gcp-none    sh -c "! '$JC' -g clouds.1.on_demand <'$tmp/out' 2>/dev/null"
# the network at its cheapest region (SE), colocation, with the fee: what
# synor price gives for 8 device-hours there
check net-region  [ "$(jget network.region)" = SE ]
net=$(P --region SE --hours 8 --site colocation)
check net-usd     [ "$(jget network.usd)" = "$net" ]
hyper=$(P --region US-VA --hours 8 --site hyperscale --fee-bp 0)
colo=$(P --region US-VA --hours 8 --site colocation --fee-bp 0)
user=$(P --region US-VA --hours 8 --site colocation)
sub() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.6f", a - b}'; }
check margin      [ "$(jget breakdown.margin.usd)" = "$(sub 98.32 "$hyper")" ]
check pue         [ "$(jget breakdown.pue.usd)" = "$(sub "$hyper" "$colo")" ]
check region      [ "$(jget breakdown.region.usd)" = "$(sub "$user" "$net")" ]
check spot-null   [ "$(jget breakdown.spot.usd)" = null ]
check seed-claim  [ "$(jget seed_claim_pct)" = 90 ]
# (98.32 - 6.194425) / 98.32 = 93.70% -> 9370 bp
check saving      [ "$(jget saving_bp)" = 9370 ]
check text        [ "$(rc C --device-hours 1 --count 8)" = 0 ]
check text-line   grep -q 'the network pays 6.19 USD, 93.7% less (the seed claims 90%)' "$tmp/out"
# 9 GPUs need two instances
check two         [ "$(rc C --device-hours 1 --count 9 --json)" = 0 ]
check two-n       [ "$(jget clouds.0.on_demand.instances)" = 2 ]
check two-usd     [ "$(jget clouds.0.on_demand.usd)" = 196.640000 ]
check two-share   [ "$(jget clouds.0.on_demand.share_usd)" = 110.610000 ]
# stale data warns (the fixtures are as_of 2024-12-31, 730 days)
check stale       [ "$(rc "$S" cost compare --econ-data "$D" --today 2027-06-01 --device-hours 1)" = 0 ]
check stale-msg   grep -q 'is stale' "$tmp/err"
# the shipped data: a comparison is made, the seed's claim beside it
check shipped     [ "$(rc "$S" cost compare --device-hours 100 --count 8 --consumer nvidia-rtx-4090)" = 0 ]
check shipped-m   grep -q 'the seed claims 90%' "$tmp/out"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
