"""COMMENT ON (issue 31, item 5) beyond what the corpus (`corpus/comments.sql`) compares:
only an object's owner (or a member of its role, or a superuser) may comment on it, as in
PostgreSQL (checked against PostgreSQL 15 in the same run); comments are durable (a
kill -9 and restart keeps them); on a cluster a comment made through one coordinator is
read through the other; psql's \\d+ and \\dt+ show them.
"""

import subprocess

import psycopg

from conftest import pg_tool

ROLES = ["cm_owner", "cm_other"]


def attempt(conn, sql):
    try:
        conn.execute(sql)
        return "ok"
    except psycopg.Error as e:
        return (e.sqlstate, str(e).splitlines()[0])


def reset(su):
    su.execute("DROP VIEW IF EXISTS cm_pv")
    su.execute("DROP TABLE IF EXISTS cm_pt")
    if su.execute("SELECT 1 FROM pg_roles WHERE rolname = 'cm_owner'").fetchone():
        su.execute("REVOKE CREATE ON SCHEMA public FROM cm_owner")
    for r in ROLES:
        su.execute(f"DROP ROLE IF EXISTS {r}")


def privileges(server):
    seen = {}
    with server.connect(autocommit=True) as su:
        reset(su)
        for r in ROLES:
            su.execute(f"CREATE ROLE {r} LOGIN")
        su.execute("GRANT CREATE ON SCHEMA public TO cm_owner")
        try:
            with server.connect(user="cm_owner", autocommit=True) as owner, \
                    server.connect(user="cm_other", autocommit=True) as other:
                owner.execute("CREATE TABLE cm_pt (id int PRIMARY KEY, v text)")
                owner.execute("CREATE VIEW cm_pv AS SELECT id FROM cm_pt")
                owner.execute("GRANT ALL ON cm_pt TO cm_other")
                statements = ["COMMENT ON TABLE cm_pt IS 'by {}'",
                              "COMMENT ON COLUMN cm_pt.v IS 'by {}'",
                              "COMMENT ON VIEW cm_pv IS 'by {}'"]
                # Privileges on the table are not ownership.
                seen["other"] = [attempt(other, s.format("other")) for s in statements]
                seen["owner"] = [attempt(owner, s.format("owner")) for s in statements]
                su.execute("GRANT cm_owner TO cm_other")
                seen["member"] = attempt(other, "COMMENT ON TABLE cm_pt IS 'by a member'")
                seen["superuser"] = attempt(su, "COMMENT ON COLUMN cm_pt.id IS 'by su'")
                seen["comments"] = su.execute(
                    "SELECT obj_description('cm_pt'::regclass, 'pg_class'),"
                    " col_description('cm_pt'::regclass, 1), col_description('cm_pt'::regclass, 2),"
                    " obj_description('cm_pv'::regclass, 'pg_class')").fetchone()
        finally:
            reset(su)
    return seen


def test_only_owners_comment(meridian, postgres):
    got, want = privileges(meridian), privileges(postgres)
    assert want["other"] == [("42501", "must be owner of table cm_pt"),
                             ("42501", "must be owner of relation cm_pt"),
                             ("42501", "must be owner of view cm_pv")]
    assert got == want


def psql(server, command):
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-A", "-h", server.host, "-p", str(server.port), "-U", "postgres",
         "-d", "postgres", "-c", command],
        capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_comments_survive_a_restart_and_show_in_psql(meridian):
    with meridian.connect(autocommit=True) as c:
        c.execute("CREATE TABLE cm_durable (id int PRIMARY KEY, note text)")
        c.execute("COMMENT ON TABLE cm_durable IS 'kept across restarts'")
        c.execute("COMMENT ON COLUMN cm_durable.note IS 'a note'")
    meridian.kill9()
    meridian.restart()
    with meridian.connect(autocommit=True) as c:
        assert c.execute(
            "SELECT obj_description('cm_durable'::regclass, 'pg_class'),"
            " col_description('cm_durable'::regclass, 2)").fetchone() == (
            "kept across restarts", "a note")
    described = psql(meridian, r"\d+ cm_durable")
    assert "|a note" in described, described
    listed = psql(meridian, r"\dt+ cm_durable")
    assert "public|cm_durable|table|postgres|" in listed, listed
    assert any(line.startswith("public|cm_durable|") and line.endswith("|kept across restarts")
               for line in listed.splitlines()), listed


def test_a_comment_through_one_coordinator_is_read_through_the_other(meridian_cluster):
    with meridian_cluster.connect(autocommit=True) as a, \
            meridian_cluster.second.connect(autocommit=True) as b:
        a.execute("CREATE TABLE cm_cluster (id int PRIMARY KEY, v text)")
        a.execute("COMMENT ON COLUMN cm_cluster.v IS 'from the first'")
        b.execute("COMMENT ON TABLE cm_cluster IS 'from the second'")
        for conn in (a, b):
            assert conn.execute(
                "SELECT obj_description('cm_cluster'::regclass, 'pg_class'),"
                " col_description('cm_cluster'::regclass, 2)").fetchone() == (
                "from the second", "from the first")
