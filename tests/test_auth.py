"""Roles, passwords and access rules (issue 32; docs/decisions/0040).

Each test starts the server under test and a PostgreSQL 15 with the same access
settings (``conftest.Access``: a pg_hba.conf, the superuser's password,
max_connections) and holds Meridian to what PostgreSQL answers: the SQLSTATE (from
asyncpg, whose SCRAM and md5 are its own) and the message (from libpq through psycopg)
of every login, the outcome of every role statement, psql's ``\\du``.
"""

import asyncio
import os
import re
import signal
import socket
import struct
import subprocess
import time

import asyncpg
import psycopg
import pytest

from conftest import (Access, MeridianClusterServer, _new_base_dir, finish_server, pg_tool,
                      start_server)

HBA = """\
# the harness reaches postgres over the socket
local   all       postgres                  trust
host    all       trusted   127.0.0.1/32    trust
host    all       md5user   127.0.0.1/32    md5
host    all       clear     127.0.0.1/32    password
host    all       rejected  all             reject
host    postgres  all       127.0.0.1/32    scram-sha-256
"""

ROLES = [
    "CREATE USER alice PASSWORD 'wonderland'",
    "CREATE ROLE trusted LOGIN",
    "CREATE ROLE nologin_role PASSWORD 'pw'",
    "CREATE USER expired PASSWORD 'pw' VALID UNTIL '2001-01-01 00:00:00+00'",
    "CREATE USER nopass",
    "CREATE USER rejected PASSWORD 'pw'",
    "CREATE USER lim PASSWORD 'pw' CONNECTION LIMIT 1",
    "SET password_encryption = 'md5'",
    "CREATE USER md5user PASSWORD 'md5pw'",
    "CREATE USER clear PASSWORD 'clearpw'",
    "RESET password_encryption",
]


@pytest.fixture
def pair(server_kind):
    """The server under test and PostgreSQL, both with HBA and the roles above."""
    started = []
    try:
        for kind in (server_kind, "postgres"):
            s = start_server(kind, access=Access(hba=HBA, superuser_password="su-secret"))
            started.append(s)
            with local(s) as c:
                for sql in ROLES:
                    c.execute(sql)
        yield started
    finally:
        for s in started:
            finish_server(s)


def local(server, **kw):
    """The superuser over the Unix socket (trusted by HBA)."""
    return psycopg.connect(host=str(server.socket_dir), port=server.port, user="postgres",
                           dbname="postgres", connect_timeout=10, autocommit=True, **kw)


def fatal_message(e: Exception) -> str:
    m = re.search(r"FATAL:  (.*)", str(e))
    assert m, str(e)
    return m.group(1).strip()


def login(server, user, password=None, dbname="postgres"):
    """('ok', current_user, session_user) or ('error', libpq's FATAL message)."""
    try:
        with psycopg.connect(host=server.host, port=server.port, user=user, password=password,
                             dbname=dbname, connect_timeout=10, sslmode="disable") as c:
            return ("ok", *c.execute("SELECT current_user, session_user").fetchone())
    except psycopg.OperationalError as e:
        return ("error", fatal_message(e))


def login_sqlstate(server, user, password=None, dbname="postgres"):
    """The SQLSTATE asyncpg gets for the login, or 'ok'."""
    async def attempt():
        try:
            conn = await asyncpg.connect(host=server.host, port=server.port, user=user,
                                         password=password, database=dbname, ssl=False,
                                         timeout=10)
        except asyncpg.PostgresError as e:
            return e.sqlstate
        await conn.close()
        return "ok"
    return asyncio.run(attempt())


ATTEMPTS = [
    ("alice", "wonderland", "postgres"),
    ("alice", "wrong", "postgres"),
    ("ghost", "x", "postgres"),
    ("nologin_role", "pw", "postgres"),
    ("expired", "pw", "postgres"),
    ("nopass", "x", "postgres"),
    ("trusted", None, "postgres"),
    ("md5user", "md5pw", "postgres"),
    ("md5user", "bad", "postgres"),
    ("clear", "clearpw", "postgres"),
    ("clear", "bad", "postgres"),
    ("rejected", "pw", "postgres"),
    ("alice", "wonderland", "otherdb"),
    ("postgres", "su-secret", "postgres"),
    ("postgres", "not-it", "postgres"),
]


def test_logins_answer_as_postgresql_does(pair):
    meridian, postgres = pair
    for attempt in ATTEMPTS:
        got = (login(meridian, *attempt), login_sqlstate(meridian, *attempt))
        want = (login(postgres, *attempt), login_sqlstate(postgres, *attempt))
        assert got == want, attempt
    # The cases that tell the methods apart did what they should.
    assert login(meridian, "alice", "wonderland") == ("ok", "alice", "alice")
    assert login_sqlstate(meridian, "alice", "wrong") == "28P01"
    assert login(meridian, "alice", "wrong") == (
        "error", 'password authentication failed for user "alice"')
    assert login_sqlstate(meridian, "rejected", "pw") == "28000"
    assert login_sqlstate(meridian, "alice", "wonderland", "otherdb") == "28000"


