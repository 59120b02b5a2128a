"""SELECT … FOR UPDATE / FOR SHARE [OF t] [NOWAIT | SKIP LOCKED] against PostgreSQL 15.

Every scenario runs on the server under test and on a real PostgreSQL 15 in the same
test: the rows returned, the SQLSTATEs, which statements a held lock stops (seen through
lock_timeout and NOWAIT, never through timing), the rows SKIP LOCKED passes over, and
READ COMMITTED's re-check of a row changed while the query waited for it.
"""

import threading
import time

import psycopg
import pytest

from conftest import run_on_each

SETUP = [
    "DROP TABLE IF EXISTS fu",
    "CREATE TABLE fu (id int PRIMARY KEY, v int, s text)",
    "INSERT INTO fu SELECT i, i * 10, 's' || i FROM generate_series(1, 8) i",
]


@pytest.fixture
def servers(postgres, target):
    return run_on_each([postgres, target], SETUP)


def outcome(conn, sql, params=None):
    try:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else cur.statusmessage
    except psycopg.Error as e:
        return e.sqlstate


@pytest.mark.parametrize("sql,params", [
    ("SELECT * FROM fu WHERE v > 25 ORDER BY v DESC FOR UPDATE", None),
    ("SELECT v FROM fu ORDER BY id LIMIT 3 OFFSET 2 FOR UPDATE", None),
    ("SELECT s, id FROM fu f WHERE id = %s FOR UPDATE OF f NOWAIT", (4,)),
    ("SELECT id FROM fu WHERE id BETWEEN %s AND %s FOR SHARE SKIP LOCKED", (2, 5)),
    ("SELECT id, v * 2 AS w FROM fu ORDER BY w DESC LIMIT 2 FOR UPDATE", None),
    ("SELECT id FROM fu ORDER BY 1 LIMIT 0 FOR UPDATE", None),
    ("SELECT id FROM fu WHERE id = 99 FOR UPDATE", None),
    ("SELECT * FROM fu FOR UPDATE OF nosuch", None),
    ("SELECT count(*) FROM fu FOR UPDATE", None),
    ("SELECT DISTINCT v FROM fu FOR UPDATE", None),
    ("SELECT v FROM fu GROUP BY v FOR SHARE", None),
    ("SELECT v FROM fu ORDER BY 2 FOR UPDATE", None),
    ("SELECT id FROM fu LIMIT -1 FOR UPDATE", None),
])
def test_results_and_errors_as_postgres(servers, sql, params):
    results = []
    for s in servers:
        with psycopg.connect(s.dsn) as c:
            results.append(outcome(c, sql, params))
            c.rollback()
    assert results[1] == results[0], sql


def test_read_only_transaction_refuses_it(servers):
    results = []
    for s in servers:
        with psycopg.connect(s.dsn) as c:
            c.execute("BEGIN READ ONLY")
            results.append(outcome(c, "SELECT * FROM fu FOR UPDATE"))
    assert results == ["25006", "25006"]


def held_lock_effects(server):
    """Session A locks rows 1 and 2; what B's statements meet while A holds them."""
    with psycopg.connect(server.dsn) as a, psycopg.connect(server.dsn) as b:
        assert [r[0] for r in a.execute(
            "SELECT id FROM fu WHERE id <= 2 ORDER BY id FOR UPDATE")] == [1, 2]
        b.autocommit = True  # a SET inside a transaction ends with it
        b.execute("SET lock_timeout = '300ms'")
        b.autocommit = False
        effects = [
            outcome(b, "UPDATE fu SET v = v + 1 WHERE id = 1"),
        ]
        b.rollback()
        for sql in ["SELECT * FROM fu WHERE id = 2 FOR UPDATE NOWAIT",
                    "SELECT * FROM fu WHERE id = 2 FOR UPDATE",
                    "SELECT id FROM fu ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED",
                    "SELECT id FROM fu WHERE id <= 4 ORDER BY id FOR SHARE SKIP LOCKED",
                    "SELECT id, v FROM fu WHERE id = 3 FOR UPDATE",
                    "SELECT id, v FROM fu WHERE id = 1"]:
            effects.append(outcome(b, sql))
            b.rollback()
        a.rollback()
        # Released with A's transaction.
        effects.append(outcome(b, "SELECT id FROM fu WHERE id <= 2 ORDER BY id FOR UPDATE NOWAIT"))
        b.rollback()
        return effects


def test_held_locks_stop_writers_and_lockers_as_in_postgres(servers):
    pg, meridian = (held_lock_effects(s) for s in servers)
    assert meridian == pg
    assert pg[:3] == ["55P03", "55P03", "55P03"]
    assert pg[3] == [(3,), (4,), (5,)]


def changed_while_waiting(server, new_v, isolation):
    """B's FOR UPDATE waits for A, which changes row 2 and commits: what B returns."""
    with psycopg.connect(server.dsn) as a, psycopg.connect(server.dsn) as b:
        b.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
        b.execute("SELECT 1").fetchall()  # REPEATABLE READ: the snapshot is taken here
        a.execute("UPDATE fu SET v = %s WHERE id = 2", (new_v,))
        result = {}

        def locker():
            result["rows"] = outcome(
                b, "SELECT id, v FROM fu WHERE v BETWEEN 10 AND 40 ORDER BY id FOR UPDATE")

        t = threading.Thread(target=locker)
        t.start()
        time.sleep(0.3)  # ordering only: B is (most likely) waiting for A's lock by now
        a.commit()
        t.join(30)
        assert not t.is_alive(), "the locking SELECT never finished"
        b.rollback()
        with psycopg.connect(server.dsn, autocommit=True) as c:
            c.execute("UPDATE fu SET v = 20 WHERE id = 2")
        return result["rows"]


@pytest.mark.parametrize("new_v", [25, 500])
@pytest.mark.parametrize("isolation", ["READ COMMITTED", "REPEATABLE READ"])
def test_row_changed_while_waiting_is_rechecked_as_in_postgres(servers, new_v, isolation):
    pg, meridian = (changed_while_waiting(s, new_v, isolation) for s in servers)
    assert meridian == pg
    if isolation == "READ COMMITTED":
        assert (2, new_v) in pg if new_v <= 40 else all(r[0] != 2 for r in pg), pg
    else:
        assert pg == "40001"


def test_queue_workers_with_skip_locked_take_disjoint_rows(servers):
    """The job-queue pattern: each worker locks the first free row."""
    for s in servers:
        conns = [psycopg.connect(s.dsn) for _ in range(4)]
        try:
            taken = [c.execute("SELECT id FROM fu ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED")
                     .fetchall() for c in conns]
            assert taken == [[(1,)], [(2,)], [(3,)], [(4,)]], (s.kind, taken)
        finally:
            for c in conns:
                c.close()


def test_explain_shows_lock_rows_under_the_limit(servers):
    plans = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            plans.append([r[0] for r in c.execute(
                "EXPLAIN (COSTS OFF) SELECT v FROM fu ORDER BY v LIMIT 2 FOR UPDATE")][:3])
    assert plans[1] == plans[0] == ["Limit", "  ->  LockRows", "        ->  Sort"], plans
