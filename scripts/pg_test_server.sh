#!/usr/bin/env bash
# pg_test_server.sh - a throwaway PostgreSQL cluster for tests, from Debian's
# binaries (/usr/lib/postgresql/15/bin, package postgresql-15).
#   pg_test_server.sh start DIR   initdb in DIR, start on a free loopback port,
#                                 print the connection URL of database "postgres"
#   pg_test_server.sh stop DIR    stop the cluster and delete DIR
# Exit 77 when the binaries are absent. As root, the cluster runs as the
# user postgres (runuser), which PostgreSQL requires.
set -u
BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ -x "$BIN/initdb" ] && [ -x "$BIN/pg_ctl" ] || { echo "pg_test_server: no PostgreSQL in $BIN" >&2; exit 77; }
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case $cmd in
start)
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "pg_test_server: running as root and there is no user postgres" >&2; exit 77
  fi
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_pg "$BIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  for _ in 1 2 3 4 5; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
    if as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=50" \
        start >/dev/null 2>&1; then
      echo "postgresql://postgres@127.0.0.1:$port/postgres"
      exit 0
    fi
  done
  cat "$dir/server.log" >&2; exit 1 ;;
stop)
  [ -d "$dir/data" ] && as_pg "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$dir" ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
