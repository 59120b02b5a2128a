"""GRANT and REVOKE on tables, views and sequences, enforced on every statement (issue 32
acceptance 1; docs/decisions/0049-grant-revoke.md).

One script of (role, statement) steps runs against the server under test and against
PostgreSQL 15 (the ``postgres`` fixture); every step's outcome must be the same: its
rows, or its SQLSTATE and message, and the warnings it raised. The script takes roles
without privileges through SELECT, INSERT, UPDATE, DELETE, TRUNCATE, COPY, FOR UPDATE,
sequences, views (checked as their owner), grant options, CASCADE, PUBLIC, a rolled-back
GRANT and pg_class.relacl / psql's ``\\dp`` after each phase. A statement prepared while
its privileges were held fails once they are revoked.
"""

import subprocess

import psycopg

from conftest import pg_tool

ROLES = ("gr_alice", "gr_bob", "gr_owner")
TABLES = ("gr_t", "gr_s")

ACLS = "SELECT relname, relkind, relacl FROM pg_class WHERE relname LIKE 'gr%' ORDER BY 1"

HAS = """SELECT has_table_privilege('gr_alice', 'gr_t', 'SELECT'),
    has_table_privilege('gr_alice', 'gr_t', 'delete, insert'),
    has_table_privilege('gr_alice', 'public.gr_t', 'DELETE WITH GRANT OPTION'),
    has_table_privilege('gr_bob', 'gr_v', 'SELECT'),
    has_table_privilege('gr_owner', 'gr_ov', 'SELECT WITH GRANT OPTION'),
    has_sequence_privilege('gr_alice', 'gr_s_id_seq', 'USAGE'),
    has_table_privilege('pg_class', 'SELECT')"""

# What a role without privileges tries.
EVERYTHING = [
    "SELECT * FROM gr_t ORDER BY id",
    "SELECT count(*) FROM (SELECT 1) s WHERE EXISTS (SELECT 1 FROM gr_t)",
    "WITH w AS (SELECT * FROM gr_t) SELECT count(*) FROM w",
    "INSERT INTO gr_t VALUES (3, 30)",
    "UPDATE gr_t SET v = 1",
    "DELETE FROM gr_t WHERE id = 1",
    "TRUNCATE gr_t",
    "SELECT * FROM gr_t FOR UPDATE",
    "EXPLAIN SELECT * FROM gr_t",
    "SELECT * FROM gr_v",
    "SELECT nextval('gr_q')",
    "SELECT last_value FROM gr_q",
    "COPY gr_t TO STDOUT",
]

NSP = "SELECT nspname, nspacl FROM pg_namespace WHERE nspname = 'public'"

