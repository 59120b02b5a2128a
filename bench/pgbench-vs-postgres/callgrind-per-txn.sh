#!/usr/bin/env bash
# Instructions and simulated L1d misses per pgbench transaction in Meridian, from
# callgrind: steady enough to compare two builds where a TPS difference of a few per cent
# drowns in this machine's noise (docs/performance.md's git history, "Round 18").
#
#   bench/pgbench-vs-postgres/callgrind-per-txn.sh BINARY CLIENTS [pgbench options...]
#   e.g. callgrind-per-txn.sh target/release/meridian 500          (about 2 minutes)
#
# Loads pgbench data at scale 1 with BINARY run natively (replaying a larger load under
# valgrind takes minutes), restarts it under callgrind with the cache simulation, and
# runs CLIENTS clients (default options -S -M prepared -j 2) in two measured phases of 20
# and 60 transactions per client; the difference of the two, over CLIENTS x 40
# transactions, leaves connection set-up and tear-down out. Valgrind sizes its caches
# from the host: D1 is the 48 KiB L1d here, the figure that follows per-connection state
# gone cold. Its last level is the host's L3, simulated as 512 MiB (valgrind 3.19 here
# keeps that whatever --LL says), which nothing here outgrows: not reported.
# D1=BYTES simulates a first-level data cache of that size instead (16-way, 64-byte
# lines; e.g. D1=2097152, this machine's L2, to count what 1,000 connections' state
# costs beyond the L2: "Round 19"; at 1,000 clients that count varies threefold from run
# to run, "Round 20"). KEEP=DIR keeps the two callgrind dumps there (for
# callgrind_annotate: the per-function difference of the two is the transactions').
set -euo pipefail
# Usage: the comment block above.
[[ $# -ge 2 ]] || { awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 2; }
binary=$(realpath "$1") clients=$2
shift 2
options=("$@")
[[ ${#options[@]} -gt 0 ]] || options=(-S -M prepared -j 2)
for tool in valgrind callgrind_control pgbench psql; do
    command -v "$tool" >/dev/null || { echo "$tool not found" >&2; exit 1; }
done
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cache=(--cache-sim=yes)
[[ -z ${D1:-} ]] || cache+=("--D1=$D1,16,64")

start() { # start [wrapper...]: the server in the background, $server its PID, once it answers
    "$@" "$binary" start --data-dir "$tmp/data" --listen "127.0.0.1:$port" --unix-socket-dir "$tmp" \
        --cache-size 128MB --synchronous-commit on >>"$tmp/server.log" 2>&1 &
    server=$!
    for _ in $(seq 600); do
        psql -h "$tmp" -p "$port" -U postgres -Atc 'select 1' postgres >/dev/null 2>&1 && return
        kill -0 "$server" 2>/dev/null || break
        sleep 1
    done
    echo "the server did not start; its log:" >&2; tail -n 20 "$tmp/server.log" >&2; exit 1
}
stop() { kill "$server"; wait "$server" || true; server=; }
bench() { pgbench -h "$tmp" -p "$port" -U postgres -n -c "$clients" "${options[@]}" "$@" postgres >"$tmp/pgbench.log" 2>&1 ||
    { cat "$tmp/pgbench.log" >&2; exit 1; }; }

echo "== loading (scale 1) natively"
start
pgbench -i -s 1 -q -h "$tmp" -p "$port" -U postgres postgres >"$tmp/init.log" 2>&1 || { cat "$tmp/init.log" >&2; exit 1; }
stop
echo "== under callgrind: warm-up, then phases of 20 and 60 transactions per client"
start valgrind --tool=callgrind "${cache[@]}" --callgrind-out-file="$tmp/callgrind.out"
bench -t 10
for t in 20 60; do
    callgrind_control -z "$server" >/dev/null 2>&1
    bench -t "$t"
    callgrind_control -d "$server" >/dev/null 2>&1
done
stop
[[ -z ${KEEP:-} ]] || { mkdir -p "$KEEP" && cp "$tmp"/callgrind.out.[12] "$KEEP"/; }

# The totals of each dump (callgrind.out.1 and .2), then their difference per transaction.
for dump in "$tmp/callgrind.out.1" "$tmp/callgrind.out.2"; do
    awk '/^events:/ {for (i = 2; i <= NF; i++) name[i] = $i}
         /^(summary|totals):/ {for (i = 2; i <= NF; i++) printf "%s=%s ", name[i], $i; print ""; exit}' "$dump"
done | awk -v clients="$clients" -v n=$((clients * 40)) '
    {for (i = 1; i <= NF; i++) {split($i, kv, "="); v[NR, kv[1]] = kv[2]}}
    function d(k) {return (v[2, k] - v[1, k]) / n}
    END {
        printf "per transaction (%d clients, %d transactions):\n", clients, n
        printf "  instructions       %8.0f\n", d("Ir")
        printf "  D1 misses          %8.1f  (reads %.1f, writes %.1f)\n", d("D1mr") + d("D1mw"), d("D1mr"), d("D1mw")
    }'
