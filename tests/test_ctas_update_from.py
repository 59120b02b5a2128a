"""CREATE TABLE … AS and SELECT … INTO (issue 31, item 5), UPDATE … FROM and DELETE …
USING (item 6).

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test: the same rows, command tags (``SELECT n``, ``CREATE TABLE AS`` for WITH NO DATA and
a skipped IF NOT EXISTS) and SQLSTATEs; the new tables' columns as PostgreSQL derives
them from the query (names, ``numeric`` without a typmod for an expression, ``text`` for
an unknown literal, a column list renaming them), compared through psql's ``\\d``; DDL
undone by ROLLBACK. UPDATE … FROM and DELETE … USING change the same rows as PostgreSQL
(joins to tables and subqueries, a target row joined to several rows changed once,
RETURNING reading the other tables, 42P01/42712). On the ``meridian-cluster`` target the new tables are placed by
Postgres-XL's default and their rows spread over three datanodes.
"""

from __future__ import annotations

import psycopg
import pytest

from test_indexes import outcome, pair, same  # noqa: F401 (pair is a fixture)
from test_psql_compat import psql

TABLES = ["uf_t", "uf_s", "uf_k", "ct_src", "ct_a", "ct_b", "ct_c", "ct_d", "ct_e", "ct_f", "ct_g", "ct_tx"]


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


def reset_joined(pair):
    for c in pair:
        c.execute("DROP TABLE IF EXISTS uf_t, uf_s, uf_k")
        c.execute("CREATE TABLE uf_t (id int PRIMARY KEY, grp int, v text, n numeric)")
        c.execute("CREATE TABLE uf_s (grp int PRIMARY KEY, label text, bonus numeric)")
        c.execute("CREATE TABLE uf_k (id int PRIMARY KEY, grp int)")
        c.execute("INSERT INTO uf_t SELECT i, i % 5, 'v' || i, i FROM generate_series(1, 300) i")
        c.execute("INSERT INTO uf_s VALUES (0, 'zero', 0.5), (1, 'one', 1.5), (2, 'two', NULL)")
        c.execute("INSERT INTO uf_k SELECT i, i % 3 FROM generate_series(1, 40) i")


def test_update_from_and_delete_using_as_postgres(pair):
    reset_joined(pair)
    run_script(pair, [
        "UPDATE uf_t SET v = s.label, n = n + s.bonus FROM uf_s s WHERE uf_t.grp = s.grp "
        "AND uf_t.id <= 100",
        "SELECT * FROM uf_t ORDER BY id",
        "UPDATE uf_t t SET n = t.n * 2 FROM uf_s s WHERE t.grp = s.grp AND s.label = 'two' "
        "RETURNING t.id, t.n, s.label",
        # a target row joined to several rows is updated once (each k row joins one t row
        # here, several k rows the same grp)
        "UPDATE uf_t SET v = 'seen' FROM uf_k k WHERE uf_t.grp = k.grp AND uf_t.id > 250",
        "SELECT count(*) FROM uf_t WHERE v = 'seen'",
        # a subquery and a join in FROM
        "UPDATE uf_t SET n = q.total FROM (SELECT grp, count(*) AS total FROM uf_k GROUP BY grp) q "
        "WHERE q.grp = uf_t.grp AND uf_t.id BETWEEN 101 AND 150",
        "UPDATE uf_t SET v = s.label || k.id FROM uf_s s JOIN uf_k k ON k.grp = s.grp "
        "WHERE uf_t.id = k.id + 200",
        "SELECT * FROM uf_t ORDER BY id",
        "DELETE FROM uf_t USING uf_s s WHERE uf_t.grp = s.grp AND s.bonus > 1 AND uf_t.id < 60 "
        "RETURNING uf_t.id, s.label",
        "DELETE FROM uf_t t USING uf_k k, uf_s s WHERE t.id = k.id AND k.grp = s.grp "
        "AND s.label = 'zero'",
        "SELECT count(*), sum(n) FROM uf_t",
        # nothing joined: nothing changed
        "UPDATE uf_t SET v = 'never' FROM uf_s s WHERE s.grp = 99",
        "DELETE FROM uf_t USING uf_s s WHERE s.grp = 99",
        # errors as PostgreSQL gives them
        "UPDATE uf_t SET v = x.label FROM uf_s s WHERE uf_t.grp = s.grp",
        "UPDATE uf_t SET v = 'a' FROM uf_t WHERE uf_t.id = 1",
        "DELETE FROM uf_t USING uf_t WHERE uf_t.id = 1",
        "UPDATE uf_t SET v = s.label FROM uf_missing s",
        "UPDATE uf_t SET nope = s.label FROM uf_s s",
        "SELECT * FROM uf_t ORDER BY id",
    ])
    _, target = pair
    for sql in ["EXPLAIN UPDATE uf_t SET v = s.label FROM uf_s s WHERE uf_t.grp = s.grp",
                "UPDATE uf_t SET v = s.label FROM uf_s s WHERE uf_t.grp = s.grp RETURNING *"]:
        got = outcome(target, sql)
        assert got[:2] == ("error", "0A000"), (sql, got)


def test_update_from_of_a_row_changed_since_the_snapshot_as_postgres(postgres, target):
    """REPEATABLE READ: a target row another transaction changed after the snapshot
    fails UPDATE … FROM and DELETE … USING with 40001 on both; the row keeps the other
    transaction's change. (Under READ COMMITTED PostgreSQL re-evaluates the join on the
    new version; Meridian fails with 40001 there too rather than write values computed
    from the old one.)"""
    got = []
    for server in (postgres, target):
        with psycopg.connect(server.dsn, autocommit=True) as setup:
            reset_joined([setup])
        seen = []
        for sql in ["UPDATE uf_t SET n = uf_t.n + s.bonus FROM uf_s s "
                    "WHERE uf_t.grp = s.grp AND uf_t.id = 5",
                    "DELETE FROM uf_t USING uf_s s WHERE uf_t.grp = s.grp AND uf_t.id = 5"]:
            with psycopg.connect(server.dsn) as joiner, \
                    psycopg.connect(server.dsn, autocommit=True) as other:
                joiner.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                joiner.execute("SELECT count(*) FROM uf_t")  # the snapshot
                other.execute("UPDATE uf_t SET n = n + 1000 WHERE id = 5")
                try:
                    joiner.execute(sql)
                    seen.append("ok")
                except psycopg.Error as e:
                    seen.append(e.sqlstate)
                joiner.rollback()
                seen.append(other.execute("SELECT n FROM uf_t WHERE id = 5").fetchone())
        got.append(seen)
    assert got[1] == got[0]
    assert got[0][0] == "40001", got
