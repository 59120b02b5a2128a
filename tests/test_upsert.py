"""INSERT … ON CONFLICT (key) DO UPDATE against PostgreSQL 15 in the same test.

The same statements on both servers: the rows RETURNING gives, the command tags, the
SQLSTATEs (a row affected twice, a conflict on another unique constraint, NOT NULL, a
missing conflict target) and the table afterwards; and concurrent upserts of one key from
several sessions, where each waits for the row's lock and adds to what the others wrote.
"""

import threading

import psycopg
import pytest

from conftest import run_on_each

SETUP = [
    "DROP TABLE IF EXISTS up",
    "CREATE TABLE up (id int PRIMARY KEY, v int NOT NULL, s text UNIQUE)",
    "INSERT INTO up VALUES (1, 10, 'a'), (2, 20, 'b')",
]

STATEMENTS = [
    "INSERT INTO up VALUES (1, 5, 'x') ON CONFLICT (id) DO UPDATE SET v = up.v + excluded.v RETURNING *",
    "INSERT INTO up VALUES (2, 7, 'y'), (3, 30, 'c') ON CONFLICT (id) DO UPDATE SET v = excluded.v, s = excluded.s RETURNING id, v, s",
    "INSERT INTO up AS t VALUES (3, 1, 'z') ON CONFLICT (id) DO UPDATE SET v = t.v * 2 WHERE t.v > 100 RETURNING *",
    "INSERT INTO up AS t VALUES (3, 1, 'z') ON CONFLICT (id) DO UPDATE SET v = t.v * 2 WHERE excluded.s = 'z' RETURNING *",
    "INSERT INTO up VALUES (4, 1, 'q'), (4, 2, 'r') ON CONFLICT (id) DO UPDATE SET v = excluded.v",
    "INSERT INTO up VALUES (5, 1, 'a') ON CONFLICT (id) DO UPDATE SET v = 0",
    "INSERT INTO up VALUES (1, 1, 'm') ON CONFLICT DO UPDATE SET v = 0",
    "INSERT INTO up VALUES (1, 1, 'm') ON CONFLICT (v) DO UPDATE SET v = 0",
    "INSERT INTO up VALUES (1, 1, 'm') ON CONFLICT ON CONSTRAINT up_pkey DO UPDATE SET v = NULL",
    "INSERT INTO up VALUES (1, 1, 'c') ON CONFLICT (id) DO UPDATE SET s = excluded.s",
    "INSERT INTO up VALUES (1, 1, 'n') ON CONFLICT ON CONSTRAINT up_pkey DO UPDATE SET id = 10 RETURNING *",
    "INSERT INTO up VALUES (9, 1, 'n') ON CONFLICT (id) DO UPDATE SET nosuch = 1",
    "INSERT INTO up VALUES (2, 1, 'n') ON CONFLICT (id) DO UPDATE SET v = DEFAULT",
    "INSERT INTO up (id, v) SELECT i, i FROM generate_series(1, 12) i ON CONFLICT (id) DO UPDATE SET v = up.v + 100 RETURNING id, v",
    "SELECT * FROM up ORDER BY id",
]


def outcome(conn, sql):
    try:
        cur = conn.execute(sql)
        rows = sorted(cur.fetchall()) if cur.description else None
        return (cur.statusmessage, rows)
    except psycopg.Error as e:
        return e.sqlstate


@pytest.fixture
def servers(postgres, target):
    return run_on_each([postgres, target], SETUP)


def test_statements_as_postgres(servers):
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            results.append([outcome(c, sql) for sql in STATEMENTS])
    for sql, pg, meridian in zip(STATEMENTS, *results):
        assert meridian == pg, sql


def test_concurrent_upserts_of_one_key_add_up(servers):
    """Every session's upsert waits for the row and adds to the newest value."""
    for s in servers:
        def worker():
            with psycopg.connect(s.dsn, autocommit=True) as c:
                for _ in range(25):
                    c.execute("INSERT INTO up VALUES (7, 1, NULL) "
                              "ON CONFLICT (id) DO UPDATE SET v = up.v + 1")
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        with psycopg.connect(s.dsn, autocommit=True) as c:
            assert c.execute("SELECT v FROM up WHERE id = 7").fetchone() == (100,), s.kind


def test_upsert_in_a_rolled_back_transaction_leaves_nothing(servers):
    results = []
    for s in servers:
        with psycopg.connect(s.dsn) as c:
            c.execute("INSERT INTO up VALUES (1, 1, 'q') ON CONFLICT (id) DO UPDATE SET v = 99")
            c.execute("INSERT INTO up VALUES (8, 1, 'w') ON CONFLICT (id) DO UPDATE SET v = 99")
            c.rollback()
            results.append(c.execute("SELECT * FROM up ORDER BY id").fetchall())
    assert results[1] == results[0]
