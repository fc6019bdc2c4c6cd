#!/usr/bin/env bash
# synor route: a decision and its explanation over the example inventory and
# route table, JSON output, usage errors (exit 2) and bad files (exit 1).
# usage: route.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
INV=$SRC/examples/inventory.json
TAB=$SRC/examples/route-table.json
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
R=(route --inventory "$INV" --prices "$TAB" --op matmul:bf16 --flops 1e15)

check help       [ "$(rc "$S" route --help)" = 0 ]
check help-text  grep -q -- "--weights W" "$tmp/out"
check basic      [ "$(rc "$S" "${R[@]}")" = 0 ]
check basic-h100 grep -qE "^ +1 +fra1-h100-0 " "$tmp/out"
# from Frankfurt, at most 120 ms, at noon UTC, two devices of two owners
check explain    [ "$(rc "$S" "${R[@]}" --from eu-west --max-latency-ms 120 --at 12 --devices 2 --spread owner --explain)" = 0 ]
check ex-counts  grep -q "83 devices considered, 14 candidates; filtered out: capability 67, region 0, latency 0, status 1, availability 1, reputation 0, budget 0" "$tmp/out"
check ex-second  grep -qE "^ +2 +iad-v5p-0 +google-tpu-v5p" "$tmp/out"
check ex-comp    grep -q "cost       1.0000 x 0.3000 = 0.3000   task USD 0.000999 (table: nvidia-h100-sxm)" "$tmp/out"
check ex-lat     grep -q "estimated RTT 99.24 ms" "$tmp/out"
# a latency limit below the ocean crossing keeps Frankfurt only
check latency    [ "$(rc "$S" "${R[@]}" --from eu-west --max-latency-ms 50 --devices 20 --explain)" = 1 ]
check lat-count  grep -q "latency 4," "$tmp/out"
check lat-only   grep -q "Only 11 of the 20 devices wanted" "$tmp/out"
# weights change the choice: reputation alone picks the busy-free, reputation-97 devices;
# load alone picks the TPU (30% utilized) over the H100s (62%)
check w-load     [ "$(rc "$S" "${R[@]}" --weights cost=0,latency=0,capability=0,reputation=0,load=1)" = 0 ]
check w-load-id  grep -qE "^ +1 +(fra1-epyc-0|iad-v5p-0) " "$tmp/out"
check budget     [ "$(rc "$S" "${R[@]}" --budget 0.000001)" = 1 ]
check budget-msg grep -q "No device passed every filter" "$tmp/out"
check json       [ "$(rc "$S" "${R[@]}" --json --devices 3)" = 0 ]
check json-ok    "$JC" format synor-route/1 <"$tmp/out"
check json-id    grep -q '"id": "fra1-h100-0"' "$tmp/out"
cp "$tmp/out" "$tmp/index.json"
check scan       [ "$(rc "$S" "${R[@]}" --json --devices 3 --scan)" = 0 ]
# the same decision; only the work differs (devices scored)
check scan-same  diff -q <(grep -v '"scored"' "$tmp/index.json") <(grep -v '"scored"' "$tmp/out")
check scan-work  grep -q '"scored": 15' "$tmp/out"
check no-price   [ "$(rc "$S" route --inventory "$INV" --op matmul:bf16 --explain)" = 0 ]
check no-price-t grep -q "no price: scores 0" "$tmp/out"

