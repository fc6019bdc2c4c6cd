#!/usr/bin/env bash
# The coordinator's dashboard rendered by a real browser: synor coordinator
# on a free loopback port with a temporary SQLite store, a provider's two
# devices (one named with HTML's special characters) and two small jobs (one
# run to the end by hand, one left queued) set up with curl, then headless
# Chromium loads /dashboard?token=OPERATOR and dumps the DOM it built. The
# DOM must hold the devices table with exactly the two devices (the special
# characters back as text, not markup), the jobs table with exactly the two
# jobs in their states and costs, the summary line's counts, and the
# utilization SVG with its two polylines, one point per sample. A consumer's
# token gets no dashboard. With DASHBOARD_SCREENSHOT=
# FILE.png it also saves a screenshot there.
# Skipped (77) without chromium, curl or the coordinator.
# usage: dashboard.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d)
pid=; hb=
cleanup() {
  [ -n "$hb" ] && kill "$hb" 2>/dev/null
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
command -v curl >/dev/null || { echo "dashboard: curl not installed; skipped"; exit 77; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
[ -n "$CHROMIUM" ] || { echo "dashboard: chromium not installed (apt-get install chromium); skipped"; exit 77; }
command -v python3 >/dev/null || { echo "dashboard: python3 not installed; skipped"; exit 77; }

"$S" coordinator --db "$tmp/store.db" --port 0 --operator-token-file "$tmp/op.tok" --quiet \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
port=
for _ in $(seq 300); do
  port=$(sed -n 's|^synor coordinator: listening on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$tmp/out")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  grep -q "built without the compute network" "$tmp/err" && { echo "dashboard: built without the coordinator; skipped"; exit 77; }
  cat "$tmp/out" "$tmp/err"; exit 1
fi
U=http://127.0.0.1:$port
OP=$(cat "$tmp/op.tok")
# req TOKEN METHOD PATH [curl args...]: status on stdout, body in $tmp/body
req() {
  local tok=$1 m=$2 path=$3; shift 3
  curl -s --max-time 30 -X "$m" -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $tok" "$@" "$U$path"
}
get() { "$JC" -g "$1" <"$tmp/body"; }
mk() { req "$OP" POST /v1/tokens -d "{\"role\":\"$1\",\"owner\":\"$2\"}" >/dev/null; get token; }
ALICE=$(mk consumer alice); BOB=$(mk provider bob)

# ---- a provider's devices, two jobs (one done by hand, one queued)
check "cpu registered" test "$(req "$BOB" POST /v1/devices -d '{"name":"bob-cpu0","kind":"cpu","gflops":50.5,"availability":"always","price":"0.010000"}')" = 201
CPU=$(get id)
check "gpu registered" test "$(req "$BOB" POST /v1/devices -d '{"name":"gpu<0>&\"x","kind":"cuda","gflops":1000,"availability":"utc:08-18","price":"0.500000"}')" = 201
GPU=$(get id)
check "heartbeat" test "$(req "$BOB" POST /v1/heartbeat -d '{"devices":["'$CPU'","'$GPU'"],"busy":false,"accepting":true}')" = 200
printf 'dashboard-input' >"$tmp/in"
check "blob" test "$(req "$ALICE" PUT /v1/blobs --data-binary @"$tmp/in")" = 201
SHA=$(get sha256)
check "job 1" test "$(req "$ALICE" POST /v1/jobs -d '{"name":"first","kernel":"sum-f32","shards":[{"inputs":["'$SHA'"]},{"inputs":["'$SHA'"]}],"budget":"1.000000"}')" = 201
J1=$(get id)
for i in 1 2; do
  check "claim $i" test "$(req "$BOB" GET "/v1/tasks/next?device=$CPU&wait=5")" = 200
  T=$(get task); L=$(get lease)
  printf 'R%s' "$i" >"$tmp/r"; R=$(sha256sum "$tmp/r" | cut -c1-64)
  check "upload $i" test "$(req "$BOB" POST "/v1/tasks/$T/result?lease=$L" -H "X-Synor-SHA256: $R" --data-binary @"$tmp/r")" = 200
done
check "job 2" test "$(req "$ALICE" POST /v1/jobs -d '{"name":"second","kernel":"sum-f32","shards":[{"inputs":["'$SHA'"]}],"budget":"2.000000"}')" = 201
J2=$(get id)

# ---- the browser
# the provider keeps heartbeating, so both devices stay online however long
# the browser takes on a loaded machine
( while :; do
    curl -s --max-time 5 -o /dev/null -H "Authorization: Bearer $BOB" \
      -d '{"devices":["'$CPU'","'$GPU'"],"busy":false,"accepting":true}' "$U/v1/heartbeat"
    sleep 1
  done ) &
hb=$!
# render URL OUT: the DOM headless Chromium built, in OUT
render() {
  timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$tmp/profile" --virtual-time-budget=2000 \
    --dump-dom "$1" >"$2" 2>>"$tmp/chromium.err"
}
if ! render "$U/dashboard?token=$OP" "$tmp/dom.html" || ! grep -q '</html>' "$tmp/dom.html"; then
  echo "dashboard: chromium failed:"; tail -20 "$tmp/chromium.err"
  check "chromium rendered the page" false
fi

# dom FILE: the rendered DOM, parsed again, as lines "KEY<TAB>VALUE"
cat >"$tmp/dom.py" <<'EOF'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.table = None; s.rows = {}; s.row = None; s.cell = None
        s.svg = False; s.out = []; s.text = None
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == "table": s.table = a.get("id", ""); s.rows[s.table] = []
        elif tag == "tr" and s.table is not None: s.row = []
        elif tag in ("td", "th") and s.row is not None: s.cell = ""
        elif tag == "svg": s.svg = True; s.out.append(("svg", a.get("id", "")))
        elif tag == "polyline" and s.svg:
            s.out.append(("polyline", str(len(a.get("points", "").split()))))
        elif tag == "text" and s.svg: s.text = ""
        elif tag == "p" and a.get("id") == "summary": s.text = ""; s.summary = True
        if tag == "title": s.text = ""
    def handle_endtag(s, tag):
        if tag == "table": s.table = None
        elif tag == "tr" and s.row is not None:
            if s.table: s.rows[s.table].append(s.row)
            s.row = None
        elif tag in ("td", "th") and s.cell is not None: s.row.append(s.cell); s.cell = None
        elif tag == "svg": s.svg = False
        elif tag in ("text", "p", "title") and s.text is not None:
            s.out.append((tag if tag != "p" else "summary", s.text)); s.text = None
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
        if s.text is not None: s.text += d
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
for k, v in p.out: print(f"{k}\t{v}")
for t, rows in p.rows.items():
    if not rows: continue
    head = rows[0]
    print(f"{t}.rows\t{len(rows) - 1}")
    for r in rows[1:]:
        print(f"{t}.row\t" + "|".join(f"{h}={c}" for h, c in zip(head, r)))
EOF
python3 "$tmp/dom.py" "$tmp/dom.html" >"$tmp/dom.txt" 2>"$tmp/dom.err" || cat "$tmp/dom.err"
has() { grep -qxF "$1" "$tmp/dom.txt"; }
hasre() { grep -qE "$1" "$tmp/dom.txt"; }
check "title" has $'title\tsynor coordinator'
check "devices: two rows" has $'devices.rows\t2'
check "devices: the cpu" hasre "^devices.row	id=$CPU\|owner=bob\|name=bob-cpu0\|kind=cpu\|gflops=50.5\|.*\|availability=always\|price=0.010000$"
check "devices: the gpu, name escaped" hasre "^devices.row	id=$GPU\|owner=bob\|name=gpu<0>&\"x\|kind=cuda\|gflops=1000\|.*\|availability=utc:08-18\|price=0.500000$"
check "devices: online" test "$(grep -c '^devices.row.*|online=yes|' "$tmp/dom.txt")" = 2
check "jobs: two rows" has $'jobs.rows\t2'
check "jobs: the first, done" hasre "^jobs.row	id=$J1\|owner=alice\|name=first\|kernel=sum-f32\|state=done\|replicas=1\|cost=0.020000\|budget=1.000000$"
check "jobs: the second, queued" hasre "^jobs.row	id=$J2\|owner=alice\|name=second\|kernel=sum-f32\|state=queued\|replicas=1\|cost=0.000000\|budget=2.000000$"
req "$OP" GET /v1/ledger >/dev/null; PAID=$(get total)
check "summary counts" hasre $'^summary\t.*devices online: 2 of 2 .*tasks queued 1, leased 0, validated 2, invalid 0 .*jobs active 1, done 1 .*paid '"${PAID//./\\.}"' credits in 2 entries$'
check "utilization svg" has $'svg\ttimeline'
check "two polylines" test "$(grep -c '^polyline' "$tmp/dom.txt")" = 2
n=$(sed -n 's/^text\tmax [0-9]*, \([0-9]*\) samples$/\1/p' "$tmp/dom.txt")
check "samples drawn" test -n "$n" -a "${n:-0}" -ge 1
check "one point per sample" test "$(grep '^polyline' "$tmp/dom.txt" | cut -f2 | sort -u)" = "$n"
check "no markup injected" bash -c "! grep -q '<0>' '$tmp/dom.html'"

kill "$hb" 2>/dev/null; wait "$hb" 2>/dev/null; hb=

# ---- a consumer's token: no dashboard
check "consumer: refused" test "$(curl -s -o /dev/null -w '%{http_code}' "$U/dashboard?token=$ALICE")" = 403

if [ -n "${DASHBOARD_SCREENSHOT:-}" ]; then
  timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$tmp/profile" --window-size=1000,900 --screenshot="$DASHBOARD_SCREENSHOT" \
    "$U/dashboard?token=$OP" >/dev/null 2>>"$tmp/chromium.err"
  check "screenshot" bash -c "head -c 8 '$DASHBOARD_SCREENSHOT' | grep -q PNG"
fi

echo "dashboard: $pass passed, $fail failed"
[ "$fail" = 0 ]
