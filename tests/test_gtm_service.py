"""The GTM as its own process (issue 3): `meridian gtm` + `meridian start --gtm HOST:PORT`.

1. pgbench tpcb-like (-c 16 -j 2 -T $MERIDIAN_PGBENCH_SECONDS) against an embedded server
   that takes its timestamps from a separate GTM process: 0 failed transactions, the
   TPC-B invariant holds and the history has one row per processed transaction.
2. Killing the GTM (SIGKILL) while clients run makes their transactions fail promptly
   with a connection-class SQLSTATE (08xxx / 57P01), never hang; once the GTM is
   restarted on the same data directory, transactions succeed again and the invariant
   still holds; the first statement after a restart succeeds, even on a connection that
   sat idle through it.
3. The GTM's own wire protocol, spoken by a raw client: timestamps are never reissued
   after kill -9, and the commit decision record (decide / resolve / forget, decision
   0029) answers as specified and keeps answered decisions across kill -9.

These exercise Meridian-only commands, so they always run against the Meridian binary.
"""

import threading
import time

import psycopg
import pytest

from conftest import GtmServer, MeridianServer, _new_base_dir, finish_server
from test_pgbench import parse_run, pgbench, sums

SECONDS = int(__import__("os").environ.get("MERIDIAN_PGBENCH_SECONDS", "10"))


class MeridianWithRemoteGtm(MeridianServer):
    def __init__(self, *a, gtm_addr: str, **kw):
        super().__init__(*a, **kw)
        self.gtm_addr = gtm_addr

    def _command(self):
        return super()._command() + ["--gtm", self.gtm_addr]


@pytest.fixture
def cluster():
    gtm = GtmServer(_new_base_dir("gtm")).start()
    server = MeridianWithRemoteGtm(_new_base_dir("meridian"), gtm_addr=f"{gtm.host}:{gtm.port}").start()
    yield gtm, server
    for h in (server, gtm):
        finish_server(h)


def assert_invariant(server, expect_history=None):
    s = sums(server)
    assert s["accounts"] == s["tellers"] == s["branches"] == s["history_delta"], s
    if expect_history is not None:
        assert s["history_count"] == expect_history, s
    return s


def test_pgbench_with_separate_gtm(cluster):
    gtm, server = cluster
    rc, out, log = pgbench(server, "-i", "-s", "1", "-q", timeout=600)
    assert rc == 0, log
    rc, out, log = pgbench(server, "-n", "-c", "16", "-j", "2", "-T", str(SECONDS), "-M", "prepared", timeout=SECONDS + 120)
    assert rc == 0, log
    processed, failed = parse_run(out, log)
    assert failed == 0, log
    assert processed > 0, log
    assert_invariant(server, expect_history=processed)
    assert gtm.is_alive() and server.is_alive()


def transfer(conn, aid, tid, bid, delta):
    with conn.transaction():
        conn.execute("UPDATE pgbench_accounts SET abalance = abalance + %s WHERE aid = %s", (delta, aid))
        conn.execute("UPDATE pgbench_tellers SET tbalance = tbalance + %s WHERE tid = %s", (delta, tid))
        conn.execute("UPDATE pgbench_branches SET bbalance = bbalance + %s WHERE bid = %s", (delta, bid))
        conn.execute("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (%s, %s, %s, %s, now())",
                     (tid, bid, aid, delta))


