"""SQL-level PREPARE, EXECUTE and DEALLOCATE against PostgreSQL 15 in the same test.

The same statements on both servers, through psql's simple protocol and psycopg's
extended one (where EXECUTE's rows are described at Bind): rows, command tags and
SQLSTATEs; arguments assigned to the declared or inferred parameter types; a prepared
statement survives ROLLBACK; DEALLOCATE [PREPARE] name | ALL.
"""

import psycopg
import pytest

from conftest import run_on_each

SETUP = [
    "DROP TABLE IF EXISTS pt",
    "CREATE TABLE pt (id int PRIMARY KEY, s text, n numeric)",
    "INSERT INTO pt VALUES (1, 'a', 1.5), (2, 'b', NULL)",
]

STATEMENTS = [
    "PREPARE q(int) AS SELECT * FROM pt WHERE id = $1",
    "EXECUTE q(1)",
    "EXECUTE q('2')",
    "EXECUTE q(1.6)",
    "EXECUTE q",
    "EXECUTE q(1, 2)",
    "EXECUTE q('x')",
    "EXECUTE nosuch(1)",
    "PREPARE q AS SELECT 1",
    "PREPARE ins (int, text) AS INSERT INTO pt VALUES ($1, $2) RETURNING *",
    "EXECUTE ins(3, 'c')",
    "EXECUTE ins(4, 5)",
    "EXECUTE ins(3, 'dup')",
    "PREPARE noargs AS SELECT count(*) FROM pt",
    "EXECUTE noargs",
    "EXECUTE noargs(1)",
    "PREPARE inferred AS SELECT $1::int + 1, $2",
    "EXECUTE inferred(41, 'x')",
    "PREPARE up AS UPDATE pt SET s = $2 WHERE id = $1",
    "EXECUTE up(1, 'z')",
    "PREPARE del (int) AS DELETE FROM pt WHERE id > $1",
    "EXECUTE del(3)",
    "EXECUTE q(1)",
    "DEALLOCATE q",
    "EXECUTE q(1)",
    "DEALLOCATE PREPARE up",
    "EXECUTE up(1, 'y')",
    "DEALLOCATE up",
    "PREPARE bad AS CREATE TABLE x (a int)",
    "PREPARE bad2 AS SELECT nosuch FROM pt",
    "PREPARE t(nosuchtype) AS SELECT $1",
    "PREPARE d (date) AS SELECT $1 + 1",
    "EXECUTE d('2024-02-28')",
    "PREPARE v AS VALUES (1, 'one'), (2, 'two')",
    "EXECUTE v",
    "SELECT * FROM pt ORDER BY id",
    "DEALLOCATE ALL",
    "EXECUTE noargs",
]


def outcome(conn, sql):
    try:
        cur = conn.execute(sql)
        rows = cur.fetchall() if cur.description else None
        return (cur.statusmessage, rows)
    except psycopg.Error as e:
        return e.sqlstate


@pytest.fixture
def servers(postgres, target):
    return run_on_each([postgres, target], SETUP)


@pytest.mark.parametrize("protocol", ["simple", "extended"])
def test_statements_as_postgres(servers, protocol):
    results = []
    for s in servers:
        run_on_each([s], SETUP)
        cursor = psycopg.ClientCursor if protocol == "simple" else psycopg.Cursor
        with psycopg.connect(s.dsn, autocommit=True, cursor_factory=cursor) as c:
            results.append([outcome(c, sql) for sql in STATEMENTS])
    for sql, pg, meridian in zip(STATEMENTS, *results):
        assert meridian == pg, sql


def test_prepared_statement_outlives_rollback_and_takes_parameters(servers):
    """Client-side binding (PostgreSQL takes no protocol parameters in EXECUTE)."""
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, cursor_factory=psycopg.ClientCursor) as c:
            c.execute("PREPARE inx (int) AS SELECT s FROM pt WHERE id = $1")
            c.rollback()
            got = c.execute("EXECUTE inx(%s)", [2]).fetchall()
            c.execute("DEALLOCATE inx")
            results.append(got)
    assert results[1] == results[0] == [("b",)]
