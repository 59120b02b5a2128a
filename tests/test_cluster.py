"""Tables spread over several datanode processes (issue 30): `meridian gtm`, three
`meridian datanode` and `meridian coordinator` (the `meridian_cluster` fixture).

1. pgbench -i and tpcb-like through the coordinator: every transaction touches rows on
   several datanodes (accounts, tellers and branches are hashed on different columns),
   so it commits in two phases; 0 failed transactions, the TPC-B invariant holds and the
   history has one row per processed transaction.
2. Consistency across datanodes: while tpcb-like runs through both coordinators, 200
   REPEATABLE READ transactions one after another, and 200 single READ COMMITTED
   statements, on the second coordinator read the four sums: equal in every one (no
   reader sees part of a cross-datanode commit).
3. Rows really are spread: with one datanode stopped, a point read of a row on another
   datanode succeeds, one of a row on the stopped datanode fails with a connection-class
   SQLSTATE (never hangs), and both succeed once it is back.

These exercise Meridian-only commands, so they always run against the Meridian binary.
"""

import threading
import time

import psycopg
import pytest

from test_gtm_service import assert_invariant
from test_pgbench import parse_run, pgbench

SECONDS = int(__import__("os").environ.get("MERIDIAN_PGBENCH_SECONDS", "10"))


@pytest.fixture
def cluster(meridian_cluster):
    return meridian_cluster


def run_tpcb(server, clients, seconds, *extra):
    rc, out, log = pgbench(server, "-n", "-c", str(clients), "-j", "2", "-T", str(seconds),
                           "-M", "prepared", *extra, timeout=seconds + 120)
    assert rc == 0, log
    processed, failed = parse_run(out, log)
    assert failed == 0, log
    assert processed > 0, log
    return processed


def test_tpcb_across_datanodes(cluster):
    rc, out, log = pgbench(cluster, "-i", "-s", "2", "-q", timeout=600)
    assert rc == 0, log
    processed = run_tpcb(cluster, 8, SECONDS)
    assert_invariant(cluster, expect_history=processed)


SUMS = ("SELECT (SELECT sum(abalance) FROM pgbench_accounts),"
        " (SELECT sum(bbalance) FROM pgbench_branches),"
        " (SELECT sum(tbalance) FROM pgbench_tellers),"
        " (SELECT coalesce(sum(delta), 0) FROM pgbench_history)")


CHECKS = 200
# pgbench's tpcb-like over 5,000 accounts instead of 100,000, so that a check's four sums
# take milliseconds rather than most of a second under load.
ACCOUNTS = 5000
SMALL_TPCB = f"""\\set aid random(1, {ACCOUNTS})
\\set bid random(1, 1)
\\set tid random(1, 10)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"""


def test_readers_never_see_part_of_a_cross_datanode_commit(cluster, tmp_path):
    """tpcb-like through both coordinators for as long as a checker on the second reads
    the four sums in CHECKS REPEATABLE READ transactions and CHECKS single READ COMMITTED
    statements, alternately."""
    rc, out, log = pgbench(cluster, "-i", "-I", "dt", timeout=600)
    assert rc == 0, log
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO pgbench_branches (bid, bbalance) VALUES (1, 0)")
        conn.execute("INSERT INTO pgbench_tellers (tid, bid, tbalance) "
                     "SELECT g, 1, 0 FROM generate_series(1, 10) g")
        conn.execute("INSERT INTO pgbench_accounts (aid, bid, abalance, filler) "
                     f"SELECT g, 1, 0, '' FROM generate_series(1, {ACCOUNTS}) g")
    script = tmp_path / "small_tpcb.sql"
    script.write_text(SMALL_TPCB)
    checked = threading.Event()
    processed = []
    loader_errors = []

    def load(server):
        try:
            while not checked.is_set():
                processed.append(run_tpcb(server, 4, 5, "-f", str(script)))
        except BaseException as e:  # re-raised below: a failed run must fail the test
            loader_errors.append(e)
            checked.set()

    loaders = [threading.Thread(target=load, args=(s,)) for s in (cluster, cluster.second)]
    for loader in loaders:
        loader.start()
    checks = {"repeatable read": 0, "read committed": 0}
    try:
        with psycopg.connect(cluster.second.dsn, autocommit=True) as conn:
            while min(checks.values()) < CHECKS and not checked.is_set():
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    a, b, t, h = conn.execute(SUMS).fetchone()
                assert a == b == t == h, ("repeatable read", a, b, t, h)
                checks["repeatable read"] += 1
                a, b, t, h = conn.execute(SUMS).fetchone()
                assert a == b == t == h, ("read committed", a, b, t, h)
                checks["read committed"] += 1
    finally:
        checked.set()
        for loader in loaders:
            loader.join()
    if loader_errors:
        raise loader_errors[0]
    assert len(processed) >= 2 and all(p > 0 for p in processed), processed
    assert_invariant(cluster, expect_history=sum(processed))


