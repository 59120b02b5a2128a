"""Simple-query statements that differ only in numeric literals share one cached plan.

The server auto-parameterizes simple-query (``Query`` message) statements: the numeric
literals of a SELECT/INSERT/UPDATE/DELETE/WITH statement are taken out and the statement
is bound once per session thread (shared by its sessions), then run with the literal
values as parameters.  These tests check that this is invisible to clients: every
variant returns what it would without the cache (and what PostgreSQL 15 returns),
including result types, column positions after ``ORDER BY``/``GROUP BY``, negative
literals, LIMIT, DDL between two runs of the same statement text, errors and failed
transaction blocks.

Every statement here goes through the simple query protocol: psycopg sends a query
without parameters with ``PQsendQuery`` (a ``Query`` message) when nothing makes it use
the extended protocol -- no parameters, text results, no pipeline, and auto-prepare off
(``prepare_threshold=None``; psycopg would otherwise prepare a text run five times).
``test_uses_the_simple_protocol`` checks this with a multi-statement string, which only
the simple protocol accepts; psql (``-c`` / ``-f``) always uses it.
"""

import decimal
import subprocess

import psycopg
import pytest

from conftest import pg_tool

INT4, INT8, NUMERIC, TEXT = 23, 20, 1700, 25


def connect(server):
    return psycopg.connect(server.dsn, autocommit=True, prepare_threshold=None)


def q(conn, sql):
    """Run one simple-query string; (rows, result type OIDs) of its last statement."""
    cur = conn.execute(sql, prepare=False)
    if cur.description is None:
        return None, None
    return cur.fetchall(), [d.type_code for d in cur.description]


def sqlstate(conn, sql):
    with pytest.raises(psycopg.Error) as e:
        conn.execute(sql, prepare=False)
    return e.value.sqlstate


def psql(server, *commands, script=None):
    cmd = [pg_tool("psql"), "-X", "-P", "pager=off", "-h", server.host, "-p", str(server.port),
           "-U", "postgres", "-d", "postgres"]
    for c in commands:
        cmd += ["-c", c]
    if script is not None:
        cmd += ["-f", "-"]
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PGCONNECT_TIMEOUT": "10"}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, input=script)
    return f"exit={res.returncode}\n{res.stdout}{res.stderr}"


@pytest.fixture(scope="module")
def conn(target):
    with connect(target) as c:
        c.execute("DROP TABLE IF EXISTS sqc")
        c.execute("CREATE TABLE sqc (id int PRIMARY KEY, v text, big bigint, n numeric)")
        c.execute("INSERT INTO sqc SELECT g, 'v' || g, g * 1000000000::bigint, g / 4.0 "
                  "FROM generate_series(1, 40) g")
        yield c


def test_uses_the_simple_protocol(conn):
    cur = conn.execute("SELECT 1; SELECT v FROM sqc WHERE id = 2", prepare=False)
    assert cur.fetchall() == [(1,)]
    assert cur.nextset()
    assert cur.fetchall() == [("v2",)]
    # The extended protocol (used for binary results) refuses the same string.
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT 1; SELECT v FROM sqc WHERE id = 2", binary=True)
    assert e.value.sqlstate == "42601"


def test_same_statement_different_literals(conn):
    for i in [1, 2, 3, 40, 17, 1, 2]:
        rows, types = q(conn, f"SELECT id, v, big FROM sqc WHERE id = {i}")
        assert rows == [(i, f"v{i}", i * 1000000000)]
        assert types == [INT4, TEXT, INT8]
    # same text, a literal too big for int4 (another parameter type), then no row at all
    assert q(conn, "SELECT id, v, big FROM sqc WHERE id = 3000000000")[0] == []
    assert q(conn, "SELECT id, v, big FROM sqc WHERE id = 0")[0] == []
    assert q(conn, "SELECT id FROM sqc WHERE big = 5000000000")[0] == [(5,)]
    assert q(conn, "SELECT id FROM sqc WHERE big = 7000000000")[0] == [(7,)]
    assert q(conn, "SELECT id FROM sqc WHERE n = 2.25")[0] == [(9,)]
    assert q(conn, "SELECT id FROM sqc WHERE n = 2.5")[0] == [(10,)]
    assert q(conn, "SELECT id FROM sqc WHERE n = 3")[0] == [(12,)]
    assert q(conn, "SELECT count(*) FROM sqc WHERE id BETWEEN 3 AND 7")[0] == [(5,)]
    assert q(conn, "SELECT count(*) FROM sqc WHERE id BETWEEN 10 AND 30")[0] == [(21,)]
    assert q(conn, "SELECT id FROM sqc WHERE id IN (4, 8, 99) ORDER BY id")[0] == [(4,), (8,)]
    assert q(conn, "SELECT id FROM sqc WHERE id IN (5, 6, 7) ORDER BY id")[0] == [(5,), (6,), (7,)]
    # digits inside strings, identifiers and comments are not literals
    assert q(conn, "SELECT v FROM sqc WHERE v = 'v12' AND id = 12 /* 13 */")[0] == [("v12",)]
    assert q(conn, "SELECT v FROM sqc WHERE v = 'v13' AND id = 13 /* 12 */")[0] == [("v13",)]
    assert q(conn, "SELECT '5' || 6, E'\\' 7', 8 -- 9")[0] == [("56", "' 7", 8)]
    assert q(conn, "SELECT '6' || 5, E'\\' 8', 7 -- 10")[0] == [("65", "' 8", 7)]


