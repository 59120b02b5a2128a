"""The cumulative statistics views (issue 32 item 5): pg_stat_user_tables and
pg_stat_all_tables, pg_stat_user_indexes and pg_stat_all_indexes, pg_stat_database,
pg_stat_reset() and pg_stat_force_next_flush().

The same statements run on the server under test and on a real PostgreSQL 15, each on
fresh tables, and the counters they leave must be the same: scans by index and the rows
they fetched, each index's scans and entries, rows inserted (INSERT, COPY), updated and
deleted, live and dead row counts, VACUUM's and ANALYZE's counts. PostgreSQL is steered
to index scans where Meridian's rule takes the index (PostgreSQL picks by cost; a freshly
created table has no statistics). What PostgreSQL counts of its own machinery is left
out: seq_scan (its index builds scan the table), HOT updates and the timestamps' values.
"""

from __future__ import annotations

import time

import psycopg
import pytest

STATEMENTS = [
    "INSERT INTO sv_a SELECT i, i % 7, 'r' || i FROM generate_series(1, 40) i",
    "SELECT count(*) FROM sv_a",
    "SELECT w FROM sv_a WHERE id = 5",
    "SELECT w FROM sv_a WHERE id = 500",
    "SELECT count(*) FROM sv_a WHERE id BETWEEN 10 AND 19",
    "SELECT id FROM sv_a WHERE v = 3",
    "UPDATE sv_a SET w = w || '!' WHERE id BETWEEN 2 AND 4",
    "UPDATE sv_a SET v = v + 1 WHERE id = 6",
    "DELETE FROM sv_a WHERE id = 7",
    "UPDATE sv_a SET w = 'all'",
    "SELECT count(*) FROM sv_b",
    "DELETE FROM sv_b WHERE k > 2",
]

TABLE_COLUMNS = ("seq_tup_read, idx_scan, idx_tup_fetch, n_tup_ins, n_tup_upd, n_tup_del,"
                 " n_live_tup, n_dead_tup, n_mod_since_analyze, n_ins_since_vacuum,"
                 " vacuum_count, analyze_count, last_vacuum IS NULL, last_analyze IS NULL")


@pytest.fixture
def pair(postgres, target):
    conns = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    for c in conns:
        for t in ("sv_a", "sv_b"):
            c.execute(f"DROP TABLE IF EXISTS {t}")
        c.execute("CREATE TABLE sv_a (id int PRIMARY KEY, v int, w text)")
        c.execute("CREATE INDEX sv_a_v ON sv_a (v)")
        c.execute("CREATE TABLE sv_b (k int PRIMARY KEY, s text)")
    conns[0].execute("SET enable_bitmapscan = off")
    yield conns
    for c in conns:
        for t in ("sv_a", "sv_b"):
            c.execute(f"DROP TABLE IF EXISTS {t}")
        c.close()


def counters(conn, columns=TABLE_COLUMNS):
    conn.execute("SELECT pg_stat_force_next_flush()")
    tables = conn.execute(f"SELECT relname, {columns} FROM pg_stat_user_tables"
                          " WHERE relname LIKE 'sv\\_%' ORDER BY relname").fetchall()
    # an index's idx_tup_fetch: PostgreSQL's index-only scans fetch no row when the
    # visibility map allows, which differs between two PostgreSQL servers
    indexes = conn.execute("SELECT relname, indexrelname, idx_scan, idx_tup_read"
                           " FROM pg_stat_user_indexes WHERE relname LIKE 'sv\\_%'"
                           " ORDER BY indexrelname").fetchall()
    return tables, indexes


def run_all(pair, statements):
    for c in pair:
        for sql in statements:
            if c is pair[0]:
                # PostgreSQL's planner would scan tables this small in full; a statement
                # without a condition it scans in full anyway (not by the primary key's
                # index, as it would with seqscan off)
                c.execute("SET enable_seqscan = " + ("off" if "WHERE" in sql else "on"))
            c.execute(sql)


def comparable(counts, target):
    """In a cluster a scan whose aggregation the datanodes do counts as a scan, but the
    rows it read stay on the datanodes: the row counts of scans are left out there."""
    tables, indexes = counts
    if target.kind != "meridian-cluster":
        return counts
    return ([r[:1] + r[2:3] + r[4:] for r in tables], [r[:3] for r in indexes])


def test_table_and_index_counters_match_postgres(pair, target):
    for c in pair:
        with c.cursor().copy("COPY sv_b (k, s) FROM STDIN") as copy:
            for k in range(1, 6):
                copy.write_row((k, f"s{k}"))
    run_all(pair, STATEMENTS)
    want, got = (comparable(counters(c), target) for c in pair)
    assert got == want
    got = counters(pair[1])
    tables = dict((r[0], r) for r in got[0])
    # sv_a: 40 inserted; 3 + 1 + 40 - 1 updated; 1 deleted
    assert tables["sv_a"][4:7] == (40, 43, 1), got
    run_all(pair, ["VACUUM sv_a", "ANALYZE sv_b", "VACUUM ANALYZE sv_b"])
    want, got = (comparable(counters(c), target) for c in pair)
    assert got == want
    got = counters(pair[1])
    tables = dict((r[0], r) for r in got[0])
    assert tables["sv_a"][8] == 0 and tables["sv_a"][11] == 1, got  # no dead rows, vacuumed


