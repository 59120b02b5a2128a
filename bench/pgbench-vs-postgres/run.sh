#!/usr/bin/env bash
# pgbench: Meridian vs PostgreSQL 15 -- the one command.
#
#   bench/pgbench-vs-postgres/run.sh [bench.py options]     (--help for the list)
#
# Builds Meridian in release mode, finds a Python with matplotlib (installs it into
# target/pgbench-bench-venv with pip if none has it), raises the open-file limit
# (1,000 clients + 1,000 idle connections) and runs bench.py, which writes
# bench/results/pgbench-vs-postgres.{md,json,png}.
#
# Defaults (issue 4): scale 10, 10 s per run, 3 runs, clients 1,8,32,128,512,1000,
# workloads select-only,tpcb-like,simple-update, modes prepared,simple, cache 128MB, -j 2.
# That is 36 cells x 3 runs x 2 systems = 216 runs: about 50 minutes.
# Environment: BENCH_<OPTION> (e.g. BENCH_DURATION=5) as well as flags; SKIP_BUILD=1
# skips cargo; PYTHON=... picks the interpreter.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

for a in "$@"; do
    if [[ "$a" == "-h" || "$a" == "--help" ]]; then
        exec python3 "$here/bench.py" --help
    fi
done

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    echo "== cargo build --release -p meridian"
    cargo build --release -p meridian
fi

# Open files: pgbench with 1,000 clients, and the servers with as many sockets.
want=8192
cur="$(ulimit -n)"
if [[ "$cur" != unlimited && "$cur" -lt "$want" ]]; then
    ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true
fi
if [[ "$(ulimit -n)" != unlimited && "$(ulimit -n)" -lt 4096 ]]; then
    echo "warning: ulimit -n is $(ulimit -n) (< 4096); 1,000 clients may fail" >&2
fi

command -v pgbench >/dev/null || [[ -x /usr/lib/postgresql/15/bin/pgbench ]] || {
    echo "pgbench not found (install postgresql-15 / postgresql-client-15)" >&2; exit 1; }

has_mpl() { "$1" -c 'import matplotlib' >/dev/null 2>&1; }
py="${PYTHON:-}"
if [[ -z "$py" ]]; then
    for cand in "$repo/target/pgbench-bench-venv/bin/python" "$repo/.venv/bin/python" python3 /usr/bin/python3; do
        if command -v "$cand" >/dev/null 2>&1 && has_mpl "$cand"; then py="$cand"; break; fi
    done
fi
if [[ -z "$py" ]]; then
    venv="$repo/target/pgbench-bench-venv"  # under target/, which git ignores
    echo "== no Python with matplotlib: creating $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet matplotlib
    py="$venv/bin/python"
fi
echo "== $py $here/bench.py $*  (ulimit -n $(ulimit -n))"
exec "$py" -u "$here/bench.py" "$@"
