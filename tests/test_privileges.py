"""Ownership of relations (issue 32 item 1; docs/decisions/0046-privileges.md).

Each test runs the same script against the server under test and against PostgreSQL 15
(the ``postgres`` fixture) and compares every statement's outcome: its rows, or its
SQLSTATE and message. A table, index, view or sequence belongs to the role that created
it (pg_class.relowner, psql's ``\\dt`` Owner column); a role that does not own it gets
42501 from DROP, ALTER, CREATE INDEX and TRUNCATE, its owner and superusers do not.
Roles created on the shared PostgreSQL are dropped again.
"""

import subprocess

import psycopg

from conftest import pg_tool

ROLES = ("priv_owner", "priv_other")

OWNED = [
    "CREATE TABLE priv_t (id serial PRIMARY KEY, v int)",
    "CREATE INDEX priv_t_v ON priv_t (v)",
    "CREATE VIEW priv_v AS SELECT id FROM priv_t",
    "CREATE SEQUENCE priv_s",
]

OWNERS = """SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner) FROM pg_class c
            WHERE c.relname LIKE 'priv%' ORDER BY 1"""

# The owner as pg_views and pg_sequences name it.
VIEW_AND_SEQUENCE_OWNERS = """SELECT viewname, viewowner FROM pg_views WHERE viewname LIKE 'priv%'
            UNION ALL SELECT sequencename, sequenceowner FROM pg_sequences
            WHERE sequencename LIKE 'priv%' ORDER BY 1"""

# What a role that owns none of them tries, in this order; then the owner does the same.
NOT_OWNER = [
    "ALTER TABLE priv_t ADD COLUMN w int",
    "CREATE INDEX priv_t_w ON priv_t (v)",
    "DROP INDEX priv_t_v",
    "TRUNCATE priv_t",
    # Refused for want of CREATE on schema public, before ownership.
    "CREATE OR REPLACE VIEW priv_v AS SELECT id FROM priv_t",
    "ALTER VIEW priv_v RENAME TO priv_v2",
    "DROP VIEW priv_v",
    "ALTER SEQUENCE priv_s INCREMENT BY 2",
    "DROP SEQUENCE priv_s",
    "DROP TABLE priv_su",
    "DROP TABLE priv_nosuch, priv_t",
    "DROP TABLE IF EXISTS priv_nosuch",
    "DROP TABLE priv_t",
]

BY_OWNER = [
    "ALTER TABLE priv_t ADD COLUMN w int",
    "CREATE INDEX priv_t_w ON priv_t (w)",
    "DROP INDEX priv_t_v",
    "TRUNCATE priv_t",
    "CREATE OR REPLACE VIEW priv_v AS SELECT id FROM priv_t",
    "ALTER VIEW priv_v RENAME TO priv_v2",
    "ALTER SEQUENCE priv_s INCREMENT BY 2",
    OWNERS,
    "DROP VIEW priv_v2",
    "DROP SEQUENCE priv_s",
    "DROP TABLE priv_t",
]


def attempt(conn, sql):
    """The statement's rows (None without a result), or its SQLSTATE and message."""
    try:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else None
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary)


def psql(server, command):
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-h", server.host, "-p", str(server.port), "-U", "postgres",
         "-d", "postgres", "-c", command],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def reset(su):
    for t in ("priv_t", "priv_su"):
        su.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
    su.execute("DROP SEQUENCE IF EXISTS priv_s")
    for r in ROLES:
        su.execute(f"DROP ROLE IF EXISTS {r}")


def ownership(server):
    seen = {}
    with server.connect(autocommit=True) as su:
        reset(su)
        for r in ROLES:
            su.execute(f"CREATE ROLE {r} LOGIN")
        # PostgreSQL 15 does not let PUBLIC create in schema public.
        su.execute("GRANT CREATE ON SCHEMA public TO priv_owner")
        su.execute("CREATE TABLE priv_su (id int)")
        try:
            with server.connect(user="priv_owner", autocommit=True) as owner, \
                    server.connect(user="priv_other", autocommit=True) as other:
                seen["create"] = [attempt(owner, sql) for sql in OWNED]
                seen["owners"] = su.execute(OWNERS).fetchall()
                seen["view_and_sequence_owners"] = su.execute(VIEW_AND_SEQUENCE_OWNERS).fetchall()
                seen["dt"] = psql(server, r"\dt priv*")
                seen["other"] = [(sql, attempt(other, sql)) for sql in NOT_OWNER]
                # A superuser is held to no ownership.
                seen["su_alter"] = attempt(su, "ALTER TABLE priv_t ADD COLUMN by_su int")
                seen["owner"] = [(sql, attempt(owner, sql)) for sql in BY_OWNER]
                seen["owner_drops_su_table"] = attempt(owner, "DROP TABLE priv_su")
                # An altered superuser flag counts from the role's next statement.
                su.execute("ALTER ROLE priv_other SUPERUSER")
                seen["now_superuser"] = attempt(other, "DROP TABLE priv_su")
        finally:
            su.execute("REVOKE CREATE ON SCHEMA public FROM priv_owner")
            if server.kind == "postgres":
                for r in ROLES:
                    su.execute(f"DROP OWNED BY {r}")
            reset(su)
    return seen


def test_owners_alone_alter_and_drop_their_relations(meridian, postgres):
    got, want = ownership(meridian), ownership(postgres)
    for key in want:
        assert got[key] == want[key], key
    other = dict(got["other"])
    assert other["DROP TABLE priv_t"] == ("42501", "must be owner of table priv_t")
    assert other["DROP INDEX priv_t_v"] == ("42501", "must be owner of index priv_t_v")
    assert other["TRUNCATE priv_t"] == ("42501", "permission denied for table priv_t")
    assert other["DROP TABLE priv_nosuch, priv_t"][0] == "42P01"
    assert ("priv_t", "r", "priv_owner") in got["owners"]
    assert ("priv_t_id_seq", "S", "priv_owner") in got["owners"]
    assert ("priv_v", "priv_owner") in got["view_and_sequence_owners"]
    assert ("priv_s", "priv_owner") in got["view_and_sequence_owners"]
    assert "priv_owner" in got["dt"]
    assert got["now_superuser"] is None


def test_relations_created_by_a_superuser_are_owned_by_it(meridian, postgres):
    def owners(server):
        with server.connect(autocommit=True) as su:
            su.execute("DROP TABLE IF EXISTS priv_plain")
            su.execute("CREATE TABLE priv_plain (id int PRIMARY KEY)")
            try:
                return su.execute(OWNERS).fetchall()
            finally:
                su.execute("DROP TABLE priv_plain")
    got = owners(meridian)
    assert got == owners(postgres)
    assert got == [("priv_plain", "r", "postgres"), ("priv_plain_pkey", "i", "postgres")]