STEPS = [
    ("gr_alice", s) for s in EVERYTHING
] + [
    # Creating needs CREATE on schema public, which PostgreSQL 15 gives no one by default.
    ("gr_alice", "CREATE TABLE gr_x (id int)"),
    ("gr_alice", "CREATE SEQUENCE gr_xs"),
    ("gr_alice", "CREATE VIEW gr_xv AS SELECT 1 AS one"),
    ("su", "GRANT CREATE ON SCHEMA public TO gr_alice"),
    ("su", NSP),
    ("gr_alice", "CREATE TABLE gr_x (id int)"),
    ("gr_alice", "CREATE INDEX gr_x_id ON gr_x (id)"),
    ("su", "REVOKE CREATE ON SCHEMA public FROM gr_alice"),
    ("gr_alice", "CREATE INDEX gr_x_id2 ON gr_x (id)"),
    ("gr_alice", "DROP TABLE gr_x"),
    ("su", "GRANT SELECT ON SCHEMA public TO gr_alice"),
    ("su", "GRANT CREATE ON SCHEMA gr_nosuch TO gr_alice"),
    ("gr_bob", "GRANT CREATE ON SCHEMA public TO gr_alice"),
    ("su", NSP),
    ("su", "GRANT SELECT ON gr_t TO gr_alice"),
    ("gr_alice", "SELECT * FROM gr_t ORDER BY id"),
    ("gr_alice", "COPY gr_t TO STDOUT"),
    ("gr_alice", "INSERT INTO gr_t VALUES (3, 30)"),
    ("gr_alice", "UPDATE gr_t SET v = 1"),
    ("gr_alice", "SELECT * FROM gr_t FOR SHARE"),
    ("su", "GRANT INSERT, UPDATE ON TABLE gr_t TO gr_alice"),
    ("gr_alice", "INSERT INTO gr_t VALUES (3, 30) RETURNING id"),
    ("gr_alice", "UPDATE gr_t SET v = v + 1 WHERE id = 3 RETURNING v"),
    ("gr_alice", "INSERT INTO gr_t VALUES (3, 0) ON CONFLICT (id) DO UPDATE SET v = excluded.v"),
    ("gr_alice", "SELECT id FROM gr_t WHERE id = 3 FOR UPDATE"),
    ("gr_alice", "DELETE FROM gr_t WHERE id = 3"),
    ("su", ACLS),
    ("su", HAS),
    ("gr_alice", "SELECT has_table_privilege('gr_t', 'UPDATE')"),
    ("gr_alice", "SELECT has_table_privilege('gr_t', 'FLY')"),
    ("gr_alice", "SELECT has_table_privilege('gr_nosuch', 'SELECT')"),
    # Without SELECT, only what reads no column of the table still runs.
    ("su", "REVOKE SELECT ON gr_t FROM gr_alice"),
    ("gr_alice", "UPDATE gr_t SET v = 7"),
    ("gr_alice", "UPDATE gr_t SET v = 8 WHERE id = 1"),
    ("gr_alice", "UPDATE gr_t SET v = v + 1"),
    ("gr_alice", "INSERT INTO gr_t VALUES (4, 40)"),
    ("gr_alice", "INSERT INTO gr_t VALUES (5, 50) RETURNING v"),
    ("gr_alice", "SELECT * FROM gr_t"),
    # A serial column's default calls nextval: the inserting role needs the sequence.
    ("su", "GRANT INSERT ON gr_s TO gr_alice"),
    ("gr_alice", "INSERT INTO gr_s (v) VALUES (1)"),
    ("su", "GRANT USAGE ON SEQUENCE gr_s_id_seq TO gr_alice"),
    ("gr_alice", "INSERT INTO gr_s (v) VALUES (1)"),
    ("gr_alice", "SELECT currval('gr_s_id_seq')"),
    ("gr_alice", "SELECT setval('gr_s_id_seq', 10)"),
    ("su", "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO gr_bob"),
    ("gr_bob", "SELECT nextval('gr_q'), setval('gr_q', 5)"),
    ("su", "GRANT USAGE, INSERT ON SEQUENCE gr_q TO gr_bob"),
    ("su", "GRANT USAGE, DELETE ON gr_q TO gr_bob"),
    ("su", "GRANT USAGE ON gr_t TO gr_bob"),
    # A view's relations are checked as its owner; PUBLIC counts for everyone.
    ("gr_owner", "CREATE VIEW gr_ov AS SELECT id FROM gr_t"),
    ("gr_owner", "GRANT SELECT ON gr_ov TO PUBLIC"),
    ("gr_bob", "SELECT * FROM gr_ov ORDER BY id"),
    ("su", "GRANT SELECT ON gr_t TO gr_owner"),
    ("gr_bob", "SELECT * FROM gr_ov ORDER BY id"),
    ("gr_bob", "SELECT * FROM gr_t"),
    ("su", "GRANT SELECT ON gr_v TO PUBLIC"),
    ("gr_bob", "SELECT count(*) FROM gr_v"),
    # Without USAGE on schema public, nothing in it can be reached.
    ("su", "REVOKE USAGE ON SCHEMA public FROM PUBLIC"),
    ("gr_bob", "SELECT count(*) FROM gr_v"),
    ("su", "GRANT USAGE ON SCHEMA public TO PUBLIC"),
    ("gr_bob", "SELECT count(*) FROM gr_v"),
    ("su", NSP),
    # Grant options: granting what one holds without them warns, with them passes on.
    ("gr_alice", "GRANT INSERT ON gr_t TO gr_bob"),
    ("gr_bob", "GRANT INSERT ON gr_t TO gr_alice"),
    ("su", "GRANT DELETE, TRUNCATE ON gr_t TO gr_alice WITH GRANT OPTION"),
    ("gr_alice", "GRANT DELETE, UPDATE ON gr_t TO gr_bob"),
    ("gr_alice", "GRANT ALL ON gr_t TO gr_bob"),
    ("su", ACLS),
    ("su", HAS),
    ("gr_bob", "TRUNCATE gr_s"),
    ("su", "REVOKE DELETE ON gr_t FROM gr_alice"),
    ("su", "REVOKE GRANT OPTION FOR DELETE ON gr_t FROM gr_alice CASCADE"),
    ("su", ACLS),
    ("gr_alice", "DELETE FROM gr_t WHERE false"),
    ("gr_bob", "DELETE FROM gr_t WHERE false"),
    ("su", "REVOKE ALL ON gr_t FROM gr_alice CASCADE"),
    ("gr_alice", "INSERT INTO gr_t VALUES (6, 60)"),
    # The owner may revoke its own privileges; a superuser is held to none.
    ("gr_owner", "REVOKE ALL ON gr_ov FROM gr_owner"),
    ("gr_owner", "SELECT * FROM gr_ov"),
    ("su", "REVOKE ALL ON gr_t FROM postgres"),
    ("su", "SELECT count(*) FROM gr_t"),
    ("su", ACLS),
    ("su", HAS),
    # A role named in an ACL cannot be dropped.
    ("su", "DROP ROLE gr_bob"),
    # Errors: unknown roles and relations, privileges the object cannot have.
    ("su", "GRANT SELECT ON gr_t TO gr_nosuch"),
    ("su", "GRANT SELECT ON gr_nosuch TO gr_bob"),
    ("su", "GRANT SELECT ON SEQUENCE gr_t TO gr_bob"),
    ("su", "GRANT UPDATE ON gr_t TO gr_bob, PUBLIC"),
    ("gr_bob", "GRANT SELECT ON gr_v TO gr_alice"),
    ("su", ACLS),
]


