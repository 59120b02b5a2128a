"""sysbench's PostgreSQL workloads (Debian's `sysbench`, pgsql driver), unchanged.

`prepare` creates 4 tables of 100,000 rows as sysbench writes them (an `id SERIAL`
primary key, CHAR columns with defaults, multi-row INSERTs, then `CREATE INDEX k_N ON
sbtestN(k)`); each workload then runs with 8 threads on the server under test and on a
real PostgreSQL 15 in the same test, one after the other. A workload passes when sysbench
reports no fatal error and the server under test shows no larger share of ignored errors
(the deadlocks and serialization failures sysbench retries) than PostgreSQL does.
`cleanup` drops the tables at the end. Throughput is printed, never asserted (bench/).
"""

import os
import re
import subprocess

import psycopg
import pytest

from conftest import require_tool

TABLES = 4
TABLE_SIZE = int(os.environ.get("MERIDIAN_SYSBENCH_TABLE_SIZE", "100000"))
THREADS = 8
SECONDS = int(os.environ.get("MERIDIAN_SYSBENCH_SECONDS", "5"))

WORKLOADS = ["oltp_read_write", "oltp_read_only", "oltp_point_select", "oltp_write_only",
             "oltp_update_index", "oltp_update_non_index", "oltp_insert", "oltp_delete",
             "select_random_points", "select_random_ranges"]


def sysbench(server, workload, command, *extra, timeout):
    cmd = [require_tool("sysbench"), workload, "--db-driver=pgsql",
           f"--pgsql-host={server.host}", f"--pgsql-port={server.port}",
           "--pgsql-user=postgres", "--pgsql-db=postgres",
           f"--tables={TABLES}", f"--table-size={TABLE_SIZE}", *extra, command]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} ran past {timeout}s\n{e.stdout}\n{e.stderr}")
    output = res.stdout + res.stderr
    assert res.returncode == 0 and "FATAL" not in output, \
        f"{server.kind}: $ {' '.join(cmd)}\nexit={res.returncode}\n{output}"
    return output


def counter(output, name):
    m = re.search(rf"{name}:\s+(\d+)", output)
    assert m, f"no '{name}' in sysbench's report:\n{output}"
    return int(m.group(1))


@pytest.fixture(scope="module")
def prepared(postgres, target):
    servers = [postgres, target]
    for s in servers:
        sysbench(s, "oltp_read_write", "cleanup", timeout=120)
        sysbench(s, "oltp_read_write", "prepare", f"--threads={TABLES}", timeout=900)
    yield servers
    for s in servers:
        sysbench(s, "oltp_read_write", "cleanup", timeout=120)
        with psycopg.connect(s.dsn, autocommit=True) as c:
            left = c.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'sbtest%'")
            assert left.fetchone() == (0,), f"{s.kind}: cleanup left sysbench's relations"


def test_prepare_builds_what_postgres_builds(prepared):
    """The tables, their row counts, the serial key's sequence and the index on k."""
    shapes = []
    for s in prepared:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            shapes.append([
                c.execute(f"SELECT count(*), count(DISTINCT id), min(id), max(id) "
                          f"FROM sbtest{t}").fetchone()
                + (c.execute("SELECT pg_get_serial_sequence(%s, 'id')",
                             (f"sbtest{t}",)).fetchone()[0],
                   c.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s "
                             "ORDER BY indexname", (f"sbtest{t}",)).fetchall())
                for t in range(1, TABLES + 1)])
    assert shapes[1] == shapes[0]
    assert shapes[0][0][:4] == (TABLE_SIZE, TABLE_SIZE, 1, TABLE_SIZE)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_runs_without_errors(prepared, workload):
    reports = []
    for s in prepared:
        out = sysbench(s, workload, "run", f"--threads={THREADS}", f"--time={SECONDS}",
                       "--report-interval=0", timeout=SECONDS + 120)
        reports.append((s.kind, counter(out, "transactions"), counter(out, "ignored errors")))
    print(workload, reports)
    (_, pg_txns, pg_ignored), (_, txns, ignored) = reports
    assert txns > 0, reports
    # Compared as a share of the transactions run: a faster server meets more conflicts.
    assert ignored * pg_txns <= pg_ignored * txns, reports
