#!/usr/bin/env bash
# Instructions per scanned row of a few large queries in Meridian, from callgrind (all
# threads: the session thread and a large scan's producer thread): steady enough to
# compare two builds on a noisy machine.
#
#   bench/executor-vs-postgres/callgrind-per-row.sh BINARY [ROWS]     (default 200000)
#
# Loads ROWS rows (the table of bench.py) with BINARY run natively, restarts it under
# callgrind, runs each statement once to warm the cache, then zeroes the counters, runs
# it three times and prints the instructions per row of one run.
set -euo pipefail
[[ $# -ge 1 ]] || { awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 2; }
binary=$(realpath "$1") rows=${2:-200000}
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
sql() { psql -h "$tmp" -p "$port" -U postgres -X -v ON_ERROR_STOP=1 -Atq -c "$1" postgres; }
start() { # start [wrapper...]: the server in the background, $server its PID, once it answers
    "$@" "$binary" start --data-dir "$tmp/data" --listen "127.0.0.1:$port" --unix-socket-dir "$tmp" \
        --cache-size 128MB >>"$tmp/server.log" 2>&1 &
    server=$!
    for _ in $(seq 600); do
        sql 'select 1' >/dev/null 2>&1 && return
        kill -0 "$server" 2>/dev/null || break
        sleep 1
    done
    echo "the server did not start; its log:" >&2; tail -n 20 "$tmp/server.log" >&2; exit 1
}
stop() { kill "$server"; wait "$server" || true; server=; }

start
sql "CREATE TABLE big (id int PRIMARY KEY, k int, g int, t text)"
for ((lo = 1; lo <= rows; lo += 50000)); do
    hi=$((lo + 49999 < rows ? lo + 49999 : rows))
    sql "INSERT INTO big SELECT i, (i::bigint * 7919) % $((rows + 3)), i % 1000, 'x' || ((i * 31) % 100000)::text FROM generate_series($lo, $hi) i"
done
stop
start valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out"
statements=(
    "SELECT count(*) FROM big"
    "SELECT g, count(*), sum(k) FROM big GROUP BY g ORDER BY g LIMIT 3"
    "SELECT count(*) FROM big WHERE id > 10"
)
for s in "${statements[@]}"; do
    sql "$s" >/dev/null
    callgrind_control -z "$server" >/dev/null
    for _ in 1 2 3; do sql "$s" >/dev/null; done
    rm -f "$tmp"/cg.*
    callgrind_control -d "$server" >/dev/null
    total=$(cat "$tmp"/cg.* | awk '/^summary:/ {s += $2} END {print s}')
    echo "$(awk -v t="$total" -v r="$rows" 'BEGIN {printf "%.0f", t / 3 / r}') instructions/row: $s"
done
