#!/usr/bin/env bash
# THE test command: installs what is missing on a fresh Debian machine, builds Meridian,
# checks formatting (cargo fmt --check) and lints (cargo clippy -D warnings), runs the Rust
# tests (cargo test --workspace --release) and the end-to-end suite
# (pytest tests/) against target/release/meridian (or $MERIDIAN_BIN); the Rust tests, the
# cluster's pytest run and pytest tests/'s longest files go in the background beside the
# rest of pytest tests/, their output after.
#
# Environment:
#   MERIDIAN_BIN              server binary under test (default target/release/meridian)
#   MERIDIAN_TEST_TARGETS     meridian (default) | postgres | meridian,postgres
#                             "postgres" runs every pytest test against a real PostgreSQL 15
#                             instead, to validate the tests themselves
#   MERIDIAN_PGBENCH_SECONDS  duration of each pgbench run (default 10)
#   MERIDIAN_SKIP_CARGO=1     skip the cargo build and cargo test steps
#   PYTEST_ARGS               extra pytest arguments (e.g. "-k drivers -x")
# Exits non-zero if anything fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
START=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
die() { printf '\nERROR: %s\n' "$*" >&2; exit 1; }

SUDO=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); fi
fi

# ---------------------------------------------------------------------------------------
step "checking system packages"
PG_BIN=${MERIDIAN_PG_BINDIR:-/usr/lib/postgresql/15/bin}
missing=()
[ -x "$PG_BIN/postgres" ] && [ -x "$PG_BIN/initdb" ] || missing+=(postgresql-15)
[ -x "$PG_BIN/psql" ] && [ -x "$PG_BIN/pgbench" ] || missing+=(postgresql-client-15)
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv python3-pip)
command -v cc >/dev/null || missing+=(build-essential)
command -v pkg-config >/dev/null || missing+=(pkg-config)
{ [ -f /usr/include/openssl/ssl.h ] || [ -f /usr/include/x86_64-linux-gnu/openssl/opensslconf.h ]; } || missing+=(libssl-dev)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v sysbench >/dev/null || missing+=(sysbench)
# The web console's browser test (tests/test_console.py)
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
# Go (tests/go: pgx) and a JDK with Maven (tests/java: pgjdbc)
{ command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; } || missing+=(golang-go)
command -v javac >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" != 0 ] && [ ${#SUDO[@]} -eq 0 ]; then
    die "missing packages (${missing[*]}) and not root (no sudo): apt-get install ${missing[*]}"
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed (postgresql-15 is in Debian 12 'bookworm')"
fi
[ -x "$PG_BIN/postgres" ] || die "PostgreSQL 15 server not found in $PG_BIN"
echo "PostgreSQL: $("$PG_BIN/postgres" --version); $("$PG_BIN/pgbench" --version); $("$PG_BIN/psql" --version)"

# PostgreSQL refuses to run as root: the tests run the reference server as this user.
if [ "$(id -u)" = 0 ] && ! id meridian-test >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin meridian-test
fi

