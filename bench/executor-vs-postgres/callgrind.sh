#!/usr/bin/env bash
# Instructions per statement (and per row of the table) of two plain scans and of
# bench.py's statements, from callgrind (all threads: the session thread and a large
# scan's producer thread), for one or more builds over the same data: steady where
# wall-clock time on this shared 2-CPU machine varies by 10-20 %.
#
#   bench/executor-vs-postgres/callgrind.sh BINARY [BINARY...]
#   e.g. ROWS=200000 callgrind.sh /work/main/target/release/meridian target/release/meridian
#
# Loads ROWS rows (default 200,000) with the first BINARY run natively, then for each
# BINARY starts a copy of that data directory under callgrind (no cache simulation),
# runs each statement once to warm the cache, then once measured between a zeroing and a
# dump of callgrind's counters, with work_mem WORK_MEM (default 4MB). Prints one line per
# statement: its instructions under each build, in millions and per row, and new/old.
set -euo pipefail
[[ $# -ge 1 ]] || { awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 2; }
rows=${ROWS:-200000} work_mem=${WORK_MEM:-4MB}
here=$(dirname "$(realpath "$0")")
binaries=()
for b in "$@"; do binaries+=("$(realpath "$b")"); done
tmp=$(mktemp -d)
port=$((56300 + RANDOM % 100))
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

start() { # start DATA BINARY [wrapper...]
    local data=$1 binary=$2
    shift 2
    "$@" "$binary" start --data-dir "$data" --listen "127.0.0.1:$port" --unix-socket-dir "$tmp" \
        --cache-size 128MB >>"$tmp/server.log" 2>&1 &
    server=$!
    for _ in $(seq 600); do
        psql -h "$tmp" -p "$port" -U postgres -Atc 'select 1' postgres >/dev/null 2>&1 && return
        kill -0 "$server" 2>/dev/null || break
        sleep 1
    done
    echo "the server did not start; its log:" >&2; tail -n 20 "$tmp/server.log" >&2; exit 1
}
stop() { kill "$server"; wait "$server" || true; server=; }
sql() { psql -h "$tmp" -p "$port" -U postgres -v ON_ERROR_STOP=1 -Atq "$@" postgres; }

# Two plain scans (the scan's own cost per row), then bench.py's statements.
statements=("SELECT count(*) FROM big" "SELECT count(*) FROM big WHERE id > 10")
mapfile -t -O 2 statements < <(cd "$here" && python3 -c 'import ast,sys
src = open("bench.py").read()
tree = ast.parse(src)
for node in tree.body:
    if isinstance(node, ast.Assign) and node.targets[0].id == "STATEMENTS":
        for name, stmt in ast.literal_eval(node.value):
            print(stmt)')
echo "== loading $rows rows natively with ${binaries[0]}" >&2
start "$tmp/data" "${binaries[0]}"
(cd "$here" && python3 -c "
import ast
src = open('bench.py').read()
ns = {}
exec(compile(ast.Module([n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == 'load_statements'] , []), 'bench', 'exec'), ns)
for s in ns['load_statements']($rows): print(s + ';')
") | sql >/dev/null
stop

declare -A ir
for b in "${!binaries[@]}"; do
    rm -rf "$tmp/run" && cp -a "$tmp/data" "$tmp/run"
    echo "== under callgrind: ${binaries[$b]}" >&2
    start "$tmp/run" "${binaries[$b]}" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$b"
    for i in "${!statements[@]}"; do
        printf 'SET work_mem = %s;\n%s;\n' "'$work_mem'" "${statements[$i]}" | sql >/dev/null
        callgrind_control -z "$server" >/dev/null 2>&1
        printf 'SET work_mem = %s;\n%s;\n' "'$work_mem'" "${statements[$i]}" | sql >/dev/null
        callgrind_control -d "$server" >/dev/null 2>&1
        dump=$(ls -t "$tmp"/cg."$b".* | head -1)
        ir[$b,$i]=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
        [[ -z ${KEEP:-} ]] || { mkdir -p "$KEEP" && cp "$dump" "$KEEP/b$b.q$i.callgrind"; }
        rm -f "$dump"
    done
    stop
done
for i in "${!statements[@]}"; do
    line="${statements[$i]}"
    for b in "${!binaries[@]}"; do
        line+=$(printf ' | %.1f M, %.0f/row' "$(echo "${ir[$b,$i]} / 1000000" | bc -l)" "$(echo "${ir[$b,$i]} / $rows" | bc -l)")
    done
    [[ ${#binaries[@]} -lt 2 ]] || line+=$(printf ' | %.2f' "$(echo "${ir[1,$i]} / ${ir[0,$i]}" | bc -l)")
    echo "$line"
done
