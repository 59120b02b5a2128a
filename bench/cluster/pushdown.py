#!/usr/bin/env python3
"""Scans with filters and aggregates on a cluster (GTM, three datanodes, a coordinator;
decision 0033), one binary after another: per query, the median wall time and the CPU
seconds of all the cluster's processes per run (user + system, from /proc), over
pgbench_accounts at the given scale.

    bench/cluster/pushdown.py BIN [BIN ...] [--scale 5] [--runs 5]

Uses the test suite's cluster handles (tests/conftest.py) with MERIDIAN_BIN set to each
binary in turn.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
import conftest  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import cpu_seconds  # noqa: E402

QUERIES = [
    ("filter keeping 0.1%", "SELECT aid, abalance FROM pgbench_accounts WHERE aid % 1000 = 7"),
    ("count with a filter", "SELECT count(*) FROM pgbench_accounts WHERE bid = 2 AND aid % 3 = 0"),
    ("group by, 4 aggregates",
     "SELECT bid, count(*), sum(abalance), min(aid), avg(aid) FROM pgbench_accounts GROUP BY bid"),
    ("filter on the distribution column",
     "SELECT count(*), sum(delta) FROM pgbench_history WHERE tid = 7"),
]


def run_binary(binary: str, scale: int, runs: int) -> dict[str, tuple[float, float]]:
    os.environ["MERIDIAN_BIN"] = binary
    base = Path(tempfile.mkdtemp(prefix="meridian-pushdown-bench-"))
    cluster = conftest.MeridianClusterServer(base)
    cluster.start()
    try:
        pgbench = conftest.pg_tool("pgbench")
        subprocess.run([pgbench, "-i", "-s", str(scale), "-q", "-h", cluster.host,
                        "-p", str(cluster.port), "-U", "postgres", "postgres"],
                       check=True, capture_output=True, timeout=1800)
        # history rows hashed on tid (not a key): what `tid = 7` routes by
        subprocess.run([pgbench, "-n", "-t", "2000", "-c", "4", "-h", cluster.host,
                        "-p", str(cluster.port), "-U", "postgres", "postgres"],
                       check=True, capture_output=True, timeout=1800)
        pids = [cluster.pid, *(m.pid for m in cluster.members)]
        out = {}
        with cluster.connect(autocommit=True) as conn:
            for name, sql in QUERIES:
                conn.execute(sql).fetchall()  # warm the caches
                walls, cpus = [], []
                for _ in range(runs):
                    cpu0, t0 = cpu_seconds(pids), time.monotonic()
                    conn.execute(sql).fetchall()
                    walls.append(time.monotonic() - t0)
                    cpus.append(cpu_seconds(pids) - cpu0)
                out[name] = (statistics.median(walls), statistics.median(cpus))
        return out
    finally:
        cluster.stop()
        cluster.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--scale", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    # a binary named twice runs twice (alternate them on a busy machine)
    results = [run_binary(b, args.scale, args.runs) for b in args.binaries]
    print(f"scale {args.scale}, median of {args.runs} runs: wall ms / CPU ms (all processes)")
    for name, _ in QUERIES:
        cells = "  ".join(f"{r[name][0] * 1000:8.1f} / {r[name][1] * 1000:8.1f}" for r in results)
        print(f"{name:36s} {cells}")


if __name__ == "__main__":
    main()
