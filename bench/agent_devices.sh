#!/usr/bin/env bash
# One agent, several devices at once (docs/AGENT.md "Which device runs a
# task"): a coordinator on loopback, a job of N sgemm shards (M x M x M),
# run by `synor agent --devices cpu` and then by `--devices all` (the CPU
# and the machine's GPUs, each device's claim loop at the same time). It
# prints the wall time of each, the tasks each device ran, and whether two
# devices' tasks overlapped. For a machine with a GPU (the lead's H200);
# without one both runs use the CPU alone.
# usage: bench/agent_devices.sh SYNOR_BIN [N=32] [M=2048]
S=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); N=${2:-32}; M=${3:-2048}
tmp=$(mktemp -d); trap 'kill %1 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$S" coordinator --db net.db --port 0 --operator-token-file op.tok --quiet >c.out 2>c.log &
for _ in $(seq 300); do grep -q listening c.out && [ -s op.tok ] && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' c.out | head -1)
export SYNOR_COORDINATOR=http://127.0.0.1:$port SYNOR_TOKEN_FILE=op.tok
"$S" token create --role consumer --owner me -o me.tok >/dev/null
"$S" token create --role provider --owner p -o p.tok >/dev/null
"$S" submit --make-sgemm-job "$N" --dir j --m "$M" --n "$M" --k "$M" --budget 100 >/dev/null
for devs in cpu all; do
  id=$(SYNOR_TOKEN_FILE=me.tok "$S" submit j/job.json)
  t0=$(date +%s.%N)
  "$S" agent --token-file p.tok --devices $devs --wait 1 --max-tasks "$N" 2>a-$devs.log
  t1=$(date +%s.%N)
  echo "--devices $devs: $N tasks of $M^3 in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
  sed -n 's/.*task t-[0-9]*: sgemm for \(.*\)$/\1/p' a-$devs.log | sort | uniq -c | sed 's/^/   /'
  awk '/ task t-[0-9]+: [a-z0-9-]+ for local-/ { o++; if (o > 1) b = 1 } / task t-[0-9]+: (ran in|failed)/ { o-- }
       END { print "   devices overlapped: " (b ? "yes" : "no") }' a-$devs.log
  SYNOR_TOKEN_FILE=me.tok "$S" status "$id" --wait -o r-$devs.bin >/dev/null 2>&1
  "$S" submit --verify-sgemm j r-$devs.bin | sed 's/^/   /'
done
