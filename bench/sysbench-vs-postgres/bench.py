#!/usr/bin/env python3
"""sysbench: Meridian embedded, PostgreSQL 15 and a Meridian cluster, side by side (README.md).

    bench/sysbench-vs-postgres/bench.py [--tables 4] [--table-size 100000] [--threads 8,64]
        [--seconds 30] [--runs 3] [--lock FILE]

Starts the three systems as bench/cluster does (`meridian start`; PostgreSQL 15 with
shared_buffers 128MB, Meridian's default cache; `meridian gtm` + `--datanodes` ×
`meridian datanode` + one `meridian coordinator`), `sysbench oltp_read_write prepare`s the
same tables into each, then runs every workload at every thread count `--runs` times, in
rounds, the systems alternating (the order reversed from one cell to the next). Each run
records sysbench's TPS, QPS, latency, ignored errors and reconnects, and the CPU the
system's processes and sysbench used per transaction. Rewrites
bench/results/sysbench-vs-postgres.{md,json} after every run and the chart .png after
every round.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.util
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The systems (how each is started, stopped and its CPU read) are bench/cluster's; the
# wait for a quiet machine is pgbench-vs-postgres's.
cluster_bench = _load("cluster_bench", ROOT / "bench" / "cluster" / "bench.py")
pgbench_bench = _load("pgbench_bench", ROOT / "bench" / "pgbench-vs-postgres" / "bench.py")

SYSTEMS = {"embedded": cluster_bench.Embedded, "postgres": cluster_bench.Postgres,
           "cluster": cluster_bench.Cluster}
LABELS = {"embedded": "Meridian embedded", "postgres": "PostgreSQL 15", "cluster": "Meridian cluster"}
AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")
COLORS = {"embedded": "tab:blue", "postgres": "tab:orange", "cluster": "tab:green"}


def sh(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def bench_lock(path: str | None):
    """Holds `path` with flock(2), as `flock FILE CMD` does: one timed run at a time among
    the benchmarks of a shared machine."""
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def children_cpu() -> float:
    """User + system CPU of this process's reaped children (sysbench, once it exits)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def parse_sysbench(out: str) -> dict:
    def number(pattern: str) -> float | None:
        m = re.search(pattern, out)
        return float(m.group(1)) if m else None

    return {
        "transactions": number(r"transactions:\s+(\d+)"),
        "tps": number(r"transactions:\s+\d+\s+\(([\d.]+) per sec"),
        "qps": number(r"queries:\s+\d+\s+\(([\d.]+) per sec"),
        "ignored_errors": number(r"ignored errors:\s+(\d+)"),
        "reconnects": number(r"reconnects:\s+(\d+)"),
        "latency_avg_ms": number(r"avg:\s+([\d.]+)"),
        "latency_p95_ms": number(r"95th percentile:\s+([\d.]+)"),
        "total_time_s": number(r"total time:\s+([\d.]+)s"),
    }


