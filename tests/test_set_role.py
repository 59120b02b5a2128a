"""SET ROLE and SET SESSION AUTHORIZATION (issue 32, roles), against PostgreSQL 15 in the
same test: one script of (login, statement) steps runs on both servers and every step
gives the same rows, or the same SQLSTATE and message, and the same ParameterStatus
values of session_authorization and is_superuser.

Covered: current_user, session_user, current_role and SHOW role / session_authorization /
is_superuser as the identity changes; privileges checked as the role taken (a table
granted to one role, refused to another); what a role creates is its own; a superuser
login may take any session authorization and role, a role without superuser only its own
(42501 otherwise), a missing role is 22023; SET LOCAL ends with the transaction, and a
rolled-back transaction's SET ROLE, SET SESSION AUTHORIZATION and other SETs are undone,
a committed one's kept; RESET and DEFAULT, and their command tags.
"""

import psycopg

ROLES = ("sr_alice", "sr_bob")

WHO = "SELECT current_user, session_user, current_role"
SHOW = ["SHOW role", "SHOW session_authorization", "SHOW is_superuser"]
OWNERS = ("SELECT c.relname, r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
          "WHERE c.relname LIKE 'sr%' AND c.relkind = 'r' ORDER BY 1")

STEPS = [
    ("su", WHO), *[("su", s) for s in SHOW],
    ("su", "SET ROLE sr_alice"), ("su", WHO), *[("su", s) for s in SHOW],
    ("su", "SELECT * FROM sr_t"),
    ("su", "INSERT INTO sr_t VALUES (2)"),
    ("su", "CREATE TABLE sr_mine (a int)"),
    ("su", "SET ROLE sr_bob"), ("su", WHO),
    ("su", "SELECT * FROM sr_t"),
    ("su", "CREATE TABLE sr_bobs (a int)"),
    ("su", "SET ROLE sr_nosuch"), ("su", WHO),
    ("su", "SET ROLE NONE"), ("su", WHO), ("su", "SHOW role"),
    ("su", 'SET ROLE "sr_alice"'), ("su", WHO),
    ("su", "SET role = 'sr_bob'"), ("su", WHO),
    ("su", "SET role TO SR_ALICE"), ("su", WHO),
    ("su", "RESET ROLE"), ("su", WHO),
    ("su", "SET ROLE DEFAULT"),
    ("su", "SET SESSION AUTHORIZATION sr_alice"), ("su", WHO), *[("su", s) for s in SHOW],
    ("su", "SET ROLE sr_bob"),
    ("su", "SET ROLE sr_alice"), ("su", "SHOW role"),
    ("su", "SELECT * FROM sr_t"),
    ("su", "SET SESSION AUTHORIZATION sr_bob"), ("su", WHO), ("su", "SHOW role"),
    ("su", "SELECT * FROM sr_t"),
    ("su", "SET SESSION AUTHORIZATION DEFAULT"), ("su", WHO),
    ("su", "SET SESSION AUTHORIZATION 'sr_bob'"),
    ("su", "RESET SESSION AUTHORIZATION"), ("su", WHO), ("su", "SHOW is_superuser"),
    ("su", "BEGIN"), ("su", "SET LOCAL ROLE sr_alice"), ("su", WHO), ("su", "COMMIT"),
    ("su", WHO), ("su", "SHOW is_superuser"),
    ("su", "BEGIN"), ("su", "SET LOCAL SESSION AUTHORIZATION sr_bob"), ("su", WHO),
    ("su", "COMMIT"), ("su", WHO),
    ("su", "BEGIN"), ("su", "SET ROLE sr_alice"), ("su", WHO), ("su", "ROLLBACK"),
    ("su", WHO), ("su", "SHOW is_superuser"),
    ("su", "BEGIN"), ("su", "SET SESSION AUTHORIZATION sr_alice"), ("su", "SELECT 1/0"),
    ("su", "ROLLBACK"), ("su", WHO),
    ("su", "BEGIN"), ("su", "SET ROLE sr_bob"), ("su", "COMMIT"), ("su", WHO),
    ("su", "RESET ROLE"),
    ("su", "BEGIN"), ("su", "SET work_mem = '1MB'"), ("su", "SET LOCAL work_mem = '2MB'"),
    ("su", "SHOW work_mem"), ("su", "ROLLBACK"), ("su", "SHOW work_mem"),
    ("su", "BEGIN"), ("su", "SET work_mem = '3MB'"), ("su", "COMMIT"), ("su", "SHOW work_mem"),
    ("su", "SET work_mem TO DEFAULT"), ("su", "SHOW work_mem"),
    ("sr_alice", WHO), *[("sr_alice", s) for s in SHOW],
    ("sr_alice", "SET SESSION AUTHORIZATION sr_bob"),
    ("sr_alice", "SET SESSION AUTHORIZATION sr_alice"), ("sr_alice", WHO),
    ("sr_alice", "SET ROLE postgres"),
    ("sr_alice", "SET ROLE sr_bob"),
    ("sr_alice", "SET ROLE sr_alice"), ("sr_alice", "SHOW role"),
    ("sr_alice", "SET ROLE NONE"), ("sr_alice", WHO),
    ("su", OWNERS),
    ("su", "SELECT tablename, tableowner, tablespace, hasindexes, hasrules, hastriggers, "
           "rowsecurity FROM pg_tables WHERE tablename LIKE 'sr%' ORDER BY 1"),
]


