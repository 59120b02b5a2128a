"""pg_sleep (issue 29 item 3, issue 31 item 7): it waits in the executor, where the
statement's timeout and a cancel request end it with 57014 as they end any other wait;
per row where it is called per row; its result is PostgreSQL's (type void). Each test
runs the same statements against PostgreSQL 15 where results are compared.
"""

import threading
import time

import psycopg
import pytest


def answer(server, sql):
    with server.connect(autocommit=True) as conn:
        cur = conn.execute(sql)
        return [d.type_code for d in cur.description], cur.fetchall()


def test_pg_sleep_waits_and_returns_void_as_postgresql(target, postgres):
    for sql in ("SELECT pg_sleep(0.2)", "SELECT pg_sleep(0)", "SELECT pg_sleep(NULL)",
                "SELECT pg_typeof(pg_sleep(0))::text", "SELECT pg_sleep(-1) IS NULL",
                "SELECT n FROM generate_series(1, 3) n WHERE pg_sleep(0.01) IS NOT NULL ORDER BY n"):
        start = time.monotonic()
        got = answer(target, sql)
        took = time.monotonic() - start
        assert got == answer(postgres, sql), sql
        if "0.2" in sql:
            assert took >= 0.2, f"{sql} returned after {took:.3f} s"
    # per row: three rows sleep three times
    start = time.monotonic()
    rows = answer(target, "SELECT pg_sleep(0.15) FROM generate_series(1, 3)")[1]
    assert len(rows) == 3
    assert time.monotonic() - start >= 0.45


def test_statement_timeout_ends_pg_sleep(target):
    with target.connect(autocommit=True) as conn:
        conn.execute("SET statement_timeout = 300")
        start = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled) as raised:
            conn.execute("SELECT pg_sleep(60)")
        assert raised.value.sqlstate == "57014"
        assert "statement timeout" in str(raised.value)
        # ended by the timeout, not by the minute's end (a loose bound: a loaded machine)
        assert time.monotonic() - start < 30
        conn.execute("SET statement_timeout = 0")
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_cancel_ends_pg_sleep_and_the_session_stays_usable(target):
    with target.connect(autocommit=True) as conn:
        outcome = {}

        def sleeper():
            try:
                conn.execute("SELECT pg_sleep(60)")
                outcome["result"] = "completed"
            except psycopg.Error as e:
                outcome["result"] = e

        t = threading.Thread(target=sleeper)
        t.start()
        time.sleep(0.5)
        assert t.is_alive(), f"pg_sleep(60) returned early: {outcome.get('result')!r}"
        conn.cancel()
        t.join(timeout=30)
        assert not t.is_alive(), "the cancelled pg_sleep did not return"
        err = outcome["result"]
        assert isinstance(err, psycopg.errors.QueryCanceled), repr(err)
        assert "user request" in str(err)
        assert conn.execute("SELECT 2").fetchone() == (2,)


def test_pg_sleep_in_a_transaction_then_commit(target):
    with target.connect() as conn:
        conn.execute("DROP TABLE IF EXISTS sleep_t")
        conn.execute("CREATE TABLE sleep_t (id int PRIMARY KEY, v int)")
        conn.execute("INSERT INTO sleep_t SELECT 1, 1 FROM (SELECT pg_sleep(0.05)) s")
        conn.commit()
        assert conn.execute("SELECT v FROM sleep_t").fetchall() == [(1,)]
        conn.execute("DROP TABLE sleep_t")
        conn.commit()
