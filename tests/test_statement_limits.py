"""One statement cannot take the server down, and can always be stopped.

The issue's join (`pgbench_accounts a JOIN pgbench_accounts b ON a.bid = b.bid` over
pgbench's tables at scale 2: 2 * 10^10 joined rows) on a server with
``--cache-size 128MB``:
- with ``statement_timeout = 2000`` it ends with 57014 within a second of the timeout;
- without one it runs while the server's peak RSS stays under the cache size plus the
  documented overhead (`test_memory.DOCUMENTED_OVERHEAD_BYTES` and ``--query-memory``)
  and another session keeps answering; a CancelRequest then ends it with 57014;
- when its client is killed, the server stops working on it within a second (its CPU
  use drops to idle).
Also lock_timeout (55P03) and idle_in_transaction_session_timeout (25P03), compared with
PostgreSQL 15 where the outcome is a result.
"""

import os
import subprocess
import threading
import time

import psycopg
import pytest

from conftest import pg_tool
from test_memory import DOCUMENTED_OVERHEAD_BYTES, MB

JOIN = "SELECT count(*) FROM pgbench_accounts a JOIN pgbench_accounts b ON a.bid = b.bid"
CACHE_MB = 128
QUERY_MEMORY_MB = 256


def pgbench_tables(server, scale=2):
    """pgbench's branches and accounts as `pgbench -i -s SCALE` fills them, written in
    transactions of 50,000 rows: `pgbench -i` writes all accounts in one transaction,
    whose memory (the issue's last part, not done yet) would hide what this measures."""
    rows = scale * 100_000
    with server.connect(autocommit=True) as conn:
        conn.execute("CREATE TABLE pgbench_branches (bid int PRIMARY KEY, bbalance int, filler char(88))")
        conn.execute(f"INSERT INTO pgbench_branches SELECT b, 0, NULL FROM generate_series(1, {scale}) b")
        conn.execute("CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84))")
        for lo in range(1, rows + 1, 50_000):
            conn.execute(f"INSERT INTO pgbench_accounts SELECT a, (a - 1) / 100000 + 1, 0, '' "
                         f"FROM generate_series({lo}, {lo + 49_999}) a")


