#!/usr/bin/env python3
"""pgbench: Meridian vs PostgreSQL 15, on the same machine, same data, same flags.

Usually started through ``run.sh`` (which builds Meridian in release mode first):

    bench/pgbench-vs-postgres/run.sh [options]

What it does:

1. starts Meridian (``meridian start --synchronous-commit on --cache-size CACHE``) and a
   PostgreSQL 15 server (initdb in a temporary directory; fsync=on, synchronous_commit=on,
   shared_buffers=CACHE, max_connections large enough), each in its own temporary
   directory on the same file system;
2. loads the same data into both with ``pgbench -i -s SCALE``;
3. measures resident memory with ``--idle-connections`` (default 1000) idle connections
   open to each server;
4. runs pgbench for every cell workload x mode x clients, ``--runs`` times each, over each
   server's Unix-domain socket (``--transport tcp``: over 127.0.0.1), in rounds: each
   round runs every cell once per system, the two systems in alternation (M P, then P M
   for the next cell or round), so that drift, slow phases of the machine lasting
   minutes and load from other tenants hit both systems and every cell alike; before
   each run it waits until both servers' processes are quiet (PostgreSQL's backends
   from the run before still exiting, Meridian's background compaction);
5. after every run rewrites ``bench/results/pgbench-vs-postgres.md`` (and ``.json`` with
   every run), and after every round the chart ``pgbench-vs-postgres.png``: an
   interrupted run leaves a valid, partial report.

Every option can also be given as an environment variable ``BENCH_<OPTION>`` (upper case,
dashes as underscores), e.g. ``BENCH_DURATION=5``.  ``--quick`` is scale 1, 2 s, 1 run,
clients 1,8, 50 idle connections: a smoke test of the pipeline, not a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import pwd
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
READY = b"ready to accept connections"

DEFAULTS = {
    "scale": 10,
    "duration": 10,
    "runs": 3,
    "clients": "1,8,32,128,512,1000",
    "workloads": "select-only,tpcb-like,simple-update",
    "modes": "prepared,simple",
    "cache_size": "128MB",
    "threads": 2,
    "idle_connections": 1000,
    "meridian_bin": str(REPO / "target" / "release" / "meridian"),
    "pg_bindir": "/usr/lib/postgresql/15/bin",
    "pgbench": "",
    "out_dir": str(REPO / "bench" / "results"),
    "name": "pgbench-vs-postgres",
    "work_dir": "",
    "systems": "meridian,postgres",
    "connect_allowance": 0,
    "transport": "unix",
}

# The issue's reference numbers for PostgreSQL 15 on the 2-core machine
# (scale 10, -M prepared, -j 2, 10 s, fsync on).
ISSUE_REFERENCE = {
    "select-only": {1: 18100, 8: 36900, 32: 35300, 128: 23400, 512: 17300, 1000: 12900},
    "tpcb-like": {1: 2160, 8: 4490, 32: 2830, 128: 2000, 512: 730, 1000: 420},
}

WORKLOAD_LABEL = {
    "select-only": "select-only (-S)",
    "tpcb-like": "tpcb-like",
    "simple-update": "simple-update (-N)",
}
SYSTEM_LABEL = {"meridian": "Meridian", "postgres": "PostgreSQL"}


def log(msg: str):
    ts = datetime.now(timezone.utc).strftime("%H:%M:%S")
    print(f"[{ts}] {msg}", flush=True)


def fmt_dur(s: float) -> str:
    s = int(max(0, s))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def sh(cmd, **kw) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False,
                              **kw).stdout.strip()
    except OSError as e:
        return f"({e})"


# --------------------------------------------------------------------------- servers
def pg_os_user():
    """PostgreSQL refuses to run as root: when we are root, run it as a system user."""
    if os.geteuid() != 0:
        return None
    for name in ("meridian-test", "postgres"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", "meridian-test"], check=True)
    return pwd.getpwnam("meridian-test")


def size_to_pg(size: str) -> str:
    m = re.fullmatch(r"(?i)\s*(\d+)\s*([kmgt]?)i?b?\s*", size)
    if not m:
        raise ValueError(f"cannot parse size {size!r}")
    n, unit = m.groups()
    if not unit:
        return f"{int(n) // 1024}kB"
    return f"{n}kB" if unit.lower() == "k" else f"{n}{unit.upper()}B"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_stat(pid) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state, ppid, ...), or None if the
    process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (via /proc/*/stat ppid)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or (fields := proc_stat(d)) is None:
            continue
        children.setdefault(int(fields[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (all their threads)."""
    ticks = sum(int(f[11]) + int(f[12]) for f in map(proc_stat, pids) if f is not None)
    return ticks / os.sysconf("SC_CLK_TCK")