def test_order_by_and_group_by_positions(conn):
    by1, _ = q(conn, "SELECT v, id FROM sqc WHERE id <= 12 ORDER BY 1")
    by2, _ = q(conn, "SELECT v, id FROM sqc WHERE id <= 12 ORDER BY 2")
    assert [r[0] for r in by1] == sorted(f"v{i}" for i in range(1, 13))
    assert [r[1] for r in by2] == list(range(1, 13))
    assert by1 != by2
    desc, _ = q(conn, "SELECT v, id FROM sqc WHERE id <= 3 ORDER BY 2 DESC")
    assert desc == [("v3", 3), ("v2", 2), ("v1", 1)]
    g1, _ = q(conn, "SELECT id % 3, count(*) FROM sqc GROUP BY 1 ORDER BY 1")
    assert g1 == [(0, 13), (1, 14), (2, 13)]
    g2, _ = q(conn, "SELECT id % 4, count(*) FROM sqc GROUP BY 1 ORDER BY 1")
    assert g2 == [(0, 10), (1, 10), (2, 10), (3, 10)]


def test_literal_types(conn):
    rows, types = q(conn, "SELECT 2147483647, 2147483648, 1.5, 9223372036854775807, 9223372036854775808")
    assert rows == [(2147483647, 2147483648, decimal.Decimal("1.5"), 9223372036854775807,
                     9223372036854775808)]
    assert types == [INT4, INT8, NUMERIC, INT8, NUMERIC]
    # the same text with literals of other kinds
    rows, types = q(conn, "SELECT 1, 2, 3, 4, 5")
    assert rows == [(1, 2, 3, 4, 5)] and types == [INT4] * 5
    rows, types = q(conn, "SELECT 1.25, 2.5, 3, 4.75, 5000000000")
    assert rows == [(decimal.Decimal("1.25"), decimal.Decimal("2.5"), 3, decimal.Decimal("4.75"),
                     5000000000)]
    assert types == [NUMERIC, NUMERIC, INT4, NUMERIC, INT8]
    rows, types = q(conn, "SELECT 1e3, 2.5E-1, 007")
    assert rows == [(decimal.Decimal("1000"), decimal.Decimal("0.25"), 7)]
    assert types == [NUMERIC, NUMERIC, INT4]
    rows, types = q(conn, "SELECT 2147483647 + 0, 2147483648 + 0, 1.5 + 0")
    assert rows == [(2147483647, 2147483648, decimal.Decimal("1.5"))]
    assert types == [INT4, INT8, NUMERIC]
    assert sqlstate(conn, "SELECT 2147483647 + 1") == "22003"
    assert q(conn, "SELECT 2147483646 + 1")[0] == [(2147483647,)]


