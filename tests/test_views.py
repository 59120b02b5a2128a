"""Views (issue 31, item 5): CREATE [OR REPLACE] VIEW, DROP VIEW, ALTER VIEW … RENAME TO.

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test: the same rows, the same SQLSTATEs, messages and details (views over views, joins,
aggregates, ORDER BY/LIMIT, window functions; OR REPLACE's rules, 42P07, 42809 between
DROP TABLE and DROP VIEW, 2BP01 and CASCADE for dependent views, ROLLBACK of the DDL).
psql's ``\\d v`` and ``\\dv`` print the same text on both; ``\\d+ v`` works (its
definition text is not PostgreSQL's deparsed one). Writing into a view is refused with
0A000 on Meridian (PostgreSQL writes through a simple view): nothing is written. On the
``meridian-cluster`` target the tables are spread over three datanodes.
"""

from __future__ import annotations


import psycopg
import pytest

from test_indexes import outcome, pair, same  # noqa: F401 (pair is a fixture)
from test_psql_compat import psql

VIEWS = ["vw_over", "vw_join", "vw_agg", "vw_top", "vw_win", "vw_lit", "vw_cols", "vw_base",
         "vw_renamed", "vw_tx", "vw_r"]


@pytest.fixture(scope="module", autouse=True)
def drop_views_after(postgres):
    """PostgreSQL is shared by the test modules, whose catalog queries must not meet
    this module's views."""
    yield
    with psycopg.connect(postgres.dsn, autocommit=True) as c:
        for v in VIEWS + ["vw_two"]:
            c.execute(f"DROP VIEW IF EXISTS {v} CASCADE")
        c.execute("DROP TABLE IF EXISTS vw_t, vw_u CASCADE")


def reset(pair):
    for c in pair:
        for v in VIEWS:
            c.execute(f"DROP VIEW IF EXISTS {v} CASCADE")
        for t in ["vw_t", "vw_u"]:
            c.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
        c.execute("CREATE TABLE vw_t (id int PRIMARY KEY, grp text, amount numeric(10,2))")
        c.execute("CREATE TABLE vw_u (grp text PRIMARY KEY, label text)")
        c.execute("INSERT INTO vw_t SELECT i, 'g' || (i % 3), i * 1.5 FROM generate_series(1, 30) i")
        c.execute("INSERT INTO vw_t VALUES (31, NULL, NULL)")
        c.execute("INSERT INTO vw_u VALUES ('g0', 'zero'), ('g1', 'one'), ('g9', 'nine')")


def run_script(pair, statements):
    for sql in statements:
        same(pair, sql)


