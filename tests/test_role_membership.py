"""Role membership (issue 32, roles), against PostgreSQL 15 in the same test: one script of
(login, statement) steps runs on both servers, and every step gives the same command tag
and rows, or the same SQLSTATE and message, and the same notices and warnings.

Covered: GRANT role TO role (several of each, WITH ADMIN OPTION, GRANTED BY) and REVOKE
(ADMIN OPTION FOR), their tags; an existing membership (NOTICE), a missing one (WARNING),
unknown roles (42704), loops and a role in itself (0LP01); pg_auth_members and
pg_roles.rolinherit, psql's \\du "Member of" query; privileges inherited through a chain of
INHERIT roles, not by a NOINHERIT role until it SETs ROLE; SET ROLE by members, direct or
not, refused to others; what a role owns altered by its members; granting by a member
with the admin option, refused without it and for superuser roles; has_table_privilege
through membership; DROP ROLE removing memberships both ways; INHERIT / NOINHERIT in
CREATE and ALTER ROLE; CREATE ROLE's IN ROLE, ROLE and ADMIN.
"""

import psycopg

ROLES = ("rm_group", "rm_sub", "rm_alice", "rm_bob", "rm_carol", "rm_dave", "rm_new",
         "rm_new2")
TABLES = ("rm_t", "rm_t2", "rm_gt")

MEMBERS = ("SELECT r.rolname, m.rolname, g.rolname, a.admin_option FROM pg_auth_members a "
           "JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member "
           "JOIN pg_roles g ON g.oid = a.grantor WHERE m.rolname LIKE 'rm%' ORDER BY 1, 2")
INHERIT = "SELECT rolname, rolinherit FROM pg_roles WHERE rolname LIKE 'rm%' ORDER BY 1"
MEMBER_OF = ("SELECT r.rolname, ARRAY(SELECT b.rolname FROM pg_catalog.pg_auth_members m "
             "JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid) WHERE m.member = r.oid) "
             "AS memberof FROM pg_catalog.pg_roles r WHERE r.rolname LIKE 'rm%' ORDER BY 1")

STEPS = [
    ("su", "GRANT rm_group TO rm_alice, rm_bob"),
    ("su", "GRANT rm_group TO rm_alice"),
    ("su", "GRANT rm_group TO rm_alice WITH ADMIN OPTION"),
    ("su", "GRANT rm_group TO rm_alice WITH ADMIN OPTION"),
    ("su", "GRANT rm_sub TO rm_group"),
    ("su", "GRANT rm_alice TO rm_group"),
    ("su", "GRANT rm_sub TO rm_alice"),
    ("su", "GRANT rm_group TO rm_sub"),
    ("su", "GRANT rm_group TO rm_group"),
    ("su", "GRANT rm_nosuch TO rm_alice"),
    ("su", "GRANT rm_group TO rm_nosuch"),
    ("su", MEMBERS), ("su", INHERIT), ("su", MEMBER_OF),
    # Privileges through membership.
    ("rm_alice", "SELECT * FROM rm_t"),
    ("rm_alice", "SELECT * FROM rm_t2"),
    ("rm_bob", "SELECT * FROM rm_t"),
    ("rm_carol", "SELECT * FROM rm_t"),
    ("su", "SELECT has_table_privilege('rm_alice', 'rm_t', 'SELECT'), "
           "has_table_privilege('rm_bob', 'rm_t', 'SELECT'), "
           "has_table_privilege('rm_carol', 'rm_t', 'SELECT')"),
    # SET ROLE by members.
    ("rm_bob", "SET ROLE rm_group"), ("rm_bob", "SELECT current_user"),
    ("rm_bob", "SELECT * FROM rm_t"), ("rm_bob", "RESET ROLE"),
    ("rm_alice", "SET ROLE rm_sub"), ("rm_alice", "SELECT current_user"),
    ("rm_alice", "RESET ROLE"),
    ("rm_carol", "SET ROLE rm_group"),
    # What a role owns, for its members.
    ("rm_alice", "ALTER TABLE rm_gt ADD COLUMN b int"),
    ("rm_alice", "INSERT INTO rm_gt VALUES (1, 2)"),
    ("rm_alice", "SELECT * FROM rm_gt"),
    ("rm_bob", "ALTER TABLE rm_gt ADD COLUMN c int"),
    ("rm_bob", "INSERT INTO rm_gt VALUES (3, 4)"),
    ("rm_carol", "DROP TABLE rm_gt"),
    ("rm_alice", "GRANT SELECT ON rm_gt TO rm_carol"),
    ("rm_carol", "SELECT * FROM rm_gt"),
    # Granting by a member with the admin option.
    ("rm_alice", "GRANT rm_group TO rm_carol"),
    ("rm_carol", "GRANT rm_group TO rm_dave"),
    ("rm_alice", "GRANT postgres TO rm_carol"),
    ("rm_alice", "GRANT rm_sub TO rm_dave"),
    ("rm_alice", "REVOKE rm_group FROM rm_carol"),
    ("rm_alice", "REVOKE rm_group FROM rm_carol"),
    ("rm_alice", "GRANT rm_group TO rm_dave GRANTED BY postgres"),
    ("su", "REVOKE ADMIN OPTION FOR rm_group FROM rm_alice"),
    ("rm_alice", "GRANT rm_group TO rm_carol"),
    ("su", "GRANT rm_group TO rm_carol GRANTED BY rm_alice"),
    ("su", MEMBERS),
    ("su", "REVOKE rm_group FROM rm_carol, rm_dave"),
    ("su", "REVOKE rm_sub FROM rm_group CASCADE"),
    ("rm_alice", "SELECT * FROM rm_t2"),
    # INHERIT and NOINHERIT.
    ("su", "ALTER ROLE rm_bob INHERIT"),
    ("rm_bob", "SELECT * FROM rm_t"),
    ("su", "ALTER ROLE rm_alice NOINHERIT"),
    ("rm_alice", "SELECT * FROM rm_t"),
    ("su", INHERIT),
    # DROP ROLE takes its memberships along.
    ("su", "GRANT rm_sub TO rm_carol"),
    ("su", "REVOKE SELECT ON rm_t2 FROM rm_sub"),
    ("su", "DROP ROLE rm_sub"),
    ("su", MEMBERS), ("su", MEMBER_OF),
    # Memberships given by CREATE ROLE.
    ("su", "CREATE ROLE rm_new IN ROLE rm_group ROLE rm_dave ADMIN rm_carol"),
    ("su", "CREATE ROLE rm_new2 IN ROLE rm_nosuch"),
    ("su", "CREATE ROLE rm_new2 ROLE rm_new2"),
    ("su", MEMBERS),
    ("rm_carol", "GRANT rm_new TO rm_alice"),
]