def wait_until_quiet(roots: list[int], busy_below: float = 0.05, window: float = 3.0,
                     limit: float = 300.0) -> tuple[float, bool]:
    """Waits until the process trees of `roots` together use under `busy_below` of one
    CPU over `window` seconds (background work after a bulk load: Meridian's dropping of
    the table its primary key rewrote and its compactions, PostgreSQL's checkpoint and
    autovacuum; after a run, PostgreSQL's backends exiting). Returns the seconds waited
    and whether it got quiet (it gives up after `limit`)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        pids = [p for root in roots for p in process_tree(root)]
        before = cpu_seconds(pids)
        time.sleep(window)
        if cpu_seconds(pids) - before < busy_below * window:
            return round(time.monotonic() - t0, 1), True
    return round(time.monotonic() - t0, 1), False


def smaps_rollup(pid: int) -> dict[str, int]:
    """Rss, Pss, Private_* ... of one process, in bytes (0s if it is gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    except OSError:
        pass
    return out


class Server:
    kind = "?"
    stop_sig = signal.SIGTERM

    def __init__(self, base: Path, cache_size: str):
        self.base = base
        self.base.mkdir(parents=True, exist_ok=True)
        self.data = base / "data"
        self.log_path = base / "server.log"
        self.port = free_port()
        self.cache_size = cache_size
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def popen_kwargs(self) -> dict:
        return {}

    def start(self, timeout: float = 180):
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     **self.popen_kwargs())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode} during "
                                   f"start-up; log {self.log_path}:\n{self.log_tail()}")
            if READY in self.log_path.read_bytes():
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                        return self
                except OSError:
                    pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"{self.kind} not ready within {timeout}s; log {self.log_path}:\n"
                           f"{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass

    def stop(self, timeout: float = 60):
        if self.proc is None:
            return
        if self.alive():
            self.proc.send_signal(self.stop_sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.kind} did not stop within {timeout}s; killing it")
        self.kill()  # stragglers of the process group, if any
        self._log.close()

    def memory(self) -> dict[str, int]:
        """Rss/Pss/Private summed over the server's processes, plus the process count."""
        pids = process_tree(self.proc.pid)
        tot = {"Rss": 0, "Pss": 0, "Private": 0, "processes": 0}
        for p in pids:
            r = smaps_rollup(p)
            if not r:
                continue
            tot["Rss"] += r.get("Rss", 0)
            tot["Pss"] += r.get("Pss", 0)
            tot["Private"] += r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)
            tot["processes"] += 1
        return tot


class Meridian(Server):
    kind = "meridian"

    def __init__(self, base, cache_size, binary: str):
        super().__init__(base, cache_size)
        self.binary = binary
        self.data.mkdir(parents=True, exist_ok=True)

    def command(self):
        return [self.binary, "start", "--data-dir", str(self.data),
                "--listen", f"127.0.0.1:{self.port}", "--unix-socket-dir", str(self.base),
                "--cache-size", self.cache_size, "--synchronous-commit", "on"]

    def settings(self) -> str:
        return " ".join(self.command()[1:]).replace(str(self.base), "$TMP")


