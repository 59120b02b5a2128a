"""Several coordinators over one cluster (issue 30): `meridian gtm` (which hosts the
cluster's metadata), three `meridian datanode` and two `meridian coordinator`, each a
process. The catalog lives in the metadata service; a coordinator learns of another's DDL
from the version every GTM answer carries, so a statement whose snapshot follows a DDL
always sees it.

1. DDL through one coordinator, statements through the other: the same sequence against
   two connections to PostgreSQL 15 gives the same results and SQLSTATEs (a table
   created, dropped and created again with another shape; a prepared statement across
   it; DROP and CREATE of a name the other coordinator made).
2. Both coordinators creating the same tables at once: for each name exactly one
   succeeds, the other gets 42P07.
3. pgbench tpcb-like, -N and -S in the three protocol modes, clients on both
   coordinators at once: 0 failed transactions, the balances add up (accounts with the
   history's deltas, tellers with branches) and the history has one row per processed
   transaction.
4. `meridian_nodes` lists the GTM, the datanodes and both coordinators on each
   coordinator; a killed datanode shows as down, and up again once restarted.
5. The metadata is durable: after kill -9 and restart of the GTM, both coordinators
   still know every table at their first statement, and new tables get new OIDs.
(Killing the GTM under load is `test_cluster_faults.py`'s.)

These exercise Meridian-only processes; (1) also runs the sequence on PostgreSQL 15.
"""

import subprocess
import threading
import time

import psycopg
import pytest

from test_pgbench import parse_run, pg_tool, sums

SECONDS = 3


@pytest.fixture
def cluster(meridian_cluster):
    return meridian_cluster


def connect(server):
    return psycopg.connect(server.dsn, autocommit=True)


def outcome(conn, sql, params=None, prepare=None):
    """(rows, None) or (None, SQLSTATE) for one statement."""
    try:
        cur = conn.execute(sql, params, prepare=prepare)
        return (cur.fetchall() if cur.description else cur.rowcount), None
    except psycopg.Error as e:
        return None, e.sqlstate


# (connection index, statement, parameters, prepare): 0 is the first coordinator, 1 the
# second (on PostgreSQL, two sessions of the one server).
SEQUENCE = [
    (0, "CREATE TABLE shared_t (id int PRIMARY KEY, v int)", None, None),
    (1, "INSERT INTO shared_t VALUES (1, 10), (2, 20)", None, None),
    (0, "SELECT id, v FROM shared_t ORDER BY id", None, None),
    (1, "SELECT v FROM shared_t WHERE id = %s", (2,), True),
    (0, "CREATE TABLE shared_t (x int)", None, None),
    (1, "DROP TABLE shared_t", None, None),
    (0, "SELECT * FROM shared_t", None, None),
    (0, "INSERT INTO shared_t VALUES (3, 30)", None, None),
    (1, "CREATE TABLE shared_t (id int PRIMARY KEY, w text)", None, None),
    (0, "INSERT INTO shared_t VALUES (3, 'three')", None, None),
    (1, "SELECT id, w FROM shared_t ORDER BY id", None, None),
    (0, "SELECT w FROM shared_t WHERE id = %s", (3,), True),
    (1, "DROP TABLE IF EXISTS shared_t", None, None),
    (0, "SELECT count(*) FROM shared_t", None, None),
    (1, "DROP TABLE shared_t", None, None),
]


def run_sequence(conns):
    return [outcome(conns[i], sql, params, prepare) for i, sql, params, prepare in SEQUENCE]


def test_ddl_through_one_coordinator_is_seen_through_the_other(cluster, postgres):
    with connect(cluster) as a, connect(cluster.second) as b:
        got = run_sequence([a, b])
    with connect(postgres) as a, connect(postgres) as b:
        want = run_sequence([a, b])
    for step, g, w in zip(SEQUENCE, got, want):
        assert g == w, f"{step[1]}: meridian {g}, postgres {w}"


