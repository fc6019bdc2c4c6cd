#!/usr/bin/env bash
# synor price and synor price rank: the breakdown on the fictional fixtures
# (tests/data/econ), JSON output, the demand multiplier from a market
# directory, stale-data warnings, bad data files, usage errors; and the
# shipped data (data/economics) loading and pricing.
# usage: price.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
D=$SRC/tests/data/econ
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
jget() { "$JC" -g "$1" <"$tmp/out"; }

# the worked example of docs/PRICING.md on the fixtures: an H100-hour in US-VA
check price       [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --econ-data "$D" --today 2025-06-01)" = 0 ]
check energy      grep -q "energy        0.061600 USD = 700 W x 3600 s / 3600 x PUE 1.1 x 0.080000 USD/kWh" "$tmp/out"
check deprec      grep -q "depreciation  0.684932 USD" "$tmp/out"
check fee         grep -q "protocol fee  0.037327 USD = base x 5.00%" "$tmp/out"
check total       grep -q "total         0.783859 USD" "$tmp/out"
check source      grep -q "\[fixture\] Fictional figures for synor's tests" "$tmp/out"
check fresh       [ ! -s "$tmp/err" ]
check json        [ "$(rc "$S" price nvidia-h100-sxm --region aws:eu-central-1 --econ-data "$D" --json --hours 2.5 --utilisation 60 --network-gb 10 --fee-bp 1000)" = 0 ]
check json-ok     "$JC" format synor-price/1 <"$tmp/out"
check json-region [ "$(jget region)" = DE ]
check json-energy [ "$(jget energy)" = 338800 ]
check json-dep    [ "$(jget depreciation)" = 2853881 ]
check json-net    [ "$(jget network)" = 900000 ]
check json-total  [ "$(jget total)" = $((338800 + 2853881 + 900000 + 409268)) ]

# the demand multiplier from a real book: 12 bid against 8 asked near the mid
M=$tmp/market
R=gpu/nvidia-h100-sxm/US-VA
"$S" market --dir "$M" place --owner alice --resource $R --side ask --price 2.50 --qty 8 >/dev/null &&
"$S" market --dir "$M" place --owner bob --resource $R --side bid --price 2.40 --qty 12 >/dev/null
check market-set  [ $? = 0 ]
check market      [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --econ-data "$D" --market "$M")" = 0 ]
check demand      grep -q "demand        0.373266 USD = base x (1.5000x - 1); book $R: 12 bid / 8 ask" "$tmp/out"
check m-total     grep -q "total         1.157125 USD" "$tmp/out"
check no-book     [ "$(rc "$S" price nvidia-h100-sxm --region DE --econ-data "$D" --market "$M")" = 0 ]
check no-book-msg grep -q "1.0000x: no book gpu/nvidia-h100-sxm/DE" "$tmp/out"

# stale data: a warning on stderr naming the file, as_of and age; still priced
check stale       [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --econ-data "$D" --today 2027-01-01)" = 0 ]
check stale-msg   grep -q "warning: $D/electricity.json is stale: as_of 2024-12-31, 731 days old (max_age_days 730)" "$tmp/err"
check stale-hw    grep -q "hardware.json is stale" "$tmp/err"
check stale-out   grep -q "total         0.783859 USD" "$tmp/out"

# ranking and the best window
check rank        [ "$(rc "$S" price rank nvidia-h100-sxm --hours 4 --econ-data "$D" --from US-VA --deadline 24 --now 2026-11-27T12:00:00Z)" = 0 ]
check rank-1      grep -qE "^  1 +SE +0.154000 +2.739726" "$tmp/out"
check rank-3      grep -qE "^  3 +DE .* 90.0$" "$tmp/out"
check choice      grep -q "Choice: SE (Sweden): the lowest total, 3.038412 USD (0.097020 USD less than US-VA)" "$tmp/out"
check window      grep -q "US-VA  start 2026-11-28T00:00:00Z (+12 h): energy 0.123200 USD vs 0.246400 now, saves 0.123200 USD" "$tmp/out"
check carbon      [ "$(rc "$S" price rank nvidia-h100-sxm --hours 4 --econ-data "$D" --lat 52.5 --lon 13.4 --max-latency-ms 50 --by carbon --json)" = 0 ]
check carbon-json "$JC" format synor-price-rank/1 <"$tmp/out"
check carbon-1    [ "$(jget regions.0.region)" = SE ]
check carbon-out  [ "$(jget regions.2.ok)" = false ]

