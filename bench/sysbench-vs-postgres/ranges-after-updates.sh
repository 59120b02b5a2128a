#!/usr/bin/env bash
# The cost of sysbench's range selects before and after many updates of the same rows
# (docs/performance.md, "sysbench"), against a server that is already running.
#
#   bench/sysbench-vs-postgres/ranges-after-updates.sh PORT SERVER_PID
#
# SERVER_PID: Meridian's process, or PostgreSQL's postmaster (its backends, live and
# exited, are summed). Drops and re-creates sysbench's 4 tables of 100,000 rows
# (`TABLE_SIZE`), then measures range-only transactions (`oltp_read_write
# --simple-ranges=1`, every other query count 0, 4 threads, 5 s): fresh, right after 15 s of
# `oltp_update_non_index` at 8 threads, after VACUUM of the tables, and 60 s later. Prints
# TPS and the server's CPU (user + system) per transaction. `LOCK=FILE` runs each timed
# run under `flock FILE` (shared machines).
set -euo pipefail
[[ $# -eq 2 ]] || { sed -n '2,/^set/p' "$0" | grep '^#' | cut -c3-; exit 2; }
port=$1 pid=$2
sb=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" --pgsql-user=postgres
    --pgsql-db=postgres --tables=4 --table-size="${TABLE_SIZE:-100000}")
ranges_only=(--point-selects=0 --simple-ranges=1 --sum-ranges=0 --order-ranges=0
             --distinct-ranges=0 --index-updates=0 --non-index-updates=0 --delete-inserts=0)
timed() { if [[ -n ${LOCK:-} ]]; then flock "$LOCK" "$@"; else "$@"; fi; }

# Clock ticks of the server: its threads, its reaped children and its live children.
ticks() {
    local t c
    t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat")
    for c in $(pgrep -P "$pid" || true); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}

ranges() {
    local before after out txns
    before=$(ticks)
    out=$(timed sysbench oltp_read_write "${sb[@]}" "${ranges_only[@]}" --threads=4 --time=5 run)
    sleep 0.5 # PostgreSQL's backends exit and are reaped
    after=$(ticks)
    txns=$(awk '/transactions:/ {print $2}' <<<"$out")
    printf '%-28s %8s TPS  %6d us server CPU per transaction\n' "$1" \
        "$(awk '/transactions:/ {print $3}' <<<"$out" | tr -d '(')" \
        $(( (after - before) * 1000000 / $(getconf CLK_TCK) / txns ))
}

sysbench oltp_read_write "${sb[@]}" cleanup >/dev/null
sysbench oltp_read_write "${sb[@]}" --threads=4 prepare >/dev/null
sleep 10
ranges "fresh"
updates=$(timed sysbench oltp_update_non_index "${sb[@]}" --threads=8 --time=15 run |
          awk '/transactions:/ {print $2}')
ranges "after $updates updates"
for t in 1 2 3 4; do
    psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "VACUUM sbtest$t"
done
ranges "after VACUUM"
sleep 60
ranges "60 s later"
