#!/usr/bin/env bash
# Where one pgbench transaction's CPU goes, against a server that is already running.
#
#   bench/pgbench-vs-postgres/cpu-per-txn.sh PORT SERVER_PID [pgbench options...]
#   e.g. cpu-per-txn.sh 5433 "$(pgrep -f 'meridian start')" -b tpcb-like -M prepared -c 32 -j 2 -T 10
#
# Prints pgbench's TPS, then CPU microseconds per transaction: for each thread name of
# the server process (for PostgreSQL, pass the postmaster's PID: its child processes,
# backends included, are summed as "children"), and for pgbench itself (user + system,
# from its rusage). With perf and tracepoint access it also counts pgbench's ppoll and
# sendto calls per transaction (docs/performance.md's git history, "Round 3"), how many of those ppoll
# calls slept (pgbench's voluntary context switches over the same window). With `ss -x`
# (which must see both processes' sockets) it shows where the clients were at one instant
# mid-run: how many server-side sockets held an unread request and how many pgbench-side
# sockets an unread answer ("Round 17"). CPU time varies far less than TPS on a
# shared machine: compare builds by it, from alternating runs.
# PGBENCH_HOST=DIR drives the server over its Unix-domain socket (default 127.0.0.1).
set -euo pipefail
# Usage: the comment block above.
[[ $# -ge 2 ]] || { awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 2; }
port=$1 pid=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# utime + stime in clock ticks, summed by thread name (Meridian), plus the children of
# a postmaster (PostgreSQL forks a backend per connection): the live ones' own time and,
# once they have exited and been reaped, the parent's cutime + cstime.
cpu_by_thread() {
    local t
    for t in /proc/"$pid"/task/*; do
        [[ -r $t/stat ]] && echo "$(tr ' ' '_' <"$t/comm") $(awk '{print $14 + $15}' "$t/stat" 2>/dev/null)"
    done
    echo "children $(awk '{print $16 + $17}' /proc/"$pid"/stat)"
    for t in $(pgrep -P "$pid" || true); do
        [[ -r /proc/$t/stat ]] && echo "children $(awk '{print $14 + $15}' /proc/"$t"/stat 2>/dev/null)"
    done
}
snapshot() { cpu_by_thread | awk 'NF == 2 {a[$1] += $2} END {for (k in a) print k, a[k]}' | sort; }

snapshot >"$tmp/before"
/usr/bin/time -f "rusage %U %S" -o "$tmp/rusage" \
    pgbench -h "${PGBENCH_HOST:-127.0.0.1}" -p "$port" -U postgres -n "$@" postgres >"$tmp/out" 2>&1 &
bench=$!
# Mid-run: where the clients wait, and pgbench's syscalls over a window (if perf may).
window=2
slept=
sleep 3
child=$(pgrep -P "$bench" pgbench || true)
if [[ -n $child ]]; then
    # Unix-domain sockets with bytes queued for reading, by owning process (the
    # server's: its own and, for PostgreSQL, its backends').
    if command -v ss >/dev/null; then
        servers="pid=($(echo "$pid" $(pgrep -P "$pid" || true) | tr ' ' '|')),"
        ss -xp 2>/dev/null | awk -v servers="$servers" -v client="pid=$child," '
            $3 > 0 && $0 ~ servers {s++} $3 > 0 && index($0, client) {c++}
            END {printf "%d %d\n", s, c}' >"$tmp/queued"
    fi
    if command -v perf >/dev/null; then
        voluntary_switches() { cat /proc/"$child"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {v += $2} END {print v + 0}'; }
        before=$(voluntary_switches)
        perf stat -x, -e syscalls:sys_enter_ppoll -e syscalls:sys_enter_sendto -p "$child" \
            -o "$tmp/perf" -- sleep "$window" >/dev/null 2>&1 || true
        slept=$(( $(voluntary_switches) - before ))
    fi
fi
wait "$bench" || { cat "$tmp/out"; exit 1; }
sleep 1 # let the server reap the backends of the connections pgbench closed
snapshot >"$tmp/after"

n=$(awk '/actually processed/ {print $NF}' "$tmp/out")
tps=$(awk '/^tps/ {print $3}' "$tmp/out")
[[ -n $n && $n -gt 0 ]] || { cat "$tmp/out"; exit 1; }
hz=$(getconf CLK_TCK)
echo "tps $tps ($n transactions)"
echo "CPU per transaction (us):"
join "$tmp/before" "$tmp/after" | awk -v n="$n" -v hz="$hz" \
    '{us = ($3 - $2) * 1e6 / hz / n; if (us >= 0.05) printf "  %-18s %8.1f\n", $1, us}'
awk -v n="$n" '/^rusage/ {printf "  %-18s %8.1f\n", "pgbench", ($2 + $3) * 1e6 / n}' "$tmp/rusage"
if [[ -s $tmp/perf ]] && grep -q sys_enter_ppoll "$tmp/perf"; then
    awk -F, -v tps="$tps" -v window="$window" -v slept="$slept" '
        /sys_enter_ppoll/ {p = $1} /sys_enter_sendto/ {s = $1}
        END {if (p > 0) printf "pgbench: %.2f ppoll calls per transaction, %.2f sends per ppoll, %.2f of the calls slept\n", p / (tps * window), s / p, slept / p}' "$tmp/perf"
fi
if [[ -s $tmp/queued ]]; then
    read -r server client <"$tmp/queued"
    echo "mid-run: $server server-side sockets held an unread request, $client pgbench-side sockets an unread answer"
fi
