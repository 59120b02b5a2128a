"""PostgreSQL 15's predefined roles (issue 32, roles), against PostgreSQL 15 in the same
test: one script of (login, statement) steps runs on both servers, and every step gives
the same command tag and rows, or the same SQLSTATE and message.

Covered: granting and revoking pg_monitor (which holds pg_read_all_stats), after which
its member sees other roles' queries in pg_stat_activity and pg_stat_statements;
pg_signal_backend, whose members may cancel other roles' (non-superuser) sessions;
pg_read_all_data (SELECT on every table and sequence, nothing else) and
pg_write_all_data (INSERT, UPDATE, DELETE, nextval; a WHERE still needs SELECT);
has_table_privilege through them; pg_auth_members showing pg_monitor's own memberships;
that predefined roles cannot be created, altered, renamed or dropped, and that
pg_database_owner takes no members.
"""

import psycopg

ROLES = ("pr_mon", "pr_reader", "pr_writer", "pr_plain", "pr_sig")

ACTIVITY = "SELECT query FROM pg_stat_activity WHERE application_name = 'pr-busy'"
STATEMENTS = ("SELECT count(*) FROM pg_stat_statements"
              " WHERE query LIKE 'SELECT count(*) AS pr\\_busy\\_marker%'")
CANCEL_PLAIN = ("SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'pr-plain'")
MEMBERS = ("SELECT r.rolname, m.rolname, a.admin_option FROM pg_auth_members a"
           " JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member"
           " WHERE m.rolname LIKE 'pr%' OR m.rolname = 'pg_monitor' ORDER BY 1, 2")

STEPS = [
    ("pr_mon", ACTIVITY),
    ("pr_mon", STATEMENTS),
    ("su", "GRANT pg_monitor TO pr_mon"),
    ("pr_mon", ACTIVITY),
    ("pr_mon", STATEMENTS),
    ("su", MEMBERS),
    ("su", "REVOKE pg_monitor FROM pr_mon"),
    ("pr_mon", ACTIVITY),
    ("su", "GRANT pg_read_all_stats TO pr_mon"),
    ("pr_mon", ACTIVITY),
    # pg_signal_backend
    ("pr_sig", CANCEL_PLAIN),
    ("su", "GRANT pg_signal_backend TO pr_sig"),
    ("pr_sig", CANCEL_PLAIN),
    ("pr_sig", "SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
               " WHERE application_name = 'pr-busy'"),
    # pg_read_all_data and pg_write_all_data
    ("pr_reader", "SELECT * FROM pr_t"),
    ("su", "GRANT pg_read_all_data TO pr_reader"),
    ("pr_reader", "SELECT * FROM pr_t"),
    ("pr_reader", "SELECT last_value FROM pr_s"),
    ("pr_reader", "INSERT INTO pr_t VALUES (5)"),
    ("pr_reader", "SELECT nextval('pr_s')"),
    ("pr_reader", "SELECT has_table_privilege('pr_t', 'SELECT'),"
                  " has_table_privilege('pr_t', 'INSERT')"),
    ("pr_writer", "INSERT INTO pr_t VALUES (6)"),
    ("su", "GRANT pg_write_all_data TO pr_writer"),
    ("pr_writer", "INSERT INTO pr_t VALUES (6)"),
    ("pr_writer", "UPDATE pr_t SET a = 7 WHERE a = 6"),
    ("pr_writer", "SELECT nextval('pr_s')"),
    ("pr_writer", "SELECT * FROM pr_t"),
    ("pr_writer", "DELETE FROM pr_t"),
    ("su", "SELECT count(*) FROM pr_t"),
    # They are built in.
    ("su", "CREATE ROLE pg_foo"),
    ("su", "DROP ROLE pg_monitor"),
    ("su", "ALTER ROLE pg_monitor LOGIN"),
    ("su", "ALTER ROLE pg_read_all_data SET work_mem = '8MB'"),
    ("su", "ALTER ROLE pg_monitor RENAME TO pr_x"),
    ("su", "GRANT pg_database_owner TO pr_plain"),
    ("su", "SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname IN"
           " ('pg_monitor', 'pg_read_all_data', 'pg_signal_backend') ORDER BY 1"),
    ("su", MEMBERS),
]


def attempt(conn, sql):
    try:
        cur = conn.execute(sql)
        return (cur.statusmessage, cur.fetchall() if cur.description else None)
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary)


def reset(su):
    su.execute("DROP TABLE IF EXISTS pr_t")
    su.execute("DROP SEQUENCE IF EXISTS pr_s")
    for r in ROLES:
        su.execute(f"DROP ROLE IF EXISTS {r}")


def run_script(server):
    seen = []
    with server.connect(autocommit=True) as su:
        reset(su)
        try:
            for r in ROLES:
                su.execute(f"CREATE ROLE {r} LOGIN")
            su.execute("CREATE TABLE pr_t (a int)")
            su.execute("INSERT INTO pr_t VALUES (1), (2)")
            su.execute("CREATE SEQUENCE pr_s")
            su.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conns = {"su": su}
            try:
                busy = server.connect(autocommit=True, application_name="pr-busy")
                busy.execute("SELECT count(*) AS pr_busy_marker FROM pr_t")
                conns["busy"] = busy
                conns["plain"] = server.connect(user="pr_plain", autocommit=True,
                                                application_name="pr-plain")
                for r in ("pr_mon", "pr_reader", "pr_writer", "pr_sig"):
                    conns[r] = server.connect(user=r, autocommit=True)
                for who, sql in STEPS:
                    seen.append((who, sql, attempt(conns[who], sql)))
            finally:
                for r, c in conns.items():
                    if r != "su":
                        c.close()
        finally:
            reset(su)
    return seen


def test_predefined_roles_as_postgres(meridian, postgres_fresh):
    # a PostgreSQL of its own: the script creates pg_stat_statements in it
    got, want = run_script(meridian), run_script(postgres_fresh)
    for g, w in zip(got, want):
        assert g == w
    assert len(got) == len(want)
    outcomes = {}
    for who, sql, o in got:
        outcomes.setdefault((who, sql), []).append(o)
    # The roles decided something (both servers refusing or allowing everything would
    # compare equal too).
    assert outcomes[("pr_mon", ACTIVITY)][0] == ("SELECT 1", [("<insufficient privilege>",)])
    assert outcomes[("pr_mon", ACTIVITY)][1] == (
        "SELECT 1", [("SELECT count(*) AS pr_busy_marker FROM pr_t",)])
    assert outcomes[("pr_reader", "SELECT * FROM pr_t")] [0][0] == "42501"
    assert outcomes[("pr_reader", "SELECT * FROM pr_t")][1][0] == "SELECT 2"
    assert outcomes[("pr_sig", CANCEL_PLAIN)] == [("42501", outcomes[("pr_sig", CANCEL_PLAIN)][0][1]),
                                                   ("SELECT 1", [(True,)])]
