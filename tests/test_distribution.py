"""Postgres-XL's ``DISTRIBUTE BY`` in CREATE TABLE and the ``meridian_distribution`` view.

1. each clause (``HASH (col)``, ``REPLICATION``, ``ROUNDROBIN``) is recorded and shown by
   the view, whatever the keywords' case, with the column's identifier rules;
2. without a clause, Postgres-XL's default: the primary key's column, else the first
   hashable column, else round-robin; pgbench -i's tables (keys added later by ALTER
   TABLE) are hashed on aid / bid / tid / tid;
3. every refusal with its SQLSTATE (unknown column 42703, unhashable type, a primary key
   without the hash column, MODULO, TO NODE / TO GROUP: 0A000, malformed clause 42601),
   the session still usable afterwards;
4. PostgreSQL 15 itself has no such clause: there it is a syntax error.

Meridian-only (the clause is Postgres-XL's): it refuses to run against PostgreSQL as the
server under test.
"""

import subprocess

import psycopg
import pytest

from conftest import pg_tool


@pytest.fixture
def conn(meridian, server_kind):
    if not server_kind.startswith("meridian"):
        pytest.fail("test_distribution.py checks Meridian's DISTRIBUTE BY; run it against Meridian only")
    c = psycopg.connect(meridian.dsn, autocommit=True)
    yield c
    c.close()


def distribution(conn, table):
    return conn.execute(
        "SELECT table_schema, distribution, distribution_column, buckets"
        " FROM meridian_distribution WHERE table_name = %s", (table,)).fetchall()


@pytest.mark.parametrize("clause,expected", [
    ("DISTRIBUTE BY HASH (b)", ("public", "hash", "b", 4096)),
    ("distribute by hash(B)", ("public", "hash", "b", 4096)),
    ('DISTRIBUTE BY HASH ("Mixed")', ("public", "hash", "Mixed", 4096)),
    ("Distribute By Replication", ("public", "replication", None, None)),
    ("DISTRIBUTE BY ROUNDROBIN", ("public", "roundrobin", None, None)),
    ("WITH (fillfactor = 90) DISTRIBUTE BY REPLICATION;", ("public", "replication", None, None)),
    ("/* a comment */ DISTRIBUTE -- and another\n BY HASH (a)", ("public", "hash", "a", 4096)),
])
def test_clause_is_recorded_and_shown(conn, clause, expected):
    conn.execute(f'CREATE TABLE dist_t (a int, b text, "Mixed" bigint) {clause}')
    assert distribution(conn, "dist_t") == [expected]
    conn.execute("INSERT INTO dist_t VALUES (1, 'x', 2)")
    assert conn.execute("SELECT a, b FROM dist_t").fetchall() == [(1, "x")]


def test_view_reads_qualified_and_lists_every_table(conn):
    conn.execute("CREATE TABLE dist_a (id int PRIMARY KEY)")
    conn.execute("CREATE TABLE dist_b (id int) DISTRIBUTE BY REPLICATION")
    rows = conn.execute(
        "SELECT table_name, distribution FROM pg_catalog.meridian_distribution"
        " ORDER BY table_name").fetchall()
    assert rows == [("dist_a", "hash"), ("dist_b", "replication")]
    cols = conn.execute("SELECT * FROM meridian_distribution LIMIT 0")
    assert [(d.name, d.type_code) for d in cols.description] == [
        ("table_schema", 25), ("table_name", 25), ("distribution", 25),
        ("distribution_column", 25), ("buckets", 23)]


@pytest.mark.parametrize("ddl,expected", [
    # the primary key's column, wherever it is declared
    ("CREATE TABLE dist_t (a text, b int PRIMARY KEY)", ("public", "hash", "b", 4096)),
    ("CREATE TABLE dist_t (a text, b int, c int, PRIMARY KEY (c, b))", ("public", "hash", "c", 4096)),
    # no key: the first column of a hashable type
    ("CREATE TABLE dist_t (tags text[], n numeric, a int)", ("public", "hash", "n", 4096)),
    # nothing hashable
    ("CREATE TABLE dist_t (tags text[], ids int[])", ("public", "roundrobin", None, None)),
])
def test_default_distribution(conn, ddl, expected):
    conn.execute(ddl)
    assert distribution(conn, "dist_t") == [expected]


