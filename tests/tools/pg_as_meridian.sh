#!/usr/bin/env bash
# TEST-ONLY stand-in for the Meridian binary: accepts Meridian's command line
#   start --data-dir DIR --listen HOST:PORT [--cache-size SIZE] [--config FILE]
#         [--synchronous-commit on|off]
# and runs a real PostgreSQL 15 behind it (initdb on first start, trust auth, database and
# user "postgres", prints "... ready to accept connections", SIGTERM shuts it down).
# Use it to validate the test suite and its Meridian code path (fixtures, TestServer)
# before the real server works:
#   MERIDIAN_BIN=tests/tools/pg_as_meridian.sh .venv/bin/pytest tests/
set -euo pipefail
[ "${1:-}" = start ] || { echo "usage: $0 start --data-dir DIR --listen HOST:PORT [...]" >&2; exit 2; }
shift
DATA= LISTEN=127.0.0.1:5433 CACHE= SC=
while [ $# -gt 0 ]; do
  case "$1" in
    --data-dir) DATA=$2; shift 2 ;;
    --listen) LISTEN=$2; shift 2 ;;
    --cache-size) CACHE=$2; shift 2 ;;
    --synchronous-commit) SC=$2; shift 2 ;;
    --config) shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$DATA" ] || { echo "--data-dir is required" >&2; exit 2; }
HOST=${LISTEN%:*}
PORT=${LISTEN##*:}
BIN=${MERIDIAN_PG_BINDIR:-/usr/lib/postgresql/15/bin}
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)
PGDIR=$DATA/pg
run_as=()
if [ "$(id -u)" = 0 ]; then
  user=meridian-test
  id "$user" >/dev/null 2>&1 || user=postgres
  chown -R "$user" "$DATA"
  chmod o+x "$(dirname "$DATA")"
  run_as=(setpriv "--reuid=$user" "--regid=$(id -g "$user")" --clear-groups)
fi
if [ ! -f "$PGDIR/PG_VERSION" ]; then
  (cd "$DATA" && "${run_as[@]}" "$BIN/initdb" -D "$PGDIR" -U postgres -A trust --encoding=UTF8 \
     --locale=C.UTF-8 --no-sync >/dev/null)
fi
opts=(-c "listen_addresses=$HOST" -c "unix_socket_directories=$DATA" -c fsync=on)
[ -n "$CACHE" ] && opts+=(-c "shared_buffers=$CACHE")
[ -n "$SC" ] && opts+=(-c "synchronous_commit=$SC")
cd "$DATA"
"${run_as[@]}" "$BIN/postgres" -D "$PGDIR" -p "$PORT" "${opts[@]}" &
pg=$!
trap 'kill -INT $pg 2>/dev/null' TERM INT   # Meridian's SIGTERM = PostgreSQL's fast shutdown
while kill -0 $pg 2>/dev/null; do wait $pg || true; done
