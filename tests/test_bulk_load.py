"""Bulk loads: COPY into a table truncated in the same transaction, and ADD PRIMARY KEY.

Such rows go straight into storage, not into the transaction's write set (issue 29,
item 6), so `pgbench -i -s 100` (one 10-million-row COPY transaction, then the primary-key
build) runs within the cache size plus the documented overhead. The rest checks what
that path must keep: results and errors as PostgreSQL 15 gives them (run side by side),
readers of the truncated table waiting for the loader as PostgreSQL's TRUNCATE lock makes
them, rows of a rolled-back or crashed load gone, and committed ones surviving kill -9.
"""

import subprocess
import threading
import time

import psycopg
import pytest

from conftest import pg_tool
from test_memory import DOCUMENTED_OVERHEAD_BYTES

MB = 1024 * 1024
CACHE_SIZE_MB = 256


def pgbench_init(server, scale: int):
    res = subprocess.run(
        [pg_tool("pgbench"), "-i", "-s", str(scale), "-h", server.host, "-p", str(server.port),
         "-U", "postgres", "postgres"],
        capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stderr


@pytest.mark.slow
def test_pgbench_init_scale_100_within_cache_plus_overhead(meridian_factory):
    server = meridian_factory(cache_size=f"{CACHE_SIZE_MB}MB")
    started = time.monotonic()
    pgbench_init(server, 100)
    elapsed = time.monotonic() - started
    peak = server.peak_rss_bytes()
    limit = CACHE_SIZE_MB * MB + DOCUMENTED_OVERHEAD_BYTES
    print(f"pgbench -i -s 100: {elapsed:.1f} s; peak RSS {peak / MB:.0f} MiB; "
          f"cache {CACHE_SIZE_MB} MiB + documented overhead {DOCUMENTED_OVERHEAD_BYTES // MB} MiB "
          f"= {limit / MB:.0f} MiB")
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute(
            "SELECT count(*), sum(abalance), count(DISTINCT bid), min(aid), max(aid) "
            "FROM pgbench_accounts").fetchone() == (10_000_000, 0, 100, 1, 10_000_000)
        assert conn.execute("SELECT bid FROM pgbench_accounts WHERE aid = 5000001").fetchone() == (51,)
        assert conn.execute("SELECT count(*) FROM pgbench_tellers").fetchone() == (1000,)
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("INSERT INTO pgbench_accounts VALUES (10000000, 1, 0, '')")
    assert peak > 0, "could not read VmHWM from /proc"
    assert peak < limit, f"peak RSS {peak / MB:.0f} MiB over {limit / MB:.0f} MiB"


def outcome(conn, sql):
    """Rows or the SQLSTATE and message of one statement (then the transaction is
    rolled back, as a failed one must be)."""
    try:
        cur = conn.execute(sql)
        return ("ok", cur.fetchall() if cur.description else cur.rowcount)
    except psycopg.Error as e:
        conn.rollback()
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail)


def copy_rows(conn, table, rows):
    with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN") as copy:
        for r in rows:
            copy.write_row(r)


