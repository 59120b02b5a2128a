"""CHECK constraints (issue 31, item 3): column and table constraints, named and with
PostgreSQL's names, enforced on INSERT, UPDATE, COPY and ON CONFLICT DO UPDATE (NULL
passes), refused expressions, ALTER TABLE … ADD CHECK over existing rows, DROP
CONSTRAINT, RENAME COLUMN and DROP COLUMN, and the catalogs (pg_constraint,
pg_get_constraintdef, information_schema, psql's ``\\d``).

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test: the same rows, the same SQLSTATEs, messages and details, and psql's ``\\d`` of each
table the same. On the ``meridian-cluster`` target the rows are spread over three
datanodes.
"""

from __future__ import annotations

import psycopg

from test_ddl import run_script, same_description
from test_indexes import outcome, pair, reset, same  # noqa: F401 (pair is a fixture)

CATALOG = (
    "SELECT conname, contype, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true), "
    "conkey, condeferrable, convalidated FROM pg_constraint "
    "WHERE conrelid = '{t}'::regclass AND contype = 'c' ORDER BY conname"
)


def test_create_insert_update_as_postgres(pair, postgres, target):
    reset(pair, "ck_a")
    run_script(pair, [
        "CREATE TABLE ck_a (id int PRIMARY KEY, a int CHECK (a > 0), b text CHECK (b <> ''), "
        "c numeric CONSTRAINT c_positive CHECK (c > 0), e bigint CHECK (e BETWEEN 1 AND 5) "
        "CHECK (e IS NOT NULL), CHECK (a < 100 AND c < 50), CHECK (a + e < 60))",
        CATALOG.format(t="ck_a"),
        # each constraint, and the first by name of several
        "INSERT INTO ck_a VALUES (1, 0, 'x', 1, 1)",
        "INSERT INTO ck_a VALUES (1, 1, '', 1, 1)",
        "INSERT INTO ck_a VALUES (1, 1, 'x', -1, 1)",
        "INSERT INTO ck_a VALUES (1, 1, 'x', 1, NULL)",
        "INSERT INTO ck_a VALUES (1, 200, 'x', 100, 9)",
        "INSERT INTO ck_a VALUES (1, 99, 'x', 1, 5)",
        # NULL passes
        "INSERT INTO ck_a VALUES (2, NULL, NULL, NULL, 3)",
        "INSERT INTO ck_a VALUES (3, 5, 'y', 2.5, 2), (4, 6, 'z', 3, 4)",
        "INSERT INTO ck_a SELECT i, i, 'v' || i, i, 1 FROM generate_series(10, 20) i",
        "INSERT INTO ck_a SELECT i, i - 25, 'w', 1, 1 FROM generate_series(21, 30) i",
        "UPDATE ck_a SET a = a - 5 WHERE id >= 3",
        "UPDATE ck_a SET a = a - 1 WHERE id = 3",
        "UPDATE ck_a SET b = '' WHERE id = 2",
        "UPDATE ck_a SET e = e + 1 WHERE id = 4 RETURNING *",
        "UPDATE ck_a SET e = e + 1 WHERE id = 4",
        "SELECT * FROM ck_a ORDER BY id",
        # ON CONFLICT DO UPDATE checks the updated row, DO NOTHING the proposed one
        "INSERT INTO ck_a VALUES (3, 1, 'q', 1, 1) ON CONFLICT (id) DO UPDATE SET a = -excluded.a",
        "INSERT INTO ck_a VALUES (3, 1, 'q', 1, 1) ON CONFLICT (id) DO UPDATE SET a = excluded.a + 1 RETURNING *",
        "INSERT INTO ck_a VALUES (3, -1, 'q', 1, 1) ON CONFLICT (id) DO NOTHING",
        "SELECT * FROM ck_a ORDER BY id",
        # UPDATE … FROM checks the rows it changes too
        "UPDATE ck_a SET a = ck_a.a - v.d FROM (VALUES (10, 20), (11, 1)) v(id, d)"
        " WHERE ck_a.id = v.id",
        "UPDATE ck_a SET a = ck_a.a - v.d FROM (VALUES (11, 1)) v(id, d) WHERE ck_a.id = v.id",
        "SELECT * FROM ck_a ORDER BY id",
    ])
    same_description(postgres, target, "ck_a")