def test_negative_literals(conn):
    rows, types = q(conn, "SELECT -5, - 5, 10 - 5, 10 -5, - -5")
    assert rows == [(-5, -5, 5, 5, 5)] and types == [INT4] * 5
    rows, types = q(conn, "SELECT -7, - 8, 10 - 9, 10 -2, - -1")
    assert rows == [(-7, -8, 1, 8, 1)] and types == [INT4] * 5
    rows, types = q(conn, "SELECT -2147483648, - 2147483648, -2147483649, -9223372036854775808, -1.5")
    assert rows == [(-2147483648, -2147483648, -2147483649, -9223372036854775808, decimal.Decimal("-1.5"))]
    assert types == [INT4, INT4, INT8, INT8, NUMERIC]
    rows, types = q(conn, "SELECT -2147483647, - 2147483647, -2147483650, -9223372036854775807, -0.0")
    assert rows == [(-2147483647, -2147483647, -2147483650, -9223372036854775807, decimal.Decimal("0.0"))]
    assert types == [INT4, INT4, INT8, INT8, NUMERIC]
    assert q(conn, "SELECT id FROM sqc WHERE id > -5 AND id < - -3 ORDER BY id")[0] == [(1,), (2,)]
    assert q(conn, "SELECT id FROM sqc WHERE id > -1 AND id < - -4 ORDER BY id")[0] == [(1,), (2,), (3,)]
    assert q(conn, "SELECT id FROM sqc WHERE id = -5")[0] == []


def test_limit_literal(conn):
    for n in [3, 7, 0, 40, 100]:
        assert q(conn, f"SELECT count(*) FROM (SELECT id FROM sqc LIMIT {n}) s")[0] == [(min(n, 40),)]
    # after ORDER BY the literal stays in the statement text (column positions): still right
    for n in [2, 5]:
        assert q(conn, f"SELECT id FROM sqc ORDER BY id LIMIT {n} OFFSET 1")[0] == [(i,) for i in range(2, n + 2)]


def test_dml_with_literals(conn):
    conn.execute("DROP TABLE IF EXISTS sqc_dml")
    conn.execute("CREATE TABLE sqc_dml (id int PRIMARY KEY, x int, n numeric)")
    for i in range(1, 6):
        conn.execute(f"INSERT INTO sqc_dml VALUES ({i}, {i * 10}, {i}.5)", prepare=False)
    assert q(conn, "UPDATE sqc_dml SET x = x + 1 WHERE id = 2 RETURNING x")[0] == [(21,)]
    assert q(conn, "UPDATE sqc_dml SET x = x + 5 WHERE id = 3 RETURNING x")[0] == [(35,)]
    assert q(conn, "UPDATE sqc_dml SET n = n * 2 WHERE id = 4 RETURNING n")[0] == [(decimal.Decimal("9.0"),)]
    assert q(conn, "DELETE FROM sqc_dml WHERE id = 5 RETURNING id")[0] == [(5,)]
    assert q(conn, "DELETE FROM sqc_dml WHERE id = 1 RETURNING id")[0] == [(1,)]
    rows, _ = q(conn, "SELECT id, x, n FROM sqc_dml ORDER BY id")
    assert rows == [(2, 21, decimal.Decimal("2.5")), (3, 35, decimal.Decimal("3.5")),
                    (4, 40, decimal.Decimal("9.0"))]
    assert sqlstate(conn, "INSERT INTO sqc_dml VALUES (2, 0, 0)") == "23505"
    assert sqlstate(conn, "INSERT INTO sqc_dml VALUES (9, 2147483648, 0)") == "22003"
    assert q(conn, "SELECT count(*) FROM sqc_dml")[0] == [(3,)]


def test_ddl_invalidates_the_cached_plan(conn):
    conn.execute("DROP TABLE IF EXISTS sqc_ddl")
    conn.execute("CREATE TABLE sqc_ddl (a int PRIMARY KEY, b int)")
    conn.execute("INSERT INTO sqc_ddl VALUES (1, 10), (2, 20)")
    assert q(conn, "SELECT b FROM sqc_ddl WHERE a = 1") == ([(10,)], [INT4])
    assert q(conn, "SELECT b FROM sqc_ddl WHERE a = 2") == ([(20,)], [INT4])
    conn.execute("DROP TABLE sqc_ddl")
    assert sqlstate(conn, "SELECT b FROM sqc_ddl WHERE a = 1") == "42P01"
    conn.execute("CREATE TABLE sqc_ddl (a int PRIMARY KEY, b text)")
    conn.execute("INSERT INTO sqc_ddl VALUES (1, 'one'), (2, 'two')")
    assert q(conn, "SELECT b FROM sqc_ddl WHERE a = 2") == ([("two",)], [TEXT])
    assert q(conn, "SELECT b FROM sqc_ddl WHERE a = 1") == ([("one",)], [TEXT])
    # DROP + CREATE without a failing query in between, in one query string too
    conn.execute("DROP TABLE sqc_ddl; CREATE TABLE sqc_ddl (a bigint PRIMARY KEY, b numeric); "
                 "INSERT INTO sqc_ddl VALUES (1, 1.5)", prepare=False)
    assert q(conn, "SELECT b FROM sqc_ddl WHERE a = 1") == ([(decimal.Decimal("1.5"),)], [NUMERIC])
    assert q(conn, "SELECT b FROM sqc_ddl WHERE a = 2") == ([], [NUMERIC])