def test_gtm_killed_and_restarted(cluster):
    gtm, server = cluster
    rc, out, log = pgbench(server, "-i", "-s", "1", "-q", timeout=600)
    assert rc == 0, log

    stop = threading.Event()
    results = {"ok_before": 0, "ok_after": 0, "errors": [], "slowest_failure": 0.0}
    restarted = threading.Event()
    lock = threading.Lock()

    def worker(n):
        conn = psycopg.connect(server.dsn, autocommit=True)
        i = 0
        while not stop.is_set():
            i += 1
            started = time.monotonic()
            try:
                transfer(conn, 1 + (n * 97 + i) % 100000, 1 + n % 10, 1, 1)
                with lock:
                    results["ok_after" if restarted.is_set() else "ok_before"] += 1
            except psycopg.Error as e:
                with lock:
                    results["errors"].append(e.sqlstate)
                    results["slowest_failure"] = max(results["slowest_failure"], time.monotonic() - started)
                if e.sqlstate is None or conn.closed:
                    conn = psycopg.connect(server.dsn, autocommit=True)
                time.sleep(0.02)
        conn.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    time.sleep(2)
    gtm.kill9()
    time.sleep(2)
    failures_while_down = len(results["errors"])
    gtm.start()
    restarted.set()
    time.sleep(4)
    stop.set()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a client hung after the GTM came back"

    assert results["ok_before"] > 0, results
    assert failures_while_down > 0, f"no transaction failed while the GTM was down: {results}"
    bad = [c for c in results["errors"] if c is None or not (c.startswith("08") or c == "57P01")]
    assert not bad, f"unexpected SQLSTATEs while the GTM was down: {sorted(set(map(str, bad)))}"
    # The client's request timeout (5 s) bounds every failure.
    assert results["slowest_failure"] < 30, results
    assert results["ok_after"] > 0, f"no transaction succeeded after the GTM restarted: {results}"
    assert_invariant(server)
    assert server.is_alive()


def test_first_statement_after_gtm_restart_succeeds(cluster):
    """The coordinator's GTM connection dies with the GTM while idle; once the GTM is back,
    the very first statement must succeed (it used to fail with 08006 "lost connection to
    GTM: early eof", however long after the restart it came, because the dead connection
    was only found when used)."""
    gtm, server = cluster
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE after_restart (id int PRIMARY KEY, v int)")
        conn.execute("INSERT INTO after_restart VALUES (1, 1)")
        gtm.kill9()
        gtm.start()
        time.sleep(1)  # idle: no statement, and well before the datanode's next GC round
        conn.execute("UPDATE after_restart SET v = v + 1 WHERE id = 1")
        assert conn.execute("SELECT v FROM after_restart WHERE id = 1").fetchone() == (2,)
    assert server.is_alive()


GTM_PROTOCOL = 3
RESOLVED_ABORTED, RESOLVED_PENDING = 0, 2**64 - 1


class RawGtmClient:
    """Speaks the GTM wire format (crates/gtm/README.md, version 3) over a plain socket."""

    def __init__(self, host, port):
        import socket
        import struct
        self.struct = struct
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.sendall(b"MGTM" + struct.pack("<HHI", GTM_PROTOCOL, 0, 0))
        reply = self._read(4 + 2 + 2 + 8 + 8 + 8)
        assert reply[:4] == b"MGTM", reply
        assert struct.unpack("<H", reply[6:8])[0] == 0, "handshake refused"
        self.seq = 0

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("GTM closed the connection")
            buf += chunk
        return buf

    def batch(self, begins=0, timestamps=0, commits=(), finishes=(), decides=(), resolves=(), forgets=()):
        """One batch; returns (begin_first, ts_first, commit_first, decide answers,
        resolve answers)."""
        s = self.struct
        self.seq += 1
        lists = [commits, finishes, decides, resolves, forgets]
        body = bytes([1]) + s.pack("<Q", self.seq) + s.pack("<II", begins, timestamps)
        body += s.pack("<IIIII", *map(len, lists))
        for lst in lists:
            body += b"".join(s.pack("<Q", t) for t in lst)
        self.sock.sendall(s.pack("<I", len(body)) + body)
        (length,) = s.unpack("<I", self._read(4))
        resp = self._read(length)
        assert resp[0] == 1, f"GTM error: {resp!r}"
        # seq, begin_first, ts_first, commit_first, horizon, metadata version
        seq, begin_first, ts_first, commit_first, _, _ = s.unpack("<QQQQQQ", resp[1:49])
        assert seq == self.seq
        answers = s.unpack(f"<{len(decides) + len(resolves)}Q", resp[49:])
        return begin_first, ts_first, commit_first, answers[:len(decides)], answers[len(decides):]

    def timestamps(self, n):
        """n fresh timestamps (one batch)."""
        ts_first = self.batch(timestamps=n)[1]
        return list(range(ts_first, ts_first + n))

    def begin(self):
        return self.batch(begins=1)[0]

    def decide(self, start):
        """The commit timestamp, or 0 if refused (recorded aborted)."""
        return self.batch(decides=[start])[3][0]

    def resolve(self, start):
        """The commit timestamp, RESOLVED_ABORTED or RESOLVED_PENDING."""
        return self.batch(resolves=[start])[4][0]

    def forget(self, start):
        self.batch(forgets=[start])

    def close(self):
        self.sock.close()


