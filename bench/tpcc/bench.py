#!/usr/bin/env python3
"""TPC-C: Meridian vs PostgreSQL 15 on this machine (see README.md).

Starts both servers as the test suite does (tests/conftest.py), loads the same
warehouses into each with tests/tpcc, runs the driver for every terminal count
`--runs` times, the systems in alternation, and writes
bench/results/tpcc-<date>.md with the median tpmC of each cell."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO / "tests"))

import psycopg  # noqa: E402
from conftest import finish_server, start_server  # noqa: E402
from tpcc import driver, load, schema  # noqa: E402

SYSTEMS = ("meridian", "postgres")


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    mem_kb = int(next(line.split()[1] for line in open("/proc/meminfo")
                      if line.startswith("MemTotal")))
    return (f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), {mem_kb // 2**20} GiB,"
            f" {platform.system()} {platform.release()}; load average at the start"
            f" {os.getloadavg()[0]:.1f} (shared machine)")


def report(args, scale, cells, path: Path) -> None:
    lines = [f"# TPC-C, Meridian vs PostgreSQL 15 ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)",
             "", f"Machine: {machine()}.", "",
             f"Population: {scale}. Driver: bench/tpcc/bench.py (tests/tpcc), no keying or"
             f" think time, {args.seconds} s per run, {args.runs} run(s) per cell, the systems"
             " alternating. tpmC = committed New-Orders per minute; median of the runs.", "",
             "| terminals | system | median tpmC | runs (tpmC) | retries | errors |",
             "|---:|---|---:|---|---:|---:|"]
    for (terminals, system), runs in sorted(cells.items()):
        tpmc = [r.tpmc for r in runs]
        lines.append(f"| {terminals} | {system} | {statistics.median(tpmc):.0f} |"
                     f" {', '.join(f'{t:.0f}' for t in tpmc)} |"
                     f" {sum(sum(r.retries.values()) for r in runs)} |"
                     f" {sum(len(r.errors) for r in runs)} |")
    lines += ["", "Last run of each cell:", ""]
    lines += [f"- {t} terminals, {s}: {runs[-1].summary()}" for (t, s), runs in sorted(cells.items())]
    errors = Counter((s, e[0], e[1]) for (_, s), runs in cells.items() for r in runs for e in r.errors)
    if errors:
        lines += ["", "Errors (system, transaction, SQLSTATE or 'hung': count):", ""]
        lines += [f"- {s}, {kind}, {state}: {n}" for (s, kind, state), n in sorted(errors.items())]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--warehouses", type=int, default=10)
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--customers", type=int, default=3000, help="per district")
    p.add_argument("--orders", type=int, default=3000, help="per district")
    p.add_argument("--terminals", default="8,64")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path,
                   default=REPO / "bench" / "results" / f"tpcc-{datetime.now():%Y-%m-%d}.md")
    args = p.parse_args()
    scale = load.Scale(args.warehouses, args.items, args.customers, args.orders)
    servers = {}
    try:
        for system in SYSTEMS:
            servers[system] = start_server(system)
            with psycopg.connect(servers[system].dsn, autocommit=True) as conn:
                schema.create(conn)
            started = time.monotonic()
            load.load(servers[system].dsn, scale)
            print(f"{system}: loaded in {time.monotonic() - started:.0f} s", flush=True)
        cells = {}
        for run in range(args.runs):
            for terminals in map(int, args.terminals.split(",")):
                order = SYSTEMS if run % 2 == 0 else SYSTEMS[::-1]
                for system in order:
                    result = driver.run(servers[system].dsn, scale, terminals, args.seconds,
                                        seed=run + 1)
                    print(f"{terminals} terminals, {system}: {result.summary()}", flush=True)
                    cells.setdefault((terminals, system), []).append(result)
                    report(args, scale, cells, args.out)
    finally:
        for handle in servers.values():
            finish_server(handle)


if __name__ == "__main__":
    main()