class Bench:
    def __init__(self, args):
        self.a = args
        self.workloads = args.workloads.split(",")
        self.threads = [int(t) for t in args.threads.split(",")]
        self.system_keys = args.systems.split(",")
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        self.md, self.json, self.png = (out.with_suffix(s) for s in (".md", ".json", ".png"))
        self.base = Path(tempfile.mkdtemp(prefix="meridian-bench-sysbench-"))
        self.base.chmod(0o755)  # PostgreSQL runs as another user and must reach its directory
        cluster_bench.Cluster.datanodes = args.datanodes
        self.systems = {k: SYSTEMS[k](self.base / k) for k in self.system_keys}
        self.prepare_runs: dict[str, dict] = {}
        self.runs: list[dict] = []
        self.started = datetime.now(timezone.utc)
        self.status = "running"
        self.info = self.machine()

    def machine(self) -> dict:
        model = re.search(r"Model name:\s*(.*)", sh(["lscpu"]))
        with open("/proc/meminfo") as f:
            mem_gib = int(f.readline().split()[1]) / 2**20
        dirty = sh(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
        return {
            "cpu": model.group(1) if model else platform.processor(),
            "nproc": os.cpu_count(),
            "memory_gib": round(mem_gib, 1),
            "kernel": platform.release(),
            "os": sh(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
            "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "meridian_rev": sh(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"])
            + (" (with uncommitted changes)" if dirty else ""),
            "meridian_version": sh([str(cluster_bench.MERIDIAN), "--version"]),
            "postgres_version": sh([str(cluster_bench.PG_BIN / "postgres"), "--version"]),
            "sysbench_version": sh([self.a.sysbench, "--version"]),
            "autogroup": AUTOGROUP.read_text().strip() if AUTOGROUP.exists() else "absent",
        }

    def sysbench(self, system, workload: str, command: str, *extra: str,
                 timeout: float) -> tuple[int | str, str]:
        cmd = [self.a.sysbench, workload, "--db-driver=pgsql", f"--pgsql-host={system.host}",
               f"--pgsql-port={system.port}", "--pgsql-user=postgres", "--pgsql-db=postgres",
               f"--tables={self.a.tables}", f"--table-size={self.a.table_size}", *extra, command]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            return p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            return "timeout", str(e.stdout or "") + str(e.stderr or "")

    def pids(self) -> list[int]:
        return [p.pid for s in self.systems.values() for p in s.procs]

    def prepare(self, key: str):
        system = self.systems[key]
        system.base.mkdir(parents=True)
        system.start()
        with bench_lock(self.a.lock):
            t0 = time.monotonic()
            rc, out = self.sysbench(system, "oltp_read_write", "prepare",
                                    f"--threads={self.a.tables}", timeout=3600)
            took = time.monotonic() - t0
        if rc != 0 or "FATAL" in out:
            raise RuntimeError(f"{LABELS[key]}: sysbench prepare exited {rc}:\n{out[-3000:]}")
        # After the load: Meridian's compactions, PostgreSQL's checkpoint and autovacuum.
        quiet_wait, _ = pgbench_bench.wait_until_quiet(self.pids())
        self.prepare_runs[key] = {"seconds": round(took, 1), "quiet_wait_s": quiet_wait}
        print(f"{LABELS[key]}: prepared in {took:.0f} s, quiet after {quiet_wait} s", flush=True)

    def run_cell(self, key: str, workload: str, threads: int, round_no: int) -> dict:
        system = self.systems[key]
        quiet_wait, _ = pgbench_bench.wait_until_quiet(self.pids(), window=1.0, limit=15.0)
        with bench_lock(self.a.lock):
            load1 = os.getloadavg()[0]
            server0, client0 = system.cpu(), children_cpu()
            rc, out = self.sysbench(system, workload, "run", f"--threads={threads}",
                                    f"--time={self.a.seconds}", "--report-interval=0",
                                    timeout=self.a.seconds + 300)
            time.sleep(0.5)  # PostgreSQL's backends exit and are reaped
            server_s, client_s = system.cpu() - server0, children_cpu() - client0
        run = {"system": key, "workload": workload, "threads": threads, "round": round_no,
               "rc": rc, "load1_before": round(load1, 2), "quiet_wait_s": quiet_wait,
               **parse_sysbench(out)}
        if run["transactions"]:
            run["server_cpu_us_per_txn"] = round(server_s / run["transactions"] * 1e6, 1)
            run["sysbench_cpu_us_per_txn"] = round(client_s / run["transactions"] * 1e6, 1)
        if rc != 0 or "FATAL" in out or run["tps"] is None:
            run["error_tail"] = "\n".join(out.strip().splitlines()[-8:])
            print(f"  sysbench exited {rc} on {LABELS[key]}:\n{run['error_tail']}", flush=True)
        if any(p.poll() is not None for p in system.procs):
            raise RuntimeError(f"{LABELS[key]}: a process exited during {workload}; logs in {system.base}")
        return run

    def main(self):
        try:
            for key in self.system_keys:
                self.prepare(key)
            order = list(self.system_keys)
            for round_no in range(1, self.a.runs + 1):
                for workload in self.workloads:
                    for threads in self.threads:
                        for key in order:
                            run = self.run_cell(key, workload, threads, round_no)
                            self.runs.append(run)
                            print(f"round {round_no} {workload} {threads} threads {LABELS[key]}: "
                                  f"{run['tps']} tps, {run.get('server_cpu_us_per_txn')} us server "
                                  f"CPU/txn, {run['ignored_errors']} ignored errors", flush=True)
                            self.write()
                        order.reverse()
                self.chart()
            self.status = "complete"
        except BaseException as e:
            self.status = f"interrupted ({type(e).__name__}: {str(e)[:300]})"
            raise
        finally:
            for s in self.systems.values():
                s.stop()
            shutil.rmtree(self.base, ignore_errors=True)
            self.write()

    # ---- the report
    def cell(self, key: str, workload: str, threads: int) -> list[dict]:
        return [r for r in self.runs if (r["system"], r["workload"], r["threads"])
                == (key, workload, threads) and r["tps"] is not None]

    def median(self, key, workload, threads, field) -> float | None:
        values = [r[field] for r in self.cell(key, workload, threads) if r.get(field) is not None]
        return statistics.median(values) if values else None

    def write(self):
        self.json.write_text(json.dumps({
            "status": self.status, "started": self.started.isoformat(), "args": vars(self.a),
            "machine": self.info, "prepare": self.prepare_runs, "runs": self.runs}, indent=1) + "\n")
        self.md.write_text(self.markdown())

    def markdown(self) -> str:
        a, i = self.a, self.info
        now = datetime.now(timezone.utc)
        has = {k: k in self.system_keys for k in SYSTEMS}
        lines = [
            "# sysbench: Meridian vs PostgreSQL 15", "",
            f"Status: **{self.status}**; started {self.started:%Y-%m-%d %H:%M} UTC, "
            f"last written {now:%H:%M} UTC.", "",
            f"Generated by `bench/sysbench-vs-postgres/bench.py --tables {a.tables} --table-size "
            f"{a.table_size} --threads {a.threads} --workloads {a.workloads} --seconds {a.seconds} "
            f"--runs {a.runs} --systems {a.systems} --datanodes {a.datanodes}`; every run in "
            f"[`{self.json.name}`]({self.json.name}).", "",
            "## Machine", "",
            f"- CPU: {i['cpu']}, nproc = {i['nproc']}; memory {i['memory_gib']} GiB; kernel "
            f"{i['kernel']}; {i['os']}",
            "- sysbench runs on the same machine as the system it drives, over loopback TCP; "
            "every data directory is on the same file system.",
            f"- kernel.sched_autogroup_enabled = {i['autogroup']}: each system's processes run in "
            "a session of their own (bench/cluster starts them so), which with autogroup is a "
            "CPU-scheduling group of its own, sysbench in the harness's (docs/performance.md, "
            "\"sysbench\").",
            f"- Load average at start: {i['load_start']}; at the last write: "
            + " ".join(f"{x:.2f}" for x in os.getloadavg())
            + " (the machine is shared with other tenants).", "",
            "## Versions and settings", "",
            f"- Meridian: {i['meridian_version']}, git {i['meridian_rev']}, release build; "
            "embedded: `meridian start` (default cache, synchronous commit on); cluster: "
            f"`meridian gtm`, {a.datanodes} × `meridian datanode` and one `meridian coordinator`, "
            "each its own process on loopback (bench/cluster's).",
            f"- {i['postgres_version']}: initdb `-A trust`; fsync and synchronous_commit on, "
            "shared_buffers = 128MB, max_connections = 300, everything else default.",
            f"- {i['sysbench_version']}, its own Lua workloads unchanged, `--db-driver=pgsql`.",
            f"- Data: `sysbench oltp_read_write prepare --tables={a.tables} --table-size="
            f"{a.table_size} --threads={a.tables}` into each system, once, before all runs: "
            + "; ".join(f"{LABELS[k]} {p['seconds']} s (then quiet after {p['quiet_wait_s']} s)"
                        for k, p in self.prepare_runs.items())
            + ". The write workloads change the rows as they go; every system gets the same "
            "sequence of runs.",
            f"- Runs: `sysbench WORKLOAD run --threads=N --time={a.seconds}`; {a.runs} round(s), "
            "each running every cell once per system, the order of the systems reversed from "
            "one cell to the next. Before each run the harness waits until the systems' "
            "processes use under 5 % of a CPU over 1 s (at most 15 s)."
            + (f" Each run holds `{a.lock}` (flock), so no other benchmark on this machine "
               "times at the same moment." if a.lock else ""), "",
            "## Results", "",
            "TPS and QPS: sysbench's transactions and queries per second, median over the runs "
            "(range in brackets). Ratio: Meridian's median TPS / PostgreSQL's. CPU/txn: the "
            "user + system CPU of all the system's processes per transaction, µs (median); on "
            "this 2-CPU machine sysbench competes for the same CPUs, and CPU per transaction "
            "varies less than TPS.", "",
        ]
        header = ["workload", "threads"]
        for k in self.system_keys:
            header += [f"{LABELS[k]} TPS", f"{LABELS[k]} QPS", f"{LABELS[k]} CPU/txn µs"]
        if has["postgres"]:
            header += [f"{LABELS[k]} / PG" for k in self.system_keys if k != "postgres"]
        lines += ["| " + " | ".join(header) + " |", "|---|---:|" + "---:|" * (len(header) - 2)]
        for w in self.workloads:
            for t in self.threads:
                row = [w, str(t)]
                for k in self.system_keys:
                    cell = self.cell(k, w, t)
                    tps = [r["tps"] for r in cell]
                    med = self.median(k, w, t, "tps")
                    row.append("" if med is None else f"{med:,.0f}" + (
                        f" ({min(tps):,.0f}–{max(tps):,.0f})" if len(tps) > 1 else ""))
                    qps = self.median(k, w, t, "qps")
                    row.append("" if qps is None else f"{qps:,.0f}")
                    cpu = self.median(k, w, t, "server_cpu_us_per_txn")
                    row.append("" if cpu is None else f"{cpu:,.0f}")
                if has["postgres"]:
                    pg = self.median("postgres", w, t, "tps")
                    for k in self.system_keys:
                        if k != "postgres":
                            m = self.median(k, w, t, "tps")
                            row.append(f"{m / pg:.2f}" if m and pg else "")
                lines.append("| " + " | ".join(row) + " |")
        if has["postgres"] and has["embedded"]:
            lines += ["", "Issue 31's targets for Meridian embedded: ≥ 1.0× PostgreSQL at 8 "
                      "threads, ≥ 1.5× at 64.", ""]
            for w in self.workloads:
                for t in self.threads:
                    target = 1.0 if t <= 8 else 1.5
                    m, pg = self.median("embedded", w, t, "tps"), self.median("postgres", w, t, "tps")
                    if m and pg:
                        verdict = "met" if m / pg >= target else "NOT met"
                        lines.append(f"- {w}, {t} threads: {m / pg:.2f}× (target {target}×): {verdict}")
        lines += ["", "Where the time goes: docs/performance.md, section \"sysbench\"."]
        if self.png.exists():
            lines += ["", f"![median TPS and CPU per transaction]({self.png.name})"]
        lines += ["", "## Every run", "",
                  "| round | workload | threads | system | TPS | QPS | latency avg / p95 ms | "
                  "ignored errors | reconnects | server CPU/txn µs | sysbench CPU/txn µs | "
                  "load before | rc |",
                  "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in self.runs:
            def f(field, fmt="{:,.0f}"):
                return "" if r.get(field) is None else fmt.format(r[field])
            lines.append(
                f"| {r['round']} | {r['workload']} | {r['threads']} | {LABELS[r['system']]} | "
                f"{f('tps')} | {f('qps')} | {f('latency_avg_ms', '{:.2f}')} / "
                f"{f('latency_p95_ms', '{:.2f}')} | {f('ignored_errors')} | {f('reconnects')} | "
                f"{f('server_cpu_us_per_txn')} | {f('sysbench_cpu_us_per_txn')} | "
                f"{r['load1_before']} | {r['rc']} |")
        failed = [r for r in self.runs if r.get("error_tail")]
        if failed:
            lines += ["", "## Failed runs", ""]
            for r in failed:
                lines += [f"- round {r['round']}, {r['workload']}, {r['threads']} threads, "
                          f"{LABELS[r['system']]} (rc {r['rc']}):", "", "```", r["error_tail"], "```"]
        return "\n".join(lines) + "\n"

    def chart(self):
        """Median TPS and server CPU per transaction per cell, a bar per system; nothing
        without matplotlib (README.md says where to get it)."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib not available: no chart", flush=True)
            return
        cells = [(w, t) for w in self.workloads for t in self.threads]
        fig, axes = plt.subplots(2, len(cells), figsize=(3.2 * len(cells), 6.4), squeeze=False)
        for col, (w, t) in enumerate(cells):
            for row, (field, label) in enumerate((("tps", "TPS"),
                                                  ("server_cpu_us_per_txn", "server CPU µs / txn"))):
                ax = axes[row][col]
                values = [self.median(k, w, t, field) or 0 for k in self.system_keys]
                ax.bar(range(len(values)), values, color=[COLORS[k] for k in self.system_keys])
                ax.set_xticks(range(len(values)))
                ax.set_xticklabels([LABELS[k].replace("Meridian ", "") for k in self.system_keys],
                                   fontsize=8)
                ax.set_title(f"{w}\n{t} threads: {label}", fontsize=9)
        fig.tight_layout()
        fig.savefig(self.png, dpi=100)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--threads", default="8,64")
    ap.add_argument("--workloads", default="oltp_read_write,oltp_point_select,oltp_update_index")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--systems", default="embedded,postgres,cluster",
                    help="comma separated, in the first round's order: embedded, postgres, cluster")
    ap.add_argument("--datanodes", type=int, default=2, help="the cluster's datanodes")
    ap.add_argument("--lock", help="a file to flock around each prepare and run (shared machines)")
    ap.add_argument("--sysbench", default=shutil.which("sysbench") or "sysbench")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sysbench-vs-postgres"),
                    help="the report's path without suffix (.md, .json, .png)")
    args = ap.parse_args()
    bad = set(args.systems.split(",")) - set(SYSTEMS)
    if bad:
        ap.error(f"--systems: unknown {sorted(bad)}; choose from {sorted(SYSTEMS)}")
    Bench(args).main()


if __name__ == "__main__":
    main()
