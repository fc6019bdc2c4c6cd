#!/usr/bin/env bash
# CLI basics: help, version, exit codes, profiles and devices output, and a
# bad user profile file reported with file:line:column.
# usage: basics.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { # name, condition command...
  local name=$1; shift
  if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi
}
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
# measured figures are cached here, not in the user's home
export XDG_CACHE_HOME=$tmp/cache

check help          [ "$(rc "$S" --help)" = 0 ]
check help-lists    grep -q "devices" "$tmp/out"
check version       [ "$(rc "$S" --version)" = 0 ]
check version-text  grep -qE '^synor [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out"
check no-command    [ "$(rc "$S")" = 2 ]
check bad-command   [ "$(rc "$S" frobnicate)" = 2 ]
check bad-cmd-msg   grep -q "unknown command 'frobnicate'" "$tmp/err"
check bad-option    [ "$(rc "$S" --frob)" = 2 ]
for c in devices profiles; do
  check "$c-help"   [ "$(rc "$S" $c --help)" = 0 ]
  check "$c-badopt" [ "$(rc "$S" $c --frob)" = 2 ]
done

check profiles      [ "$(rc "$S" profiles)" = 0 ]
check profiles-h100 grep -q "nvidia-h100-sxm" "$tmp/out"
check profiles-groq grep -q "groq-lpu" "$tmp/out"
check profile-one   [ "$(rc "$S" profiles groq-lpu)" = 0 ]
check profile-corr  grep -q "correction" "$tmp/out"
check profile-src   grep -q "source" "$tmp/out"
check profile-none  [ "$(rc "$S" profiles no-such-thing)" = 1 ]
check profile-nmsg  grep -q 'no profile with id "no-such-thing"' "$tmp/err"

# --json is the profile file format: it validates and loads back.
check profiles-json [ "$(rc "$S" profiles --json)" = 0 ]
check json-valid    "$JC" format synor-profiles/1 <"$tmp/out"
cp "$tmp/out" "$tmp/all.json"
check json-reloads  [ "$(rc "$S" --profiles "$tmp/all.json" profiles)" = 0 ]

# A user file overrides a built-in.
sed 's/"name": "NVIDIA H100 SXM[^"]*"/"name": "My Tuned H100"/' "$tmp/all.json" >"$tmp/mine.json"
check override      [ "$(rc "$S" --profiles "$tmp/mine.json" profiles nvidia-h100-sxm)" = 0 ]
check override-name grep -q "My Tuned H100" "$tmp/out"

# A broken user file: file:line:column, exit 1, nothing printed on stdout.
printf '{"format": "synor-profiles/1",\n "profiles": [ {"id": "x",, } ]}\n' >"$tmp/bad.json"
check bad-file      [ "$(rc "$S" --profiles "$tmp/bad.json" profiles)" = 1 ]
check bad-file-pos  grep -q "bad.json:2:27: expected a string key in object" "$tmp/err"
check bad-file-out  [ ! -s "$tmp/out" ]
check missing-file  [ "$(rc "$S" --profiles "$tmp/nope.json" profiles)" = 1 ]

check devices       [ "$(rc "$S" devices --no-measure)" = 0 ]
check devices-cpu   grep -q "local-cpu0" "$tmp/out"
check devices-json  [ "$(rc "$S" devices --json --no-measure --simulate groq-lpu)" = 0 ]
check dev-json-ok   "$JC" format synor-devices/1 <"$tmp/out"
check dev-json-sim  grep -q '"simulated": true' "$tmp/out"
check dev-sim-label [ "$(rc "$S" devices --no-measure --simulate google-tpu-v5p)" = 0 ]
check dev-sim-text  grep -q "\[simulated\] Google" "$tmp/out"
check dev-sim-bad   [ "$(rc "$S" devices --simulate nope)" = 1 ]

# the CPU's peak: measured (then cached under the machine's identity), and
# the table says which; derived only when asked not to measure
check dev-measure   [ "$(rc "$S" devices --no-opencl --no-cuda)" = 0 ]
check dev-measured  grep -qE "^local-cpu0 .* measured *$" "$tmp/out"
check dev-src       grep -q "peak_source: measured: FMA loops" "$tmp/out"
check dev-cache     "$JC" format synor-host-measure/1 <"$XDG_CACHE_HOME/synor/host-measure.json"
check dev-cached    [ "$(rc "$S" devices --no-opencl --no-cuda)" = 0 ]
check dev-cached-src grep -q "peak_source: measured: .* (cached)" "$tmp/out"
check dev-remeasure [ "$(rc "$S" devices --no-opencl --no-cuda --remeasure)" = 0 ]
check dev-remeasure-src sh -c '! grep -q "(cached)" "$0"' "$tmp/out"
check dev-derived   [ "$(rc "$S" devices --no-opencl --no-cuda --no-measure)" = 0 ]
check dev-derived-col grep -qE "^local-cpu0 .* (derived|profile) *$" "$tmp/out"
check dev-no-both   [ "$(rc "$S" devices --no-measure --remeasure)" = 2 ]
check dev-cache-arg [ "$(rc "$S" devices --measure-cache)" = 2 ]

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
