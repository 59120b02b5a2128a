"""Sort, join, aggregation and DISTINCT past work_mem spill to temporary files.

2 million rows, ``work_mem = 4MB``, ``--cache-size 128MB`` and ``--query-memory 64MB``
(so an operator that held its rows in memory instead of spilling would fail with 53200):
each statement gives the same result as PostgreSQL 15, the server's peak RSS while they
run stays under the cache size plus the documented overhead, and no temporary file is
left, neither after the statements nor after a kill -9 in the middle of one and a
restart.
"""

import hashlib
import os
import threading
import time

import psycopg
import pytest

from test_memory import DOCUMENTED_OVERHEAD_BYTES, MB

ROWS = 2_000_000
BATCH = 50_000
CACHE_MB = 128

STATEMENTS = [
    # full sorts (read in the middle, so the whole order matters)
    "SELECT k, id FROM big ORDER BY k DESC, id LIMIT 5 OFFSET 1000000",
    "SELECT t, id FROM big ORDER BY t, id LIMIT 5 OFFSET 1500000",
    # hash joins with a 2-million-row inner side
    "SELECT count(*), sum(a.k - b.g) FROM big a JOIN big b ON a.k = b.id",
    "SELECT count(*), count(b.id) FROM big a LEFT JOIN big b ON a.k + 1000000 = b.id",
    # hash aggregation: few groups, and 500,000 groups
    "SELECT g, count(*), sum(k), min(t), max(t) FROM big GROUP BY g ORDER BY g LIMIT 5 OFFSET 500",
    "SELECT count(*), sum(c), max(c) FROM (SELECT k % 500000 AS kk, count(*) AS c FROM big GROUP BY k % 500000) s",
    "SELECT kk, c FROM (SELECT k % 500000 AS kk, count(*) AS c FROM big GROUP BY k % 500000) s ORDER BY kk LIMIT 5 OFFSET 250000",
    # DISTINCT and UNION
    "SELECT count(*) FROM (SELECT DISTINCT k % 700000 FROM big) s",
    "SELECT count(*) FROM (SELECT k FROM big UNION SELECT id FROM big) s",
]

LOAD = [
    "CREATE TABLE big (id int PRIMARY KEY, k int, g int, t text)",
] + [
    f"INSERT INTO big SELECT i, (i::bigint * 7919) % {ROWS + 3}, i % 1000, 'x' || ((i * 31) % 100000)::text "
    f"FROM generate_series({lo}, {lo + BATCH - 1}) i"
    for lo in range(1, ROWS + 1, BATCH)
]


def load(server):
    with server.connect(autocommit=True) as conn:
        for s in LOAD:
            conn.execute(s)


def results(server):
    out = []
    with server.connect(autocommit=True) as conn:
        conn.execute("SET work_mem = '4MB'")
        for s in STATEMENTS:
            out.append((s, [tuple(map(str, r)) for r in conn.execute(s).fetchall()]))
        # one full ordered result, streamed row by row and hashed
        digest = hashlib.sha256()
        with conn.cursor() as cur:
            for row in cur.stream("SELECT id, k, t FROM big ORDER BY k, id"):
                digest.update(repr(row).encode())
        out.append(("full sort digest", digest.hexdigest()))
    return out


def temp_files(server):
    """Temporary files of the server: named ones in pgsql_tmp, and unlinked ones it
    still has open."""
    tmp = server.data_dir / "pgsql_tmp"
    named = list(tmp.iterdir()) if tmp.exists() else []
    held = []
    for fd in os.listdir(f"/proc/{server.pid}/fd"):
        try:
            link = os.readlink(f"/proc/{server.pid}/fd/{fd}")
        except OSError:
            continue
        if "pgsql_tmp" in link:
            held.append(link)
    return named, held


@pytest.fixture(scope="module")
def loaded(server_kind, tmp_path_factory):
    from conftest import finish_server, start_server
    config = tmp_path_factory.mktemp("spill") / "meridian.toml"
    config.write_text('query_memory = "64MB"\n')  # read by Meridian only
    server = start_server(server_kind, cache_size=f"{CACHE_MB}MB", config=str(config))
    try:
        load(server)
        yield server
    finally:
        finish_server(server)


def test_spilling_operators_match_postgres(loaded, postgres):
    with postgres.connect(autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS big")
    load(postgres)
    want = results(postgres)
    if loaded.kind == "meridian":
        # The peak from here on: loading (large write transactions, which the issue's
        # last part bounds) is not what this test measures.
        with open(f"/proc/{loaded.pid}/clear_refs", "w") as f:
            f.write("5")
    got = results(loaded)
    for (stmt, g), (_, w) in zip(got, want):
        assert g == w, stmt
    if loaded.kind == "meridian":
        peak = loaded.peak_rss_bytes()
        bound = CACHE_MB * MB + DOCUMENTED_OVERHEAD_BYTES
        print(f"peak RSS {peak / MB:.0f} MB, bound {bound / MB:.0f} MB")
        assert peak < bound
        named, held = temp_files(loaded)
        assert named == [] and held == [], (named, held)


def test_no_temporary_files_after_kill9_mid_query(loaded):
    if loaded.kind != "meridian":
        pytest.skip("PostgreSQL removes its own temporary files at restart; this checks Meridian's")
    outcome = {}

    def run():
        try:
            with loaded.connect(autocommit=True) as conn:
                conn.execute("SET work_mem = '1MB'")
                conn.execute("SELECT k, id FROM big ORDER BY t, k DESC LIMIT 1 OFFSET 1999999").fetchall()
                outcome["result"] = "completed"
        except psycopg.Error as e:
            outcome["result"] = e

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 60
    spilling = False
    while time.monotonic() < deadline and t.is_alive():
        if temp_files(loaded)[1]:
            spilling = True
            break
        time.sleep(0.05)
    assert spilling, f"the sort never opened a temporary file ({outcome.get('result')!r})"
    loaded.kill9()
    t.join(30)
    loaded.restart()
    named, held = temp_files(loaded)
    assert named == [] and held == [], (named, held)
    with loaded.connect() as conn:
        assert conn.execute("SELECT count(*) FROM big").fetchone() == (ROWS,)
