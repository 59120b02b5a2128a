"""Cancel requests (the protocol's CancelRequest, sent by psycopg's ``conn.cancel()``).

A statement waiting for a row lock ends with 57014 and leaves its session usable; a cancel
that arrives while the session is idle does nothing. Both pass against PostgreSQL 15 too
(``MERIDIAN_TEST_TARGETS=postgres``).
"""

import threading
import time

import psycopg
import pytest


@pytest.fixture
def acct(meridian):
    with meridian.connect() as conn:
        conn.autocommit = True
        conn.execute("DROP TABLE IF EXISTS cancel_acct")
        conn.execute("CREATE TABLE cancel_acct (id int PRIMARY KEY, note text NOT NULL)")
        conn.execute("INSERT INTO cancel_acct VALUES (1, 'initial')")
    return meridian


def test_cancel_ends_a_statement_waiting_for_a_lock(acct):
    with acct.connect() as holder, acct.connect() as waiter:
        holder.execute("UPDATE cancel_acct SET note = 'holder' WHERE id = 1")  # holds the row (open transaction)
        outcome = {}

        def blocked_update():
            try:
                waiter.execute("UPDATE cancel_acct SET note = 'waiter' WHERE id = 1")
                outcome["result"] = "completed"
            except psycopg.Error as e:
                outcome["result"] = e

        t = threading.Thread(target=blocked_update)
        t.start()
        time.sleep(0.5)
        assert t.is_alive(), f"the UPDATE should wait for the row lock, got {outcome.get('result')!r}"
        waiter.cancel()
        t.join(timeout=10)
        assert not t.is_alive(), "the cancelled UPDATE did not return"
        err = outcome["result"]
        assert isinstance(err, psycopg.errors.QueryCanceled), repr(err)
        assert err.sqlstate == "57014"
        assert "canceling statement due to user request" in str(err)

        # The waiter's transaction is aborted (25P02) until it rolls back, then usable again.
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            waiter.execute("SELECT 1")
        waiter.rollback()
        assert waiter.execute("SELECT note FROM cancel_acct WHERE id = 1").fetchone() == ("initial",)
        waiter.rollback()

        holder.commit()
    with acct.connect() as conn:
        assert conn.execute("SELECT note FROM cancel_acct WHERE id = 1").fetchone() == ("holder",)


def test_cancel_while_idle_does_nothing(acct):
    with acct.connect() as conn:
        conn.autocommit = True
        conn.cancel()
        time.sleep(0.3)  # the cancel request travels on its own connection
        assert conn.execute("UPDATE cancel_acct SET note = 'after' WHERE id = 1").rowcount == 1
        assert conn.execute("SELECT note FROM cancel_acct WHERE id = 1").fetchone() == ("after",)
