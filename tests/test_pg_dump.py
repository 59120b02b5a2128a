"""pg_dump and restore (issue 32, item 8): PostgreSQL 15's own pg_dump reads a Meridian
database (its catalog queries, its read-only REPEATABLE READ transaction, LOCK TABLE,
COPY TO, the sequences' state), and the script restores into a fresh Meridian with the
same rows; a PostgreSQL 15 database's dump restores into Meridian as well.

Dumps are taken with --no-owner: restoring ownership (ALTER … OWNER TO) is not there yet.
"""

import subprocess

import psycopg

from conftest import pg_tool

SCHEMA = [
    "CREATE TYPE pd_mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TABLE pd_t (id int PRIMARY KEY, v text DEFAULT 'x', n numeric(10,2) CHECK (n > 0),"
    " at timestamptz NOT NULL DEFAULT '2024-01-02 03:04:05+00')",
    "CREATE INDEX pd_t_v ON pd_t (v)",
    "CREATE TABLE pd_c (id serial PRIMARY KEY, t_id int REFERENCES pd_t (id) ON DELETE CASCADE,"
    " u text UNIQUE, mood pd_mood, j jsonb, a int[])",
    "CREATE SEQUENCE pd_s START 5 INCREMENT 3",
    "CREATE VIEW pd_v AS SELECT id, v FROM pd_t WHERE id > 1",
    "INSERT INTO pd_t VALUES (1, 'a', 1.5), (2, NULL, 3), (3, 'tab\there', 4.25), (4, 'quote''s', NULL)",
    "INSERT INTO pd_c (t_id, u, mood, j, a) VALUES (1, 'q', 'ok', '{\"k\": [1, 2]}', '{1,NULL,3}'),"
    " (2, 'w', NULL, NULL, '{}'), (NULL, 'e\\\\f', 'happy', '\"s\"', NULL)",
    "SELECT nextval('pd_s'), nextval('pd_s')",
]

TABLES = ["pd_t", "pd_c", "pd_v"]


def run(server, sql):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        for s in sql:
            c.execute(s)


def rows(server, table):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        return c.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


def dump(server) -> str:
    res = subprocess.run(
        [pg_tool("pg_dump"), "--no-owner", "-h", server.host, "-p", str(server.port),
         "-U", "postgres", "postgres"],
        capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"pg_dump of {server.kind} failed:\n{res.stderr}"
    return res.stdout


def restore(server, script: str):
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", server.host,
         "-p", str(server.port), "-U", "postgres", "-d", "postgres"],
        input=script, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"restore into {server.kind} failed:\n{res.stderr}"


def check_restored(source, restored):
    for t in TABLES:
        assert rows(restored, t) == rows(source, t), t
    with psycopg.connect(restored.dsn, autocommit=True) as c:
        # The sequences go on past every value the source handed out.
        (s,) = c.execute("SELECT nextval('pd_s')").fetchone()
        assert s > 8
        (i,) = c.execute("INSERT INTO pd_c (u) VALUES ('new') RETURNING id").fetchone()
        assert i > 3
        # Constraints and defaults came back.
        c.execute("INSERT INTO pd_t (id) VALUES (10)")
        assert c.execute("SELECT v FROM pd_t WHERE id = 10").fetchone() == ("x",)
        for bad, state in [("INSERT INTO pd_t VALUES (1)", "23505"),
                           ("INSERT INTO pd_t VALUES (11, 'z', -1)", "23514"),
                           ("INSERT INTO pd_c (t_id, u) VALUES (99, 'fk')", "23503"),
                           ("INSERT INTO pd_c (u) VALUES ('q')", "23505"),
                           ("INSERT INTO pd_c (u, mood) VALUES ('m', 'angry')", "22P02")]:
            try:
                c.execute(bad)
                raise AssertionError(f"{bad} succeeded after the restore")
            except psycopg.Error as e:
                assert e.sqlstate == state, (bad, e.sqlstate, str(e))


def test_dump_of_meridian_restores_into_a_fresh_meridian(meridian_factory):
    source = meridian_factory()
    run(source, SCHEMA)
    script = dump(source)
    assert "CREATE TABLE public.pd_c" in script and "COPY public.pd_t" in script
    assert "SELECT pg_catalog.setval('public.pd_s'" in script
    restored = meridian_factory()
    restore(restored, script)
    check_restored(source, restored)


def test_dump_of_postgres_restores_into_meridian(postgres_fresh, meridian_factory):
    run(postgres_fresh, SCHEMA)
    restored = meridian_factory()
    restore(restored, dump(postgres_fresh))
    check_restored(postgres_fresh, restored)