def account_read(conn, aid):
    return conn.execute("SELECT abalance FROM pgbench_accounts WHERE aid = %s", (aid,)).fetchone()


def explained_datanode(conn, aid):
    """The datanode EXPLAIN names for the point read of account `aid`."""
    plan = [r[0] for r in conn.execute(
        f"EXPLAIN SELECT abalance FROM pgbench_accounts WHERE aid = {int(aid)}")]
    named = [line.split("Datanode: ", 1)[1] for line in plan if "Datanode: " in line]
    assert len(named) == 1, plan
    return named[0]


def test_a_stopped_datanode_fails_only_the_statements_that_need_it(cluster):
    """Also checks that EXPLAIN names the datanode a point read goes to: exactly the
    reads it places on the stopped datanode fail."""
    rc, out, log = pgbench(cluster, "-i", "-s", "1", "-q", timeout=600)
    assert rc == 0, log
    stopped = cluster.datanodes[1]
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        names = dict(conn.execute("SELECT address, node_name FROM meridian_nodes"
                                  " WHERE role = 'datanode'").fetchall())
        placed = {aid: explained_datanode(conn, aid) for aid in range(1, 61)}
    assert set(placed.values()) == set(names.values()), (placed, names)
    stopped.kill9()
    ok, failed = [], []
    for aid in range(1, 61):
        start = time.monotonic()
        try:
            with psycopg.connect(cluster.dsn, autocommit=True) as conn:
                account_read(conn, aid)
                ok.append(aid)
        except psycopg.Error as e:
            assert e.sqlstate and e.sqlstate.startswith(("08", "57")), (aid, e.sqlstate, e)
            failed.append(aid)
        assert time.monotonic() - start < 30, f"a read of aid {aid} hung"
    # About a third of the rows live on each datanode.
    assert 5 <= len(failed) <= 40 and 20 <= len(ok), (ok, failed)
    assert failed == [aid for aid, name in placed.items() if name == names[stopped.addr]]
    stopped.restart()
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        for aid in failed + ok:
            assert account_read(conn, aid) == (0,), aid
    assert_invariant(cluster)


def test_a_paused_datanode_holds_up_only_its_statements_and_none_past_the_timeout(cluster):
    """SIGSTOP of a datanode for 10 s: a read of a row on it ends with 57014 at its
    statement_timeout (the session stays usable), reads of rows elsewhere go on, and
    after SIGCONT every read succeeds again."""
    rc, out, log = pgbench(cluster, "-i", "-s", "1", "-q", timeout=600)
    assert rc == 0, log
    paused = cluster.datanodes[2]
    paused.pause()
    try:
        started = time.monotonic()
        timed_out, answered = [], []
        with psycopg.connect(cluster.second.dsn, autocommit=True) as conn:
            conn.execute("SET statement_timeout = 1000")
            for aid in range(1, 31):
                begun = time.monotonic()
                try:
                    assert account_read(conn, aid) == (0,)
                    answered.append(aid)
                except psycopg.errors.QueryCanceled:
                    timed_out.append(aid)
                assert time.monotonic() - begun < 5, f"aid {aid} waited past its timeout"
                if time.monotonic() - started > 9:
                    break
            # About a third of the rows wait for the paused datanode.
            assert timed_out and answered, (timed_out, answered)
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        paused.resume()
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        for aid in timed_out + answered:
            assert account_read(conn, aid) == (0,), aid
    assert_invariant(cluster)
