"""pg_dump and restore (issue 32, item 8): PostgreSQL 15's own pg_dump reads a Meridian
database (its catalog queries, its read-only REPEATABLE READ transaction, LOCK TABLE,
COPY TO, the sequences' state), and the script restores into a fresh Meridian and into a
PostgreSQL 15 database with the same rows, constraints and sequences; a PostgreSQL 15
database's dump restores into Meridian as well, comments included. `pg_dumpall --roles-only` of Meridian
restores its roles (attributes, limits, expiry, password hashes) into both.

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
    "COMMENT ON TABLE pd_t IS 'the t table'",
    "COMMENT ON COLUMN pd_t.v IS 'v''s comment'",
    "COMMENT ON VIEW pd_v IS 'a view'",
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


class Database:
    """Database `name` of `server` (a ServerHandle), where a restore goes."""

    def __init__(self, server, name: str):
        self.host, self.port, self.kind, self.name = server.host, server.port, server.kind, name
        self.dsn = server.dsn.replace("dbname=postgres", f"dbname={name}")


def restore(server, script: str, dbname: str = "postgres"):
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", server.host,
         "-p", str(server.port), "-U", "postgres", "-d", dbname],
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
        # So did the comments.
        assert c.execute(
            "SELECT obj_description('pd_t'::regclass, 'pg_class'), col_description('pd_t'::regclass, 2),"
            " obj_description('pd_v'::regclass, 'pg_class')").fetchone() == (
            "the t table", "v's comment", "a view")
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


def test_dump_of_meridian_restores_into_postgres(meridian_factory, postgres_fresh):
    source = meridian_factory()
    run(source, SCHEMA)
    with psycopg.connect(postgres_fresh.dsn, autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS from_meridian")
        c.execute("CREATE DATABASE from_meridian")
    restored = Database(postgres_fresh, "from_meridian")
    restore(restored, dump(source), restored.name)
    check_restored(source, restored)
    with psycopg.connect(restored.dsn, autocommit=True) as c:
        # The view and the index are PostgreSQL's own objects now.
        assert c.execute("SELECT count(*) FROM pg_views WHERE viewname = 'pd_v'").fetchone() == (1,)
        assert c.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'pd_t_v'").fetchone() == (
            "CREATE INDEX pd_t_v ON public.pd_t USING btree (v)",)


def test_dump_of_chosen_tables(meridian_factory, postgres_fresh):
    """pg_dump -t PATTERN selects tables with `relkind OPERATOR(pg_catalog.=) ANY (…)`."""
    source = meridian_factory()
    run(source, SCHEMA)
    res = subprocess.run(
        [pg_tool("pg_dump"), "--no-owner", "-t", "pd_t", "-t", "pd_v", "-h", source.host,
         "-p", str(source.port), "-U", "postgres", "postgres"],
        capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "CREATE TABLE public.pd_t" in res.stdout and "CREATE VIEW public.pd_v" in res.stdout
    assert "pd_c" not in res.stdout and "pd_mood" not in res.stdout
    with psycopg.connect(postgres_fresh.dsn, autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS chosen")
        c.execute("CREATE DATABASE chosen")
    restored = Database(postgres_fresh, "chosen")
    restore(restored, res.stdout, restored.name)
    assert rows(restored, "pd_t") == rows(source, "pd_t")
    assert rows(restored, "pd_v") == rows(source, "pd_v")


ROLES = [
    "CREATE ROLE pd_login LOGIN PASSWORD 'pw' CONNECTION LIMIT 5 VALID UNTIL '2030-01-02 03:04:05+00'",
    "CREATE ROLE pd_admin SUPERUSER",
    "CREATE ROLE pd_plain",
    "CREATE ROLE pd_member NOINHERIT",
    "GRANT pd_plain TO pd_login WITH ADMIN OPTION",
    "GRANT pd_plain TO pd_member",
]

MEMBERS = """SELECT r.rolname, m.rolname, g.rolname, a.admin_option FROM pg_auth_members a
             JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member
             JOIN pg_roles g ON g.oid = a.grantor WHERE m.rolname LIKE 'pd\\_%' ORDER BY 1, 2"""

AUTHID = """SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin,
                   rolreplication, rolbypassrls, rolconnlimit, rolvaliduntil, rolpassword
            FROM pg_authid WHERE rolname LIKE 'pd\\_%' ORDER BY 1"""


def authid(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        return c.execute(AUTHID).fetchall(), c.execute(MEMBERS).fetchall()


def test_roles_dump_restores_into_meridian_and_postgres(meridian_factory, postgres_fresh):
    source = meridian_factory()
    run(source, ROLES)
    res = subprocess.run(
        [pg_tool("pg_dumpall"), "--roles-only", "-h", source.host, "-p", str(source.port),
         "-U", "postgres"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"pg_dumpall --roles-only failed:\n{res.stderr}"
    script = res.stdout
    assert "CREATE ROLE pd_login;" in script and "SCRAM-SHA-256$4096:" in script
    assert "GRANT pd_plain TO pd_login WITH ADMIN OPTION GRANTED BY postgres;" in script
    want = authid(source)
    assert [r[0] for r in want[0]] == ["pd_admin", "pd_login", "pd_member", "pd_plain"]
    assert want[1] == [("pd_plain", "pd_login", "postgres", True),
                       ("pd_plain", "pd_member", "postgres", False)]
    with psycopg.connect(postgres_fresh.dsn, autocommit=True) as c:
        for r in ("pd_login", "pd_admin", "pd_member", "pd_plain"):
            c.execute(f"DROP ROLE IF EXISTS {r}")
    for target in (meridian_factory(), postgres_fresh):
        # As with PostgreSQL's own dumps, the bootstrap superuser exists already: its
        # CREATE ROLE fails, everything else applies.
        res = subprocess.run(
            [pg_tool("psql"), "-X", "-q", "-h", target.host, "-p", str(target.port),
             "-U", "postgres", "-d", "postgres"],
            input=script, capture_output=True, text=True, timeout=120)
        errors = [line for line in res.stderr.splitlines() if "ERROR" in line]
        assert len(errors) == 1 and 'role "postgres" already exists' in errors[0], res.stderr
        assert authid(target) == want, target.kind