def psql(server, *args, user="postgres", password=None, host=None):
    env = {"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10", "PGTZ": "UTC"}
    if password is not None:
        env["PGPASSWORD"] = password
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-h", host or str(server.socket_dir), "-p", str(server.port),
         "-U", user, "-d", "postgres", *args],
        capture_output=True, text=True, timeout=60, env=env)
    return res.returncode, res.stdout, res.stderr


def test_psql_logs_in_with_scram_and_du_lists_the_roles(pair):
    outputs = []
    for s in pair:
        rc, out, err = psql(s, "-c", "SELECT current_user, session_user", user="alice",
                            password="wonderland", host=s.host)
        assert rc == 0, err
        rc, du, err = psql(s, "-c", r"\du")
        assert rc == 0, err
        outputs.append((out, du))
    assert outputs[0] == outputs[1]
    assert "alice" in outputs[0][0]
    assert re.search(r"nologin_role\s*\|\s*Cannot login", outputs[0][1])
    # A wrong password: psql's message names the user, the exit code is 2.
    for s in pair:
        rc, _, err = psql(s, "-c", "SELECT 1", user="alice", password="nope", host=s.host)
        assert rc == 2 and 'password authentication failed for user "alice"' in err


def outcome(conn, sql):
    """What a statement did: its SQLSTATE and message, or its status and notices."""
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    try:
        cur = conn.execute(sql)
        result = ("ok", cur.statusmessage, tuple(notices))
    except psycopg.Error as e:
        result = (e.sqlstate, e.diag.message_primary, e.diag.message_detail)
    conn._notice_handlers.clear()
    return result


ROLE_STATEMENTS = [
    "CREATE ROLE alice",
    "CREATE USER pg_mine",
    "CREATE ROLE public",
    "CREATE ROLE x CONNECTION LIMIT -2",
    "CREATE ROLE x LOGIN NOLOGIN",
    "DROP ROLE ghost",
    "DROP ROLE IF EXISTS ghost, trusted",
    "ALTER ROLE ghost LOGIN",
    "ALTER ROLE alice RENAME TO alice",
    "ALTER ROLE md5user RENAME TO md5renamed",
    "ALTER ROLE alice RENAME TO pg_alice",
    "DROP ROLE postgres",
    "CREATE ROLE empty PASSWORD ''",
    "SET password_encryption = 'sha1'",
    "CREATE ROLE x UNENCRYPTED PASSWORD 'p'",
    "CREATE ROLE x WITH SUPERUSER LOGIN CONNECTION LIMIT 5 VALID UNTIL 'infinity'",
    "ALTER USER x WITH NOSUPERUSER PASSWORD NULL CONNECTION LIMIT -1",
    "DROP USER x",
]


def test_role_statements_answer_as_postgresql_does(pair):
    conns = [local(s) for s in pair]
    try:
        for sql in ROLE_STATEMENTS:
            got, want = (outcome(c, sql) for c in conns)
            assert got == want, sql
        query = ("SELECT rolname, rolsuper, rolcanlogin, rolconnlimit, rolvaliduntil "
                 "FROM pg_roles WHERE rolname !~ '^pg_' ORDER BY 1")
        got, want = (c.execute(query).fetchall() for c in conns)
        assert got == want
        assert ("md5renamed", False, True, -1, None) in got
    finally:
        for c in conns:
            c.close()


def test_a_rolled_back_create_role_leaves_nothing(pair):
    meridian = pair[0]
    with local(meridian) as c:
        with c.transaction():
            c.execute("CREATE ROLE kept LOGIN")
        with pytest.raises(psycopg.errors.DivisionByZero):
            with c.transaction():
                c.execute("CREATE ROLE undone LOGIN PASSWORD 'x'")
                c.execute("ALTER ROLE kept NOLOGIN")
                c.execute("DROP ROLE alice")
                c.execute("SELECT 1/0")
        rows = c.execute("SELECT rolname, rolcanlogin FROM pg_roles "
                         "WHERE rolname IN ('kept', 'undone', 'alice') ORDER BY 1").fetchall()
        assert rows == [("alice", True), ("kept", True)]
        # The rolled back role's name is free again.
        c.execute("CREATE ROLE undone")
    assert login(meridian, "alice", "wonderland")[0] == "ok"