# ---------------------------------------------------------------------------------------
if [ "${MERIDIAN_SKIP_CARGO:-}" != 1 ]; then
  step "checking the Rust toolchain"
  if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found; trying Debian's rustup package"
    if "${SUDO[@]}" apt-get install -y -qq rustup >/dev/null 2>&1 && rustup default stable; then
      export PATH="$HOME/.cargo/bin:$PATH"
    fi
  fi
  command -v cargo >/dev/null 2>&1 || die "cargo (Rust) is not installed. Install a current
  stable toolchain with rustup (https://rustup.rs: curl https://sh.rustup.rs -sSf | sh),
  then re-run ./scripts/test.sh"
  if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy || die "rustfmt and clippy are needed: rustup component add rustfmt clippy"
  fi
  cargo --version
fi

# ---------------------------------------------------------------------------------------
step "Python test environment (.venv)"
REQ=tests/requirements.txt
STAMP=.venv/.requirements.sha256
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r "$REQ"
  echo "$want" > "$STAMP"
fi
.venv/bin/python -c 'import pytest, psycopg, asyncpg, hypothesis; print("pytest", pytest.__version__, "psycopg", psycopg.__version__, "asyncpg", asyncpg.__version__, "hypothesis", hypothesis.__version__)'

step "node-postgres (tests/node)"
(cd tests/node && npm ci --no-audit --no-fund --loglevel=error)

step "pgx (tests/go) and pgjdbc (tests/java)"
# Fetched once into Go's module cache and ~/.m2; the tests then build offline. tests/go's
# go.mod names Go 1.25: an older go (1.21 or later) fetches that toolchain itself.
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
# A failure here fails those tests (never a skip), not the rest of the suite.
(cd tests/go && go mod download && go build -o /dev/null .) \
  || echo "pgx: fetching or building tests/go FAILED (test_drivers_go_java will fail)"
(cd tests/java && mvn -B -q package) \
  || echo "pgjdbc: fetching or building tests/java FAILED (test_drivers_go_java will fail)"

# ---------------------------------------------------------------------------------------
status=0
if [ "${MERIDIAN_SKIP_CARGO:-}" != 1 ]; then
  step "cargo fmt --check"
  cargo fmt --all -- --check || { status=1; echo "cargo fmt --check FAILED (run cargo fmt --all)"; }

  step "cargo build --release -p meridian"
  cargo build --release -p meridian || die "building the server failed"
fi

MERIDIAN_BIN=${MERIDIAN_BIN:-target/release/meridian}
case "$MERIDIAN_BIN" in /*) ;; *) MERIDIAN_BIN="$ROOT/$MERIDIAN_BIN" ;; esac
export MERIDIAN_BIN
echo "server under test: $MERIDIAN_BIN (targets: ${MERIDIAN_TEST_TARGETS:-meridian})"

# The lints and the Rust tests, and three pytest runs, go side by side: the pytest runs
# mostly wait on servers and clients, so together they take little longer than the
# longest alone (.ci/run's time budget). Neither clippy nor the Rust tests' build touches
# target/release/meridian.
mkdir -p target
CARGO_TEST_LOG=target/cargo-test.log
if [ "${MERIDIAN_SKIP_CARGO:-}" != 1 ]; then
  step "cargo clippy -D warnings, then cargo test --workspace --release, in the background into $CARGO_TEST_LOG"
  (
    rc=0
    cargo clippy --workspace --all-targets --release -- -D warnings || { rc=1; echo "cargo clippy FAILED"; }
    cargo test --workspace --release || { rc=1; echo "cargo test FAILED"; }
    exit $rc
  ) > "$CARGO_TEST_LOG" 2>&1 &
  CARGO_TEST_PID=$!
fi

# A GTM, three datanodes and two coordinators as processes (tests use the first; the
# cluster's own tests use both), every table spread over the
# datanodes: pgbench's invariant across two-phase commits, isolation, increments, drivers,
# cancellation, bad input, EXPLAIN, row locks, time zones, sequences (values of both coordinators),
# secondary indexes (a global unique index among them), COPY in and out, ALTER TABLE,
# window functions, uuid keys, jsonb columns, CHECK constraints, views, CREATE TABLE AS
# and UPDATE … FROM, foreign keys, to_char, DateStyle and IntervalStyle, client encodings, roles, logins and TLS at both coordinators,
# SQLAlchemy's and Alembic's reflection and ORM work, pgx's binary COPY, pgjdbc's metadata, INTERSECT/EXCEPT and FULL/NATURAL joins
# (spilling under a small query memory), enum types (keys hashed by an enum column, a
# type created on one coordinator used on the other), pg_stat_activity, pg_cancel_backend,
# pg_terminate_backend and ALTER ROLE … SET at the first coordinator, owners and owner-only
# DDL, pg_stat_statements, every process's metrics endpoint, and pg_dump / restore, each
# through the coordinator-datanode protocol and sockets.
CLUSTER_FILES=(
  tests/test_pgbench.py tests/test_isolation.py tests/test_increments.py
  tests/test_drivers.py tests/test_cancel.py tests/test_bad_input.py
  tests/test_prepared_xacts.py tests/test_cluster_differential.py tests/test_explain.py
  tests/test_select_for_update.py tests/test_sequences.py tests/test_indexes.py
  tests/test_upsert.py tests/test_copy.py tests/test_prepare_sql.py
  tests/test_information_schema.py tests/test_ddl.py tests/test_datetime.py
  tests/test_window.py tests/test_strings.py tests/test_key_access.py
  tests/test_uuid.py tests/test_json.py tests/test_check_constraints.py
  tests/test_views.py tests/test_ctas_update_from.py tests/test_corpus.py
  tests/test_auth.py tests/test_tls.py tests/test_foreign_keys.py tests/test_to_char.py
  tests/test_datestyle.py tests/test_drivers_go_java.py tests/test_client_encoding.py
  tests/test_sqlalchemy.py tests/test_set_operations.py tests/test_enum.py tests/test_activity.py
  tests/test_privileges.py tests/test_pg_stat_statements.py tests/test_metrics.py tests/test_pg_dump.py
)
CLUSTER_LOG=target/pytest-cluster.log
step "pytest against a cluster of processes (target meridian-cluster), in the background into $CLUSTER_LOG"
# shellcheck disable=SC2086
MERIDIAN_TEST_TARGETS=meridian-cluster .venv/bin/python -m pytest -v -p no:cacheprovider \
  --timeout=900 --durations=15 "${CLUSTER_FILES[@]}" ${PYTEST_ARGS:-} > "$CLUSTER_LOG" 2>&1 &
CLUSTER_PID=$!

# pytest tests/ runs as two processes side by side: the files below (about half of its
# time, each mostly one long statement or workload) in the background, the rest in front.
# Each process starts its own servers on free ports.
LONG_FILES=(
  tests/test_large_transactions.py tests/test_large_dml.py tests/test_spill.py
  tests/test_sysbench.py tests/test_subqueries.py tests/test_operators.py
  tests/test_column_use.py tests/test_tpcc.py
)
LONG_LOG=target/pytest-long.log
step "pytest ${LONG_FILES[*]}, in the background into $LONG_LOG"
# shellcheck disable=SC2086
.venv/bin/python -m pytest -v -p no:cacheprovider --timeout=900 --durations=15 --session-timeout=3300 \
  "${LONG_FILES[@]}" ${PYTEST_ARGS:-} > "$LONG_LOG" 2>&1 &
LONG_PID=$!

step "pytest tests/ (without the files above)"
ignores=()
for f in "${LONG_FILES[@]}"; do ignores+=(--ignore="$f"); done
# shellcheck disable=SC2086
.venv/bin/python -m pytest tests/ "${ignores[@]}" -v -p no:cacheprovider --timeout=900 --durations=15 \
  --session-timeout=3300 ${PYTEST_ARGS:-} || { status=1; echo "pytest FAILED"; }

step "pytest ${LONG_FILES[*]}: waiting for it; its output"
long_status=0
wait "$LONG_PID" || long_status=$?
cat "$LONG_LOG"
[ "$long_status" = 0 ] || { status=1; echo "pytest (long files) FAILED"; }

if [ "${MERIDIAN_SKIP_CARGO:-}" != 1 ]; then
  step "cargo clippy and cargo test: waiting for them; their output"
  cargo_status=0
  wait "$CARGO_TEST_PID" || cargo_status=$?
  cat "$CARGO_TEST_LOG"
  [ "$cargo_status" = 0 ] || { status=1; echo "cargo clippy or cargo test FAILED"; }
fi

step "pytest against a cluster of processes: waiting for it; its output"
cluster_status=0
wait "$CLUSTER_PID" || cluster_status=$?
cat "$CLUSTER_LOG"
[ "$cluster_status" = 0 ] || { status=1; echo "pytest (meridian-cluster) FAILED"; }

step "done: $([ $status = 0 ] && echo 'all tests passed' || echo 'FAILURES (see above)')"
exit $status