def attempt(conn, sql):
    """The statement's rows (None without a result), or its SQLSTATE and message; a COPY's
    output as one bytes value."""
    try:
        if sql.startswith("COPY"):
            with conn.cursor().copy(sql) as copy:
                return b"".join(bytes(chunk) for chunk in copy)
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else None
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary)


def dp(server):
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-h", server.host, "-p", str(server.port), "-U", "postgres",
         "-d", "postgres", "-c", r"\dp gr*"],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def reset(su, server):
    su.execute("GRANT USAGE ON SCHEMA public TO PUBLIC")
    su.execute("DROP TABLE IF EXISTS gr_x")
    su.execute("DROP VIEW IF EXISTS gr_ov")
    su.execute("DROP VIEW IF EXISTS gr_v")
    for t in TABLES:
        su.execute(f"DROP TABLE IF EXISTS {t}")
    su.execute("DROP SEQUENCE IF EXISTS gr_q")
    for r in ROLES:
        if su.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (r,)).fetchall():
            su.execute(f"REVOKE ALL ON SCHEMA public FROM {r}")
            if server.kind == "postgres":
                su.execute(f"DROP OWNED BY {r}")
        su.execute(f"DROP ROLE IF EXISTS {r}")


def run_script(server):
    seen = []
    with server.connect(autocommit=True) as su:
        reset(su, server)
        try:
            for r in ROLES:
                su.execute(f"CREATE ROLE {r} LOGIN")
            su.execute("GRANT CREATE ON SCHEMA public TO gr_owner")
            su.execute("CREATE TABLE gr_t (id int PRIMARY KEY, v int)")
            su.execute("INSERT INTO gr_t VALUES (1, 10), (2, 20)")
            su.execute("CREATE TABLE gr_s (id serial PRIMARY KEY, v int)")
            su.execute("CREATE VIEW gr_v AS SELECT id, v FROM gr_t")
            su.execute("CREATE SEQUENCE gr_q")
            conns = {"su": su}
            notices = []
            for r in ROLES:
                conns[r] = server.connect(user=r, autocommit=True)
            for c in conns.values():
                c.add_notice_handler(
                    lambda d: notices.append((d.severity_nonlocalized, d.sqlstate, d.message_primary)))
            try:
                for who, sql in STEPS:
                    outcome = attempt(conns[who], sql)
                    seen.append((who, sql, outcome, notices[:]))
                    notices.clear()
                seen.append(("dp", dp(server)))
            finally:
                for r in ROLES:
                    conns[r].close()
        finally:
            reset(su, server)
    return seen