def test_passwords_are_stored_as_postgresql_stores_them(pair):
    stored = []
    for s in pair:
        with local(s) as c:
            c.execute("CREATE ROLE prehashed PASSWORD 'md5aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'")
            stored.append(dict(c.execute(
                "SELECT rolname, rolpassword FROM pg_authid WHERE rolpassword IS NOT NULL"
            ).fetchall()))
    meridian, postgres = stored
    # md5 is deterministic (md5 of the password and the user name); SCRAM is salted.
    assert meridian["md5user"] == postgres["md5user"] == "md5" + __import__("hashlib").md5(
        b"md5pwmd5user").hexdigest()
    assert meridian["prehashed"] == "md5aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    scram = re.compile(r"SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}")
    for name in ("alice", "postgres"):
        assert scram.fullmatch(meridian[name]), meridian[name]
        assert scram.fullmatch(postgres[name])
    assert meridian["alice"] != postgres["alice"], "each verifier has its own salt"
    # A verifier made by one server logs in on the other.
    with local(pair[0]) as c:
        c.execute(f"CREATE USER copied PASSWORD '{postgres['alice']}'")
    assert login(pair[0], "copied", "wonderland") == ("ok", "copied", "copied")
    # Only superusers read pg_authid.
    for s in pair:
        with psycopg.connect(host=s.host, port=s.port, user="alice", password="wonderland",
                             dbname="postgres", sslmode="disable") as c:
            with pytest.raises(psycopg.errors.InsufficientPrivilege,
                               match="permission denied for table pg_authid"):
                c.execute("SELECT * FROM pg_authid")


def test_a_role_manages_its_own_password_and_nothing_else(pair):
    for s in pair:
        with psycopg.connect(host=s.host, port=s.port, user="alice", password="wonderland",
                             dbname="postgres", sslmode="disable", autocommit=True) as c:
            c.execute("ALTER ROLE alice PASSWORD 'looking-glass'")
            for sql in ("ALTER ROLE alice SUPERUSER", "CREATE ROLE bob", "DROP ROLE trusted"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    c.execute(sql)
        assert login(s, "alice", "looking-glass")[0] == "ok"
        assert login_sqlstate(s, "alice", "wonderland") == "28P01"


def test_connection_limits_refuse_with_53300(server_kind):
    servers = [start_server(kind, access=Access(hba=HBA, max_connections=13))
               for kind in (server_kind, "postgres")]
    try:
        for s in servers:
            with local(s) as c:
                for sql in ROLES:
                    c.execute(sql)
        results = []
        for s in servers:
            held = []
            outcome_of = []
            try:
                held.append(psycopg.connect(host=s.host, port=s.port, user="lim", password="pw",
                                            dbname="postgres", sslmode="disable"))
                outcome_of.append(login(s, "lim", "pw"))
                outcome_of.append(login_sqlstate(s, "lim", "pw"))
                # 13 slots, 3 of them for superusers: 9 more ordinary connections fill the
                # rest.
                for _ in range(9):
                    held.append(psycopg.connect(host=s.host, port=s.port, user="alice",
                                                password="wonderland", dbname="postgres",
                                                sslmode="disable"))
                outcome_of.append(login(s, "alice", "wonderland"))
                outcome_of.append(login_sqlstate(s, "alice", "wonderland"))
                for _ in range(3):
                    held.append(local(s))
                outcome_of.append(login(s, "postgres", "su-secret"))
                outcome_of.append(login_sqlstate(s, "trusted"))
            finally:
                for c in held:
                    c.close()
            results.append(outcome_of)
        assert results[0] == results[1]
        assert results[0] == [
            ("error", 'too many connections for role "lim"'), "53300",
            ("error", "remaining connection slots are reserved for non-replication superuser connections"),
            "53300",
            ("error", "sorry, too many clients already"), "53300",
        ]
    finally:
        for s in servers:
            finish_server(s)


def wait_for(predicate, what):
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_rules_are_reloaded_on_sighup_and_a_bad_file_keeps_them(pair):
    for s in pair:
        hba = s.base_dir / "pg_hba.conf"
        hba.write_text(HBA.replace("host    postgres  all       127.0.0.1/32    scram-sha-256",
                                   "host    all       alice     127.0.0.1/32    reject\n"
                                   "host    postgres  all       127.0.0.1/32    scram-sha-256"))
        s.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: login(s, "alice", "wonderland")[0] == "error", "reload")
        assert login(s, "alice", "wonderland")[1].startswith(
            'pg_hba.conf rejects connection for host "127.0.0.1", user "alice"')
        hba.write_text("host all all 127.0.0.1/32 no-such-method\n")
        s.proc.send_signal(signal.SIGHUP)
        # Once the server said it refused the file, the old rules are still in force:
        # alice is still rejected, md5user still gets in.
        refused = ("pg_hba.conf was not reloaded" if s.kind == "postgres"
                   else "previous access rules stay in force")
        wait_for(lambda: refused in s.log_path.read_text(), "the bad file refused")
        assert login(s, "md5user", "md5pw")[0] == "ok"
        assert login_sqlstate(s, "alice", "wonderland") == "28000"