def attempt(conn, sql):
    """The rows (None without a result) or (SQLSTATE, message), then the identity the
    server last reported."""
    try:
        cur = conn.execute(sql)
        outcome = (cur.statusmessage, cur.fetchall() if cur.description else None)
    except psycopg.Error as e:
        outcome = (e.sqlstate, e.diag.message_primary)
    reported = tuple(conn.info.parameter_status(p) for p in ("session_authorization",
                                                              "is_superuser"))
    return outcome, reported


def reset(su):
    for t in ("sr_t", "sr_mine", "sr_bobs"):
        su.execute(f"DROP TABLE IF EXISTS {t}")
    for r in ROLES:
        su.execute(f"DROP ROLE IF EXISTS {r}")


def run_script(server):
    seen = []
    with server.connect(autocommit=True) as su:
        reset(su)
        try:
            for r in ROLES:
                su.execute(f"CREATE ROLE {r} LOGIN")
            su.execute("GRANT CREATE ON SCHEMA public TO sr_alice")
            su.execute("CREATE TABLE sr_t (a int)")
            su.execute("INSERT INTO sr_t VALUES (1)")
            su.execute("GRANT SELECT ON sr_t TO sr_alice")
            conns = {"su": su}
            try:
                conns["sr_alice"] = server.connect(user="sr_alice", autocommit=True)
                for who, sql in STEPS:
                    seen.append((who, sql, attempt(conns[who], sql)))
            finally:
                conns.get("sr_alice") and conns["sr_alice"].close()
        finally:
            su.execute("RESET SESSION AUTHORIZATION")
            su.execute("REVOKE ALL ON SCHEMA public FROM sr_alice")
            reset(su)
    return seen


def test_set_role_and_session_authorization_as_postgres(meridian, postgres):
    got, want = run_script(meridian), run_script(postgres)
    for g, w in zip(got, want):
        assert g == w
    assert len(got) == len(want)
    outcomes = {(who, sql): o for who, sql, (o, _) in got}
    # The roles did decide something (both servers refusing or allowing everything would
    # compare equal too).
    assert outcomes[("su", "SET ROLE sr_bob")] == ("SET", None)
    assert outcomes[("sr_alice", "SET ROLE sr_bob")] == (
        "42501", 'permission denied to set role "sr_bob"')
    assert outcomes[("su", "INSERT INTO sr_t VALUES (2)")][0] == "42501"
    assert outcomes[("su", OWNERS)][1] == [("sr_mine", "sr_alice"), ("sr_t", "postgres")]
