#!/usr/bin/env python3
"""Sort, aggregation, DISTINCT and join over 2 million rows: Meridian vs PostgreSQL 15.

    .venv/bin/python bench/executor-vs-postgres/bench.py [--rows N] [--runs R] [--work-mem 4MB]

Starts both servers the way the test suite does (tests/conftest.py: Meridian from
target/release/meridian, a PostgreSQL 15 in a temporary directory; both with
``--cache-size``/shared_buffers 128MB), loads the same table into both, times the
bulk load, then runs each statement ``--runs`` times per server, alternating the servers,
and writes the medians and their ratio to bench/results/executor-vs-postgres.md (with the
machine described). Each statement returns a few rows, so the time is the server's.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import conftest  # noqa: E402  (the test suite's server handles)

STATEMENTS = [
    ("sort (int key)", "SELECT k, id FROM big ORDER BY k DESC, id LIMIT 5 OFFSET 1000000"),
    ("sort (text key)", "SELECT t, id FROM big ORDER BY t, id LIMIT 5 OFFSET 1000000"),
    ("aggregate, 1,000 groups", "SELECT g, count(*), sum(k) FROM big GROUP BY g ORDER BY g LIMIT 3"),
    ("aggregate, 500,000 groups", "SELECT count(*), max(c) FROM (SELECT k % 500000 AS kk, count(*) AS c FROM big GROUP BY k % 500000) s"),
    ("DISTINCT", "SELECT count(*) FROM (SELECT DISTINCT k % 700000 FROM big) s"),
    ("hash join, 2M x 2M", "SELECT count(*), sum(a.k - b.g) FROM big a JOIN big b ON a.k = b.id"),
    ("IN (subquery), hashed", "SELECT count(*) FROM big WHERE k IN (SELECT id FROM big WHERE g < 500)"),
]


def load_statements(rows: int, batch: int = 50_000) -> list[str]:
    return ["CREATE TABLE big (id int PRIMARY KEY, k int, g int, t text)"] + [
        f"INSERT INTO big SELECT i, (i::bigint * 7919) % {rows + 3}, i % 1000, 'x' || ((i * 31) % 100000)::text "
        f"FROM generate_series({lo}, {min(lo + batch, rows + 1) - 1}) i"
        for lo in range(1, rows + 1, batch)
    ]


def timed(server, sql: str, work_mem: str) -> float:
    with server.connect(autocommit=True) as conn:
        conn.execute(f"SET work_mem = '{work_mem}'")
        start = time.perf_counter()
        conn.execute(sql).fetchall()
        return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work-mem", default="4MB")
    args = ap.parse_args()

    servers = {kind: conftest.start_server(kind, cache_size="128MB") for kind in ("meridian", "postgres")}
    try:
        load = {}
        for kind, server in servers.items():
            start = time.perf_counter()
            with server.connect(autocommit=True) as conn:
                for s in load_statements(args.rows):
                    conn.execute(s)
                if kind == "postgres":
                    conn.execute("VACUUM ANALYZE big")
            load[kind] = time.perf_counter() - start
            print(f"load {kind}: {load[kind]:.1f} s", flush=True)
        times = {name: {"meridian": [], "postgres": []} for name, _ in STATEMENTS}
        for run in range(args.runs):
            for i, (name, sql) in enumerate(STATEMENTS):
                order = ["meridian", "postgres"] if (run + i) % 2 == 0 else ["postgres", "meridian"]
                for kind in order:
                    times[name][kind].append(timed(servers[kind], sql, args.work_mem))
                print(f"run {run + 1}: {name}: " + ", ".join(f"{k} {times[name][k][-1]:.2f} s" for k in order), flush=True)
    finally:
        for server in servers.values():
            conftest.finish_server(server)

    lines = [
        "# Executor operators: Meridian vs PostgreSQL 15",
        "",
        f"`bench/executor-vs-postgres/bench.py --rows {args.rows} --runs {args.runs} --work-mem {args.work_mem}`, "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, on {platform.node()} "
        f"({os.cpu_count()} CPUs, {platform.machine()}, Linux {platform.release()}); both servers on the same machine "
        "with a 128MB cache (shared_buffers); times are wall-clock seconds per statement from psycopg, "
        "medians of the runs (servers alternating).",
        "",
        f"Load ({args.rows:,} rows, INSERT … SELECT in transactions of 50,000): Meridian {load['meridian']:.1f} s, "
        f"PostgreSQL {load['postgres']:.1f} s (incl. VACUUM ANALYZE), ratio {load['meridian'] / load['postgres']:.2f}.",
        "",
        "| statement | Meridian (s) | PostgreSQL (s) | Meridian / PostgreSQL |",
        "|---|---|---|---|",
    ]
    for name, sql in STATEMENTS:
        m = statistics.median(times[name]["meridian"])
        p = statistics.median(times[name]["postgres"])
        lines.append(f"| {name}: `{sql}` | {m:.2f} | {p:.2f} | {m / p:.2f} |")
    out = ROOT / "bench" / "results" / "executor-vs-postgres.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