def message(sock):
    head = b""
    while len(head) < 5:
        chunk = sock.recv(5 - len(head))
        assert chunk, "connection closed"
        head += chunk
    tag, length = head[:1], struct.unpack("!i", head[1:])[0]
    body = b""
    while len(body) < length - 4:
        chunk = sock.recv(length - 4 - len(body))
        assert chunk, "connection closed"
        body += chunk
    return tag, body


def error_fields(body):
    return {f[:1]: f[1:].decode() for f in body.split(b"\0") if f}


@pytest.mark.parametrize("first,final", [
    (b"garbage", None),
    (b"p=tls-server-end-point,,n=,r=abc", None),
    (b"n,,n=,r=abc", b"c=biws,r=wrong-nonce,p=AAAA"),
    (b"n,,n=,r=abc", b"not a scram message at all"),
])
def test_a_malformed_scram_exchange_is_a_protocol_error(pair, first, final):
    for s in pair:
        with socket.create_connection((s.host, s.port), timeout=10) as sock:
            params = b"user\0alice\0database\0postgres\0\0"
            sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
            tag, body = message(sock)
            assert tag == b"R" and struct.unpack("!i", body[:4])[0] == 10
            assert b"SCRAM-SHA-256\0" in body and b"PLUS" not in body
            mech = b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first
            sock.sendall(b"p" + struct.pack("!i", 4 + len(mech)) + mech)
            tag, body = message(sock)
            if final is not None:
                assert tag == b"R" and struct.unpack("!i", body[:4])[0] == 11
                sock.sendall(b"p" + struct.pack("!i", 4 + len(final)) + final)
                tag, body = message(sock)
            assert tag == b"E"
            fields = error_fields(body)
            assert (fields[b"S"], fields[b"C"]) == ("FATAL", "08P01"), fields
        # The server carries on.
        assert login(s, "alice", "wonderland")[0] == "ok"


@pytest.fixture
def cluster_with_rules():
    """A cluster of processes (whatever the targets) whose coordinators both use HBA."""
    cluster = MeridianClusterServer(_new_base_dir("cluster"), access=Access(hba=HBA))
    try:
        cluster.start()
        yield cluster
    finally:
        finish_server(cluster)


def test_roles_reach_every_coordinator(cluster_with_rules):
    first, second = cluster_with_rules, cluster_with_rules.second
    with local(first) as c:
        c.execute("CREATE USER roaming PASSWORD 'one'")
    assert login(second, "roaming", "one") == ("ok", "roaming", "roaming")
    with local(second) as c:
        c.execute("ALTER USER roaming PASSWORD 'two'")
    assert login_sqlstate(first, "roaming", "one") == "28P01"
    assert login(first, "roaming", "two")[0] == "ok"
    with local(first) as c:
        c.execute("DROP USER roaming")
    assert login_sqlstate(second, "roaming", "two") == "28P01"


def test_roles_survive_a_restart_and_a_kill(pair):
    meridian = pair[0]
    with local(meridian) as c:
        c.execute("ALTER ROLE alice CONNECTION LIMIT 7")
        c.execute("ALTER ROLE postgres PASSWORD 'stored-now'")
    meridian.stop()
    meridian.start()
    assert login(meridian, "alice", "wonderland") == ("ok", "alice", "alice")
    # The stored password of postgres wins over the flag's from now on.
    assert login_sqlstate(meridian, "postgres", "su-secret") == "28P01"
    assert login(meridian, "postgres", "stored-now")[0] == "ok"
    with local(meridian) as c:
        c.execute("DROP ROLE md5user")
    meridian.kill9()
    meridian.start()
    with local(meridian) as c:
        rows = c.execute("SELECT rolname, rolconnlimit FROM pg_roles "
                         "WHERE rolname IN ('alice', 'md5user')").fetchall()
    assert rows == [("alice", 7)]


def test_repeated_failed_logins_are_slowed_down(pair):
    # Meridian's own (PostgreSQL needs its auth_delay module): past three failures of one
    # user from one address, each answer waits twice as long as the last.
    meridian = pair[0]
    if meridian.kind == "postgres":
        pytest.skip("Meridian's own (PostgreSQL slows failures down only with auth_delay)")
    for _ in range(6):
        assert login(meridian, "alice", "guess")[0] == "error"
    log = meridian.log_path.read_text()
    waits = re.findall(r'repeated failed logins: the answer waits (\d+) ms', log)
    assert waits == ["100", "200", "400"]
    # The right password still gets in, and clears the count.
    assert login(meridian, "alice", "wonderland")[0] == "ok"
    assert login(meridian, "alice", "guess")[0] == "error"
    assert re.findall(r'repeated failed logins', meridian.log_path.read_text()) == ["repeated failed logins"] * 3
