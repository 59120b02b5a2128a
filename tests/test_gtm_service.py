"""The GTM as its own process (issue 3): `meridian gtm` + `meridian start --gtm HOST:PORT`.

1. pgbench tpcb-like (-c 16 -j 2 -T $MERIDIAN_PGBENCH_SECONDS) against an embedded server
   that takes its timestamps from a separate GTM process: 0 failed transactions, the
   TPC-B invariant holds and the history has one row per processed transaction.
2. Killing the GTM (SIGKILL) while clients run makes their transactions fail promptly
   with a connection-class SQLSTATE (08xxx / 57P01), never hang; once the GTM is
   restarted on the same data directory, transactions succeed again and the invariant
   still holds; the first statement after a restart succeeds, even on a connection that
   sat idle through it.

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


class RawGtmClient:
    """Speaks the GTM wire format (crates/gtm/README.md, version 2) over a plain socket."""

    def __init__(self, host, port):
        import socket
        import struct
        self.struct = struct
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.sendall(b"MGTM" + struct.pack("<HHI", 2, 0, 0))
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

    def timestamps(self, n):
        """n fresh timestamps (one batch)."""
        s = self.struct
        self.seq += 1
        body = bytes([1]) + s.pack("<Q", self.seq) + s.pack("<IIII", 0, n, 0, 0)
        self.sock.sendall(s.pack("<I", len(body)) + body)
        (length,) = s.unpack("<I", self._read(4))
        resp = self._read(length)
        assert resp[0] == 1, f"GTM error: {resp!r}"
        # seq, begin_first, ts_first, commit_first, horizon, metadata version
        _, _, ts_first, _, _, _ = s.unpack("<QQQQQQ", resp[1:49])
        return list(range(ts_first, ts_first + n))

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
