"""INSERT … ON CONFLICT (key) DO UPDATE against PostgreSQL 15 in the same test.

The arbiter is the primary key or a unique index (a UNIQUE constraint's, or one made by
CREATE UNIQUE INDEX, which ON CONSTRAINT does not name); a conflict on any other unique
key stays a unique violation.

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


# Arbiters other than the primary key, on a table with one and on a table without.
UNIQUE_ARBITER_STATEMENTS = [
    "DROP TABLE IF EXISTS ua",
    "DROP TABLE IF EXISTS ub",
    "CREATE TABLE ua (id int PRIMARY KEY, tag text UNIQUE, name text, n int DEFAULT 0)",
    "CREATE UNIQUE INDEX ua_name_idx ON ua (name)",
    "INSERT INTO ua VALUES (1, 'a', 'one'), (2, 'b', 'two')",
    "INSERT INTO ua VALUES (3, 'a', 'three') ON CONFLICT (tag) DO UPDATE SET name = excluded.name, n = ua.n + 1 RETURNING *",
    "INSERT INTO ua VALUES (1, 'z', 'x') ON CONFLICT (tag) DO UPDATE SET name = excluded.name RETURNING *",
    "INSERT INTO ua VALUES (4, 'b', 'two') ON CONFLICT (tag) DO NOTHING RETURNING *",
    "INSERT INTO ua VALUES (5, 'q', 'two') ON CONFLICT (tag) DO NOTHING RETURNING *",
    "INSERT INTO ua VALUES (5, 'q', 'two') ON CONFLICT DO NOTHING RETURNING *",
    "INSERT INTO ua VALUES (1, 'q', 'new') ON CONFLICT (name) DO NOTHING RETURNING *",
    "INSERT INTO ua VALUES (6, 'a', 'six') ON CONFLICT ON CONSTRAINT ua_tag_key DO UPDATE SET n = 10 RETURNING *",
    "INSERT INTO ua VALUES (6, 'a', 'six') ON CONFLICT ON CONSTRAINT ua_name_idx DO UPDATE SET n = 10",
    "INSERT INTO ua VALUES (7, 'a', 'x'), (8, 'a', 'y') ON CONFLICT (tag) DO UPDATE SET n = 99",
    "INSERT INTO ua VALUES (7, 'c', 'x') ON CONFLICT (name) DO UPDATE SET tag = 'cc' RETURNING *",
    "INSERT INTO ua VALUES (7, 'd', 'x') ON CONFLICT (name) DO UPDATE SET tag = 'dd' RETURNING *",
    "INSERT INTO ua VALUES (9, 'b', 'nine') ON CONFLICT (tag) DO UPDATE SET tag = 'a'",
    "INSERT INTO ua VALUES (10, 'b', 'ten') ON CONFLICT (tag) DO UPDATE SET id = 20 WHERE ua.n > 100 RETURNING *",
    "INSERT INTO ua VALUES (10, 'b', 'ten') ON CONFLICT (tag) DO UPDATE SET id = 20 RETURNING *",
    "INSERT INTO ua VALUES (11, NULL, 'eleven'), (12, NULL, 'twelve') ON CONFLICT (tag) DO UPDATE SET n = 1 RETURNING *",
    "INSERT INTO ua VALUES (2, 'b', 'two') ON CONFLICT (id, tag) DO NOTHING",
    "INSERT INTO ua (id, tag) SELECT i, 'k' || (i % 3) FROM generate_series(30, 38) i ON CONFLICT (tag) DO UPDATE SET n = ua.n + 1",
    "SELECT * FROM ua ORDER BY id",
    "CREATE TABLE ub (a int, b text UNIQUE)",
    "INSERT INTO ub VALUES (1, 'x')",
    "INSERT INTO ub VALUES (2, 'x') ON CONFLICT (b) DO UPDATE SET a = excluded.a + ub.a RETURNING *",
    "INSERT INTO ub VALUES (3, 'x'), (4, 'y') ON CONFLICT (b) DO NOTHING RETURNING *",
    "SELECT * FROM ub ORDER BY b",
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


def test_unique_index_arbiters_as_postgres(postgres, target):
    results = []
    for s in (postgres, target):
        with psycopg.connect(s.dsn, autocommit=True) as c:
            results.append([outcome(c, sql) for sql in UNIQUE_ARBITER_STATEMENTS])
    for sql, pg, meridian in zip(UNIQUE_ARBITER_STATEMENTS, *results):
        assert meridian == pg, sql


def test_concurrent_upserts_on_a_unique_column_add_up(servers):
    """Upserts whose arbiter is a UNIQUE column wait for the row holding the value."""
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            c.execute("DELETE FROM up WHERE s = 'hot'")

        def worker(first):
            with psycopg.connect(s.dsn, autocommit=True) as c:
                for i in range(25):
                    c.execute("INSERT INTO up VALUES (%s, 1, 'hot') "
                              "ON CONFLICT (s) DO UPDATE SET v = up.v + 1", (first + i,))
        threads = [threading.Thread(target=worker, args=(100 + 100 * n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        with psycopg.connect(s.dsn, autocommit=True) as c:
            assert c.execute("SELECT count(*), sum(v) FROM up WHERE s = 'hot'").fetchone() == (1, 100), s.kind


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
