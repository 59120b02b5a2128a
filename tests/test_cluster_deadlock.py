"""Deadlocks across datanodes (issue 30): the waits on every datanode form one wait-for
graph, and a cycle that no datanode sees whole is broken by the coordinator's global
deadlock detector with exactly one 40P01, the others going on.

A GTM, three datanode processes and two coordinators (`MeridianClusterServer`). Which
datanode holds a row is the bucket hash's business, so the two-session tests close
cycles over several pairs of rows until one spans datanodes (the 40P01's detail says
which detector broke it); every round, local or not, must have exactly one victim. The
sessions of a cycle sit on one coordinator, or alternate between the two: each
coordinator's detector sees the whole graph, and both choose the same victim.

These exercise the cluster, so they always run against the Meridian binary.
"""

import threading
import time

import psycopg
import pytest


# "Never hangs", with margin for a slow machine: not a performance claim (the detector
# polls every 200 ms and acts on edges seen twice).
BOUND_S = 3.0
ACROSS = "across datanodes"


@pytest.fixture
def cluster(meridian_cluster):
    with meridian_cluster.connect() as conn:
        conn.autocommit = True
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)")
        conn.execute("INSERT INTO t SELECT g, 0 FROM generate_series(1, 60) g")
    return meridian_cluster


class Waiting:
    """A statement run on its own thread: when it ended and how."""

    def __init__(self, conn, sql):
        self.error = None
        self.ended = None
        self.thread = threading.Thread(target=self._run, args=(conn, sql))
        self.thread.start()

    def _run(self, conn, sql):
        try:
            conn.execute(sql)
        except psycopg.Error as e:
            self.error = e
        self.ended = time.monotonic()

    def join(self):
        self.thread.join(60)
        assert not self.thread.is_alive(), "the statement still hangs after 60 s"


def close_cycle(servers, ids):
    """Session i (on coordinator servers[i mod len]) holds row ids[i], then updates row
    ids[i + 1] (the last, ids[0]); the last session's update closes the cycle. Returns
    the sessions' statements and the moment the cycle closed; the sessions are in open
    transactions."""
    conns = [servers[i % len(servers)].connect() for i in range(len(ids))]
    for conn, row in zip(conns, ids):
        conn.execute("UPDATE t SET v = v + 1 WHERE id = %s", (row,))
    waits = []
    for i, conn in enumerate(conns[:-1]):
        waits.append(Waiting(conn, f"UPDATE t SET v = v + 100 WHERE id = {ids[i + 1]}"))
    time.sleep(0.5)  # the others reach their waits
    closed = time.monotonic()
    waits.append(Waiting(conns[-1], f"UPDATE t SET v = v + 100 WHERE id = {ids[0]}"))
    return conns, waits, closed


def break_cycle(servers, ids):
    """Closes the cycle over `ids` with sessions spread over `servers`; checks that
    exactly one session gets 40P01 within the bound and that the others commit. Returns
    the victim's 40P01."""
    conns, waits, closed = close_cycle(servers, ids)
    try:
        deadline = closed + BOUND_S
        while time.monotonic() < deadline and not any(w.ended for w in waits):
            time.sleep(0.02)
        victims = [i for i, w in enumerate(waits) if w.ended is not None]
        assert len(victims) == 1, f"after {BOUND_S} s: {[(w.ended, w.error) for w in waits]}"
        victim = victims[0]
        err = waits[victim].error
        assert isinstance(err, psycopg.errors.DeadlockDetected), err
        assert waits[victim].ended - closed < BOUND_S
        conns[victim].rollback()
        # session i waits for session i + 1: the victim's predecessor goes on first
        n = len(ids)
        for step in range(1, n):
            i = (victim - step) % n
            waits[i].join()
            assert waits[i].error is None, waits[i].error
            conns[i].commit()
        with servers[-1].connect() as conn:
            rows = dict(conn.execute("SELECT id, v FROM t WHERE id = ANY(%s)",
                                     (list(ids),)).fetchall())
        # each survivor added 1 to its own row and 100 to the next; the victim nothing
        expect = {row: 0 for row in ids}
        for i, row in enumerate(ids):
            if i != victim:
                expect[row] += 1
                expect[ids[(i + 1) % n]] += 100
        assert rows == expect
        return err
    finally:
        for conn in conns:
            conn.close()


PAIRS = [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12), (13, 14), (15, 16)]


def cycle_across_datanodes(servers, pairs):
    for ids in pairs:
        err = break_cycle(servers, ids)
        if ACROSS in (err.diag.message_detail or ""):
            return
    pytest.fail(f"no pair of {pairs} spanned datanodes: is the global detector running?")


def test_two_session_cycle_across_datanodes_has_one_victim(cluster):
    cycle_across_datanodes([cluster], PAIRS)


def test_two_sessions_on_two_coordinators_have_one_victim(cluster):
    cycle_across_datanodes([cluster, cluster.second], [(a + 30, b + 30) for a, b in PAIRS])


def test_three_session_cycle_has_one_victim(cluster):
    # ids 1..3 land on three datanodes (round-robin buckets); either way one victim
    break_cycle([cluster], (21, 22, 23))
    break_cycle([cluster], (1, 2, 3))


def test_three_sessions_over_two_coordinators_have_one_victim(cluster):
    break_cycle([cluster, cluster.second], (24, 25, 26))
    break_cycle([cluster.second, cluster], (27, 28, 29))