def test_names_and_definitions_as_postgres(pair, postgres, target):
    reset(pair, "ck_b")
    run_script(pair, [
        "CREATE TABLE ck_b (a int, b text, c numeric, d boolean, e bigint, f date, g varchar(10), "
        "h float8, "
        "CHECK (a IN (1, 2) AND b > 'a'), CHECK (a + 1 > 0), CHECK (a * 2 + 1 > 0), "
        "CHECK ((a > 0 OR a < -5) AND d), CHECK (NOT (a > 0)), CHECK (b LIKE 'x%'), "
        "CHECK (length(b) < 5), CHECK (e > 5), CHECK (c > 1.5), CHECK (c >= -2.5), "
        "CHECK (f > '2000-01-01'), CHECK (coalesce(a, 0) >= 0), "
        "CHECK (a IS DISTINCT FROM 3), CHECK (-a < 5), CHECK (a NOT IN (3, 4)), "
        "CHECK (g <> 'z'), CHECK (h > 0), CHECK (e > 5000000000), "
        "CHECK (a > 0 AND a < 10 AND a <> 5), CHECK (upper(b) = b), "
        "CHECK (a BETWEEN 1 AND 10 OR a IS NULL), CHECK (b || 'x' <> 'yx'), CHECK (a % 2 = 0), "
        "CHECK (a - (a - 1) = 1), CHECK (a > 0 AND a > 1))",
        CATALOG.format(t="ck_b"),
        "SELECT constraint_name, check_clause FROM information_schema.check_constraints "
        "WHERE constraint_name LIKE 'ck_b%' ORDER BY 1",
        "SELECT constraint_name, table_name, constraint_type, is_deferrable, initially_deferred "
        "FROM information_schema.table_constraints WHERE table_name = 'ck_b' ORDER BY 1",
        "SELECT relchecks FROM pg_class WHERE relname = 'ck_b'",
    ])
    same_description(postgres, target, "ck_b")


def test_refused_expressions_as_postgres(pair):
    reset(pair, "ck_bad")
    run_script(pair, [
        "CREATE TABLE ck_bad (a int CHECK (a > (SELECT 1)))",
        "CREATE TABLE ck_bad (a int CHECK (count(*) > 0))",
        "CREATE TABLE ck_bad (a int CHECK (a))",
        "CREATE TABLE ck_bad (a int CHECK (row_number() OVER () > 0))",
        "CREATE TABLE ck_bad (a int, CHECK (b > 0))",
        "CREATE TABLE ck_bad (a int CONSTRAINT x CHECK (a > 0), b int CONSTRAINT x CHECK (b > 0))",
        # volatile functions are allowed, as in PostgreSQL
        "CREATE TABLE ck_bad (a int, r float8 CHECK (random() >= 0))",
        "INSERT INTO ck_bad VALUES (1, 1)",
        "SELECT * FROM ck_bad",
    ])


def test_alter_table_as_postgres(pair, postgres, target):
    reset(pair, "ck_c")
    run_script(pair, [
        "CREATE TABLE ck_c (id int PRIMARY KEY, a int, b text)",
        "INSERT INTO ck_c VALUES (1, 1, 'x'), (2, 5, NULL), (3, NULL, 'z')",
        # existing rows are checked: 23514 and nothing added
        "ALTER TABLE ck_c ADD CHECK (a > 3)",
        "ALTER TABLE ck_c ADD CONSTRAINT a_small CHECK (a < 3)",
        CATALOG.format(t="ck_c"),
        "ALTER TABLE ck_c ADD CHECK (a > 0)",
        "ALTER TABLE ck_c ADD CHECK (a < 10), ADD CHECK (a <> 7)",
        "ALTER TABLE ck_c ADD CONSTRAINT ck_c_a_check CHECK (a > 0)",
        "ALTER TABLE ck_c ADD CONSTRAINT b_short CHECK (length(b) < 3)",
        CATALOG.format(t="ck_c"),
        "INSERT INTO ck_c VALUES (4, 7, 'q')",
        "INSERT INTO ck_c VALUES (4, 0, 'q')",
        "INSERT INTO ck_c VALUES (4, 4, 'qqqq')",
        "ALTER TABLE ck_c DROP CONSTRAINT ck_c_a_check1",
        "ALTER TABLE ck_c DROP CONSTRAINT nosuch",
        "ALTER TABLE ck_c DROP CONSTRAINT IF EXISTS nosuch",
        "INSERT INTO ck_c VALUES (4, 70, 'q')",
        # a renamed column keeps its constraints; a dropped one takes them along
        "ALTER TABLE ck_c RENAME COLUMN a TO aa",
        CATALOG.format(t="ck_c"),
        "INSERT INTO ck_c VALUES (5, 0, 'q')",
        "ALTER TABLE ck_c DROP COLUMN b",
        CATALOG.format(t="ck_c"),
        "SELECT * FROM ck_c ORDER BY id",
    ])
    same_description(postgres, target, "ck_c")