# a workload's device-seconds from the cost model instead of --hours
check workload    [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --econ-data "$D" --workload "$SRC/workloads/attention-block-fp32.json")" = 0 ]
check workload-s  grep -qE "attention-block-fp32.json on nvidia-h100-sxm: [0-9.e-]+ s by the cost model, priced as 1 s" "$tmp/out"
check workload-rk [ "$(rc "$S" price rank nvidia-rtx-4090 --econ-data "$D" --workload "$SRC/workloads/mlp-fp32.json" --json)" = 0 ]
check workload-js [ "$(jget seconds)" = 1 ]
check workload-no [ "$(rc "$S" price groq-lpu --region US-VA --econ-data "$D" --workload "$SRC/workloads/mlp-fp32.json")" = 1 ]
check workload-nm grep -q "task fc1.0 cannot run on groq-lpu" "$tmp/err"
check workload-2  [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --hours 1 --workload "$SRC/workloads/mlp-fp32.json")" = 2 ]

# bad data files: exit 1, naming file:line:column, field and value
mkdir "$tmp/bad"
cp "$D"/*.json "$tmp/bad/"
sed -i 's/"industrial": "0.080000"/"industrial": "0,08"/' "$tmp/bad/electricity.json"
check bad-data    [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --econ-data "$tmp/bad")" = 1 ]
check bad-msg     grep -qE "electricity.json:[0-9]+:[0-9]+: prices\[0\].industrial: \"0,08\" is not a decimal number" "$tmp/err"
check no-dir      [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --econ-data "$tmp/none")" = 1 ]
check no-region   [ "$(rc "$S" price nvidia-h100-sxm --region FR --econ-data "$D")" = 1 ]
check no-region-m grep -q 'unknown region "FR"' "$tmp/err"
check no-profile  [ "$(rc "$S" price nvidia-h900 --region US-VA --econ-data "$D")" = 1 ]

# usage errors: exit 2
check help        [ "$(rc "$S" price --help)" = 0 ]
check help-rank   grep -q "synor price rank DEVICE" "$tmp/out"
check no-device   [ "$(rc "$S" price --region US-VA)" = 2 ]
check no-region2  [ "$(rc "$S" price nvidia-h100-sxm)" = 2 ]
check bad-flag    [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --colour red)" = 2 ]
check bad-hours   [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --hours -1)" = 2 ]
check bad-hours2  [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --hours 1e3)" = 2 ]
check bad-site    [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --site moon)" = 2 ]
check bad-util    [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --utilisation 101)" = 2 ]
check bad-fee     [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --fee-bp 10001)" = 2 ]
check bad-today   [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --today 2025-02-30)" = 2 ]
check rank-only   [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --deadline 5)" = 2 ]
check rank-hours  [ "$(rc "$S" price rank nvidia-h100-sxm)" = 2 ]
check rank-lat    [ "$(rc "$S" price rank nvidia-h100-sxm --hours 1 --lat 10)" = 2 ]
check rank-dl     [ "$(rc "$S" price rank nvidia-h100-sxm --hours 5 --deadline 4)" = 2 ]
check rank-now    [ "$(rc "$S" price rank nvidia-h100-sxm --hours 1 --now 2026-11-27)" = 2 ]
check rank-by     [ "$(rc "$S" price rank nvidia-h100-sxm --hours 1 --by speed)" = 2 ]
check rank-maxlat [ "$(rc "$S" price rank nvidia-h100-sxm --hours 1 --max-latency-ms 10)" = 2 ]

# the shipped data (data/economics, built in): loads, and prices an H100-hour
if [ -n "$(ls "$SRC"/data/economics/*.json 2>/dev/null)" ]; then
  check shipped      [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --json)" = 0 ]
  check shipped-json "$JC" format synor-price/1 <"$tmp/out"
  check shipped-dir  [ "$(rc "$S" price nvidia-h100-sxm --region US-VA --json --econ-data "$SRC/data/economics")" = 0 ]
  check shipped-rank [ "$(rc "$S" price rank nvidia-h100-sxm --hours 1)" = 0 ]
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