def test_views_read_as_postgres(pair):
    reset(pair)
    run_script(pair, [
        "CREATE VIEW vw_base AS SELECT id, grp, amount FROM vw_t WHERE id > 5",
        "SELECT * FROM vw_base",
        "SELECT b.id, b.amount * 2 FROM vw_base b WHERE b.grp = 'g1'",
        # a view over a view, and one joining a view to a table
        "CREATE VIEW vw_over AS SELECT id, amount FROM vw_base WHERE id < 20",
        "SELECT * FROM vw_over",
        "CREATE VIEW vw_join AS SELECT o.id, u.label FROM vw_over o JOIN vw_u u "
        "ON u.grp = 'g' || (o.id % 3)",
        "SELECT * FROM vw_join",
        "SELECT label, count(*) FROM vw_join GROUP BY label",
        # aggregates, a column list, ORDER BY/LIMIT and window functions inside
        "CREATE VIEW vw_agg (g, n, total) AS SELECT grp, count(*), sum(amount) FROM vw_t "
        "GROUP BY grp",
        "SELECT * FROM vw_agg",
        "SELECT g FROM vw_agg WHERE n > 5",
        "CREATE VIEW vw_top AS SELECT id, amount FROM vw_t ORDER BY amount DESC NULLS LAST "
        "LIMIT 3",
        "SELECT * FROM vw_top",
        "CREATE VIEW vw_win AS SELECT id, grp, row_number() OVER (PARTITION BY grp ORDER BY id) "
        "AS rn FROM vw_t",
        "SELECT * FROM vw_win WHERE rn <= 2",
        # a literal's column is text; a partial column list renames the first columns
        "CREATE VIEW vw_lit AS SELECT 'abc' AS s, 1 AS one, 2.5 AS x",
        "SELECT * FROM vw_lit",
        "SELECT pg_typeof(s), pg_typeof(x) FROM vw_lit",
        "CREATE VIEW vw_cols (a) AS SELECT id, grp FROM vw_t WHERE id = 1",
        "SELECT * FROM vw_cols",
        # in subqueries, correlated or not, and a WITH query of the same name as nothing
        "SELECT id FROM vw_t WHERE id IN (SELECT id FROM vw_over WHERE amount > 20)",
        "SELECT u.grp, (SELECT count(*) FROM vw_base b WHERE b.grp = u.grp) FROM vw_u u",
        "WITH vw_t AS (SELECT 1 AS id) SELECT count(*) FROM vw_base",
        # the view's own errors
        "CREATE VIEW vw_bad AS SELECT nope FROM vw_t",
        "CREATE VIEW vw_bad AS SELECT * FROM vw_missing",
        "CREATE VIEW vw_bad (a, b, c) AS SELECT 1, 2",
        "CREATE VIEW vw_bad AS SELECT 1 AS a, 2 AS a",
        "SELECT missing FROM vw_base",
        # metadata
        "SELECT viewname FROM pg_views WHERE viewname LIKE 'vw%' ORDER BY 1",
        "SELECT relname, relkind FROM pg_class WHERE relname LIKE 'vw%' ORDER BY 1",
        "SELECT attname, atttypid::regtype::text FROM pg_attribute WHERE attrelid = "
        "(SELECT oid FROM pg_class WHERE relname = 'vw_agg') ORDER BY attnum",
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_name LIKE 'vw%' ORDER BY 1",
        "SELECT table_name, column_name, ordinal_position, data_type, numeric_precision, "
        "is_nullable, is_updatable FROM information_schema.columns "
        "WHERE table_name IN ('vw_agg', 'vw_lit') ORDER BY 1, 3",
        "SELECT table_name, is_insertable_into FROM information_schema.tables "
        "WHERE table_name = 'vw_agg'",
        "SELECT table_name, check_option FROM information_schema.views "
        "WHERE table_name LIKE 'vw%' ORDER BY 1",
        "SELECT pg_get_viewdef(oid) IS NOT NULL FROM pg_class WHERE relname = 'vw_base'",
    ])
    # a parameter has no value where the stored query is bound again
    same(pair, "CREATE VIEW vw_bad AS SELECT %s::int AS x", (1,))


def test_view_ddl_rules_as_postgres(pair):
    reset(pair)
    run_script(pair, [
        "CREATE VIEW vw_base AS SELECT id, grp FROM vw_t",
        "CREATE VIEW vw_base AS SELECT 1",
        "CREATE VIEW vw_t AS SELECT 1",
        "CREATE TABLE vw_base (a int)",
        # OR REPLACE: only columns added at the end, with the same names and types
        "CREATE OR REPLACE VIEW vw_base AS SELECT id FROM vw_t",
        "CREATE OR REPLACE VIEW vw_base AS SELECT id AS ident, grp FROM vw_t",
        "CREATE OR REPLACE VIEW vw_base AS SELECT id::bigint, grp FROM vw_t",
        "CREATE OR REPLACE VIEW vw_base AS SELECT id, grp, amount FROM vw_t WHERE id < 4",
        "SELECT * FROM vw_base",
        "CREATE OR REPLACE VIEW vw_new AS SELECT 1 AS one",
        "SELECT * FROM vw_new",
        "DROP VIEW vw_new",
        # the wrong DROP for the kind
        "DROP TABLE vw_base",
        "DROP VIEW vw_t",
        "DROP VIEW vw_nope",
        "DROP VIEW IF EXISTS vw_nope",
        # dependencies: 2BP01 without CASCADE, for a table and for a view
        "CREATE VIEW vw_over AS SELECT id FROM vw_base",
        "DROP TABLE vw_t",
        "DROP VIEW vw_base",
        "DROP VIEW vw_base RESTRICT",
        "SELECT * FROM vw_over",
        "DROP VIEW vw_base CASCADE",
        "SELECT * FROM vw_over",
        "CREATE VIEW vw_base AS SELECT id, grp FROM vw_t",
        "CREATE VIEW vw_over AS SELECT id FROM vw_base",
        # both dropped in one statement: nothing else depends on them
        "DROP VIEW vw_over, vw_base",
        "CREATE VIEW vw_base AS SELECT id FROM vw_t",
        "DROP TABLE vw_t CASCADE",
        "SELECT * FROM vw_base",
        "SELECT count(*) FROM pg_class WHERE relname = 'vw_base'",
    ])