def attempt(conn, notices, sql):
    """The tag and rows (or SQLSTATE and message), and the notices the step raised."""
    notices.clear()
    try:
        cur = conn.execute(sql)
        outcome = (cur.statusmessage, cur.fetchall() if cur.description else None)
    except psycopg.Error as e:
        outcome = (e.sqlstate, e.diag.message_primary)
    return outcome, list(notices)


def reset(su):
    for t in TABLES:
        su.execute(f"DROP TABLE IF EXISTS {t}")
    su.execute("REVOKE ALL ON SCHEMA public FROM rm_group") if role_exists(su, "rm_group") else None
    for r in ROLES:
        su.execute(f"DROP ROLE IF EXISTS {r}")


def role_exists(conn, name):
    return conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (name,)).fetchone()[0]


def run_script(server):
    seen = []
    with server.connect(autocommit=True) as su:
        reset(su)
        try:
            su.execute("CREATE ROLE rm_group")
            su.execute("CREATE ROLE rm_sub NOINHERIT")
            su.execute("ALTER ROLE rm_sub INHERIT")
            su.execute("CREATE ROLE rm_alice LOGIN")
            su.execute("CREATE ROLE rm_bob LOGIN NOINHERIT")
            su.execute("CREATE ROLE rm_carol LOGIN")
            su.execute("CREATE ROLE rm_dave LOGIN")
            su.execute("CREATE TABLE rm_t (a int)")
            su.execute("INSERT INTO rm_t VALUES (1)")
            su.execute("GRANT SELECT ON rm_t TO rm_group")
            su.execute("CREATE TABLE rm_t2 (a int)")
            su.execute("INSERT INTO rm_t2 VALUES (2)")
            su.execute("GRANT SELECT ON rm_t2 TO rm_sub")
            su.execute("GRANT CREATE ON SCHEMA public TO rm_group")
            su.execute("SET ROLE rm_group")
            su.execute("CREATE TABLE rm_gt (a int)")
            su.execute("RESET ROLE")
            conns = {"su": su}
            notices = []
            try:
                for r in ("rm_alice", "rm_bob", "rm_carol"):
                    conns[r] = server.connect(user=r, autocommit=True)
                for c in conns.values():
                    c.add_notice_handler(
                        lambda d: notices.append((d.severity_nonlocalized, d.message_primary)))
                for who, sql in STEPS:
                    seen.append((who, sql, attempt(conns[who], notices, sql)))
            finally:
                for r, c in conns.items():
                    if r != "su":
                        c.close()
        finally:
            su.execute("RESET ROLE")
            reset(su)
    return seen


def test_role_membership_as_postgres(meridian, postgres):
    got, want = run_script(meridian), run_script(postgres)
    for g, w in zip(got, want):
        assert g == w
    assert len(got) == len(want)
    outcomes = {}
    for who, sql, (o, _) in got:
        outcomes.setdefault((who, sql), o)  # a step's first outcome
    # Membership decided something (both servers refusing or allowing everything would
    # compare equal too).
    assert outcomes[("rm_alice", "SELECT * FROM rm_t")] == ("SELECT 1", [(1,)])
    assert outcomes[("rm_carol", "SELECT * FROM rm_t")][0] == "42501"
    assert outcomes[("rm_bob", "SELECT * FROM rm_t")][0] == "42501"
    assert outcomes[("rm_bob", "SET ROLE rm_group")] == ("SET", None)
    assert outcomes[("rm_carol", "SET ROLE rm_group")][0] == "42501"
    assert outcomes[("su", "GRANT rm_alice TO rm_group")][0] == "0LP01"
