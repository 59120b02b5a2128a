"""A datanode as its own process: `meridian gtm`, `meridian datanode --gtm G` and a
`meridian coordinator --gtm G`, three processes on loopback, with the
coordinator reaching the datanode only over the coordinator-datanode protocol
(crates/rpc, crates/datanode-proto).

1. pgbench -i and tpcb-like through the coordinator: 0 failed transactions, the TPC-B
   invariant holds and the history has one row per processed transaction.
2. SIGKILL of the datanode while clients transfer money: their transactions fail with a
   connection-class SQLSTATE (never hang); once the datanode is restarted on its data
   directory, transactions succeed again through the same coordinator, every
   acknowledged transfer is there and the invariant holds.
3. SIGKILL of the coordinator: a new coordinator on the same datanode sees every
   acknowledged transfer.

These exercise Meridian-only commands, so they always run against the Meridian binary.
"""

import threading
import time

import psycopg
import pytest

from conftest import CoordinatorServer, DatanodeServer, GtmServer, _new_base_dir, finish_server
from test_gtm_service import assert_invariant, transfer
from test_pgbench import parse_run, pgbench

SECONDS = int(__import__("os").environ.get("MERIDIAN_PGBENCH_SECONDS", "10"))


@pytest.fixture
def processes():
    gtm = GtmServer(_new_base_dir("gtm")).start()
    gtm_addr = f"{gtm.host}:{gtm.port}"
    datanode = DatanodeServer(_new_base_dir("datanode"), gtm_addr=gtm_addr).start()
    coordinator = CoordinatorServer(_new_base_dir("coordinator"), gtm_addr=gtm_addr,
                                    datanodes=1).start()
    yield gtm, datanode, coordinator
    for h in (coordinator, datanode, gtm):
        finish_server(h)


def history_count(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pgbench_history").fetchone()[0]


def test_pgbench_through_a_datanode_process(processes):
    _, datanode, coordinator = processes
    rc, out, log = pgbench(coordinator, "-i", "-s", "1", "-q", timeout=600)
    assert rc == 0, log
    rc, out, log = pgbench(coordinator, "-n", "-c", "8", "-j", "2", "-T", str(SECONDS), "-M", "prepared",
                           timeout=SECONDS + 120)
    assert rc == 0, log
    processed, failed = parse_run(out, log)
    assert failed == 0, log
    assert processed > 0, log
    assert_invariant(coordinator, expect_history=processed)
    assert datanode.is_alive() and coordinator.is_alive()


def run_transfers(coordinator, on_error_sleep=0.05):
    """Clients transferring in a loop; returns (stop event, threads, results)."""
    stop = threading.Event()
    results = {"acknowledged": 0, "errors": [], "slowest_failure": 0.0, "phase": "before"}
    counts = {"before": 0, "after": 0}
    lock = threading.Lock()

    def worker(n):
        conn = None
        i = 0
        while not stop.is_set():
            i += 1
            started = time.monotonic()
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(coordinator.dsn, autocommit=True)
                transfer(conn, 1 + (n * 97 + i) % 100000, 1 + n % 10, 1, 1)
                with lock:
                    results["acknowledged"] += 1
                    counts[results["phase"]] += 1
            except psycopg.Error as e:
                with lock:
                    results["errors"].append(e.sqlstate)
                    results["slowest_failure"] = max(results["slowest_failure"], time.monotonic() - started)
                if e.sqlstate is None and conn is not None:
                    conn.close()
                time.sleep(on_error_sleep)
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    return stop, threads, results, counts


def test_datanode_killed_and_restarted(processes):
    _, datanode, coordinator = processes
    rc, out, log = pgbench(coordinator, "-i", "-s", "1", "-q", timeout=600)
    assert rc == 0, log
    before_history = history_count(coordinator)

    stop, threads, results, counts = run_transfers(coordinator)
    time.sleep(2)
    datanode.kill9()
    time.sleep(2)
    failures_while_down = len(results["errors"])
    datanode.start()
    results["phase"] = "after"
    time.sleep(4)
    stop.set()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a client hung after the datanode came back"

    assert counts["before"] > 0, results
    assert failures_while_down > 0, f"no transaction failed while the datanode was down: {results}"
    bad = [c for c in results["errors"] if c is None or not c.startswith("08")]
    assert not bad, f"unexpected SQLSTATEs while the datanode was down: {sorted(set(map(str, bad)))}"
    assert results["slowest_failure"] < 30, results
    assert counts["after"] > 0, f"no transaction succeeded after the datanode restarted: {results}"
    # Every acknowledged transfer wrote one history row; a transfer whose commit was cut off
    # may have committed without its acknowledgement, never the other way round.
    assert history_count(coordinator) - before_history >= results["acknowledged"], results
    assert_invariant(coordinator)
    assert coordinator.is_alive()


def test_coordinator_killed_and_replaced(processes):
    gtm, datanode, coordinator = processes
    rc, out, log = pgbench(coordinator, "-i", "-s", "1", "-q", timeout=600)
    assert rc == 0, log
    stop, threads, results, counts = run_transfers(coordinator)
    time.sleep(2)
    coordinator.kill9()
    stop.set()
    for t in threads:
        t.join(60)
    coordinator.start()
    # The datanode aborted the killed coordinator's open transactions when its connection
    # closed: nothing of them holds a lock or shows.
    assert history_count(coordinator) >= results["acknowledged"] > 0, results
    assert_invariant(coordinator)
    with psycopg.connect(coordinator.dsn, autocommit=True) as conn:
        transfer(conn, 1, 1, 1, 5)
    assert_invariant(coordinator)