class Postgres(Server):
    kind = "postgres"
    stop_sig = signal.SIGINT  # fast shutdown

    def __init__(self, base, cache_size, bindir: str, max_connections: int):
        super().__init__(base, cache_size)
        self.bindir = Path(bindir)
        self.max_connections = max_connections
        self.user = pg_os_user()
        if self.user:
            os.chown(self.base, self.user.pw_uid, self.user.pw_gid)
        os.chmod(self.base, 0o755)
        res = subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
             "--encoding=UTF8", "--locale=C.UTF-8"],
            capture_output=True, text=True, cwd=self.base, env=self.env(), **self.user_kw())
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{res.stdout}\n{res.stderr}")

    def env(self):
        env = dict(os.environ)
        env.pop("PGDATA", None)
        env["LC_ALL"] = "C.UTF-8"
        if self.user:
            env["HOME"] = str(self.base)
            env["USER"] = env["LOGNAME"] = self.user.pw_name
        return env

    def user_kw(self):
        if not self.user:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def popen_kwargs(self):
        return {"cwd": self.base, "env": self.env(), **self.user_kw()}

    def gucs(self) -> list[tuple[str, str]]:
        return [("listen_addresses", "127.0.0.1"),
                ("unix_socket_directories", str(self.base)),
                ("fsync", "on"), ("synchronous_commit", "on"),
                ("shared_buffers", size_to_pg(self.cache_size)),
                ("max_connections", str(self.max_connections)),
                ("logging_collector", "off")]

    def command(self):
        cmd = [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        for k, v in self.gucs():
            cmd += ["-c", f"{k}={v}"]
        return cmd

    def settings(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.gucs()
                         if k != "listen_addresses").replace(str(self.base), "$TMP")


# ---------------------------------------------------------------- idle connections
def pg_startup(port: int, timeout: float = 30) -> socket.socket:
    """Open one connection and complete the v3 start-up (trust auth) up to ReadyForQuery."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    params = b"user\0postgres\0database\0postgres\0application_name\0idle-memory\0\0"
    body = struct.pack("!i", 196608) + params
    s.sendall(struct.pack("!i", len(body) + 4) + body)
    buf = b""

    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection during start-up")
            buf += chunk

    while True:
        need(5)
        typ, length = buf[0:1], struct.unpack("!i", buf[1:5])[0]
        need(1 + length)
        payload, buf = buf[5:1 + length], buf[1 + length:]
        if typ == b"E":
            raise ConnectionError(f"start-up error: {payload!r}")
        if typ == b"R" and struct.unpack("!i", payload[:4])[0] != 0:
            raise ConnectionError("server asked for a password (expected trust auth)")
        if typ == b"Z":
            s.settimeout(None)
            return s


def steady_memory(server: Server, step: float = 1.0, limit: int = 30) -> dict:
    """The server's memory once its RSS moves less than 256 KiB in `step` seconds."""
    prev = server.memory()
    for _ in range(limit):
        time.sleep(step)
        cur = server.memory()
        if abs(cur["Rss"] - prev["Rss"]) < 256 * 1024:
            return cur
        prev = cur
    return prev


def idle_memory(server: Server, n: int, settle: float = 3.0) -> dict:
    """Memory per idle connection: the growth while the second half of `n` connections
    opens, divided by that half. The first half wakes every server thread; measured from
    before it, Meridian's figure came out negative (round 9 in docs/performance.md's git history):
    mimalloc returns pages freed during the load only when the owning thread allocates
    again, which the first connections make it do."""
    socks = []
    first = n // 2
    t0 = time.monotonic()
    try:
        for i in range(n):
            if i == first:
                time.sleep(settle)
                before = steady_memory(server)
            socks.append(pg_startup(server.port))
        opened = time.monotonic() - t0
        time.sleep(settle)
        during = steady_memory(server)
    finally:
        for s in socks:
            try:
                s.sendall(b"X\0\0\0\4")  # Terminate
                s.close()
            except OSError:
                pass
    res = {"connections": n, "measured_connections": n - first,
           "open_seconds": round(opened, 2), "before": before, "during": during}
    for k in ("Rss", "Pss", "Private"):
        res[f"{k}_delta_per_conn"] = (during[k] - before[k]) / (n - first)
    return res


# -------------------------------------------------------------------------- pgbench
def parse_pgbench(out: str) -> dict:
    def grab(pat, conv=float):
        m = re.search(pat, out, re.M)
        return conv(m.group(1)) if m else None
    return {
        "tps": grab(r"^tps = ([\d.]+) \(without initial connection time\)"),
        "latency_ms": grab(r"^latency average = ([\d.]+) ms"),
        "latency_stddev_ms": grab(r"^latency stddev = ([\d.]+) ms"),
        "conn_ms": grab(r"^initial connection time = ([\d.]+) ms"),
        "transactions": grab(r"^number of transactions actually processed: (\d+)", int),
        "failed": grab(r"^number of failed transactions: (\d+)", int),
        "aborted": "Run was aborted" in out,
    }


class Bench:
    def __init__(self, args):
        self.a = args
        self.clients = [int(c) for c in args.clients.split(",") if c.strip()]
        self.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
        self.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        self.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
        self.out_dir = Path(args.out_dir)
        self.md_path = self.out_dir / f"{args.name}.md"
        self.json_path = self.out_dir / f"{args.name}.json"
        self.png_path = self.out_dir / f"{args.name}.png"
        self.servers: dict[str, Server] = {}
        self.runs: list[dict] = []     # every pgbench run
        self.memory: dict[str, dict] = {}
        self.init: dict[str, dict] = {}
        self.status = "starting"
        self.started = datetime.now(timezone.utc)
        self.info: dict = {}
        self.pgbench = args.pgbench or shutil.which("pgbench") or str(Path(args.pg_bindir) / "pgbench")

    # ---- environment
    def collect_info(self):
        cpu = ""
        for line in sh(["lscpu"]).splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
        mem = ""
        try:
            with open("/proc/meminfo") as f:
                kb = int(f.readline().split()[1])
            mem = f"{kb / 1024 / 1024:.1f} GiB"
        except OSError:
            pass
        rev = sh(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"])
        dirty = sh(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])
        self.info = {
            "cpu": cpu or platform.processor(),
            "nproc": os.cpu_count(),
            "memory": mem,
            "kernel": platform.release(),
            "os": sh(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
            "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "meridian_rev": rev + (" (with uncommitted changes)" if dirty else ""),
            "meridian_version": sh([self.a.meridian_bin, "--version"]),
            "postgres_version": sh([str(Path(self.a.pg_bindir) / "postgres"), "--version"]),
            "pgbench_version": sh([self.pgbench, "--version"]),
            "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "fs": sh(["df", "--output=fstype", str(self.work_dir)]).splitlines()[-1:],
        }

    # ---- the run
    def threads_for(self, clients: int) -> int:
        return max(1, min(self.a.threads, clients))

    def seconds_for(self, clients: int) -> int:
        """pgbench -T: the duration, plus the connect allowance for many clients."""
        return self.a.duration + round(self.a.connect_allowance * clients / 1000)

    def host(self, server: Server) -> str:
        """pgbench -h: the server's socket directory (Unix-domain socket) or loopback TCP."""
        return str(server.base) if self.a.transport == "unix" else "127.0.0.1"

    def pgbench_cmd(self, server: Server, workload: str, mode: str, clients: int) -> list[str]:
        return [self.pgbench, "-h", self.host(server), "-p", str(server.port), "-U", "postgres",
                "-b", workload, "-M", mode, "-c", str(clients), "-j",
                str(self.threads_for(clients)), "-T", str(self.seconds_for(clients)), "postgres"]

    def run_pgbench(self, server: Server, workload, mode, clients) -> dict:
        cmd = self.pgbench_cmd(server, workload, mode, clients)
        quiet_wait, quiet = wait_until_quiet([s.proc.pid for s in self.servers.values()],
                                             window=1.0, limit=15.0)
        t0 = time.monotonic()
        load0 = os.getloadavg()[0]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=self.seconds_for(clients) + 300)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
                else (e.stdout or "")
            rc = "timeout"
        res = parse_pgbench(out)
        res.update({"rc": rc, "wall_s": round(time.monotonic() - t0, 2),
                    "T": self.seconds_for(clients),
                    "load1_before": round(load0, 2), "quiet_wait_s": quiet_wait,
                    "quiet": quiet})
        if rc != 0 or res["tps"] is None:
            tail = "\n".join(out.strip().splitlines()[-8:])
            res["error_tail"] = tail
            log(f"  pgbench exited {rc} on {server.kind}:\n{tail}")
        if not server.alive():
            raise RuntimeError(f"{server.kind} died during a run; log "
                               f"{server.log_path}:\n{server.log_tail()}")
        return res

    def load(self, server: Server):
        t0 = time.monotonic()
        cmd = [self.pgbench, "-i", "-s", str(self.a.scale), "-h", self.host(server), "-p",
               str(server.port), "-U", "postgres", "postgres"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"pgbench -i on {server.kind} failed:\n{p.stdout}\n{p.stderr}"
                               f"\nserver log:\n{server.log_tail()}")
        m = re.search(r"done in ([\d.]+) s \((.*)\)", p.stderr + p.stdout)
        self.init[server.kind] = {"seconds": round(time.monotonic() - t0, 2),
                                  "pgbench_says": m.group(0) if m else ""}
        log(f"{server.kind}: pgbench -i -s {self.a.scale} took "
            f"{self.init[server.kind]['seconds']} s")
        waited, quiet = wait_until_quiet([server.proc.pid])
        self.init[server.kind].update(quiet_after=waited, quiet=quiet)
        log(f"{server.kind}: " + (f"quiet {waited} s after the load" if quiet
                                  else f"still busy {waited} s after the load; going on"))

    def run(self):
        a = self.a
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir = Path(tempfile.mkdtemp(prefix="pgbench-vs-postgres-",
                                              dir=a.work_dir or None))
        os.chmod(self.work_dir, 0o755)
        self.collect_info()
        cells = [(w, m, c) for w in self.workloads for m in self.modes for c in self.clients]
        total_runs = len(cells) * a.runs * len(self.systems)
        est = sum(self.seconds_for(c) + 1.5 for _, _, c in cells) * a.runs * len(self.systems)
        log(f"{len(cells)} cells x {a.runs} runs x {len(self.systems)} systems = {total_runs} "
            f"pgbench runs of {a.duration} s; estimated {fmt_dur(est)} "
            f"plus start-up, load and the idle-connection test")
        log(f"work directory {self.work_dir}; results go to {self.md_path}")
        try:
            max_conn = max(self.clients + [a.idle_connections]) + 20
            if "meridian" in self.systems:
                self.servers["meridian"] = Meridian(self.work_dir / "meridian", a.cache_size,
                                                    a.meridian_bin).start()
                log(f"meridian ready on port {self.servers['meridian'].port}")
            if "postgres" in self.systems:
                self.servers["postgres"] = Postgres(self.work_dir / "postgres", a.cache_size,
                                                    a.pg_bindir, max_conn).start()
                log(f"postgres ready on port {self.servers['postgres'].port}")
            for s in self.servers.values():
                self.load(s)
            self.status = "running"
            self.write()
            if a.idle_connections > 0:
                for s in self.servers.values():
                    log(f"{s.kind}: opening {a.idle_connections} idle connections")
                    self.memory[s.kind] = r = idle_memory(s, a.idle_connections)
                    log(f"{s.kind}: RSS +{r['Rss_delta_per_conn'] / 1024:.1f} KiB/conn, "
                        f"PSS +{r['Pss_delta_per_conn'] / 1024:.1f} KiB/conn "
                        f"(opened in {r['open_seconds']} s)")
                    time.sleep(2)  # let the backends exit
                self.write()
            # Rounds: every cell once per round, so a slow phase of the machine (they last
            # minutes here) lands on runs of many cells instead of on all runs of one.
            schedule = [(r, w, m, c, sysname)
                        for r in range(a.runs)
                        for ci, (w, m, c) in enumerate(cells)
                        for sysname in (self.systems if (r + ci) % 2 == 0
                                        else list(reversed(self.systems)))]
            t_start = time.monotonic()
            for done, (r, w, m, c, sysname) in enumerate(schedule, 1):
                res = self.run_pgbench(self.servers[sysname], w, m, c)
                res.update({"system": sysname, "workload": w, "mode": m,
                            "clients": c, "run": r + 1})
                self.runs.append(res)
                el = time.monotonic() - t_start
                # remaining time, scaled by how long the runs so far took vs -T
                spent_T = sum(x["T"] for x in self.runs[-done:])
                left_T = sum(self.seconds_for(c2) for (_, _, _, c2, _) in schedule[done:])
                eta = el / spent_T * left_T
                tps = f"{res['tps']:,.0f} tps" if res["tps"] is not None else "FAILED"
                lat = f"{res['latency_ms']:.2f} ms" if res["latency_ms"] else "-"
                fail = f", {res['failed']} failed" if res.get("failed") else ""
                log(f"[{done}/{total_runs}] round {r + 1}/{a.runs} {w} -M {m} -c {c} "
                    f"{sysname:8s}: {tps}, {lat}{fail} (waited {res['quiet_wait_s']} s "
                    f"for quiet) | elapsed {fmt_dur(el)}, ETA {fmt_dur(eta)}")
                self.write()
                if done == len(schedule) or schedule[done][0] != r:
                    self.chart()
            self.status = "complete"
        except KeyboardInterrupt:
            self.status = "interrupted"
            log("interrupted: writing partial results")
        except Exception as e:
            self.status = f"failed: {e}".splitlines()[0][:300]
            log(f"error: {e}")
            raise
        finally:
            for s in self.servers.values():
                try:
                    s.stop()
                except Exception as e:  # noqa: BLE001
                    log(f"stopping {s.kind}: {e}")
            self.info["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
            self.finished = datetime.now(timezone.utc)
            self.write()
            self.chart()
            if not a.keep:
                shutil.rmtree(self.work_dir, ignore_errors=True)
            else:
                log(f"kept {self.work_dir}")
            log(f"wrote {self.md_path}, {self.json_path}, {self.png_path}")

    # ---- results
    def quiet_summary(self) -> str:
        waits = sorted(r["quiet_wait_s"] for r in self.runs if "quiet_wait_s" in r)
        if not waits:
            return ""
        busy = sum(1 for r in self.runs if r.get("quiet") is False)
        return (f"; waited a median {statistics.median(waits)} s, at most {waits[-1]} s"
                + (f"; {busy} run(s) started still busy" if busy else ""))

    def medians(self) -> dict:
        """(system, workload, mode, clients) -> dict of medians over the successful runs."""
        groups: dict[tuple, list[dict]] = {}
        for r in self.runs:
            groups.setdefault((r["system"], r["workload"], r["mode"], r["clients"]), []).append(r)
        out = {}
        for k, rs in groups.items():
            ok = [r for r in rs if r["tps"] is not None]
            if not ok:
                out[k] = {"n": 0, "attempts": len(rs)}
                continue
            out[k] = {"n": len(ok), "attempts": len(rs),
                      "tps": statistics.median(r["tps"] for r in ok),
                      "lat": statistics.median(r["latency_ms"] for r in ok
                                               if r["latency_ms"] is not None)
                      if any(r["latency_ms"] is not None for r in ok) else None,
                      "min": min(r["tps"] for r in ok), "max": max(r["tps"] for r in ok),
                      "failed": sum(r.get("failed") or 0 for r in rs),
                      "aborted": sum(1 for r in rs if r.get("aborted") or r["rc"] != 0
                                     or r["tps"] is None)}
        return out

    def checks(self, med) -> list[tuple[str, str, str]]:
        """(check, verdict, detail) for the acceptance criteria of issue 4."""
        def tps(s, w, m, c):
            v = med.get((s, w, m, c))
            return v.get("tps") if v else None

        def ratio(w, m, c):
            mt, pt = tps("meridian", w, m, c), tps("postgres", w, m, c)
            return mt / pt if mt is not None and pt else None

        out = []

        def ratio_check(name, w, need: dict[int, float]):
            parts, ok, missing = [], True, False
            for c, thr in need.items():
                r = ratio(w, "prepared", c)
                if r is None:
                    missing = True
                    parts.append(f"{c}: not measured")
                    continue
                good = r >= thr
                ok &= good
                parts.append(f"{c}: {r:.2f}x (need {thr}x){'' if good else ' ✗'}")
            verdict = "not measured" if missing and ok and all("not measured" in p for p in parts) \
                else ("NOT MET" if not ok else ("incomplete" if missing else "met"))
            out.append((name, verdict, "; ".join(parts)))

        ratio_check("select-only prepared: Meridian ≥ 1.0× PostgreSQL at 1 and 8 clients, "
                    "≥ 1.5× at ≥ 32", "select-only",
                    {1: 1.0, 8: 1.0, 32: 1.5, 128: 1.5, 512: 1.5, 1000: 1.5})
        ratio_check("tpcb-like prepared: ≥ 1.0× at 8 and 32 clients, ≥ 1.5× at ≥ 128",
                    "tpcb-like", {8: 1.0, 32: 1.0, 128: 1.5, 512: 1.5, 1000: 1.5})
        for w, frac in (("select-only", 0.9), ("tpcb-like", 0.8)):
            vals = {c: tps("meridian", w, "prepared", c) for c in self.clients}
            vals = {c: v for c, v in vals.items() if v is not None}
            name = (f"flatness, {w} prepared: Meridian at 1,000 clients ≥ {frac:.0%} of its "
                    f"own peak")
            if 1000 not in vals:
                out.append((name, "not measured", "no 1,000-client result"))
            else:
                peak_c = max(vals, key=vals.get)
                f = vals[1000] / vals[peak_c]
                out.append((name, "met" if f >= frac else "NOT MET",
                            f"{vals[1000]:,.0f} tps at 1,000 = {f:.0%} of peak "
                            f"{vals[peak_c]:,.0f} at {peak_c}"))
        parts, ok, any_ = [], True, False
        for c in self.clients:
            p, s = tps("meridian", "select-only", "prepared", c), \
                tps("meridian", "select-only", "simple", c)
            if p and s is not None:
                any_ = True
                f = s / p
                good = abs(f - 1) <= 0.30
                ok &= good
                parts.append(f"{c}: {f:.2f}{'' if good else ' ✗'}")
        out.append(("select-only: Meridian -M simple within 30% of -M prepared "
                    "(simple/prepared TPS)",
                    ("met" if ok else "NOT MET") if any_ else "not measured", "; ".join(parts)))
        m = self.memory.get("meridian")
        if m:
            kb = m["Rss_delta_per_conn"] / 1024
            out.append((f"idle memory: Meridian ≤ 100 KB per idle connection "
                        f"({m['connections']} connections)",
                        "met" if m["Rss_delta_per_conn"] <= 100 * 1024 else "NOT MET",
                        f"{kb:.1f} KiB/conn (RSS delta)"))
        else:
            out.append(("idle memory: Meridian ≤ 100 KB per idle connection",
                        "not measured", ""))
        return out

    def write(self):
        a = self.a
        med = self.medians()
        data = {"args": vars(a), "info": self.info, "status": self.status,
                "started": self.started.isoformat(), "init": self.init,
                "memory": self.memory, "runs": self.runs}
        tmp = self.json_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
        tmp.replace(self.json_path)

        i = self.info
        L = []
        L.append("# pgbench: Meridian vs PostgreSQL 15")
        L.append("")
        status = self.status
        if status == "running":
            status = f"running (partial: {len(self.runs)} runs so far)"
        L.append(f"Status: **{status}**; started {self.started:%Y-%m-%d %H:%M} UTC"
                 + (f", finished {self.finished:%H:%M} UTC" if hasattr(self, "finished") else "")
                 + ".")
        L.append("")
        cmdline = "bench/pgbench-vs-postgres/run.sh" + "".join(
            f" {x}" for x in getattr(a, "argv", []))
        L.append(f"Generated by `{cmdline}` (driver `bench/pgbench-vs-postgres/bench.py`); "
                 f"every run in [`{self.json_path.name}`]({self.json_path.name}), "
                 f"chart [`{self.png_path.name}`]({self.png_path.name}).")
        if (a.duration, a.runs, a.scale) != (DEFAULTS["duration"], DEFAULTS["runs"],
                                             DEFAULTS["scale"]) or a.quick:
            L.append("")
            L.append(f"**Note:** this run used scale {a.scale}, {a.duration} s per run and "
                     f"{a.runs} run(s) per cell; the documented default "
                     f"(`run.sh` with no options) is scale {DEFAULTS['scale']}, "
                     f"{DEFAULTS['duration']} s, {DEFAULTS['runs']} runs.")
        L.append("")
        L.append("## Machine")
        L.append("")
        L.append(f"- CPU: {i.get('cpu')}, nproc = {i.get('nproc')}; memory {i.get('memory')}; "
                 f"kernel {i.get('kernel')}; {i.get('os')}")
        transport = ("a Unix-domain socket, pgbench's and psql's default local transport"
                     if a.transport == "unix" else "loopback TCP")
        L.append(f"- pgbench runs on the same machine as the server it drives ({transport}); "
                 f"both data directories on the same file system ({', '.join(i.get('fs', []))}).")
        L.append(f"- Load average at start: {i.get('load_start')}"
                 + (f"; at end: {i['load_end']}" if i.get("load_end") else "")
                 + " (the machine may be shared with other tenants).")
        L.append("")
        L.append("## Versions")
        L.append("")
        L.append(f"- Meridian: {i.get('meridian_version')}, git {i.get('meridian_rev')}, "
                 f"release build")
        L.append(f"- {i.get('postgres_version')}")
        L.append(f"- {i.get('pgbench_version')}")
        L.append("")
        L.append("## Settings")
        L.append("")
        if "meridian" in self.servers:
            L.append(f"- Meridian: `meridian {self.servers['meridian'].settings()}`")
        if "postgres" in self.servers:
            L.append(f"- PostgreSQL: initdb `-A trust --encoding=UTF8 --locale=C.UTF-8`; "
                     f"{self.servers['postgres'].settings()}; everything else default")
        L.append(f"- Data: `pgbench -i -s {a.scale}` into each (default init steps "
                 f"`dtgvp`), once, before all runs"
                 + "".join(f"; {k} took {v['seconds']} s" for k, v in self.init.items())
                 + "; then each server is left until its processes use under 5 % of a CPU "
                   "over 3 s (background work after the load: "
                 + ", ".join(f"{k} {v.get('quiet_after', '?')} s"
                             + ("" if v.get("quiet", True) else ", still busy")
                             for k, v in self.init.items())
                 + ").")
        host = "SOCKET_DIR" if a.transport == "unix" else "127.0.0.1"
        L.append(f"- Runs: `pgbench -h {host} -b WORKLOAD -M MODE -c CLIENTS "
                 f"-j {a.threads} -T SECONDS` (`-j 1` for 1 client); the same flags for "
                 f"both systems, so pgbench's default pre-run `vacuum pgbench_branches`, "
                 f"`vacuum pgbench_tellers` and `truncate pgbench_history` go to both.")
        if a.connect_allowance:
            L.append(f"- SECONDS = {a.duration} + round({a.connect_allowance:g} × clients / "
                     f"1,000) (`--connect-allowance {a.connect_allowance:g}`): "
                     + ", ".join(f"{c:,} clients: -T {self.seconds_for(c)}"
                                 for c in self.clients)
                     + ". pgbench 15's -T clock includes establishing the connections, and "
                     "PostgreSQL needs about 4 s here to fork 1,000 backends, which would "
                     "leave it about 1 s of a 5 s run; the allowance keeps the measured "
                     "window near the duration for both systems (pgbench's TPS excludes the "
                     "connection time either way).")
        else:
            L.append(f"- SECONDS = {a.duration} for every client count. pgbench 15's -T clock "
                     f"includes establishing the connections (PostgreSQL needs a few "
                     f"seconds for 1,000 backends, Meridian well under one), and its TPS "
                     f"excludes that time, so at high client counts PostgreSQL's figure comes "
                     f"from a shorter window.")
        L.append(f"- Workloads {', '.join(self.workloads)}; modes {', '.join(self.modes)}; "
                 f"clients {', '.join(map(str, self.clients))}; {a.runs} run(s) per cell and "
                 f"system, medians reported. Order: {a.runs} round(s), each running every cell "
                 f"once per system, the systems alternating (M P, then P M for the next cell "
                 f"or round), so drift, the machine's slow phases (minutes long here) and "
                 f"other tenants' load hit both systems and all cells alike. Before each "
                 f"run the harness waits until both servers' processes use under 5 % of a "
                 f"CPU over 1 s (at most 15 s; PostgreSQL's backends from the run before "
                 f"exiting, compaction)" + self.quiet_summary() + ".")
        L.append("")
        L.append("## Results")
        L.append("")
        L.append("TPS is pgbench's `tps` (without initial connection time), latency its "
                 "`latency average`; both the median over the runs (TPS range in brackets). "
                 "Ratio = Meridian median TPS / PostgreSQL median TPS.")
        L.append("")
        L.append("| workload | mode | clients | Meridian TPS | Meridian lat ms | PostgreSQL TPS "
                 "| PostgreSQL lat ms | M/PG |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|")
        notes = []
        for w in self.workloads:
            for m in self.modes:
                for c in self.clients:
                    cells = {s: med.get((s, w, m, c)) for s in ("meridian", "postgres")}
                    if not any(cells.values()):
                        continue
                    row = [WORKLOAD_LABEL.get(w, w), m, f"{c:,}"]
                    for s in ("meridian", "postgres"):
                        v = cells[s]
                        if not v:
                            row += ["", ""]
                        elif not v["n"]:
                            row += ["failed", ""]
                        else:
                            rng = f" ({v['min']:,.0f}–{v['max']:,.0f})" if v["n"] > 1 else ""
                            flag = ""
                            if v["failed"] or v["aborted"]:
                                flag = " ‡"
                                notes.append(f"{SYSTEM_LABEL[s]} {w} -M {m} -c {c}: "
                                             f"{v['failed']} failed transactions, "
                                             f"{v['aborted']} runs with errors/aborts or "
                                             f"no result (median of {v['n']} of "
                                             f"{v['attempts']} runs)")
                            row += [f"{v['tps']:,.0f}{rng}{flag}",
                                    f"{v['lat']:.2f}" if v["lat"] is not None else ""]
                    mv, pv = cells["meridian"], cells["postgres"]
                    if mv and pv and mv.get("tps") is not None and pv.get("tps"):
                        row.append(f"{mv['tps'] / pv['tps']:.2f}")
                    else:
                        row.append("")
                    L.append("| " + " | ".join(row) + " |")
        if notes:
            L.append("")
            L.append("‡ " + "; ".join(notes) + ".")
        L.append("")
        L.append("## Memory with idle connections")
        L.append("")
        if self.memory:
            m = next(iter(self.memory.values()))
            n, measured = m["connections"], m["measured_connections"]
            L.append(f"After loading, {n:,} connections are opened to each server one after "
                     f"another (a raw protocol-v3 start-up, trust auth, up to ReadyForQuery), "
                     f"left idle for 3 s, then measured; memory is also measured after the first "
                     f"{n - measured:,}, and the figure is (memory with all open − memory with "
                     f"those open) / {measured:,}, each reading taken once the resident set moves "
                     f"less than 256 KiB in a second. (Measured from before the first connection, "
                     f"Meridian's figure came out negative: the first connections make its threads "
                     f"allocate, and mimalloc then returns pages freed during the load.) Memory is summed over the server's "
                     f"processes from `/proc/PID/smaps_rollup`: Meridian is one process, so its "
                     f"figure is the growth of its resident set (VmRSS). PostgreSQL forks one "
                     f"backend per connection and all of them map the same shared memory "
                     f"(shared_buffers etc.), so summing RSS would count shared pages once per "
                     f"backend; its figure is the growth of the sum of PSS (proportional set "
                     f"size: each shared page divided among the processes mapping it, so the "
                     f"sum counts every page once). Private = private clean + dirty pages.")
            L.append("")
            L.append("| system | processes before → during | RSS sum before → during | "
                     "PSS sum before → during | RSS Δ/conn | PSS Δ/conn | private Δ/conn |")
            L.append("|---|---:|---:|---:|---:|---:|---:|")
            for s, r in self.memory.items():
                b, d = r["before"], r["during"]
                mib = lambda x: f"{x / 2**20:,.1f} MiB"  # noqa: E731
                kib = lambda x: f"{x / 1024:,.1f} KiB"  # noqa: E731
                L.append(f"| {SYSTEM_LABEL[s]} | {b['processes']} → {d['processes']} | "
                         f"{mib(b['Rss'])} → {mib(d['Rss'])} | {mib(b['Pss'])} → "
                         f"{mib(d['Pss'])} | {kib(r['Rss_delta_per_conn'])} | "
                         f"{kib(r['Pss_delta_per_conn'])} | {kib(r['Private_delta_per_conn'])} |")
            L.append("")
            L.append("Headline: Meridian "
                     + (f"{self.memory['meridian']['Rss_delta_per_conn'] / 1024:,.1f} KiB per "
                        f"idle connection (RSS Δ)" if "meridian" in self.memory else "—")
                     + "; PostgreSQL "
                     + (f"{self.memory['postgres']['Pss_delta_per_conn'] / 1024:,.1f} KiB per "
                        f"idle connection (PSS Δ)" if "postgres" in self.memory else "—") + ".")
        else:
            L.append("Not measured (yet).")
        L.append("")
        L.append("## Acceptance checks of issue 4")
        L.append("")
        L.append("From the medians above (a check over cells that were not all measured is "
                 "*incomplete*).")
        L.append("")
        L.append("| check | verdict | detail |")
        L.append("|---|---|---|")
        for name, verdict, detail in self.checks(med):
            L.append(f"| {name} | **{verdict}** | {detail} |")
        L.append("")
        L.append("## PostgreSQL here vs the issue's reference numbers")
        L.append("")
        L.append("The issue quotes PostgreSQL 15 on a 2-core machine (scale 10, -M prepared, "
                 "-j 2, 10 s, fsync on). Our PostgreSQL medians next to them show how this "
                 "run's machine and load compare:")
        L.append("")
        L.append("| workload | clients | issue's PostgreSQL TPS | this run's PostgreSQL TPS |")
        L.append("|---|---:|---:|---:|")
        for w, ref in ISSUE_REFERENCE.items():
            for c, t in ref.items():
                v = med.get(("postgres", w, "prepared", c))
                L.append(f"| {w} | {c:,} | {t:,} | "
                         f"{v['tps']:,.0f} |" if v and v.get("tps") is not None else
                         f"| {w} | {c:,} | {t:,} | — |")
        L.append("")
        tmp = self.md_path.with_suffix(".md.tmp")
        tmp.write_text("\n".join(L))
        tmp.replace(self.md_path)

    def chart(self):
        med = self.medians()
        if not med:
            return
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            from matplotlib.ticker import FuncFormatter
        except ImportError:
            log("matplotlib not available: no chart")
            return
        ws = self.workloads
        fig, axes = plt.subplots(1, len(ws), figsize=(5.2 * len(ws), 4.4), squeeze=False)
        colors = {"meridian": "tab:blue", "postgres": "tab:orange"}
        for ax, w in zip(axes[0], ws):
            for s in ("meridian", "postgres"):
                for m in self.modes:
                    pts = [(c, med[(s, w, m, c)]["tps"]) for c in self.clients
                           if med.get((s, w, m, c), {}).get("tps") is not None]
                    if not pts:
                        continue
                    xs, ys = zip(*pts)
                    ax.plot(xs, ys, marker="o" if m == "prepared" else "s",
                            linestyle="-" if m == "prepared" else "--",
                            color=colors[s], alpha=1.0 if m == "prepared" else 0.7,
                            label=f"{SYSTEM_LABEL[s]} -M {m}")
            ax.set_xscale("log")
            ax.set_xticks(self.clients)
            ax.set_xticklabels([f"{c:,}" for c in self.clients])
            ax.minorticks_off()
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.set_xlabel("clients (log scale)")
            ax.set_ylabel("TPS (median)")
            ax.set_title(WORKLOAD_LABEL.get(w, w))
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
        a = self.a
        fig.suptitle(f"pgbench, scale {a.scale}, {a.duration} s x {a.runs} runs, "
                     f"-j {a.threads}, fsync on; {self.info.get('nproc')} CPUs"
                     + ("" if self.status == "complete" else f" [{self.status.split(':')[0]}]"),
                     fontsize=10)
        fig.tight_layout()
        tmp = self.png_path.with_name(self.png_path.stem + ".tmp.png")
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        tmp.replace(self.png_path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)

    def env(key):
        return os.environ.get("BENCH_" + key.upper(), DEFAULTS[key])

    p.add_argument("--scale", type=int, default=int(env("scale")))
    p.add_argument("--duration", type=int, default=int(env("duration")),
                   help="seconds per pgbench run (-T)")
    p.add_argument("--runs", type=int, default=int(env("runs")), help="runs per cell and system")
    p.add_argument("--clients", default=env("clients"))
    p.add_argument("--workloads", default=env("workloads"), help="pgbench -b names")
    p.add_argument("--modes", default=env("modes"), help="pgbench -M values")
    p.add_argument("--cache-size", default=env("cache_size"),
                   help="Meridian --cache-size = PostgreSQL shared_buffers")
    p.add_argument("--threads", type=int, default=int(env("threads")),
                   help="pgbench -j (capped at the client count)")
    p.add_argument("--idle-connections", type=int, default=int(env("idle_connections")),
                   help="idle connections for the memory test (0: skip)")
    p.add_argument("--transport", choices=("unix", "tcp"), default=env("transport"),
                   help="how pgbench reaches both servers: their Unix-domain sockets or "
                        "127.0.0.1")
    p.add_argument("--connect-allowance", type=float, default=float(env("connect_allowance")),
                   help="seconds added to -T per 1,000 clients (pgbench's -T includes "
                        "connection time), the same for both systems")
    p.add_argument("--systems", default=env("systems"))
    p.add_argument("--meridian-bin", default=env("meridian_bin"))
    p.add_argument("--pg-bindir", default=env("pg_bindir"))
    p.add_argument("--pgbench", default=env("pgbench"), help="pgbench binary (default: PATH)")
    p.add_argument("--out-dir", default=env("out_dir"))
    p.add_argument("--name", default=env("name"), help="results file name (without suffix)")
    p.add_argument("--work-dir", default=env("work_dir"),
                   help="where the temporary data directories go (default: $TMPDIR)")
    p.add_argument("--keep", action="store_true", help="keep the data directories")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: scale 1, 2 s, 1 run, clients 1,8, 50 idle connections")
    if "--quick" in argv:  # new defaults; options given explicitly still win
        p.set_defaults(scale=1, duration=2, runs=1, clients="1,8", idle_connections=50)
    a = p.parse_args(argv)
    a.argv = argv
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = max(int(c) for c in a.clients.split(",")) + a.idle_connections + 256
    if soft < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(need, 4096), hard), hard))
        except (ValueError, OSError):
            pass
        if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < need:
            log(f"warning: open-file limit {soft} < {need}; 1,000 clients may fail "
                f"(raise `ulimit -n`)")
    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    Bench(a).run()


if __name__ == "__main__":
    main()
