"""Concurrent `UPDATE … SET c = c + d WHERE <key> = …` on hot rows.

Meridian defers such increments of a row another transaction holds to commit, under an
increment lock (docs/decisions/0009). These tests state what READ COMMITTED promises for
them, and pass against PostgreSQL 15 too (``MERIDIAN_TEST_TARGETS=postgres``): the sums
are exact, a transaction sees its own increments, rolled-back ones leave no trace, and an
overflow is 22003 with nothing changed.
"""

import random
import threading
import time

import psycopg
import pytest


@pytest.fixture
def hot(meridian):
    with meridian.connect() as conn:
        conn.autocommit = True
        conn.execute("DROP TABLE IF EXISTS hot_acct")
        conn.execute("CREATE TABLE hot_acct (id int PRIMARY KEY, bal int NOT NULL, note text)")
        conn.execute("INSERT INTO hot_acct SELECT g, 0, 'row ' || g FROM generate_series(1, 3) g")
    return meridian


def balances(server):
    with server.connect() as conn:
        return dict(conn.execute("SELECT id, bal FROM hot_acct ORDER BY id").fetchall())


def test_concurrent_increments_sum_exactly(hot):
    workers, per_worker = 8, 40
    committed = [dict.fromkeys((1, 2, 3), 0) for _ in range(workers)]
    failures = []

    def work(w):
        rnd = random.Random(w)
        try:
            with hot.connect() as conn:
                conn.autocommit = True  # conn.transaction() issues BEGIN and COMMIT/ROLLBACK
                for i in range(per_worker):
                    ids = sorted(rnd.choice((1, 2, 3)) for _ in range(2))  # one lock order: no deadlocks
                    deltas = [rnd.randint(-500, 500) for _ in ids]
                    rolled_back = i % 6 == 5
                    with conn.transaction(force_rollback=rolled_back):
                        for k, d in zip(ids, deltas):
                            assert conn.execute("UPDATE hot_acct SET bal = bal + %s WHERE id = %s", (d, k)).rowcount == 1
                        if i % 4 == 0:
                            # the row is ours once read: two reads agree
                            first = conn.execute("SELECT bal FROM hot_acct WHERE id = %s", (ids[0],)).fetchone()
                            again = conn.execute("SELECT bal FROM hot_acct WHERE id = %s", (ids[0],)).fetchone()
                            assert first == again
                    if not rolled_back:
                        for k, d in zip(ids, deltas):
                            committed[w][k] += d
        except Exception as e:  # reported below, with the worker
            failures.append((w, e))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not failures, failures
    expected = {k: sum(c[k] for c in committed) for k in (1, 2, 3)}
    assert balances(hot) == expected


def test_transaction_sees_its_own_increment_on_top_of_newer_commits(hot):
    """B increments a row A holds; after A commits, B reads A's and its own increment."""
    a = hot.connect()
    b = hot.connect()
    try:
        a.execute("UPDATE hot_acct SET bal = bal + 100 WHERE id = 1")  # A holds the row
        b_updated = threading.Event()

        def b_work():
            b.execute("UPDATE hot_acct SET bal = bal + 5 WHERE id = 1")  # PostgreSQL: waits for A
            b_updated.set()

        t = threading.Thread(target=b_work)
        t.start()
        a.commit()
        t.join(60)
        assert b_updated.is_set()
        assert b.execute("SELECT bal FROM hot_acct WHERE id = 1").fetchone() == (105,)
        # another session sees only A's commit
        assert balances(hot)[1] == 100
        b.rollback()
        assert balances(hot)[1] == 100
    finally:
        a.close()
        b.close()


def test_increment_of_a_row_deleted_meanwhile_updates_nothing(hot):
    """The row is visible to the UPDATE's snapshot, but a concurrent DELETE holds it and
    commits: the increment waits for the deleter, then finds no row (UPDATE 0)."""
    deleter = hot.connect()
    conn = hot.connect()
    try:
        deleter.execute("DELETE FROM hot_acct WHERE id = 3")
        counts = []
        t = threading.Thread(target=lambda: counts.append(
            conn.execute("UPDATE hot_acct SET bal = bal + 1 WHERE id = 3").rowcount))
        t.start()
        time.sleep(0.5)  # let the UPDATE reach its wait (either order gives UPDATE 0)
        deleter.commit()
        t.join(60)
        assert counts == [0]
        conn.commit()
    finally:
        deleter.close()
        conn.close()
    assert balances(hot) == {1: 0, 2: 0}


def test_increment_overflow_is_22003_and_changes_nothing(hot):
    with hot.connect() as setup:
        setup.execute("UPDATE hot_acct SET bal = 2147483000 WHERE id = 2")
    holder = hot.connect()
    conn = hot.connect()
    try:
        holder.execute("UPDATE hot_acct SET bal = bal + 1 WHERE id = 2")  # the row is busy
        done = {}

        def overflow():
            # PostgreSQL reports it at the UPDATE (after waiting for the holder),
            # Meridian when the deferred increment is applied at COMMIT.
            try:
                conn.execute("UPDATE hot_acct SET bal = bal + 1000 WHERE id = 2")
                conn.execute("UPDATE hot_acct SET bal = bal + 1 WHERE id = 3")
                conn.commit()
            except psycopg.Error as e:
                done["error"] = e

        t = threading.Thread(target=overflow)
        t.start()
        time.sleep(0.5)  # let the UPDATE meet the busy row (either order gives 22003)
        holder.commit()
        t.join(60)
        assert isinstance(done.get("error"), psycopg.errors.NumericValueOutOfRange), done
        assert "integer out of range" in str(done["error"])
        conn.rollback()
        # the session goes on
        assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        holder.close()
        conn.close()
    assert balances(hot) == {1: 0, 2: 2147483001, 3: 0}


def test_null_increment_of_a_held_row_violates_not_null(hot):
    """`bal + NULL` is NULL: on a row another transaction holds it is not an increment
    (those are applied at commit, past any NOT NULL check) but an ordinary update, which
    waits for the holder and then fails with 23502, leaving the row as the holder left it."""
    a = hot.connect()
    b = hot.connect()
    try:
        a.execute("UPDATE hot_acct SET bal = bal + 100 WHERE id = 1")  # A holds the row
        outcome = []

        def b_work():
            try:
                b.execute("UPDATE hot_acct SET bal = bal + NULL WHERE id = 1")
                outcome.append("updated")
            except psycopg.errors.NotNullViolation:
                outcome.append("23502")
            except Exception as e:  # reported by the assertion below
                outcome.append(repr(e))

        t = threading.Thread(target=b_work)
        t.start()
        time.sleep(0.3)
        a.commit()
        t.join(30)
        assert outcome == ["23502"]
        b.rollback()
        assert balances(hot) == {1: 100, 2: 0, 3: 0}
    finally:
        a.close()
        b.close()
