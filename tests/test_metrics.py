"""The metrics endpoint (``--http-listen``): GET /metrics in the Prometheus text format.

Every Meridian process is started with ``--http-listen 127.0.0.1:0`` (``http_metrics``);
its endpoint is scraped and parsed with the Prometheus client's own text-format parser
before and after a pgbench run of a fixed number of transactions, and the counters must
have moved by at least what pgbench did. In a cluster the coordinator's endpoint has the
session metrics, the datanodes' the storage metrics and the GTM's its requests. Other
paths are 404 (but the coordinator's web console, test_console.py), and a malformed
request does not harm the server.

PostgreSQL has no such endpoint: under the ``postgres`` target these tests are skipped.
"""

import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import pg_tool

TRANSACTIONS = 100  # per client
CLIENTS = 2
# pgbench's tpcb-like transaction in the simple protocol: BEGIN, three UPDATEs, a
# SELECT, an INSERT, END.
STATEMENTS_PER_TRANSACTION = 7


@pytest.fixture
def server(server_kind, meridian_factory):
    if server_kind == "postgres":
        pytest.skip("PostgreSQL has no metrics endpoint")
    return meridian_factory(http_metrics=True)


def members(server):
    """The processes of the server under test, each with its endpoint."""
    return [server, *getattr(server, "members", [])]


