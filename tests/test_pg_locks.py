"""pg_locks and pg_blocking_pids (issue 32, item 5).

The same scenario runs against the server under test and against PostgreSQL 15 (the
``postgres`` fixture), and on a cluster of processes: a session holds a row it updated,
a second session's UPDATE of that row waits for it. What the monitoring queries that
PostgreSQL's users run find must be the same: the wiki's "blocking locks" query pairs the
waiter with the holder, pg_blocking_pids names the holder, the waiter's lock that is not
granted is a ShareLock on a transactionid that the holder holds granted, txid_current() is that
transactionid, and once the holder commits nothing waits. Locks PostgreSQL takes that Meridian has no equivalent of
(relation and tuple locks) are left out of the comparison by selecting the locktypes
compared.
"""

import threading

import psycopg

from test_activity import WAIT_LIMIT_S, wait_for

# The PostgreSQL wiki's lock monitoring query (https://wiki.postgresql.org/wiki/Lock_Monitoring).
BLOCKING = """
SELECT blocked_locks.pid AS blocked_pid, blocking_locks.pid AS blocking_pid,
       blocked_activity.query AS blocked_statement, blocking_activity.query AS blocking_statement
FROM pg_catalog.pg_locks blocked_locks
JOIN pg_catalog.pg_stat_activity blocked_activity ON blocked_activity.pid = blocked_locks.pid
JOIN pg_catalog.pg_locks blocking_locks
  ON blocking_locks.locktype = blocked_locks.locktype
 AND blocking_locks.database IS NOT DISTINCT FROM blocked_locks.database
 AND blocking_locks.relation IS NOT DISTINCT FROM blocked_locks.relation
 AND blocking_locks.page IS NOT DISTINCT FROM blocked_locks.page
 AND blocking_locks.tuple IS NOT DISTINCT FROM blocked_locks.tuple
 AND blocking_locks.virtualxid IS NOT DISTINCT FROM blocked_locks.virtualxid
 AND blocking_locks.transactionid IS NOT DISTINCT FROM blocked_locks.transactionid
 AND blocking_locks.classid IS NOT DISTINCT FROM blocked_locks.classid
 AND blocking_locks.objid IS NOT DISTINCT FROM blocked_locks.objid
 AND blocking_locks.objsubid IS NOT DISTINCT FROM blocked_locks.objsubid
 AND blocking_locks.pid != blocked_locks.pid
JOIN pg_catalog.pg_stat_activity blocking_activity ON blocking_activity.pid = blocking_locks.pid
WHERE NOT blocked_locks.granted AND blocked_locks.pid IN (%(waiter)s, %(holder)s)
ORDER BY 1, 2
"""


OWN_XID = ("SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND granted"
           " AND pid = pg_backend_pid() AND transactionid::text = txid_current()::text")


def blocked_row(server):
    """What the monitoring queries show while one session waits for another's row."""
    with server.connect(autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS lk_rows")
        c.execute("CREATE TABLE lk_rows (id int PRIMARY KEY, v int NOT NULL)")
        c.execute("INSERT INTO lk_rows VALUES (1, 0), (2, 0)")
    seen = {}
    with server.connect() as holder, server.connect() as waiter, \
            server.connect(autocommit=True) as observer:
        pids = {"holder": holder.info.backend_pid, "waiter": waiter.info.backend_pid}
        name = {pid: role for role, pid in pids.items()}
        holder.execute("UPDATE lk_rows SET v = 1 WHERE id = 1")
        # txid_current() names the transaction as pg_locks does.
        seen["own_xid"] = holder.execute(OWN_XID).fetchone()[0]
        outcome = {}

        def update():
            try:
                waiter.execute("UPDATE lk_rows SET v = 2 WHERE id = 1")
                outcome["done"] = True
            except psycopg.Error as e:
                outcome["error"] = e

        thread = threading.Thread(target=update)
        thread.start()
        wait_for(observer, "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                 (pids["waiter"],), lambda r: r and r[0][0] == "Lock")
        seen["columns"] = [d.name for d in observer.execute(
            "SELECT * FROM pg_locks LIMIT 0").description]
        seen["blocking"] = [(name[a], name[b], s1, s2)
                            for a, b, s1, s2 in observer.execute(BLOCKING, pids).fetchall()]
        seen["blocking_pids"] = {
            role: [name.get(p, p) for p in observer.execute(
                "SELECT pg_blocking_pids(%s)", (pid,)).fetchone()[0]]
            for role, pid in pids.items()}
        seen["blocked_sessions"] = observer.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE cardinality(pg_blocking_pids(pid)) > 0 AND pid IN (%(waiter)s, %(holder)s)",
            pids).fetchone()[0]
        seen["not_granted"] = observer.execute(
            "SELECT locktype, mode, waitstart IS NOT NULL, waitstart <= now(), fastpath"
            " FROM pg_locks WHERE NOT granted AND pid = %(waiter)s", pids).fetchall()
        seen["waited_for"] = [name[p] for (p,) in observer.execute(
            "SELECT b.pid FROM pg_locks w JOIN pg_locks b ON b.transactionid = w.transactionid"
            " WHERE NOT w.granted AND b.granted AND w.pid = %(waiter)s", pids).fetchall()]
        seen["granted"] = {
            role: observer.execute(
                "SELECT locktype, mode, fastpath, virtualtransaction IS NOT NULL, waitstart"
                " FROM pg_locks WHERE granted AND pid = %s"
                " AND locktype IN ('virtualxid', 'transactionid') ORDER BY locktype",
                (pid,)).fetchall()
            for role, pid in pids.items()}
        seen["own_vxid"] = observer.execute(
            "SELECT count(*) FROM pg_locks w JOIN pg_locks h"
            " ON h.virtualtransaction = w.virtualtransaction AND h.pid = w.pid"
            " WHERE w.pid = %(waiter)s AND w.locktype = 'virtualxid'"
            " AND h.locktype = 'transactionid' AND h.granted", pids).fetchone()[0]
        holder.commit()
        thread.join(WAIT_LIMIT_S)
        assert not thread.is_alive(), "the waiting UPDATE did not return"
        seen["outcome"] = sorted(outcome)
        seen["after_commit"] = observer.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid IN (%(waiter)s, %(holder)s)",
            pids).fetchone()[0]
        seen["blocking_after"] = observer.execute(
            "SELECT pg_blocking_pids(%(waiter)s)", pids).fetchone()[0]
        waiter.commit()
        seen["idle"] = observer.execute(
            "SELECT count(*) FROM pg_locks WHERE pid IN (%(waiter)s, %(holder)s)",
            pids).fetchone()[0]
    return seen


def expected_shape(seen):
    assert seen["blocking"] == [("waiter", "holder", "UPDATE lk_rows SET v = 2 WHERE id = 1", OWN_XID)]
    assert seen["blocking_pids"] == {"holder": [], "waiter": ["holder"]}
    assert seen["not_granted"] == [("transactionid", "ShareLock", True, True, False)]
    assert seen["waited_for"] == ["holder"]
    assert seen["own_xid"] == 1
    assert seen["after_commit"] == 0 and seen["blocking_after"] == [] and seen["idle"] == 0


def test_a_waiting_session_shows_its_blocker(meridian, postgres):
    got, want = blocked_row(meridian), blocked_row(postgres)
    expected_shape(want)  # the scenario means what the test says it means
    assert got == want


def test_a_waiting_session_shows_its_blocker_in_a_cluster(meridian_cluster, postgres):
    got, want = blocked_row(meridian_cluster), blocked_row(postgres)
    expected_shape(got)
    assert got == want
