"""pg_stat_activity, pg_cancel_backend / pg_terminate_backend and ALTER ROLE … SET.

Each test runs the same scenario against the server under test and against PostgreSQL 15
(the ``postgres`` fixture) and compares what the clients saw: a session blocked on a row
lock held by another shows state 'active' and wait event Lock/transactionid, and
pg_cancel_backend ends its statement with 57014; pg_terminate_backend ends a session
with 57P01; the signal functions' results, warnings and privilege errors; a role's
statement_timeout set by ALTER ROLE … SET applies to its new sessions only. Roles created
on the shared PostgreSQL are dropped again.
"""

import threading
import time

import psycopg
import pytest

WAIT_LIMIT_S = 30  # how long a poll for a state may go on before the test fails


def wait_for(conn, query, params, predicate):
    """Polls `query` on `conn` until `predicate(rows)` holds; returns those rows."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while True:
        rows = conn.execute(query, params).fetchall()
        if predicate(rows):
            return rows
        assert time.monotonic() < deadline, f"never true: {query} {params} -> {rows}"
        time.sleep(0.05)


def setup_table(server, table):
    with server.connect(autocommit=True) as c:
        c.execute(f"DROP TABLE IF EXISTS {table}")
        c.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v int NOT NULL)")
        c.execute(f"INSERT INTO {table} VALUES (1, 0)")


def run_in_thread(conn, sql):
    """Runs `sql` on `conn` in a thread; the returned dict gets 'error' or 'done'."""
    outcome = {}

    def body():
        try:
            conn.execute(sql)
            outcome["done"] = True
        except psycopg.Error as e:
            outcome["error"] = e

    t = threading.Thread(target=body)
    t.start()
    outcome["thread"] = t
    return outcome


ACTIVITY = """SELECT state, wait_event_type, wait_event, query, xact_start IS NOT NULL,
                     query_start IS NOT NULL, backend_start <= query_start, usename,
                     application_name, backend_type, client_addr::text, client_port > 0
              FROM pg_stat_activity WHERE pid = %s"""


def blocked_and_cancelled(server):
    setup_table(server, "act_lock")
    update = "UPDATE act_lock SET v = 2 WHERE id = 1"
    seen = {}
    with server.connect() as holder, \
            server.connect(application_name="act_waiter") as waiter, \
            server.connect(autocommit=True) as observer:
        holder.execute("UPDATE act_lock SET v = 1 WHERE id = 1")
        holder_pid = holder.info.backend_pid
        waiter_pid = waiter.info.backend_pid
        outcome = run_in_thread(waiter, update)
        rows = wait_for(observer, ACTIVITY, (waiter_pid,),
                        lambda r: r and r[0][1] == "Lock")
        seen["waiter"] = rows[0]
        seen["holder"] = observer.execute(ACTIVITY, (holder_pid,)).fetchone()
        seen["observer"] = observer.execute(
            "SELECT state, wait_event_type, query LIKE 'SELECT state, wait_event_type, query LIKE%%'"
            " FROM pg_stat_activity WHERE pid = pg_backend_pid()").fetchone()
        seen["count"] = observer.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid IN (%s, %s, %s)",
            (holder_pid, waiter_pid, observer.info.backend_pid)).fetchone()[0]
        seen["cancel"] = observer.execute("SELECT pg_cancel_backend(%s)", (waiter_pid,)).fetchone()
        outcome["thread"].join(WAIT_LIMIT_S)
        assert not outcome["thread"].is_alive(), "the cancelled UPDATE did not return"
        err = outcome.get("error")
        seen["error"] = (err.sqlstate, str(err).splitlines()[0]) if err else None
        waiter.rollback()
        # PostgreSQL's backend shows idle a moment before it waits on the client (NULL
        # wait_event_type meanwhile): wait for the wait too
        rows = wait_for(observer, "SELECT state, wait_event_type FROM pg_stat_activity WHERE pid = %s",
                        (waiter_pid,), lambda r: r and r[0] == ("idle", "Client"))
        seen["waiter_after"] = rows[0]
        holder.rollback()
    return seen


def test_blocked_session_shows_its_lock_wait_and_is_cancelled(meridian, postgres):
    got, want = blocked_and_cancelled(meridian), blocked_and_cancelled(postgres)
    assert got["waiter"][0:10] == (
        "active", "Lock", "transactionid", "UPDATE act_lock SET v = 2 WHERE id = 1",
        True, True, True, "postgres", "act_waiter", "client backend")
    assert got["waiter"][0:10] == want["waiter"][0:10]
    # The address: Meridian's is text, PostgreSQL's inet (as text with its /32).
    assert got["waiter"][10:] == ("127.0.0.1", True)
    assert want["waiter"][10:] == ("127.0.0.1/32", True)
    assert got["holder"][0:10] == want["holder"][0:10]
    assert got["holder"][0] == "idle in transaction"
    assert got["holder"][3] == "UPDATE act_lock SET v = 1 WHERE id = 1"
    for key in ("observer", "count", "cancel", "error", "waiter_after"):
        assert got[key] == want[key], key
    assert got["error"] == ("57014", "canceling statement due to user request")
    assert got["cancel"] == (True,)


def terminated(server):
    setup_table(server, "act_term")
    seen = {}
    with server.connect(autocommit=True) as admin:
        # An idle session: its next statement finds the connection ended with 57P01.
        idle = server.connect(autocommit=True)
        seen["terminate_idle"] = admin.execute(
            "SELECT pg_terminate_backend(%s)", (idle.info.backend_pid,)).fetchone()
        wait_for(admin, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                 (idle.info.backend_pid,), lambda r: r[0][0] == 0)
        try:
            idle.execute("SELECT 1")
            seen["idle"] = "still connected"
        except psycopg.Error as e:
            seen["idle"] = (e.sqlstate, str(e).splitlines()[0])
        idle.close()

        # A session blocked on a row lock.
        with server.connect() as holder:
            holder.execute("UPDATE act_term SET v = 1 WHERE id = 1")
            blocked = server.connect(autocommit=True)
            pid = blocked.info.backend_pid
            outcome = run_in_thread(blocked, "UPDATE act_term SET v = 2 WHERE id = 1")
            wait_for(admin, "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                     (pid,), lambda r: r and r[0][0] == "Lock")
            seen["terminate_blocked"] = admin.execute(
                "SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
            outcome["thread"].join(WAIT_LIMIT_S)
            assert not outcome["thread"].is_alive(), "the terminated UPDATE did not return"
            err = outcome.get("error")
            seen["blocked"] = (err.sqlstate, str(err).splitlines()[0]) if err else None
            seen["blocked_closed"] = blocked.closed or blocked.broken
            blocked.close()
            holder.rollback()
        seen["row"] = admin.execute("SELECT v FROM act_term").fetchall()
    return seen


def test_terminate_ends_idle_and_blocked_sessions(meridian, postgres):
    got, want = terminated(meridian), terminated(postgres)
    assert got == want
    assert got["idle"] == ("57P01", "terminating connection due to administrator command")
    assert got["blocked"] == ("57P01", "terminating connection due to administrator command")


def signal_results(server):
    seen = {}
    with server.connect(autocommit=True) as su:
        for r in ("act_alice", "act_bob"):
            su.execute(f"DROP ROLE IF EXISTS {r}")
            su.execute(f"CREATE ROLE {r} LOGIN")
        try:
            notices = []
            su.add_notice_handler(lambda d: notices.append((d.severity, d.message_primary)))
            seen["unknown"] = su.execute("SELECT pg_cancel_backend(2147483000)").fetchone()
            seen["unknown_terminate"] = su.execute(
                "SELECT pg_terminate_backend(2147483000, 100)").fetchone()
            seen["notices"] = list(notices)
            seen["null"] = su.execute(
                "SELECT pg_cancel_backend(NULL), pg_terminate_backend(NULL)").fetchone()
            for sql in ("SELECT pg_terminate_backend(pg_backend_pid(), -1)",):
                try:
                    su.execute(sql)
                    seen[sql] = "ok"
                except psycopg.Error as e:
                    seen[sql] = (e.sqlstate, e.diag.message_primary)
            with server.connect(user="act_alice", autocommit=True) as alice, \
                    server.connect(user="act_alice", autocommit=True) as alice2, \
                    server.connect(user="act_bob", autocommit=True) as bob:
                def attempt(conn, fn, pid):
                    try:
                        return conn.execute(f"SELECT {fn}(%s)", (pid,)).fetchone()
                    except psycopg.Error as e:
                        return (e.sqlstate, e.diag.message_primary)
                seen["alice_bob"] = attempt(alice, "pg_cancel_backend", bob.info.backend_pid)
                seen["alice_bob_t"] = attempt(alice, "pg_terminate_backend", bob.info.backend_pid)
                seen["alice_su"] = attempt(alice, "pg_cancel_backend", su.info.backend_pid)
                seen["alice_su_t"] = attempt(alice, "pg_terminate_backend", su.info.backend_pid)
                seen["alice_alice2"] = attempt(alice, "pg_cancel_backend", alice2.info.backend_pid)
                # A non-superuser sees other roles' sessions without their query.
                seen["alice_sees_bob"] = alice.execute(
                    "SELECT usename, state, query, client_addr FROM pg_stat_activity WHERE pid = %s",
                    (bob.info.backend_pid,)).fetchone()
                seen["alice_sees_alice2"] = alice.execute(
                    "SELECT usename, state, query FROM pg_stat_activity WHERE pid = %s",
                    (alice2.info.backend_pid,)).fetchone()
                seen["alice2_alive"] = alice2.execute("SELECT 1").fetchone()
        finally:
            for r in ("act_alice", "act_bob"):
                su.execute(f"DROP ROLE IF EXISTS {r}")
    return seen


def test_signal_functions_results_and_privileges(meridian, postgres):
    got, want = signal_results(meridian), signal_results(postgres)
    assert got == want
    assert got["unknown"] == (False,)
    assert got["notices"][0] == ("WARNING", "PID 2147483000 is not a PostgreSQL backend process")
    assert got["alice_bob"][0] == "42501"
    assert got["alice_sees_bob"] == ("act_bob", None, "<insufficient privilege>", None)


def role_settings(server):
    seen = {}
    update = "UPDATE act_role_t SET v = 2 WHERE id = 1"
    setup_table(server, "act_role_t")
    with server.connect(autocommit=True) as su:
        for r in ("act_timed", "act_other"):
            su.execute(f"DROP ROLE IF EXISTS {r}")
            su.execute(f"CREATE ROLE {r} LOGIN")
        su.execute("GRANT ALL ON act_role_t TO act_timed")
        try:
            earlier = server.connect(user="act_timed", autocommit=True)

            def attempt(conn, sql):
                try:
                    conn.execute(sql)
                    return "ok"
                except psycopg.Error as e:
                    return (e.sqlstate, e.diag.message_primary)

            seen["set"] = attempt(su, "ALTER ROLE act_timed SET statement_timeout = '300ms'")
            seen["datestyle"] = attempt(su, "ALTER USER act_timed SET DateStyle TO 'SQL', 'DMY'")
            seen["bad_value"] = attempt(su, "ALTER ROLE act_timed SET statement_timeout = 'soon'")
            seen["bad_name"] = attempt(su, "ALTER ROLE act_timed SET no_such_setting = 1")
            seen["bad_role"] = attempt(su, "ALTER ROLE act_nobody SET work_mem = '8MB'")
            seen["config"] = su.execute(
                "SELECT rolconfig FROM pg_roles WHERE rolname = 'act_timed'").fetchone()
            seen["db_role_setting"] = su.execute(
                "SELECT setdatabase, setconfig FROM pg_db_role_setting s JOIN pg_roles r"
                " ON r.oid = s.setrole WHERE rolname = 'act_timed'").fetchall()
            seen["earlier"] = earlier.execute("SHOW statement_timeout").fetchone()
            with server.connect(user="act_other", autocommit=True) as other:
                seen["other_alters_timed"] = attempt(
                    other, "ALTER ROLE act_timed SET work_mem = '8MB'")
                seen["other_alters_su"] = attempt(other, "ALTER ROLE postgres SET work_mem = '8MB'")
                seen["other_alters_self"] = attempt(other, "ALTER ROLE act_other SET work_mem = '8MB'")
            with server.connect() as holder, \
                    server.connect(user="act_timed", autocommit=True) as later:
                seen["later"] = later.execute(
                    "SELECT current_setting('statement_timeout'), current_setting('DateStyle')"
                ).fetchone()
                holder.execute("UPDATE act_role_t SET v = 1 WHERE id = 1")
                seen["timed_out"] = attempt(later, update)
                holder.rollback()
            earlier.close()
            seen["reset"] = attempt(su, "ALTER ROLE act_timed RESET statement_timeout")
            seen["after_reset"] = su.execute(
                "SELECT rolconfig FROM pg_roles WHERE rolname = 'act_timed'").fetchone()
            seen["reset_all"] = attempt(su, "ALTER ROLE act_timed RESET ALL")
            seen["after_reset_all"] = su.execute(
                "SELECT rolconfig FROM pg_roles WHERE rolname = 'act_timed'").fetchone()
            with server.connect(user="act_timed", autocommit=True) as fresh:
                seen["fresh"] = fresh.execute("SHOW statement_timeout").fetchone()
        finally:
            su.execute("REVOKE ALL ON act_role_t FROM act_timed")
            for r in ("act_timed", "act_other"):
                if server.kind == "postgres":
                    su.execute(f"DROP OWNED BY {r}")
                su.execute(f"DROP ROLE IF EXISTS {r}")
    return seen


def test_alter_role_set_applies_to_new_sessions(meridian, postgres):
    got, want = role_settings(meridian), role_settings(postgres)
    assert got == want
    assert got["timed_out"] == ("57014", "canceling statement due to statement timeout")
    assert got["later"] == ("300ms", "SQL, DMY")
    assert got["earlier"] == ("0",)
    assert got["config"] == (["statement_timeout=300ms", "DateStyle=SQL, DMY"],)


def test_role_settings_survive_a_restart(meridian):
    with meridian.connect(autocommit=True) as su:
        su.execute("CREATE ROLE act_kept LOGIN")
        su.execute("ALTER ROLE act_kept SET work_mem = '8MB'")
    meridian.kill9()
    meridian.restart()
    with meridian.connect(user="act_kept", autocommit=True) as kept:
        assert kept.execute("SHOW work_mem").fetchone() == ("8MB",)
    with meridian.connect(autocommit=True) as su:
        assert su.execute("SELECT rolconfig FROM pg_roles WHERE rolname = 'act_kept'").fetchone() \
            == (["work_mem=8MB"],)
