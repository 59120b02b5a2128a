#!/usr/bin/env python3
"""pgbench on a Meridian cluster: PostgreSQL 15, `meridian start` (embedded) and Meridian as
separate processes (`meridian gtm`, `--datanodes N` × `meridian datanode`, and
`meridian coordinator --gtm G --datanodes N`, tables spread over the datanodes), side by
side on this machine.

    bench/cluster/bench.py [--scale 10] [--clients 8,32] [--seconds 10] [--runs 2] [--datanodes 2]

Each system gets the same `pgbench -i -s SCALE`; then every workload (select-only and
tpcb-like, `-M prepared`) at every client count runs `--runs` times, the three systems in
alternation within each round. Reported per cell: median TPS, and the servers' CPU time
per 1,000 transactions (every process of the system summed: user + system time, read
from /proc before and after the run, PostgreSQL's exited backends through the
postmaster's reaped-children times), which is the cost of the coordinator-datanode hop
that TPS alone hides on a 2-CPU machine. Writes bench/results/cluster.md, and with
matplotlib (`target/pgbench-bench-venv/bin/python bench/cluster/bench.py`) the chart
bench/results/cluster.png.
"""
from __future__ import annotations

import argparse
import os
import platform
import pwd
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path(os.environ.get("MERIDIAN_PG_BINDIR", "/usr/lib/postgresql/15/bin"))
MERIDIAN = Path(os.environ.get("MERIDIAN_BIN", ROOT / "target" / "release" / "meridian"))
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], log: Path, ready: str = "ready to accept connections", **kw) -> subprocess.Popen:
    out = open(log, "ab")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kw)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if ready in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)
    raise RuntimeError(f"{cmd} not ready")


def cpu_seconds(pids: list[int], reaped_of: list[int] = ()) -> float:
    """User + system CPU of `pids` and their live descendants, plus the reaped children's
    times of `reaped_of`."""
    total = 0.0
    seen = set()
    stack = list(pids)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
        if pid in reaped_of:
            total += (int(fields[13]) + int(fields[14])) / TICK
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                children = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
                stack.extend(int(c) for c in children)
        except OSError:
            pass
    return total


class System:
    name = "?"
    host = "127.0.0.1"

    def __init__(self, base: Path):
        self.base = base
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()

    def cpu(self) -> float:
        return cpu_seconds([p.pid for p in self.procs])

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


class Embedded(System):
    name = "meridian embedded"

    def start(self):
        self.procs.append(start([str(MERIDIAN), "start", "--data-dir", str(self.base / "data"),
                                 "--listen", f"{self.host}:{self.port}", "--unix-socket-dir", str(self.base)],
                                self.base / "log"))


class Cluster(System):
    datanodes = 2

    @property
    def name(self):
        return f"meridian cluster (gtm + {self.datanodes} datanodes + coordinator)"

    def start(self):
        gtm = free_port()
        self.procs.append(start([str(MERIDIAN), "gtm", "--data-dir", str(self.base / "gtm"),
                                 "--listen", f"{self.host}:{gtm}"], self.base / "gtm.log"))
        addrs = []
        for i in range(self.datanodes):
            addrs.append(f"{self.host}:{free_port()}")
            self.procs.append(start([str(MERIDIAN), "datanode", "--data-dir", str(self.base / f"dn{i}"),
                                     "--listen", addrs[-1], "--gtm", f"{self.host}:{gtm}"],
                                    self.base / f"dn{i}.log"))
        self.procs.append(start([str(MERIDIAN), "coordinator", "--data-dir", str(self.base / "co"),
                                 "--listen", f"{self.host}:{self.port}", "--unix-socket-dir", str(self.base),
                                 "--gtm", f"{self.host}:{gtm}", "--datanodes", str(self.datanodes)],
                                self.base / "co.log"))