def cpu_seconds(pid):
    """User + system CPU of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module")
def loaded(server_kind):
    from conftest import start_server, finish_server
    extra = {"cache_size": f"{CACHE_MB}MB"}
    server = start_server(server_kind, **extra)
    try:
        pgbench_tables(server)
        yield server
    finally:
        finish_server(server)


def test_statement_timeout_ends_the_join(loaded):
    with loaded.connect(autocommit=True) as conn:
        conn.execute("SET statement_timeout = 2000")
        start = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled) as info:
            conn.execute(JOIN)
        elapsed = time.monotonic() - start
        assert info.value.sqlstate == "57014"
        assert "statement timeout" in str(info.value)
        assert 1.9 <= elapsed < 3.0, elapsed
        # The session is usable afterwards, and SHOW reports the setting as PostgreSQL does.
        assert conn.execute("SHOW statement_timeout").fetchone() == ("2s",)
        assert conn.execute("SELECT count(*) FROM pgbench_branches").fetchone() == (2,)


def test_join_runs_in_bounded_memory_and_cancels(loaded):
    bound = CACHE_MB * MB + DOCUMENTED_OVERHEAD_BYTES
    outcome = {}
    with loaded.connect(autocommit=True) as runner, loaded.connect(autocommit=True) as other:
        def run():
            try:
                runner.execute(JOIN)
                outcome["result"] = "completed"
            except psycopg.Error as e:
                outcome["result"] = e

        t = threading.Thread(target=run)
        t.start()
        # Other sessions keep answering while it runs.
        answered = 0
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            q = time.monotonic()
            assert other.execute("SELECT abalance FROM pgbench_accounts WHERE aid = 1").fetchone() == (0,)
            assert time.monotonic() - q < 2.0
            answered += 1
            time.sleep(0.05)
        assert t.is_alive(), f"the join ended early: {outcome.get('result')!r}"
        assert answered > 20
        cancelled_at = time.monotonic()
        runner.cancel()
        t.join(10)
        assert not t.is_alive()
        assert time.monotonic() - cancelled_at < 1.5
        err = outcome["result"]
        assert isinstance(err, psycopg.errors.QueryCanceled), repr(err)
    peak = loaded.peak_rss_bytes()
    print(f"peak RSS {peak / MB:.0f} MB, bound {bound / MB:.0f} MB")
    assert peak < bound, f"peak RSS {peak / MB:.0f} MB over the cache plus the documented overhead ({bound / MB:.0f} MB)"


def test_killed_client_stops_the_join(loaded):
    psql = subprocess.Popen([pg_tool("psql"), "-X", "-h", loaded.host, "-p", str(loaded.port), "-U", "postgres",
                             "-c", JOIN, "postgres"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    assert psql.poll() is None, "the join ended early"
    # Working on the join: half a CPU-second within 10 s (the suite's other runs share
    # the machine's CPUs, so it may get less than half a CPU).
    busy = cpu_seconds(loaded.pid)
    deadline = time.monotonic() + 10
    while cpu_seconds(loaded.pid) - busy <= 0.5 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cpu_seconds(loaded.pid) - busy > 0.5, "the server is not working on the join"
    assert psql.poll() is None, "the join ended early"
    psql.kill()
    psql.wait()
    time.sleep(1)
    idle_start = cpu_seconds(loaded.pid)
    time.sleep(2)
    used = cpu_seconds(loaded.pid) - idle_start
    assert used < 0.3, f"the server used {used:.2f} s of CPU in the 2 s after its client was killed"


def test_lock_timeout(meridian):
    with meridian.connect(autocommit=True) as setup:
        setup.execute("DROP TABLE IF EXISTS lt")
        setup.execute("CREATE TABLE lt (id int PRIMARY KEY, v int)")
        setup.execute("INSERT INTO lt VALUES (1, 0)")
    with meridian.connect() as holder, meridian.connect() as waiter:
        holder.execute("UPDATE lt SET v = 1 WHERE id = 1")
        waiter.execute("SET lock_timeout = '300ms'")
        start = time.monotonic()
        with pytest.raises(psycopg.errors.LockNotAvailable) as info:
            waiter.execute("UPDATE lt SET v = 2 WHERE id = 1")
        assert info.value.sqlstate == "55P03"
        assert "lock timeout" in str(info.value)
        assert 0.25 <= time.monotonic() - start < 2.0
        waiter.rollback()
        holder.commit()


def test_idle_in_transaction_session_timeout(meridian):
    with meridian.connect() as conn:
        conn.execute("SET idle_in_transaction_session_timeout = '500ms'")
        conn.execute("SELECT 1")  # a transaction is now open, and the session idles in it
        time.sleep(1.5)
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT 1")
        # The FATAL error, or (if libpq reads the closed socket first) the broken connection.
        assert info.value.sqlstate == "25P03" or isinstance(info.value, psycopg.OperationalError), repr(info.value)
        assert conn.closed
    with meridian.connect(autocommit=True) as conn:
        conn.execute("SET idle_in_transaction_session_timeout = '500ms'")
        time.sleep(1)  # idle outside a transaction: no timeout
        assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.parametrize("setting, value", [
    *(("statement_timeout", v) for v in ["0", "100", "2s", "1min", "90s", "3600000", "1.5s"]),
    *(("work_mem", v) for v in ["64kB", "4MB", "1GB", "2048", "1024kB"]),
])
def test_settings_read_back_as_postgres(target, postgres, setting, value):
    shown = []
    for server in (target, postgres):
        with server.connect(autocommit=True) as conn:
            conn.execute(f"SET {setting} = '{value}'")
            shown.append(conn.execute(f"SHOW {setting}").fetchone())
    assert shown[0] == shown[1]


def test_lock_timeout_on_a_concurrent_insert_of_the_same_key(target, postgres):
    """An INSERT waits for another transaction's uncommitted INSERT of the same key (it
    may roll back); lock_timeout ends that wait as PostgreSQL does."""
    outcomes = []
    for server in (target, postgres):
        with server.connect(autocommit=True) as setup:
            setup.execute("DROP TABLE IF EXISTS lt_ins")
            setup.execute("CREATE TABLE lt_ins (id int PRIMARY KEY)")
        with server.connect() as first, server.connect() as second:
            first.execute("INSERT INTO lt_ins VALUES (1)")
            second.execute("SET lock_timeout = '300ms'")
            try:
                second.execute("INSERT INTO lt_ins VALUES (1)")
                outcomes.append("inserted")
            except psycopg.Error as e:
                outcomes.append(e.sqlstate)
            second.rollback()
            first.rollback()
    assert outcomes[0] == outcomes[1] == "55P03", outcomes