def test_meridian_gtm_never_reissues_after_kill9():
    gtm = GtmServer(_new_base_dir("gtm")).start()
    try:
        highest = 0
        for round_no in range(3):
            seen_this_round = []
            stop = threading.Event()

            def hammer():
                try:
                    c = RawGtmClient(gtm.host, gtm.port)
                    while not stop.is_set():
                        seen_this_round.extend(c.timestamps(1000))
                except (ConnectionError, OSError):
                    pass  # the GTM was killed under us

            t = threading.Thread(target=hammer)
            t.start()
            time.sleep(0.5)
            gtm.kill9()
            stop.set()
            t.join(30)
            assert not t.is_alive()
            assert seen_this_round, f"round {round_no}: no timestamps before the kill"
            assert min(seen_this_round) > highest, f"round {round_no}: reissued a timestamp"
            assert len(set(seen_this_round)) == len(seen_this_round), "duplicate timestamps"
            highest = max(seen_this_round)
            gtm.start()
        c = RawGtmClient(gtm.host, gtm.port)
        after = c.timestamps(10)
        c.close()
        assert min(after) > highest, f"after restart the GTM issued {min(after)} <= {highest}"
    finally:
        finish_server(gtm)


def test_decision_record_over_the_wire():
    """decide / resolve / forget (decision 0029) in protocol 3, and a decision that was
    answered survives kill -9 of the GTM."""
    gtm = GtmServer(_new_base_dir("gtm")).start()
    try:
        coordinator = RawGtmClient(gtm.host, gtm.port)
        resolver = RawGtmClient(gtm.host, gtm.port)

        # Undecided and registered by nobody (its coordinator is gone): aborted, and a
        # late decide is refused.
        (gone,) = coordinator.timestamps(1)
        assert resolver.resolve(gone) == RESOLVED_ABORTED
        assert coordinator.decide(gone) == 0
        assert resolver.resolve(gone) == RESOLVED_ABORTED

        # Registered by a live connection: pending, until decided.
        start = coordinator.begin()
        assert resolver.resolve(start) == RESOLVED_PENDING
        (before,) = coordinator.timestamps(1)
        ts = coordinator.decide(start)
        assert ts > before
        # Deciding twice gives the same timestamp; the resolver sees it.
        assert coordinator.decide(start) == ts
        assert resolver.resolve(start) == ts

        # Several in one batch, with a forget of the first decision.
        a, b = coordinator.begin(), coordinator.begin()
        _, _, _, decided, resolved = coordinator.batch(decides=[a, b], resolves=[gone, start], forgets=[start])
        assert decided[0] > ts and decided[1] == decided[0] + 1, decided
        assert resolved == (RESOLVED_ABORTED, ts)
        coordinator.close()
        resolver.close()

        # The GTM dies after answering: the decisions are durable.
        gtm.kill9()
        gtm.start()
        after = RawGtmClient(gtm.host, gtm.port)
        assert after.resolve(a) == decided[0]
        assert after.resolve(b) == decided[1]
        assert after.decide(gone) == 0
        assert after.resolve(gone) == RESOLVED_ABORTED
        # Timestamps issued after the restart are above the decided ones.
        assert after.timestamps(1)[0] > decided[1]
        after.close()
    finally:
        finish_server(gtm)