def fetch(url, data=None):
    """(status, content type, body) of a request to `url`."""
    try:
        with urllib.request.urlopen(url, data=data, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def scrape(process):
    """{sample name: {labels as a sorted tuple: value}} of one process's /metrics, after
    checking the response and that every family has HELP and TYPE."""
    status, content_type, body = fetch(process.metrics_url)
    assert status == 200, body
    assert content_type == "text/plain; version=0.0.4", content_type
    samples = {}
    for family in text_string_to_metric_families(body):
        assert family.documentation, f"{family.name} has no HELP"
        assert family.type in ("counter", "gauge", "histogram"), (family.name, family.type)
        for s in family.samples:
            samples.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return samples


def value(samples, name, labels=()):
    assert name in samples, f"{name} missing from {sorted(samples)}"
    return samples[name][tuple(sorted(labels))]


def check_histogram(samples, name):
    """Buckets never decrease, the +Inf bucket is the count, the sum is not negative."""
    buckets = sorted(((float(dict(k)["le"]), v) for k, v in samples[f"{name}_bucket"].items()))
    counts = [v for _, v in buckets]
    assert counts == sorted(counts), f"{name} buckets decrease: {buckets}"
    assert buckets[-1][0] == float("inf")
    assert buckets[-1][1] == value(samples, f"{name}_count")
    assert value(samples, f"{name}_sum") >= 0


def pgbench(server, *args):
    cmd = [pg_tool("pgbench"), "-h", server.host, "-p", str(server.port), "-U", "postgres",
           *args, "postgres"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stdout}\n{res.stderr}"
    return res.stdout


def wait_for(condition, what, timeout=10):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_every_process_serves_parseable_metrics(server):
    for process in members(server):
        samples = scrape(process)
        assert value(samples, "process_resident_memory_bytes") > 0, process.kind
        assert value(samples, "process_start_time_seconds") > 0, process.kind
    coordinator = scrape(server)
    for name in ("meridian_connections_open", "meridian_connections_accepted_total",
                 "meridian_transactions_committed_total", "meridian_statements_total"):
        value(coordinator, name)
    check_histogram(coordinator, "meridian_statement_duration_seconds")
    if server.kind == "meridian-cluster":
        for datanode in server.datanodes:
            samples = scrape(datanode)
            value(samples, "meridian_storage_journal_fsyncs_total")
            value(samples, "meridian_datanode_deadlocks_total")
            assert "meridian_statements_total" not in samples, "a datanode runs no sessions"
        gtm = scrape(server.gtm)
        value(gtm, "meridian_gtm_requests_total")
        check_histogram(gtm, "meridian_gtm_batch_size")
    else:
        # One process for all three roles: one endpoint serves them all.
        for name in ("meridian_storage_journal_fsyncs_total",
                     "meridian_datanode_lock_waits_total",
                     "meridian_gtm_timestamps_issued_total"):
            value(coordinator, name)


def test_counters_move_under_pgbench(server):
    pgbench(server, "-i", "-s", "1", "-q")
    # The server sees pgbench -i's close a moment after pgbench has exited; nobody else
    # is connected to this test's server, so the count settles at zero.
    wait_for(lambda: value(scrape(server), "meridian_connections_open") == 0,
             "pgbench -i's connection closed")
    before = {id(p): scrape(p) for p in members(server)}
    pgbench(server, "-n", "-c", str(CLIENTS), "-t", str(TRANSACTIONS))
    transactions = CLIENTS * TRANSACTIONS

    after = scrape(server)
    old = before[id(server)]

    def delta(name, new=after, prev=old):
        return value(new, name) - value(prev, name)

    assert delta("meridian_transactions_committed_total") >= transactions
    assert delta("meridian_statements_total") >= transactions * STATEMENTS_PER_TRANSACTION
    assert delta("meridian_connections_accepted_total") >= CLIENTS
    # Every statement is timed: the histogram counts what the counter counts.
    for samples in (old, after):
        assert (value(samples, "meridian_statement_duration_seconds_count")
                == value(samples, "meridian_statements_total"))
        check_histogram(samples, "meridian_statement_duration_seconds")
    assert delta("meridian_statement_duration_seconds_sum") > 0
    # pgbench's connections are gone once it has exited (the count drops when the
    # server has seen the close).
    wait_for(lambda: value(scrape(server), "meridian_connections_open") == 0,
             "meridian_connections_open back to 0")

    if server.kind == "meridian-cluster":
        storage = [p for p in members(server) if p.kind == "datanode"]
        gtm_moved = delta("meridian_gtm_requests_total", scrape(server.gtm), before[id(server.gtm)])
        assert gtm_moved >= transactions, "each transaction asks the GTM for its timestamps"
    else:
        storage = [server]
        assert delta("meridian_gtm_timestamps_issued_total") >= transactions
    fsyncs = sum(delta("meridian_storage_journal_fsyncs_total", scrape(p), before[id(p)])
                 for p in storage)
    written = sum(delta("meridian_storage_journal_bytes_written_total", scrape(p), before[id(p)])
                  for p in storage)
    assert fsyncs > 0, "synchronous commits fsync the journal"
    # Each transaction appends at least its history row (a few dozen bytes).
    assert written >= transactions * 20, written


def test_other_paths_and_methods(server):
    base = urllib.parse.urlsplit(server.metrics_url)
    for path in ("/metric", "/metrics/x", "/console"):
        status, _, _ = fetch(f"{base.scheme}://{base.netloc}{path}")
        assert status == 404, path
    # The coordinator's port also serves its web console (test_console.py): "/" sends a
    # browser that has not logged in to the login page.
    status, content_type, body = fetch(f"{base.scheme}://{base.netloc}/")
    assert (status, content_type) == (200, "text/html; charset=utf-8"), (status, body[:200])
    assert '<form method="post" action="/login"' in body
    status, _, _ = fetch(server.metrics_url, data=b"x=1")
    assert status == 405
    scrape(server)


def test_malformed_requests_do_not_harm_the_server(server):
    base = urllib.parse.urlsplit(server.metrics_url)
    host, port = base.hostname, base.port
    for garbage in (b"\x00\xff\x16\x03\x01 not http\r\n\r\n",
                    b"GET /metrics HTTP/9.9\r\n\r\n",
                    b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                    b"GET " + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n",
                    b"GET /metr"):
        with socket.create_connection((host, port), timeout=10) as s:
            try:
                s.sendall(garbage)
                s.shutdown(socket.SHUT_WR)
                answer = s.recv(65536)
            except OSError:  # closed while we wrote: also a refusal
                answer = b""
            assert not answer.startswith(b"HTTP/1.1 200"), (garbage[:40], answer[:80])
    assert server.is_alive()
    scrape(server)
    with server.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)
