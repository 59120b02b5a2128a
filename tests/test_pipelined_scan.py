"""Large scans read storage on a producer thread of their own (decision 0024): against
PostgreSQL 15.

A scan past its first 32,768 rows hands the rest of its storage iteration to a
thread that sends rows back in batches through a bounded channel. Nothing above the scan
may notice: results over a 200,000-row table (full scans, key ranges, aggregates, joins,
LIMIT), the transaction's own uncommitted inserts, updates and deletes seen by its large
scans, and a REPEATABLE READ snapshot must equal PostgreSQL's. A scan dropped early
(LIMIT, cancel, statement_timeout, an error) must end its thread at once, and a cancel
or timeout must end a statement that runs scan after scan within a second.
"""

import os
import threading
import time

import psycopg
import pytest

N = 200_000

SETUP = [
    "DROP TABLE IF EXISTS ps",
    "CREATE TABLE ps (id int PRIMARY KEY, g int, t text)",
    f"INSERT INTO ps SELECT i, i % 1000, 'row ' || i FROM generate_series(1, {N}) i",
]

# Each reads the whole table or a range of it well past the point where a scan moves
# to its own thread.
STATEMENTS = [
    "SELECT count(*), sum(id), sum(g) FROM ps",
    "SELECT count(*), max(t), min(t) FROM ps WHERE id BETWEEN 1000 AND 150000",
    "SELECT count(*), sum(g) FROM ps WHERE id > 20000",
    "SELECT count(*) FROM ps WHERE id <= 199990 AND id >= 10",
    "SELECT g, count(*), sum(id) FROM ps GROUP BY g ORDER BY g",
    "SELECT id, t FROM ps WHERE g = 999 ORDER BY id",
    "SELECT count(*), sum(a.g + b.g) FROM ps a JOIN ps b ON a.id = b.id + 7",
    "SELECT count(*) FROM (SELECT id FROM ps LIMIT 40000) s",
    "SELECT count(*) FROM (SELECT id FROM ps WHERE id > 100 LIMIT 52345) s",
    "SELECT id FROM ps ORDER BY id DESC LIMIT 5",
    "SELECT count(*) FROM ps WHERE id IN (SELECT id * 3 FROM ps)",
    "SELECT sum(1 / (g - 500)) FROM ps",  # 22012 part-way through the scan
]


def rows(conn, stmt):
    try:
        out = [tuple(str(v) for v in r) for r in conn.execute(stmt).fetchall()]
        return ("ok", out if "ORDER BY" in stmt else sorted(out))
    except psycopg.Error as e:
        return ("error", e.sqlstate)


def scan_threads(server):
    """The server's producer threads; 0 for PostgreSQL (it has none)."""
    if server.kind != "meridian":
        return 0
    count = 0
    for task in os.listdir(f"/proc/{server.pid}/task"):
        try:
            with open(f"/proc/{server.pid}/task/{task}/comm") as f:
                count += f.read().strip() == "meridian-scan"
        except OSError:
            pass
    return count


def wait_no_scan_threads(server, within=1.0):
    deadline = time.monotonic() + within
    while scan_threads(server) > 0:
        assert time.monotonic() < deadline, f"{scan_threads(server)} scan threads still running"
        time.sleep(0.01)


@pytest.fixture
def loaded(meridian, postgres):
    for server in (meridian, postgres):
        with server.connect(autocommit=True) as conn:
            for s in SETUP:
                conn.execute(s)
    return meridian, postgres


def compare(m, p, statements):
    mismatches = []
    for stmt in statements:
        got, want = rows(m, stmt), rows(p, stmt)
        if got != want:
            mismatches.append((stmt, str(got)[:300], str(want)[:300]))
    assert not mismatches, "results differ from PostgreSQL 15:\n" + "\n".join(map(repr, mismatches))


def test_large_scans_match_postgres(loaded):
    meridian, postgres = loaded
    with meridian.connect(autocommit=True) as m, postgres.connect(autocommit=True) as p:
        compare(m, p, STATEMENTS)
    wait_no_scan_threads(meridian)