def test_full_scans_and_the_all_views(pair, target):
    """seq_scan counts the statements that read a table whole; the all views show the
    user tables' rows of the user views."""
    run_all(pair, STATEMENTS[:2] + ["UPDATE sv_a SET w = 'x'", "SELECT * FROM sv_b"])
    got = pair[1]
    got.execute("SELECT pg_stat_force_next_flush()")
    scans = dict(got.execute("SELECT relname, seq_scan FROM pg_stat_user_tables"
                             " WHERE relname LIKE 'sv\\_%'").fetchall())
    if target.kind != "postgres":
        assert scans == {"sv_a": 2, "sv_b": 1}
    for view in ("tables", "indexes"):
        user = got.execute(f"SELECT * FROM pg_stat_user_{view} WHERE relname LIKE 'sv\\_%'"
                           " ORDER BY 1, 2").fetchall()
        every = got.execute(f"SELECT * FROM pg_stat_all_{view} WHERE relname LIKE 'sv\\_%'"
                            " ORDER BY 1, 2").fetchall()
        assert user == every and user


def test_database_counters(pair, target):
    """pg_stat_database: the tuple counts are the tables' sums; commits and rollbacks
    count every transaction the session ended; the shared row and the templates are
    there, with nothing counted in the templates."""
    columns = "xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted"
    # The database's counts include every session's: the previous test's sessions, closed
    # at its end, may still be flushing theirs (here within 500 ms, PostgreSQL's as their
    # backends exit).
    time.sleep(1.5)
    for c in pair:
        # the fixture's catalog changes count in PostgreSQL's tuples: in before
        c.execute("SELECT pg_stat_force_next_flush()")
    before = [c.execute(f"SELECT {columns} FROM pg_stat_database WHERE datname ="
                        " current_database()").fetchone() for c in pair]
    run_all(pair, STATEMENTS)
    for c in pair:
        c.execute("BEGIN")
        c.execute("SELECT 1")
        c.execute("ROLLBACK")
        c.execute("SELECT pg_stat_force_next_flush()")
    after = [c.execute(f"SELECT {columns} FROM pg_stat_database WHERE datname ="
                       " current_database()").fetchone() for c in pair]
    deltas = [[a - b for a, b in zip(x, y)] for x, y in zip(after, before)]
    # tuples: only these statements wrote (40 + 5 + 1 inserted, 3 + 1 + 40 updated, ...)
    assert deltas[1][2:] == deltas[0][2:], deltas
    # the first read, the statements and the flush committed; PostgreSQL's autovacuum
    # may add its own transactions, a cluster's coordinator its catalog's
    statements = len(STATEMENTS) + 2
    assert deltas[0][0] >= statements and deltas[0][1] >= 1, deltas
    if target.kind == "meridian":
        assert deltas[1][:2] == [statements, 1], deltas
    else:
        assert deltas[1][0] >= statements and deltas[1][1] == 1, deltas
    for c in pair:
        rows = c.execute("SELECT datid, datname, numbackends >= coalesce((datname = current_database())::int, 0)"
                         " FROM pg_stat_database ORDER BY datid").fetchall()
        assert rows[0][:2] == (0, None) and all(r[2] for r in rows), rows
    if target.kind != "postgres":  # PostgreSQL's templates have initdb's counts
        templates = pair[1].execute("SELECT sum(xact_commit + tup_returned + tup_inserted)"
                                    " FROM pg_stat_database WHERE datname LIKE 'template%'")
        assert templates.fetchone() == (0,)


def test_reset_needs_a_superuser_and_zeroes_the_counters(pair, postgres, target):
    run_all(pair, STATEMENTS[:3])
    for c in pair:
        c.execute("DROP ROLE IF EXISTS sv_plain")
        c.execute("CREATE ROLE sv_plain LOGIN")
    try:
        outcomes = []
        for server in (postgres, target):
            with server.connect(user="sv_plain", autocommit=True) as plain:
                try:
                    plain.execute("SELECT pg_stat_reset()")
                    outcomes.append("ok")
                except psycopg.Error as e:
                    outcomes.append((e.sqlstate, e.diag.message_primary))
        assert outcomes[1] == outcomes[0] == ("42501", "permission denied for function pg_stat_reset")
        for c in pair:
            # PostgreSQL's counts still pending in the session would arrive after the reset
            c.execute("SELECT pg_stat_force_next_flush()")
            c.execute("SELECT pg_stat_reset()")
        want, got = (counters(c, "seq_scan, idx_scan, n_tup_ins, n_live_tup") for c in pair)
        assert got == want
        assert all(r[1:] == (0, 0, 0, 0) for r in got[0]), got
        assert got[1] and all(r[2:] == (0, 0) for r in got[1]), got
        stamp = [c.execute("SELECT stats_reset IS NOT NULL FROM pg_stat_database WHERE"
                           " datname = current_database()").fetchone() for c in pair]
        assert stamp == [(True,), (True,)]
    finally:
        for c in pair:
            c.execute("DROP ROLE IF EXISTS sv_plain")


def test_another_sessions_counts_show_soon(pair, postgres, target):
    """Counts are flushed by the session that made them, also when it then stays idle:
    another session sees them (here its executor's timer flushes them every 500 ms,
    PostgreSQL's backend within its 10 s idle interval; the deadline only bounds a wait
    that would otherwise never end)."""
    for server, watcher in zip((postgres, target), pair):
        wait = 20
        with psycopg.connect(server.dsn, autocommit=True) as worker:
            worker.execute("INSERT INTO sv_b SELECT i, 'x' FROM generate_series(1, 25) i")
            deadline = time.monotonic() + wait
            seen = None
            while time.monotonic() < deadline:
                seen = watcher.execute("SELECT n_tup_ins FROM pg_stat_user_tables"
                                       " WHERE relname = 'sv_b'").fetchone()
                if seen == (25,):
                    break
                time.sleep(0.1)
            assert seen == (25,), (server, seen)