def test_rename_and_transactions_as_postgres(pair):
    reset(pair)
    run_script(pair, [
        "CREATE VIEW vw_base AS SELECT id FROM vw_t WHERE id <= 2",
        "ALTER VIEW vw_base RENAME TO vw_renamed",
        "SELECT * FROM vw_renamed",
        "SELECT * FROM vw_base",
        "ALTER VIEW vw_renamed RENAME TO vw_u",
        "ALTER VIEW vw_t RENAME TO vw_x",
        "ALTER VIEW IF EXISTS vw_nope RENAME TO vw_x",
        "ALTER VIEW vw_nope RENAME TO vw_x",
        "DROP VIEW vw_renamed",
    ])
    # DDL is transactional: ROLLBACK removes a created view, brings a dropped one back
    for c in pair:
        c.execute("CREATE VIEW vw_r AS SELECT 1 AS kept")
    for c in pair:
        with c.transaction(force_rollback=True):
            c.execute("CREATE VIEW vw_tx AS SELECT 1 AS x")
            c.execute("DROP VIEW vw_r")
            c.execute("SELECT * FROM vw_tx")
    run_script(pair, [
        "SELECT * FROM vw_tx",
        "SELECT * FROM vw_r",
    ])
    for c in pair:
        with c.transaction():
            c.execute("CREATE VIEW vw_tx AS SELECT 2 AS x")
    same(pair, "SELECT * FROM vw_tx")


def test_psql_describes_views_as_postgres(pair, postgres, target):
    reset(pair)
    run_script(pair, [
        "CREATE VIEW vw_base AS SELECT id, grp, amount FROM vw_t",
        "CREATE VIEW vw_agg (g, n) AS SELECT grp, count(*) FROM vw_t GROUP BY grp",
    ])
    for command in [r"\dv", r"\d vw_base", r"\d vw_agg"]:
        expected = psql(postgres, command)
        assert expected.startswith("exit=0"), expected
        got = psql(target, command)
        assert got == expected, f"{command}:\n{got}\nPostgreSQL:\n{expected}"
    verbose = psql(target, r"\d+ vw_agg")
    assert verbose.startswith("exit=0"), verbose
    assert "View definition:" in verbose and "count(*)" in verbose, verbose


def test_writes_through_a_view_are_refused(pair):
    """PostgreSQL writes through a simple view; Meridian refuses (0A000) and writes
    nothing, and refuses changes to what a view reads that would break it."""
    reset(pair)
    postgres, target = pair
    for c in pair:
        c.execute("CREATE VIEW vw_base AS SELECT id, grp FROM vw_t")
    for sql in ["INSERT INTO vw_base VALUES (100, 'x')",
                "UPDATE vw_base SET grp = 'x' WHERE id = 1",
                "DELETE FROM vw_base WHERE id = 1",
                "ALTER TABLE vw_t RENAME TO vw_t2",
                "ALTER TABLE vw_t DROP COLUMN grp",
                "ALTER TABLE vw_t RENAME COLUMN grp TO g",
                "ALTER TABLE vw_t ALTER COLUMN grp TYPE varchar(5)"]:
        got = outcome(target, sql)
        assert got[:2] == ("error", "0A000"), (sql, got)
    same(pair, "SELECT * FROM vw_t")
    same(pair, "SELECT * FROM vw_base")
    # what a view does not read is still altered freely
    same(pair, "ALTER TABLE vw_u RENAME COLUMN label TO name")


def test_views_are_seen_by_another_coordinator(target):
    """A view created, replaced or dropped through one coordinator is what the other
    binds (the catalog records live in the metadata service)."""
    second = getattr(target, "second", None)
    if second is None:
        pytest.skip("the target has one coordinator")
    with psycopg.connect(target.dsn, autocommit=True) as a, \
            psycopg.connect(second.dsn, autocommit=True) as b:
        a.execute("DROP VIEW IF EXISTS vw_two")
        a.execute("CREATE VIEW vw_two AS SELECT 41 + 1 AS answer")
        assert b.execute("SELECT * FROM vw_two").fetchall() == [(42,)]
        b.execute("CREATE OR REPLACE VIEW vw_two AS SELECT 42 AS answer, 'x' AS more")
        assert a.execute("SELECT * FROM vw_two").fetchall() == [(42, "x")]
        a.execute("DROP VIEW vw_two")
        with pytest.raises(psycopg.errors.UndefinedTable):
            b.execute("SELECT * FROM vw_two")
