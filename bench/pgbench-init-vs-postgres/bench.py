#!/usr/bin/env python3
"""`pgbench -i` (one COPY transaction per table set, then VACUUM and the primary keys):
Meridian vs PostgreSQL 15.

    .venv/bin/python bench/pgbench-init-vs-postgres/bench.py [--scale 100] [--runs 3]

Starts both servers the way the test suite does (tests/conftest.py) with a 256MB cache
(`--cache-size` / shared_buffers), runs `pgbench -i -s SCALE` against each `--runs` times,
alternating the servers, and writes the median total time, pgbench's per-phase times of
the median run, their ratio and each server's peak RSS to
bench/results/pgbench-init-vs-postgres.md (with the machine described).
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import conftest  # noqa: E402  (the test suite's server handles)

PHASES = ("client-side generate", "vacuum", "primary keys")


def pgbench_init(server, scale: int) -> tuple[float, dict[str, float]]:
    start = time.perf_counter()
    res = subprocess.run(
        [conftest.pg_tool("pgbench"), "-i", "-s", str(scale), "-h", server.host, "-p", str(server.port),
         "-U", "postgres", "postgres"],
        capture_output=True, text=True, check=True)
    total = time.perf_counter() - start
    phases = {p: float(m.group(1)) for p in PHASES if (m := re.search(rf"{p} ([0-9.]+) s", res.stderr))}
    return total, phases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    servers = {kind: conftest.start_server(kind, cache_size="256MB") for kind in ("meridian", "postgres")}
    runs = {kind: [] for kind in servers}
    try:
        for run in range(args.runs):
            order = ["meridian", "postgres"] if run % 2 == 0 else ["postgres", "meridian"]
            for kind in order:
                runs[kind].append(pgbench_init(servers[kind], args.scale))
                print(f"run {run + 1}: {kind} {runs[kind][-1][0]:.1f} s {runs[kind][-1][1]}", flush=True)
        peak = {kind: s.peak_rss_bytes() for kind, s in servers.items()}
    finally:
        for server in servers.values():
            conftest.finish_server(server)

    def median_run(kind):
        return sorted(runs[kind], key=lambda r: r[0])[len(runs[kind]) // 2]

    med = {kind: median_run(kind) for kind in servers}
    lines = [
        "# pgbench -i: Meridian vs PostgreSQL 15",
        "",
        f"`bench/pgbench-init-vs-postgres/bench.py --scale {args.scale} --runs {args.runs}`, "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, on {platform.node()} "
        f"({os.cpu_count()} CPUs, {platform.machine()}, Linux {platform.release()}); both servers on the same machine "
        "with a 256MB cache (shared_buffers), fsync on; wall-clock seconds of `pgbench -i`, the run with the median "
        "total of each server (servers alternating; every run after the first also truncates the previous load). "
        "Peak RSS: Meridian's process, PostgreSQL's largest process.",
        "",
        "| | Meridian (s) | PostgreSQL (s) | Meridian / PostgreSQL |",
        "|---|---|---|---|",
        f"| total | {med['meridian'][0]:.1f} | {med['postgres'][0]:.1f} | {med['meridian'][0] / med['postgres'][0]:.2f} |",
    ]
    for p in PHASES:
        m, q = med["meridian"][1].get(p), med["postgres"][1].get(p)
        if m is not None and q:
            lines.append(f"| {p} | {m:.2f} | {q:.2f} | {m / q:.2f} |")
    lines += [
        "",
        "All totals (s): " + "; ".join(f"{k}: " + ", ".join(f"{r[0]:.1f}" for r in runs[k]) for k in runs) + ".",
        "",
        f"Peak RSS: Meridian {peak['meridian'] / 2**20:.0f} MiB, PostgreSQL {peak['postgres'] / 2**20:.0f} MiB.",
    ]
    out = ROOT / "bench" / "results" / "pgbench-init-vs-postgres.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
