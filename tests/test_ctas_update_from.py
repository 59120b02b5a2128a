"""CREATE TABLE … AS and SELECT … INTO (issue 31, item 5).

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test: the same rows, command tags (``SELECT n``, ``CREATE TABLE AS`` for WITH NO DATA and
a skipped IF NOT EXISTS) and SQLSTATEs; the new tables' columns as PostgreSQL derives
them from the query (names, ``numeric`` without a typmod for an expression, ``text`` for
an unknown literal, a column list renaming them), compared through psql's ``\\d``; DDL
undone by ROLLBACK. On the ``meridian-cluster`` target the new tables are placed by
Postgres-XL's default and their rows spread over three datanodes.
"""

from __future__ import annotations

import psycopg
import pytest

from test_indexes import pair, same  # noqa: F401 (pair is a fixture)
from test_psql_compat import psql

TABLES = ["ct_src", "ct_a", "ct_b", "ct_c", "ct_d", "ct_e", "ct_f", "ct_g", "ct_tx"]


@pytest.fixture(scope="module", autouse=True)
def drop_tables_after(postgres):
    """PostgreSQL is shared by the test modules, whose catalog queries must not meet
    this module's tables and view."""
    yield
    with psycopg.connect(postgres.dsn, autocommit=True) as c:
        c.execute("DROP VIEW IF EXISTS ct_v")
        c.execute(f"DROP TABLE IF EXISTS {', '.join(TABLES)}")


def reset(pair):
    for c in pair:
        c.execute("DROP VIEW IF EXISTS ct_v")
        for t in TABLES:
            c.execute(f"DROP TABLE IF EXISTS {t}")
        c.execute("CREATE TABLE ct_src (id int PRIMARY KEY, grp text, amount numeric(10,2), "
                  "code varchar(4))")
        c.execute("INSERT INTO ct_src SELECT i, 'g' || (i % 4), i * 2.25, 'c' || i "
                  "FROM generate_series(1, 500) i")
        c.execute("INSERT INTO ct_src VALUES (501, NULL, NULL, NULL)")


def run_script(pair, statements):
    for sql in statements:
        same(pair, sql)


def same_description(postgres, target, *tables):
    for t in tables:
        expected = psql(postgres, rf"\d {t}")
        assert expected.startswith("exit=0"), expected
        got = psql(target, rf"\d {t}")
        assert got == expected, f"{t}:\n{got}\nPostgreSQL:\n{expected}"


def test_create_table_as_as_postgres(pair, postgres, target):
    reset(pair)
    run_script(pair, [
        "CREATE TABLE ct_a AS SELECT id, grp, amount, code, amount * 2 AS doubled, "
        "'lit' AS literal, 1.5 AS num, id::bigint + 1 AS next FROM ct_src WHERE id % 2 = 0",
        "SELECT * FROM ct_a",
        "SELECT count(*), sum(doubled) FROM ct_a",
        # a column list renames the first columns; WITH NO DATA creates it empty
        "CREATE TABLE ct_b (k, total) AS SELECT grp, sum(amount), count(*) FROM ct_src "
        "GROUP BY grp",
        "SELECT * FROM ct_b",
        "CREATE TABLE ct_c (x) AS SELECT id, grp FROM ct_src WITH NO DATA",
        "SELECT count(*) FROM ct_c",
        "INSERT INTO ct_c VALUES (1, 'a')",
        "SELECT * FROM ct_c",
        "CREATE TABLE ct_d AS SELECT * FROM ct_src ORDER BY id DESC LIMIT 7 WITH DATA",
        "SELECT * FROM ct_d",
        # from a view, and with a window function
        "CREATE VIEW ct_v AS SELECT id, grp FROM ct_src WHERE id <= 10",
        "CREATE TABLE ct_e AS SELECT v.*, row_number() OVER (ORDER BY id DESC) AS rn FROM ct_v v",
        "SELECT * FROM ct_e",
        # SELECT … INTO
        "SELECT id, code INTO ct_f FROM ct_src WHERE grp = 'g1' AND id < 50",
        "SELECT * FROM ct_f",
        "SELECT 1 AS one INTO TABLE ct_g",
        "SELECT * FROM ct_g",
        # errors and IF NOT EXISTS
        "CREATE TABLE ct_a AS SELECT 1",
        "CREATE TABLE IF NOT EXISTS ct_a AS SELECT 1",
        "SELECT count(*) FROM ct_a",
        "CREATE TABLE ct_x AS SELECT 1 AS a, 2 AS a",
        "CREATE TABLE ct_x (a, b, c) AS SELECT 1, 2",
        "CREATE TABLE ct_x AS SELECT nope FROM ct_src",
        "SELECT 1 INTO ct_a",
        # the new tables take writes like any other
        "UPDATE ct_a SET doubled = 0 WHERE id <= 10",
        "DELETE FROM ct_a WHERE id > 400",
        "SELECT count(*), sum(doubled) FROM ct_a",
    ])
    same_description(postgres, target, "ct_a", "ct_b", "ct_c", "ct_f")


def test_create_table_as_rolls_back(pair):
    reset(pair)
    for c in pair:
        with c.transaction(force_rollback=True):
            c.execute("CREATE TABLE ct_tx AS SELECT * FROM ct_src")
            c.execute("SELECT count(*) FROM ct_tx")
    same(pair, "SELECT count(*) FROM ct_tx")
    for c in pair:
        with c.transaction():
            c.execute("CREATE TABLE ct_tx AS SELECT id FROM ct_src WHERE id < 5")
    same(pair, "SELECT * FROM ct_tx")
