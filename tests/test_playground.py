"""`meridian playground`: a local cluster in one command (issue 30).

It starts a GTM, three datanodes and two coordinators as separate processes, prints how
to connect to each coordinator; pgbench -i through one and a run through each work
against the printed addresses, every table spread over the datanodes; Ctrl-C (SIGINT)
stops every process, and a second playground on the same directory finds the data.
"""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from conftest import free_port, meridian_bin, process_tree
from test_pgbench import parse_run, pgbench


class Coordinator:
    """A printed coordinator address, as a handle pgbench() can use."""

    def __init__(self, port: int):
        self.host = "127.0.0.1"
        self.port = port

    @property
    def dsn(self):
        return f"host={self.host} port={self.port} user=postgres dbname=postgres"


def two_free_ports() -> int:
    """A port such that it and the next one are free (the playground's coordinators)."""
    for _ in range(50):
        port = free_port()
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise AssertionError("no two consecutive free ports")


class Playground:
    """`meridian playground --coordinators 2`; `coordinators` are the printed addresses."""

    def __init__(self, data_dir: Path, port: int):
        self.data_dir = data_dir
        self.port = port
        self.proc = None
        self.banner = ""
        self.coordinators = []

    def start(self):
        self.proc = subprocess.Popen(
            [str(meridian_bin()), "playground", "--datanodes", "3", "--coordinators", "2",
             "--data-dir", str(self.data_dir), "--port", str(self.port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"playground exited: {self.proc.wait()}\n{self.banner}")
            self.banner += line
            if "Ctrl-C stops every process" in line:
                ports = re.findall(r'coordinator\d: psql "host=127\.0\.0\.1 port=(\d+) ', self.banner)
                self.coordinators = [Coordinator(int(p)) for p in ports]
                return self
        raise AssertionError(f"playground not ready:\n{self.banner}")

    def interrupt(self):
        members = process_tree(self.proc.pid)
        assert len(members) >= 7, members  # itself, the GTM, 3 datanodes, 2 coordinators
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.wait(60) == 0, self.proc.stdout.read()
        for pid in members:
            assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"process {pid} outlived Ctrl-C"


def _zombie(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


def test_playground_runs_pgbench_and_stops_on_ctrl_c():
    data_dir = Path(tempfile.mkdtemp(prefix="meridian-test-playground-"))
    pg = Playground(data_dir, two_free_ports()).start()
    try:
        assert [c.port for c in pg.coordinators] == [pg.port, pg.port + 1], pg.banner
        assert len(re.search(r"datanodes ([^;]+);", pg.banner).group(1).split(", ")) == 3, pg.banner
        first, second = pg.coordinators
        rc, out, log = pgbench(first, "-i", "-s", "1", "-q", timeout=600)
        assert rc == 0, log
        processed = 0
        for coordinator in pg.coordinators:
            rc, out, log = pgbench(coordinator, "-n", "-c", "4", "-j", "2", "-T", "5", "-M", "prepared",
                                   timeout=120)
            assert rc == 0, log
            done, failed = parse_run(out, log)
            assert done > 0 and failed == 0, log
            processed += done
        with psycopg.connect(second.dsn, autocommit=True) as conn:
            placed = dict(conn.execute(
                "SELECT table_name, distribution FROM meridian_distribution").fetchall())
        assert placed == {t: "hash" for t in ("pgbench_accounts", "pgbench_branches",
                                              "pgbench_tellers", "pgbench_history")}, placed
        pg.interrupt()
        # A second playground on the same directory finds the data.
        pg = Playground(data_dir, two_free_ports()).start()
        with psycopg.connect(pg.coordinators[1].dsn, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM pgbench_accounts").fetchone() == (100000,)
            h = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()[0]
            assert h == processed
        pg.interrupt()
    finally:
        if pg.proc and pg.proc.poll() is None:
            pg.proc.kill()
        if not os.environ.get("MERIDIAN_KEEP_TEST_DIRS"):
            subprocess.run(["rm", "-rf", str(data_dir)])