def test_errors_are_unchanged(conn):
    for i in (1, 2, 3):
        assert sqlstate(conn, f"SELECT nosuch FROM sqc WHERE id = {i}") == "42703"
    # a statement cached first, then the same shape with an unknown column
    assert q(conn, "SELECT v FROM sqc WHERE id = 4")[0] == [("v4",)]
    assert sqlstate(conn, "SELECT w FROM sqc WHERE id = 4") == "42703"
    assert sqlstate(conn, "SELECT v FROM sqc WHERE id = 'x'") == "22P02"
    assert sqlstate(conn, "SELECT v FROM sqc ORDER BY 3") == "42P10"
    # a syntax error anywhere in a query string runs none of it
    assert sqlstate(conn, "INSERT INTO sqc VALUES (100, 'x', 0, 0); SELEC 1") == "42601"
    assert q(conn, "SELECT count(*) FROM sqc WHERE id = 100")[0] == [(0,)]


def test_failed_transaction_block(target):
    with connect(target) as c:
        assert q(c, "SELECT v FROM sqc WHERE id = 1")[0] == [("v1",)]  # cached now
        c.execute("BEGIN")
        assert q(c, "SELECT v FROM sqc WHERE id = 2")[0] == [("v2",)]
        assert sqlstate(c, "SELECT 1 / 0") == "22012"
        assert sqlstate(c, "SELECT v FROM sqc WHERE id = 3") == "25P02"
        assert sqlstate(c, "UPDATE sqc SET v = 'x' WHERE id = 3") == "25P02"
        assert sqlstate(c, "SELECT nosuch FROM sqc WHERE id = 3") == "25P02"
        c.execute("ROLLBACK")
        assert q(c, "SELECT v FROM sqc WHERE id = 3")[0] == [("v3",)]
        # an implicit transaction (one query string) that fails leaves nothing behind
        assert sqlstate(c, "UPDATE sqc SET v = 'y' WHERE id = 3; SELECT 1 / 0") == "22012"
        assert q(c, "SELECT v FROM sqc WHERE id = 3")[0] == [("v3",)]


SCRIPT = r"""
DROP TABLE IF EXISTS sqc_psql;
CREATE TABLE sqc_psql (id int PRIMARY KEY, v text, n numeric);
INSERT INTO sqc_psql VALUES (1, 'b', 1.5), (2, 'a', 2.25), (3, 'c', -3);
SELECT * FROM sqc_psql WHERE id = 1;
SELECT * FROM sqc_psql WHERE id = 3;
SELECT * FROM sqc_psql WHERE id = 4000000000;
SELECT v, id FROM sqc_psql ORDER BY 1;
SELECT v, id FROM sqc_psql ORDER BY 2;
SELECT 2147483647 AS a, 2147483648 AS b, 1.5 AS c, -5 AS d, - 5 AS e, -2147483648 AS f;
SELECT 1 AS a, 2 AS b, 3 AS c, -4 AS d, - 6 AS e, -2147483647 AS f;
SELECT id, n * 2 FROM sqc_psql WHERE n > 1.5 ORDER BY id;
SELECT id, n * 3 FROM sqc_psql WHERE n > 0 ORDER BY id;
SELECT id FROM sqc_psql WHERE id < 3 LIMIT 1;
UPDATE sqc_psql SET n = n + 1 WHERE id = 2 RETURNING *;
UPDATE sqc_psql SET n = n + 2.5 WHERE id = 3 RETURNING *;
DROP TABLE sqc_psql;
CREATE TABLE sqc_psql (id int PRIMARY KEY, v int, n text);
INSERT INTO sqc_psql VALUES (1, 7, 'x');
SELECT * FROM sqc_psql WHERE id = 1;
"""


def test_psql_output_matches_postgres(postgres_fresh, target):
    expected = psql(postgres_fresh, script=SCRIPT)
    actual = psql(target, script=SCRIPT)
    assert actual == expected, f"--- PostgreSQL 15\n{expected}\n--- {target.kind}\n{actual}"
