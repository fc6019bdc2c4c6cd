#!/usr/bin/env bash
# The compute network on PostgreSQL: starts a throwaway cluster
# (scripts/pg_test_server.sh), runs the store's tests (test_netstore, which
# runs every case on SQLite and then on the database SYNOR_TEST_PG_URL
# names) and the coordinator's HTTP test (coord.sh with its store there),
# the staged jobs' (stages.sh), the release store test
# (test_netstore_release), preemption with agents (net_preempt.sh) and the
# crash test (coord_crash.sh, 8 kills: KILLS=N changes it; a pool of 2
# connections), then stops and deletes the cluster.
# Skipped (77) without PostgreSQL's binaries or the coordinator.
# usage: netstore_pg.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
T=$(dirname "$S")/tests/test_netstore
[ -x "$T" ] || { echo "netstore_pg: $T not built; skipped"; exit 77; }
"$T" >/dev/null 2>&1; [ $? = 77 ] && { echo "netstore_pg: built without the network store; skipped"; exit 77; }
dir=$(mktemp -d /tmp/synor-pg.XXXXXX)
trap 'bash "$SRC/scripts/pg_test_server.sh" stop "$dir"' EXIT
url=$(bash "$SRC/scripts/pg_test_server.sh" start "$dir"); rc=$?
[ $rc = 77 ] && { echo "netstore_pg: PostgreSQL binaries absent; skipped"; exit 77; }
[ $rc = 0 ] || { echo "netstore_pg: the cluster did not start"; exit 1; }
base=${url%/postgres}
psql_ok=1
for db in synor_store synor_coord synor_stages synor_preempt synor_crash; do
  # createdb over the same binaries' client
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- /usr/lib/postgresql/15/bin/createdb -h 127.0.0.1 -p "${base##*:}" -U postgres "$db" || psql_ok=0
  else
    /usr/lib/postgresql/15/bin/createdb -h 127.0.0.1 -p "${base##*:}" -U postgres "$db" || psql_ok=0
  fi
done
[ $psql_ok = 1 ] || { echo "netstore_pg: createdb failed"; exit 1; }
fail=0
echo "netstore_pg: store tests on $base/synor_store"
SYNOR_TEST_PG_URL=$base/synor_store "$T" || fail=1
echo "netstore_pg: release tests on $base/synor_store"
SYNOR_TEST_PG_URL=$base/synor_store "$T"_release || fail=1
grep -q "SYNOR_COORD_DB" "$SRC/tests/cli/coord.sh" || { echo "netstore_pg: coord.sh takes no database"; exit 1; }
echo "netstore_pg: coordinator test on $base/synor_coord"
SYNOR_COORD_DB=$base/synor_coord bash "$SRC/tests/cli/coord.sh" "$S" "$SRC" "$JC" || fail=1
echo "netstore_pg: staged jobs on $base/synor_stages"
SYNOR_COORD_DB=$base/synor_stages bash "$SRC/tests/cli/stages.sh" "$S" "$SRC" "$JC" || fail=1
echo "netstore_pg: preemption on $base/synor_preempt"
SYNOR_COORD_DB=$base/synor_preempt bash "$SRC/tests/cli/net_preempt.sh" "$S" "$SRC" "$JC" || fail=1
echo "netstore_pg: crash test on $base/synor_crash"
# two pooled connections for three agents: requests wait for a free one
SYNOR_COORD_DB=$base/synor_crash SYNOR_COORD_ARGS="--db-pool 2" GAP_MS=400 KILLS=${KILLS:-8} bash "$SRC/tests/cli/coord_crash.sh" "$S" "$SRC" "$JC" || fail=1
# the claims' function never failed (a failed call falls back to a
# transaction per claim, which would hide it from the tests above)
if grep -q "PL/pgSQL function synor_claims" "$dir/server.log"; then
  echo "netstore_pg: FAIL: synor_claims raised an error:"
  grep -B2 -A2 "PL/pgSQL function synor_claims" "$dir/server.log" | head -20
  fail=1
else
  echo "netstore_pg: ok: synor_claims raised no error"
fi
exit $fail