def test_pgbench_tables_are_hashed_on_their_keys(meridian, conn):
    cmd = [pg_tool("pgbench"), "-h", meridian.host, "-p", str(meridian.port), "-U", "postgres",
           "-i", "-s", "1", "-q", "postgres"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = conn.execute(
        "SELECT table_name, distribution, distribution_column, buckets"
        " FROM meridian_distribution ORDER BY table_name").fetchall()
    assert rows == [
        ("pgbench_accounts", "hash", "aid", 4096),
        ("pgbench_branches", "hash", "bid", 4096),
        ("pgbench_history", "hash", "tid", 4096),
        ("pgbench_tellers", "hash", "tid", 4096),
    ]


@pytest.mark.parametrize("sql,sqlstate,words", [
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY HASH (nope)", "42703", "nope"),
    ('CREATE TABLE dist_t (a int) DISTRIBUTE BY HASH ("A")', "42703", '"A"'),
    ("CREATE TABLE dist_t (a int, tags text[]) DISTRIBUTE BY HASH (tags)", "0A000",
     "hash-distributable"),
    ("CREATE TABLE dist_t (a int PRIMARY KEY, b int) DISTRIBUTE BY HASH (b)", "0A000",
     "must contain the hash distribution column"),
    ("CREATE TABLE dist_t (a int PRIMARY KEY) DISTRIBUTE BY ROUNDROBIN", "0A000", "round robin"),
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY MODULO (a)", "0A000", "MODULO"),
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY HASH (a) TO NODE (dn1, dn2)", "0A000", "TO NODE"),
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY REPLICATION TO GROUP g1", "0A000", "TO GROUP"),
    ("CREATE TABLE dist_t (a int) TO GROUP g1", "0A000", "TO GROUP"),
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY SHARDED", "42601", 'at or near "SHARDED"'),
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY HASH a", "42601", 'at or near "a"'),
    ("CREATE TABLE dist_t (a int, b int) DISTRIBUTE BY HASH (a, b)", "42601", 'at or near ","'),
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY", "42601", "at end of input"),
    ("CREATE TABLE dist_t (a int) DISTRIBUTE BY REPLICATION WITH (fillfactor = 90)", "42601",
     'at or near "WITH"'),
])
def test_refusals_keep_the_session(conn, sql, sqlstate, words):
    with pytest.raises(psycopg.Error) as e:
        conn.execute(sql)
    assert e.value.sqlstate == sqlstate, (sql, e.value.sqlstate, str(e.value))
    assert words.lower() in str(e.value).lower(), (sql, str(e.value))
    assert conn.execute("SELECT 1").fetchone() == (1,)
    assert distribution(conn, "dist_t") == []


def test_syntax_error_position(conn):
    with pytest.raises(psycopg.errors.SyntaxError) as e:
        conn.execute("CREATE TABLE dist_t (a int) DISTRIBUTE BY SHARDED")
    assert e.value.diag.statement_position == "43"
    with pytest.raises(psycopg.errors.UndefinedColumn) as e:
        conn.execute("CREATE TABLE dist_t (a int) DISTRIBUTE BY HASH (nope)")
    assert e.value.diag.statement_position == "49"


def test_add_primary_key_must_contain_the_hash_column(conn):
    conn.execute("CREATE TABLE dist_t (a int NOT NULL, b int NOT NULL) DISTRIBUTE BY HASH (b)")
    with pytest.raises(psycopg.Error) as e:
        conn.execute("ALTER TABLE dist_t ADD PRIMARY KEY (a)")
    assert e.value.sqlstate == "0A000", str(e.value)
    assert "must contain the hash distribution column" in str(e.value)
    assert conn.execute("SELECT 1").fetchone() == (1,)
    conn.execute("ALTER TABLE dist_t ADD PRIMARY KEY (a, b)")
    conn.execute("CREATE TABLE dist_r (a int NOT NULL) DISTRIBUTE BY REPLICATION")
    conn.execute("ALTER TABLE dist_r ADD PRIMARY KEY (a)")
    conn.execute("CREATE TABLE dist_rr (a int NOT NULL) DISTRIBUTE BY ROUNDROBIN")
    with pytest.raises(psycopg.Error) as e:
        conn.execute("ALTER TABLE dist_rr ADD PRIMARY KEY (a)")
    assert e.value.sqlstate == "0A000", str(e.value)


def test_postgres_has_no_distribute_by(postgres):
    with psycopg.connect(postgres.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS dist_pg")
        with pytest.raises(psycopg.errors.SyntaxError) as e:
            c.execute("CREATE TABLE dist_pg (a int) DISTRIBUTE BY HASH (a)")
        assert 'at or near "DISTRIBUTE"' in str(e.value)