def run_script(server):
    """A sequence of loads and errors; returns what each step gave."""
    seen = []
    with psycopg.connect(server.dsn) as conn:
        conn.execute("DROP TABLE IF EXISTS keyed")
        conn.execute("DROP TABLE IF EXISTS heap")
        conn.execute("CREATE TABLE keyed (id int PRIMARY KEY, v text)")
        conn.execute("CREATE TABLE heap (a int, b text)")
        conn.commit()
        # A load, then updates and deletes of loaded rows in the same transaction.
        conn.execute("TRUNCATE keyed")
        copy_rows(conn, "keyed", [(i, f"v{i}") for i in range(20_000, 0, -1)])
        copy_rows(conn, "keyed", [(i, f"w{i}") for i in range(20_001, 30_000)])
        conn.execute("UPDATE keyed SET v = v || '!' WHERE id % 1000 = 0")
        conn.execute("DELETE FROM keyed WHERE id % 7 = 0")
        seen.append(outcome(conn, "SELECT count(*), min(v), max(v), sum(id) FROM keyed"))
        conn.commit()
        seen.append(outcome(conn, "SELECT count(*), min(v), max(v), sum(id) FROM keyed"))
        # A duplicate key inside one load, and across two loads of one transaction.
        conn.execute("TRUNCATE keyed")
        try:
            copy_rows(conn, "keyed", [(1, "a"), (2, "b"), (1, "c")])
            seen.append(("ok",))
        except psycopg.Error as e:
            seen.append(("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail))
        conn.rollback()
        conn.execute("TRUNCATE keyed")
        copy_rows(conn, "keyed", [(5, "a"), (6, "b")])
        try:
            copy_rows(conn, "keyed", [(7, "c"), (6, "d")])
            seen.append(("ok",))
        except psycopg.Error as e:
            seen.append(("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail))
        conn.rollback()
        # A savepoint open: ROLLBACK TO it takes the COPY's rows back.
        conn.execute("TRUNCATE heap")
        conn.execute("SAVEPOINT s")
        copy_rows(conn, "heap", [(i, "gone") for i in range(1000)])
        conn.execute("ROLLBACK TO SAVEPOINT s")
        copy_rows(conn, "heap", [(7, "kept")])
        conn.commit()
        seen.append(outcome(conn, "SELECT a, b FROM heap"))
        conn.commit()
        # Rows under row ids; an INSERT before the COPY in the same transaction.
        conn.execute("TRUNCATE heap")
        conn.execute("INSERT INTO heap VALUES (0, 'first')")
        copy_rows(conn, "heap", [(i, str(i)) for i in range(1, 5001)])
        copy_rows(conn, "heap", [(i, None) for i in range(5001, 6001)])
        conn.commit()
        seen.append(outcome(conn, "SELECT count(*), count(b), sum(a) FROM heap"))
        conn.commit()
        # ADD PRIMARY KEY: rows in key order, out of order, with a duplicate, with a NULL.
        for name, rows in [("ordered", range(1, 3001)), ("shuffled", [(i * 7919) % 3001 for i in range(1, 3001)]),
                           ("dup", [1, 2, 3, 2]), ("nulls", [1, None])]:
            conn.execute(f"DROP TABLE IF EXISTS pk_{name}")
            conn.execute(f"CREATE TABLE pk_{name} (k int, v int)")
            copy_rows(conn, f"pk_{name}", [(k, i) for i, k in enumerate(rows)])
            conn.commit()
            seen.append(outcome(conn, f"ALTER TABLE pk_{name} ADD PRIMARY KEY (k)"))
            conn.commit()
            seen.append(outcome(conn, f"SELECT count(*), sum(k), sum(v) FROM pk_{name}"))
            seen.append(outcome(conn, f"SELECT v FROM pk_{name} WHERE k = 2"))
            seen.append(outcome(conn, f"INSERT INTO pk_{name} VALUES (3, 0)"))
            conn.commit()
    return seen


def test_loads_and_errors_as_postgres(meridian, postgres):
    assert run_script(meridian) == run_script(postgres)


def test_readers_of_truncated_table_wait_for_the_loader(meridian, postgres):
    for server in (meridian, postgres):
        with psycopg.connect(server.dsn) as setup:
            setup.execute("DROP TABLE IF EXISTS waited")
            setup.execute("CREATE TABLE waited (a int)")
            setup.execute("INSERT INTO waited VALUES (1)")
            setup.commit()
        loader = psycopg.connect(server.dsn)
        loader.execute("TRUNCATE waited")
        copy_rows(loader, "waited", [(i,) for i in range(100)])
        result = {}

        def read():
            with psycopg.connect(server.dsn, autocommit=True) as reader:
                result["count"] = reader.execute("SELECT count(*) FROM waited").fetchone()[0]

        t = threading.Thread(target=read)
        t.start()
        t.join(1.0)
        assert t.is_alive(), f"{server.kind}: the reader did not wait for the loading transaction"
        loader.commit()
        t.join(10)
        assert result.get("count") == 100, server.kind
        loader.close()


def test_rolled_back_and_crashed_loads_leave_nothing(meridian):
    with psycopg.connect(meridian.dsn) as conn:
        conn.execute("CREATE TABLE loaded (id int PRIMARY KEY, v text)")
        conn.execute("CREATE TABLE kept (a int)")
        conn.commit()
        conn.execute("TRUNCATE loaded")
        copy_rows(conn, "loaded", [(i, "x") for i in range(50_000)])
        assert conn.execute("SELECT count(*) FROM loaded").fetchone() == (50_000,)
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM loaded").fetchone() == (0,)
        conn.commit()
        # Committed: survives kill -9.
        conn.execute("TRUNCATE kept")
        copy_rows(conn, "kept", [(i,) for i in range(30_000)])
        conn.commit()
    # Not committed when the server dies: gone after the restart.
    conn = psycopg.connect(meridian.dsn)
    conn.execute("TRUNCATE loaded")
    copy_rows(conn, "loaded", [(i, "z") for i in range(50_000)])
    conn.execute("INSERT INTO kept VALUES (-1)")
    meridian.kill9()
    conn.close()
    meridian.restart()
    with psycopg.connect(meridian.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM loaded").fetchone() == (0,)
        assert conn.execute("SELECT count(*), sum(a) FROM kept").fetchone() == (30_000, sum(range(30_000)))
        conn.execute("INSERT INTO loaded VALUES (1, 'after')")
        assert conn.execute("SELECT v FROM loaded").fetchall() == [("after",)]