# usage errors: exit 2, the bad part named
check no-inv     [ "$(rc "$S" route --op matmul:bf16)" = 2 ]
check no-op      [ "$(rc "$S" route --inventory "$INV")" = 2 ]
check bad-op     [ "$(rc "$S" "${R[@]}" --op matmul:fp7)" = 2 ]
check bad-w      [ "$(rc "$S" "${R[@]}" --weights cost=0.3,latency=0.2,capability=0.2,reputation=0.15,lode=0.15)" = 2 ]
check bad-w-msg  grep -q 'unknown component "lode"' "$tmp/err"
check bad-w-sum  [ "$(rc "$S" "${R[@]}" --weights cost=0.5,latency=0.5,capability=0.5,reputation=0,load=0)" = 2 ]
check bad-w-smsg grep -q "weights sum to 1.5, not 1" "$tmp/err"
check bad-w-neg  [ "$(rc "$S" "${R[@]}" --weights cost=-1,latency=0.2,capability=0.2,reputation=0.15,load=0.15)" = 2 ]
check bad-w-nmsg grep -q "cost=-1 is not a number" "$tmp/err"
check bad-flag   [ "$(rc "$S" "${R[@]}" --fastest)" = 2 ]
check bad-lat    [ "$(rc "$S" "${R[@]}" --max-latency-ms 10)" = 2 ]
check bad-latmsg grep -q "needs --from REGION" "$tmp/err"
check bad-lonly  [ "$(rc "$S" "${R[@]}" --lat 10)" = 2 ]
check bad-budget [ "$(rc "$S" "${R[@]}" --budget 1.0000001)" = 2 ]
check bad-devs   [ "$(rc "$S" "${R[@]}" --devices 0)" = 2 ]
check bad-spread [ "$(rc "$S" "${R[@]}" --devices 2 --spread rack)" = 2 ]
check bad-at     [ "$(rc "$S" "${R[@]}" --at 24)" = 2 ]
check bad-rep    [ "$(rc "$S" "${R[@]}" --min-reputation 101)" = 2 ]
check no-value   [ "$(rc "$S" "${R[@]}" --devices)" = 2 ]

# bad files: exit 1, file:line:column and field named
printf '{"format": "synor-inventory/1",\n "devices": [{"id": "a", "profile": "groq-lpu", "count": -2}]}\n' >"$tmp/bad.json"
check bad-inv    [ "$(rc "$S" route --inventory "$tmp/bad.json" --op matmul:bf16)" = 1 ]
check bad-invpos grep -q "bad.json:2:58: devices\[0\].count" "$tmp/err"
printf '{"format": "synor-route-table/1",\n "prices": [{"profile": "groq-lpu",\n   "usd_per_hour": 1.5}]}\n' >"$tmp/prices.json"
check bad-tab    [ "$(rc "$S" "${R[@]}" --prices "$tmp/prices.json")" = 1 ]
check bad-tabpos grep -q "prices.json:3:20: prices\[0\].usd_per_hour" "$tmp/err"
check bad-from   [ "$(rc "$S" "${R[@]}" --from mars)" = 1 ]
check bad-frmsg  grep -q '"mars" is not in the route table' "$tmp/err"

# prices from the market's live book first, then the pricing engine
# (synor price, the shipped economics data), then the route table
cat >"$tmp/inv-econ.json" <<'INV'
{"format": "synor-inventory/1", "devices": [
 {"id": "va-h100", "profile": "nvidia-h100-sxm", "owner": "a", "region": "US-VA"},
 {"id": "de-h100", "profile": "nvidia-h100-sxm", "owner": "b", "region": "DE"},
 {"id": "mars-h100", "profile": "nvidia-h100-sxm", "owner": "c", "region": "mars"}]}
INV
"$S" market --dir "$tmp/mk" place --owner b --resource gpu/nvidia-h100-sxm/DE --side ask \
  --price 0.50 --qty 4 >/dev/null
va=$("$S" price nvidia-h100-sxm --region US-VA --site colocation --json | "$JC" -g total)
E=("$S" route --inventory "$tmp/inv-econ.json" --op matmul:bf16 --flops 1e16 --runners-up 2)
check chain       [ "$(rc "${E[@]}" --market "$tmp/mk" --engine --explain)" = 0 ]
check chain-mkt   grep -q "de-h100 .* 0.500000 .*" "$tmp/out"
check chain-mkt-s grep -q "the market's best ask for its resource" "$tmp/out"
check chain-eng   grep -q "va-h100 .* $(awk -v v="$va" 'BEGIN {printf "%.6f", v / 1e6}') " "$tmp/out"
check chain-eng-s grep -q "the pricing engine" "$tmp/out"
check chain-none  grep -q "mars-h100 .*no price" "$tmp/out"
check chain-best  sh -c "head -2 '$tmp/out' | grep -q de-h100"
check chain-mdir  [ "$(rc "${E[@]}" --market "$tmp/nope")" = 1 ]

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