def test_own_uncommitted_writes_are_seen_by_large_scans(loaded):
    meridian, postgres = loaded
    writes = [
        "DELETE FROM ps WHERE id BETWEEN 50000 AND 60000",
        "UPDATE ps SET g = -g, t = 'updated' WHERE id % 1000 = 7",
        "INSERT INTO ps SELECT i, 5, 'new' FROM generate_series(200001, 210000) i",
        "INSERT INTO ps SELECT -i, 6, 'neg' FROM generate_series(1, 3000) i",
        "DELETE FROM ps WHERE id % 10000 = 0",
    ]
    with meridian.connect(autocommit=True) as m, postgres.connect(autocommit=True) as p, \
            meridian.connect(autocommit=True) as m_other, postgres.connect(autocommit=True) as p_other:
        for conn in (m, p):
            conn.execute("BEGIN")
            for w in writes:
                conn.execute(w)
        compare(m, p, STATEMENTS[:-1])
        # Another session sees none of them.
        compare(m_other, p_other, STATEMENTS[:3])
        for conn in (m, p):
            conn.execute("ROLLBACK")
        compare(m, p, STATEMENTS[:3])
    wait_no_scan_threads(meridian)


def test_repeatable_read_scan_keeps_its_snapshot(loaded):
    meridian, postgres = loaded
    with meridian.connect(autocommit=True) as m, postgres.connect(autocommit=True) as p, \
            meridian.connect(autocommit=True) as m_w, postgres.connect(autocommit=True) as p_w:
        for conn in (m, p):
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            conn.execute("SELECT count(*) FROM ps WHERE id = 1").fetchone()
        for conn in (m_w, p_w):
            conn.execute("DELETE FROM ps WHERE id > 150000")
            conn.execute("UPDATE ps SET g = 0 WHERE id < 1000")
        compare(m, p, STATEMENTS[:5])
        for conn in (m, p):
            conn.execute("ROLLBACK")
        compare(m, p, STATEMENTS[:5])


def test_limit_ends_the_producer(loaded):
    meridian, _ = loaded
    with meridian.connect(autocommit=True) as conn:
        for _ in range(30):
            assert conn.execute("SELECT count(*) FROM (SELECT id FROM ps LIMIT 45000) s").fetchone() == (45000,)
        # An error part-way through a scan drops it too.
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT sum(1 / (g - 500)) FROM ps")
    wait_no_scan_threads(meridian)


# One full scan of the table per outer row: seconds of scanning, each scan on a thread.
SCAN_AFTER_SCAN = ("SELECT count(*) FROM generate_series(1, 100000) s "
                   "WHERE (SELECT count(*) FROM ps WHERE ps.g <> s.s) > 0")


def test_cancel_ends_a_long_scan_within_a_second(loaded):
    meridian, _ = loaded
    outcome = {}
    with meridian.connect(autocommit=True) as runner:
        def run():
            try:
                runner.execute(SCAN_AFTER_SCAN)
                outcome["result"] = "completed"
            except psycopg.Error as e:
                outcome["result"] = e

        t = threading.Thread(target=run)
        t.start()
        time.sleep(1.5)
        assert t.is_alive(), f"the statement ended early: {outcome.get('result')!r}"
        cancelled_at = time.monotonic()
        runner.cancel()
        t.join(5)
        assert not t.is_alive()
        assert time.monotonic() - cancelled_at < 1.0
        assert isinstance(outcome["result"], psycopg.errors.QueryCanceled), repr(outcome["result"])
        wait_no_scan_threads(meridian)
        assert runner.execute("SELECT count(*) FROM ps").fetchone() == (N,)


def test_statement_timeout_ends_a_long_scan_within_a_second(loaded):
    meridian, _ = loaded
    with meridian.connect(autocommit=True) as conn:
        conn.execute("SET statement_timeout = 1000")
        start = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled) as info:
            conn.execute(SCAN_AFTER_SCAN)
        elapsed = time.monotonic() - start
        assert info.value.sqlstate == "57014"
        assert 0.95 <= elapsed < 2.0, elapsed
        wait_no_scan_threads(meridian)
        assert conn.execute("SELECT count(*) FROM ps").fetchone() == (N,)