class Postgres(System):
    name = "PostgreSQL 15"

    def start(self):
        user = pwd.getpwnam("meridian-test") if os.getuid() == 0 else None
        data = self.base / "pg"
        if user:
            os.chown(self.base, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "meridian-test", "--"] if user else []
        subprocess.run(run_as + [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
                       check=True, capture_output=True)
        with open(data / "postgresql.conf", "a") as f:
            f.write("max_connections = 300\nshared_buffers = 128MB\nlisten_addresses = '127.0.0.1'\n"
                    "unix_socket_directories = ''\n")
        log = self.base / "pg.log"
        log.touch()
        if user:
            os.chown(log, user.pw_uid, user.pw_gid)
        self.procs.append(start(run_as + [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(self.port)],
                                log, ready="ready to accept connections"))

    def cpu(self) -> float:
        # Under runuser the postmaster is the started process's child; the backends that
        # exited count in its reaped-children times.
        children = subprocess.run(["pgrep", "-P", str(self.procs[0].pid)], capture_output=True,
                                  text=True).stdout.split()
        return cpu_seconds([self.procs[0].pid],
                           reaped_of=[self.procs[0].pid] + [int(c) for c in children])

    def stop(self):
        run_as = ["runuser", "-u", "meridian-test", "--"] if os.getuid() == 0 else []
        subprocess.run(run_as + [str(PG_BIN / "pg_ctl"), "-D", str(self.base / "pg"), "-m", "fast",
                                 "-w", "stop"], capture_output=True)
        super().stop()


def pgbench(system: System, *args: str, timeout: int = 900) -> str:
    cmd = [str(PG_BIN / "pgbench"), "-h", system.host, "-p", str(system.port), "-U", "postgres",
           *args, "postgres"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{system.name}: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def run_cell(system: System, workload: str, clients: int, seconds: int) -> tuple[float, float]:
    flags = ["-n", "-M", "prepared", "-c", str(clients), "-j", "2", "-T", str(seconds)]
    if workload == "select-only":
        flags.append("-S")
    before = system.cpu()
    out = pgbench(system, *flags)
    time.sleep(0.5)  # PostgreSQL's backends exit and are reaped
    used = system.cpu() - before
    processed = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
    return tps, used / processed * 1e6  # CPU ms per 1,000 transactions


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", default="8,32")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--datanodes", type=int, default=2)
    args = ap.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    base = Path(tempfile.mkdtemp(prefix="meridian-bench-cluster-"))
    base.chmod(0o755)  # PostgreSQL runs as another user and must reach its directory
    Cluster.datanodes = args.datanodes
    systems = [Postgres(base / "pg"), Embedded(base / "embedded"), Cluster(base / "cluster")]
    results: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    try:
        for s in systems:
            s.base.mkdir(parents=True)
            s.start()
            pgbench(s, "-i", "-s", str(args.scale), "-q")
        for r in range(args.runs):
            for workload in ("select-only", "tpcb-like"):
                for c in clients:
                    order = systems if r % 2 == 0 else list(reversed(systems))
                    for s in order:
                        results.setdefault((s.name, workload, c), []).append(
                            run_cell(s, workload, c, args.seconds))
                        print(s.name, workload, c, results[(s.name, workload, c)][-1], flush=True)
    finally:
        for s in systems:
            s.stop()
        shutil.rmtree(base, ignore_errors=True)
    write_report(args, clients, systems, results)


def write_report(args, clients, systems, results):
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", cpu)
    lines = [
        "# pgbench on a Meridian cluster",
        "",
        f"`bench/cluster/bench.py --scale {args.scale} --clients {args.clients} --seconds {args.seconds} "
        f"--runs {args.runs} --datanodes {args.datanodes}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{os.cpu_count()} CPUs ({model.group(1) if model else platform.processor()}), "
        f"{platform.system()} {platform.release()}. `-M prepared`, `-j 2`, medians of {args.runs} runs; "
        "CPU is every server process of the system, user + system, per 1,000 transactions.",
        "",
        "| workload | clients | " + " | ".join(f"{s.name} TPS" for s in systems) + " | "
        + " | ".join(f"{s.name} CPU ms / 1k txn" for s in systems) + " |",
        "|---|---|" + "---|" * (2 * len(systems)),
    ]
    for workload in ("select-only", "tpcb-like"):
        for c in clients:
            cells = [results.get((s.name, workload, c), []) for s in systems]
            tps = [f"{statistics.median(t for t, _ in cell):.0f}" if cell else "" for cell in cells]
            ms = [f"{statistics.median(m for _, m in cell):.0f}" if cell else "" for cell in cells]
            lines.append(f"| {workload} | {c} | " + " | ".join(tps) + " | " + " | ".join(ms) + " |")
    if chart(clients, systems, results, ROOT / "bench" / "results" / "cluster.png"):
        lines += ["", "![TPS and CPU per transaction](cluster.png)"]
    out = ROOT / "bench" / "results" / "cluster.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


def chart(clients, systems, results, dst: Path) -> bool:
    """Median TPS and CPU per 1,000 transactions, one bar per system, per workload and
    client count; False (and a message) without matplotlib (e.g. use
    target/pgbench-bench-venv, which bench/pgbench-vs-postgres/run.sh creates)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no chart")
        return False
    cells = [(w, c) for w in ("select-only", "tpcb-like") for c in clients]
    fig, axes = plt.subplots(2, len(cells), figsize=(3.6 * len(cells), 6.4), squeeze=False)
    for col, (w, c) in enumerate(cells):
        for row, (index, label) in enumerate(((0, "TPS"), (1, "server CPU ms / 1k txn"))):
            ax = axes[row][col]
            values = [statistics.median(v[index] for v in results.get((s.name, w, c), [(0, 0)]))
                      for s in systems]
            ax.bar(range(len(systems)), values, color=["tab:orange", "tab:blue", "tab:green"])
            ax.set_xticks(range(len(systems)))
            ax.set_xticklabels(["PostgreSQL 15", "embedded", "cluster"], fontsize=8)
            ax.set_title(f"{w}, {c} clients: {label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=100)
    return True


if __name__ == "__main__":
    main()