def test_concurrent_creates_of_one_name_have_one_winner(cluster):
    names = [f"race_{i}" for i in range(20)]
    results = {0: {}, 1: {}}

    def create_all(index, server):
        with connect(server) as conn:
            for name in names:
                results[index][name] = outcome(conn, f"CREATE TABLE {name} (id int PRIMARY KEY, c{index} int)")[1]

    threads = [threading.Thread(target=create_all, args=(i, s))
               for i, s in enumerate([cluster, cluster.second])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for name in names:
        codes = sorted([results[0][name], results[1][name]], key=str)
        assert codes == ["42P07", None], (name, codes)
    # Both coordinators see the winner's definition of every table.
    probes = [f"SELECT count(*) FROM {n}" for n in names]
    for server in (cluster, cluster.second):
        with connect(server) as conn:
            for probe in probes:
                assert conn.execute(probe).fetchone() == (0,)
            for name in names:
                winner = 0 if results[0][name] is None else 1
                cols = [r[0] for r in conn.execute(
                    "SELECT attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                    "WHERE c.relname = %s AND a.attnum > 0 ORDER BY a.attnum", (name,)).fetchall()]
                assert cols == ["id", f"c{winner}"], (name, cols)


def pgbench_run(server, *args):
    cmd = [pg_tool("pgbench"), "-h", server.host, "-p", str(server.port), "-U", "postgres",
           "-n", "-c", "4", "-j", "2", "-T", str(SECONDS), *args, "postgres"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_pgbench_through_both_coordinators_at_once(cluster):
    init = subprocess.run([pg_tool("pgbench"), "-h", cluster.host, "-p", str(cluster.port),
                           "-U", "postgres", "-i", "-s", "1", "-q", "postgres"],
                          capture_output=True, text=True, timeout=600)
    assert init.returncode == 0, init.stderr
    history = 0
    for builtin in ("tpcb-like", "simple-update", "select-only"):
        for mode in ("simple", "extended", "prepared"):
            runs = [pgbench_run(s, "-b", builtin, "-M", mode) for s in (cluster, cluster.second)]
            for run in runs:
                out, err = run.communicate(timeout=SECONDS + 120)
                log = f"{builtin} -M {mode}: exit {run.returncode}\n{out}\n{err}"
                assert run.returncode == 0, log
                processed, failed = parse_run(out + err, log)
                assert processed > 0 and failed == 0, log
                if builtin != "select-only":
                    history += processed
    # simple-update moves accounts and history only; tpcb-like all four.
    for server in (cluster, cluster.second):
        s = sums(server)
        assert s["accounts"] == s["history_delta"] and s["tellers"] == s["branches"], s
        assert s["history_count"] == history, s


def nodes(server):
    with connect(server) as conn:
        return conn.execute("SELECT node_name, role, address, state FROM meridian_nodes").fetchall()


def wait_for_state(server, address, state, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connect(server) as conn:
            # A statement that reads every datanode notices a lost connection (the
            # deadlock detector's polls notice it within 200 ms anyway); it fails while
            # the datanode is down.
            outcome(conn, "SELECT count(*) FROM nodes_probe")
        rows = {r[2]: r[3] for r in nodes(server)}
        if rows.get(address) == state:
            return
        time.sleep(0.2)
    raise AssertionError(f"{address} never became {state}: {nodes(server)}")


def test_nodes_view_lists_every_node_and_their_state(cluster):
    datanodes = [d.addr for d in cluster.datanodes]
    coordinators = [f"{cluster.host}:{cluster.port}", f"{cluster.second.host}:{cluster.second.port}"]
    for server, own in ((cluster, coordinators[0]), (cluster.second, coordinators[1])):
        rows = nodes(server)
        assert [r[1] for r in rows] == ["gtm", "datanode", "datanode", "datanode",
                                        "coordinator", "coordinator"], rows
        assert rows[0][2] == cluster.gtm.addr and rows[0][3] == "up", rows
        assert sorted(r[2] for r in rows[1:4]) == sorted(datanodes), rows
        assert all(r[3] == "up" for r in rows[1:4]), rows
        assert {r[2]: r[3] for r in rows[4:]} == {
            own: "up (this node)", **{c: "registered" for c in coordinators if c != own}}, rows
    with connect(cluster) as conn:
        conn.execute("CREATE TABLE nodes_probe (id int PRIMARY KEY)")
    victim = cluster.datanodes[1]
    victim.kill9()
    wait_for_state(cluster, victim.addr, "down")
    victim.start()
    wait_for_state(cluster, victim.addr, "up")


def test_metadata_survives_kill_9_of_the_gtm(cluster):
    with connect(cluster) as conn:
        conn.execute("CREATE TABLE before_crash (id int PRIMARY KEY, v int)")
        conn.execute("INSERT INTO before_crash VALUES (1, 1)")
        oid_before = conn.execute("SELECT oid FROM pg_class WHERE relname = 'before_crash'").fetchone()[0]
    cluster.gtm.kill9()
    cluster.gtm.start()
    # Once the GTM serves again, no statement fails because of the outage: the
    # coordinators noticed their connections close and open new ones on first use.
    with connect(cluster.second) as conn:
        assert conn.execute("SELECT v FROM before_crash").fetchall() == [(1,)]
        conn.execute("CREATE TABLE after_crash (id int PRIMARY KEY)")
        oid_after = conn.execute(
            "SELECT oid FROM pg_class WHERE relname = 'after_crash'").fetchone()[0]
    assert oid_after > oid_before
    with connect(cluster) as conn:
        assert conn.execute("SELECT count(*) FROM after_crash").fetchone() == (0,)