def test_new_column_type_rechecks_rows_as_postgres(pair):
    reset(pair, "ck_f")
    run_script(pair, [
        "CREATE TABLE ck_f (id int PRIMARY KEY, c numeric CONSTRAINT not_two CHECK (c <> 2))",
        "INSERT INTO ck_f VALUES (1, 2.4), (2, 7)",
        # 2.4 rounds to 2
        "ALTER TABLE ck_f ALTER COLUMN c TYPE numeric(3, 0)",
        "ALTER TABLE ck_f ALTER COLUMN c TYPE numeric(4, 1)",
        "SELECT * FROM ck_f ORDER BY id",
        CATALOG.format(t="ck_f"),
    ])


def test_alter_table_rolled_back_keeps_constraints(pair):
    reset(pair, "ck_d")
    run_script(pair, ["CREATE TABLE ck_d (id int PRIMARY KEY, a int CHECK (a > 0))"])
    for c in pair:
        with c.transaction():
            c.execute("ALTER TABLE ck_d DROP CONSTRAINT ck_d_a_check")
            c.execute("ALTER TABLE ck_d ADD CONSTRAINT other CHECK (a < 5)")
            raise psycopg.Rollback()
    run_script(pair, [
        CATALOG.format(t="ck_d"),
        "INSERT INTO ck_d VALUES (1, 0)",
        "INSERT INTO ck_d VALUES (1, 9)",
    ])


def copy_in(conn, sql, data):
    try:
        with conn.cursor() as cur:
            with cur.copy(sql) as copy:
                copy.write(data)
        return ("ok",)
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail)


def test_copy_checks_every_row_as_postgres(pair):
    reset(pair, "ck_e")
    run_script(pair, ["CREATE TABLE ck_e (id int PRIMARY KEY, a int CHECK (a >= 0))"])
    got = [copy_in(c, "COPY ck_e FROM STDIN", b"1\t1\n2\t\\N\n3\t-3\n") for c in pair]
    assert got[1] == got[0]
    got = [copy_in(c, "COPY ck_e FROM STDIN", b"1\t1\n2\t\\N\n") for c in pair]
    assert got[1] == got[0]
    same(pair, "SELECT * FROM ck_e ORDER BY id")
    # into a table truncated by the same transaction (the bulk load)
    for c in pair:
        with c.transaction():
            c.execute("TRUNCATE ck_e")
            got = copy_in(c, "COPY ck_e FROM STDIN", b"5\t5\n6\t-6\n")
            assert got[:2] == ("error", "23514"), got
            raise psycopg.Rollback()
    same(pair, "SELECT * FROM ck_e ORDER BY id")


def test_no_inherit_is_refused_not_ignored(target):
    """Meridian has no inheritance, so NO INHERIT would change nothing: 0A000 rather
    than a constraint that pretends to be one (PostgreSQL accepts it)."""
    with psycopg.connect(target.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS ck_ni")
        got = outcome(c, "CREATE TABLE ck_ni (a int CHECK (a > 0) NO INHERIT)")
    if target.kind == "postgres":
        assert got[0] == "ok", got
    else:
        assert got[:2] == ("error", "0A000"), got