def test_grants_and_revokes_decide_every_statement(meridian, postgres):
    got, want = run_script(meridian), run_script(postgres)
    for g, w in zip(got, want):
        assert g == w
    assert len(got) == len(want)
    outcomes = {(who, sql): outcome for who, sql, outcome, _ in got[:-1]}
    # The checks did refuse and did allow (the comparison alone would pass if both
    # servers refused everything).
    denied = ("42501", "permission denied for table gr_t")
    assert outcomes[("gr_alice", "SELECT * FROM gr_t FOR UPDATE")] == denied
    assert outcomes[("gr_alice", "UPDATE gr_t SET v = 8 WHERE id = 1")] == denied
    assert outcomes[("gr_alice", "UPDATE gr_t SET v = 7")] is None
    assert outcomes[("gr_bob", "SELECT * FROM gr_ov ORDER BY id")][0] == (1,)
    assert outcomes[("su", "DROP ROLE gr_bob")][0] == "2BP01"
    assert outcomes[("gr_alice", "CREATE TABLE gr_x (id int)")] is None
    assert outcomes[("gr_alice", "CREATE INDEX gr_x_id2 ON gr_x (id)")] == (
        "42501", "permission denied for schema public")


def prepared_across_revoke(server):
    with server.connect(autocommit=True) as su:
        reset(su, server)
        su.execute("CREATE ROLE gr_bob LOGIN")
        su.execute("CREATE TABLE gr_t (id int PRIMARY KEY, v int)")
        try:
            su.execute("GRANT SELECT ON gr_t TO gr_bob")
            with server.connect(user="gr_bob", autocommit=True) as bob:
                seen = [attempt_prepared(bob)]
                # A rolled-back REVOKE changes nothing.
                su.execute("BEGIN")
                su.execute("REVOKE SELECT ON gr_t FROM gr_bob")
                su.execute("ROLLBACK")
                seen.append(attempt_prepared(bob))
                su.execute("REVOKE SELECT ON gr_t FROM gr_bob")
                seen.append(attempt_prepared(bob))
                su.execute("GRANT SELECT ON gr_t TO gr_bob")
                seen.append(attempt_prepared(bob))
            return seen
        finally:
            reset(su, server)


def attempt_prepared(conn):
    try:
        return conn.execute("SELECT count(*) FROM gr_t WHERE id > %s", (0,),
                            prepare=True).fetchall()
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary)


def test_a_revoke_reaches_statements_prepared_before_it(meridian, postgres):
    got = prepared_across_revoke(meridian)
    assert got == prepared_across_revoke(postgres)
    assert got == [[(0,)], [(0,)], ("42501", "permission denied for table gr_t"), [(0,)]]


def test_grants_made_on_one_coordinator_hold_on_the_other(meridian_cluster):
    # The ACLs travel with the catalog records: a GRANT or REVOKE on one coordinator
    # decides the next statement of a session already open on the other.
    first, second = meridian_cluster, meridian_cluster.second
    with first.connect(autocommit=True) as su:
        su.execute("CREATE ROLE gr_bob LOGIN")
        su.execute("CREATE TABLE gr_t (id int PRIMARY KEY, v int)")
        with second.connect(user="gr_bob", autocommit=True) as bob:
            assert attempt_prepared(bob) == ("42501", "permission denied for table gr_t")
            su.execute("GRANT SELECT ON gr_t TO gr_bob")
            assert attempt_prepared(bob) == [(0,)]
            su.execute("REVOKE SELECT ON gr_t FROM gr_bob")
            assert attempt_prepared(bob) == ("42501", "permission denied for table gr_t")
            assert attempt(bob, "CREATE TABLE gr_x (id int)") == (
                "42501", "permission denied for schema public")
            su.execute("GRANT CREATE ON SCHEMA public TO gr_bob")
            assert attempt(bob, "CREATE TABLE gr_x (id int)") is None
