#!/usr/bin/env bash
# docs/NETWORK.md's "Quick start" run as it is written there (the README
# copies it): the first sh block under that heading, line by line, in an
# empty directory with this synor first on the PATH, on a free port instead
# of 8420 (the only change), waiting for the coordinator after its line as
# a person typing would. The job must end with every shard right, each of
# the three agents must have registered, and the agents and the
# coordinator must stop cleanly (exit 0) on SIGTERM.
# Skipped (77) without the coordinator or curl.
# usage: quickstart.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d)
cleanup() {
  local p
  for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
"$S" coordinator --help >/dev/null 2>&1 || { echo "quickstart: no synor coordinator in this build; skipped"; exit 77; }
"$S" agent --help >/dev/null 2>&1 || { echo "quickstart: no synor agent in this build; skipped"; exit 77; }
command -v curl >/dev/null || { echo "quickstart: curl not installed; skipped"; exit 77; }

# the block
awk '/^## Quick start/ {q = 1; next} /^## / {q = 0} q && /^```sh/ {b = 1; next} b && /^```/ {exit} b' \
  "$SRC/docs/NETWORK.md" >"$tmp/block"
check "the block has four commands and the export" test "$(grep -c . "$tmp/block")" = 5
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
mkdir -p "$tmp/bin" "$tmp/run"
ln -s "$(cd "$(dirname "$S")" && pwd)/$(basename "$S")" "$tmp/bin/synor"
export PATH="$tmp/bin:$PATH"
sed -e "s|127\.0\.0\.1:8420|127.0.0.1:$port|g" -e "s|synor coordinator |synor coordinator --port $port |" \
  "$tmp/block" >"$tmp/run.sh"
check "the port was replaced" grep -q "coordinator --port $port .*" "$tmp/run.sh"

cd "$tmp/run" || exit 1
n=0
while IFS= read -r line; do
  n=$((n+1))
  eval "$line" >>"$tmp/out" 2>&1
  rc=$?
  case $line in
    *"synor coordinator "*)
      for _ in $(seq 300); do
        [ -s op.tok ] && curl -s -o /dev/null "http://127.0.0.1:$port/health" && break
        sleep 0.1
      done
      check "coordinator up" curl -s -o /dev/null "http://127.0.0.1:$port/health" ;;
    *"--wait -o c.bin"*)
      check "the job's line exits 0" test $rc = 0 ;;
  esac
done <"$tmp/run.sh"
check "five lines run" test $n = 5
check "every shard right" grep -q "^sgemm: all 30 shards correct (64 x 64 x 64)$" "$tmp/out"
check "job done" grep -q "done, 30/30 done, 0 failed" "$tmp/out"
check "three agents registered" test "$(curl -s -H "Authorization: Bearer $(cat op.tok)" \
  "http://127.0.0.1:$port/v1/devices" | grep -o '"owner":"p[123]"' | sort -u | wc -l)" = 3
# stop them as the text says (SIGTERM): the agents first
agents=(); coord=
for p in $(jobs -p); do
  if grep -q coordinator "/proc/$p/cmdline" 2>/dev/null; then coord=$p; else agents+=("$p"); fi
done
check "three agents and a coordinator running" test ${#agents[@]} = 3 -a -n "$coord"
for p in "${agents[@]}"; do kill -TERM "$p"; done
ok=1
for p in "${agents[@]}"; do wait "$p" || ok=0; done
check "agents stop with 0" test $ok = 1
check "agents' summaries" test "$(cat p1.log p2.log p3.log | grep -c '^synor agent: stopped: ')" = 3
kill -TERM "$coord"; wait "$coord"
check "coordinator stops with 0" test $? = 0
if [ "$fail" != 0 ]; then echo "--- output"; cat "$tmp/out"; fi
echo "quickstart: $pass passed, $fail failed"
[ "$fail" = 0 ]
