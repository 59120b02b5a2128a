#!/usr/bin/env bash
# Meridian and PostgreSQL 15 side by side with the servers and pgbench on CPUs of their
# own, on a machine with more cores than this project's two (the lent 16-core machine):
# what the curve looks like when pgbench does not take the servers' CPUs. Run from the
# repository root on that machine after pack.sh; writes $OUT/split-cpus.log.
#
#   SC=0-7 CC=8-15 J=8 CL="32 128 512 1000" TL=470 bash .dev16/run.sh
#
# SC: the servers' CPUs; CC: pgbench's CPUs; J: pgbench threads; CL: client counts;
# TL: seconds after which no new cell starts (the device's time is short). Each round runs
# every count, select-only then tpcb-like (-M prepared, 10 s, scale 10), each cell on
# Meridian then PostgreSQL; both servers run with fsync and synchronous commit on and a
# 128 MB cache, as bench/pgbench-vs-postgres does. Both are stopped on the way out.
set -u
SC=${SC:-0-7} CC=${CC:-8-15} J=${J:-8} CL=${CL:-32 128 512 1000} TL=${TL:-470}
start=$(date +%s)
trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT
exec > >(tee "${OUT:-.}/split-cpus.log") 2>&1
pack=$PWD/.dev16 root=/tmp/split-root work=/tmp/split-work
mkdir -p $root $work/m && tar xJf $pack/root.tar.xz -C $root && tar xJf $pack/pgdata.tar.xz -C $work ||
    { echo "unpacking failed"; exit 1; }
# Every carried binary runs through the carried loader and libraries.
ld=($root/lib/ld-linux-x86-64.so.2 --library-path $root/lib)
run() { "${ld[@]}" "$@"; }
pgbin=$root/usr/lib/postgresql/15/bin
pin() { local cpus=$1; shift; run $root/bin/taskset -c "$cpus" "${ld[@]}" "$@"; }
echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r)"
ulimit -n 20000 2>/dev/null; echo "open files: $(ulimit -n)"
mkdir -p /usr/share/zoneinfo && cp -n $root/zoneinfo/UTC /usr/share/zoneinfo/
# PostgreSQL refuses to run as root.
id pgb >/dev/null 2>&1 || useradd -M pgb 2>/dev/null || echo "useradd failed: PostgreSQL runs as uid 65534"
pguid=$(id -u pgb 2>/dev/null || echo 65534)
chown -R $pguid:$pguid $work/pgdata && chmod 700 $work/pgdata && chmod 777 $work
ready() { # ready SOCKET_DIR PORT LOG: wait up to 60 s for the server, else show its log and stop
    for _ in $(seq 60); do run $pgbin/psql -h $1 -p $2 -U postgres -Atc 'select 1' postgres >/dev/null 2>&1 && return; sleep 1; done
    echo "the server on port $2 did not start:"; tail -n 20 $3; exit 1
}
echo "== servers on CPUs $SC, pgbench on CPUs $CC (-j $J)"
pin $SC $pack/meridian start --data-dir $work/m/data --listen 127.0.0.1:6001 --unix-socket-dir $work/m \
    --cache-size 128MB --synchronous-commit on >$work/meridian.log 2>&1 &
ready $work/m 6001 $work/meridian.log
run $root/bin/setpriv --reuid=$pguid --regid=$pguid --clear-groups env LC_ALL=C.UTF-8 \
    "${ld[@]}" $root/bin/taskset -c $SC "${ld[@]}" $pgbin/postgres -D $work/pgdata -p 6002 \
    -c listen_addresses= -c unix_socket_directories=$work -c fsync=on -c synchronous_commit=on \
    -c shared_buffers=128MB -c max_connections=1100 -c logging_collector=off >$work/postgres.log 2>&1 &
ready $work 6002 $work/postgres.log
run $pgbin/psql -h $work -p 6002 -U postgres -Atc 'select version()' postgres
for server in "$work/m 6001" "$work 6002"; do
    t=$(date +%s)
    run $pgbin/pgbench -i -s 10 -q -h ${server% *} -p ${server#* } -U postgres postgres >$work/init.log 2>&1 ||
        tail -5 $work/init.log
    echo "loaded port ${server#* } in $(($(date +%s) - t)) s"
done
echo "== round clients workload system: average latency, TPS"
for round in 1 2 3; do for clients in $CL; do for workload in select-only tpcb-like; do
    for server in "meridian $work/m 6001" "postgres $work 6002"; do
        [[ $(($(date +%s) - start)) -gt $TL ]] && { echo "time is up"; break 4; }
        set -- $server
        echo -n "r$round $clients $workload $1: "
        pin $CC $pgbin/pgbench -h $2 -p $3 -U postgres -n -b $workload -M prepared -c $clients -j $J -T 10 postgres 2>&1 |
            awk '/latency average/ {printf "%s ms, ", $4} /^tps/ {printf "%s", $3}'
        echo
    done
done; done; done
echo "== $(($(date +%s) - start)) s"
