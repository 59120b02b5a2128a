"""Shared fixtures for the Meridian end-to-end test suite.

Servers
-------
* ``meridian`` (function scope): a fresh server under test in its own temporary data
  directory on a free port.  The handle has ``host``, ``port``, ``socket_dir`` (its
  Unix-domain socket's directory), ``dsn``, ``url``,
  ``data_dir``, ``pid``, ``log_path`` and ``kill9()``, ``restart()``, ``stop()``,
  ``pause()``/``resume()`` (SIGSTOP/SIGCONT), ``is_alive()``, ``peak_rss_bytes()``.
* ``meridian_factory`` (function scope): ``meridian_factory(cache_size="32MB", ...)`` (or
  ``query_memory="8MB"``, Meridian's --query-memory, given to a cluster's first coordinator)
  starts a server under test with extra options; all are stopped at teardown.
* ``target`` (module scope): one shared server under test for a whole test module.
* ``meridian_cluster`` (function scope): a fresh cluster of processes (GTM, three
  datanodes, two coordinators) whatever the targets, for tests of the cluster itself;
  ``gtm``, ``datanodes`` and ``second`` are their handles, ``kill9_coordinator()`` kills
  the first coordinator alone.
* ``postgres`` (session scope): a real PostgreSQL 15 (fsync on, trust auth) started as a
  non-root user; used as the reference the server under test is compared with.
* ``http_metrics=True`` (an option of ``meridian_factory`` and ``start_server``): every
  Meridian process gets ``--http-listen 127.0.0.1:0``; ``metrics_url`` is then the URL
  of its ``/metrics`` (a cluster's members have theirs); PostgreSQL ignores it.
* ``access=Access(...)`` (an option of ``meridian_factory`` and ``start_server``): who may
  connect -- a pg_hba.conf text, TLS certificate and key files, the superuser's password,
  max_connections -- given to Meridian as flags (to both coordinators of a cluster) and
  to PostgreSQL as its settings, so one test can run against both.

Which server is "under test" is chosen by the environment variable
``MERIDIAN_TEST_TARGETS`` (comma separated, default ``meridian``):

* ``meridian``           -- the Meridian binary (``MERIDIAN_BIN``, default
                            ``target/release/meridian``);
* ``meridian-messages``  -- the same binary with ``--datanode-link messages``: every call
                            from coordinator to datanode goes through the protocol's
                            messages, as between processes;
* ``meridian-cluster``   -- a cluster of separate processes on loopback: ``meridian gtm``,
                            three ``meridian datanode`` and two ``meridian coordinator``
                            (``--gtm G --datanodes 3``; tests use the first) over which
                            every table is distributed; ``kill9()`` kills them all and
                            ``restart()`` starts them all again;
* ``postgres``           -- a real PostgreSQL 15 started exactly like Meridian would be,
                            which validates the tests themselves;
* ``meridian,postgres``  -- every test runs against both.

Every test that uses ``meridian``, ``meridian_factory`` or ``target`` is parametrised
with that list, so test ids end in ``[meridian]`` / ``[postgres]``.

On failure the tail of each involved server's log is attached to the report.
"""

from __future__ import annotations

import os
import pwd
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

# hypothesis keeps caches in ./.hypothesis by default; keep the work tree clean
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      os.path.join(tempfile.gettempdir(), "meridian-test-hypothesis"))

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
READY_PATTERN = "ready to accept connections"
METRICS_URL_PATTERN = re.compile(rb"metrics on (http://\S+/metrics)")
START_TIMEOUT = float(os.environ.get("MERIDIAN_START_TIMEOUT", "120"))
STOP_TIMEOUT = float(os.environ.get("MERIDIAN_STOP_TIMEOUT", "60"))
PG_BINDIR = Path(os.environ.get("MERIDIAN_PG_BINDIR", "/usr/lib/postgresql/15/bin"))
VALID_TARGETS = ("meridian", "meridian-messages", "meridian-cluster", "postgres")


def test_targets() -> list[str]:
    raw = os.environ.get("MERIDIAN_TEST_TARGETS", "meridian")
    kinds = [k.strip() for k in raw.split(",") if k.strip()]
    bad = [k for k in kinds if k not in VALID_TARGETS]
    if bad or not kinds:
        raise pytest.UsageError(
            f"MERIDIAN_TEST_TARGETS={raw!r}: expected a comma separated subset of {VALID_TARGETS}"
        )
    return kinds


test_targets.__test__ = False  # not a test function


def meridian_bin() -> Path:
    p = Path(os.environ.get("MERIDIAN_BIN", REPO_ROOT / "target" / "release" / "meridian"))
    if not p.is_absolute():
        p = REPO_ROOT / p
    return p


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_EPHEMERAL_LOW = _ephemeral_low()
_port_choice = random.Random()  # its own generator: tests that seed `random` must not repeat ports


def free_port() -> int:
    """A free local port below the kernel's ephemeral range. A port from that range (what
    binding port 0 gives) can be handed to an outgoing connection between this check and
    the server's own bind, which then fails with "Address already in use"."""
    for _ in range(500):
        port = _port_choice.randrange(10000, _EPHEMERAL_LOW)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port below the ephemeral range")


def require_tool(path_or_name: str) -> str:
    """Return the full path of a tool; a missing tool is a test error, never a skip."""
    found = shutil.which(str(path_or_name))
    if not found:
        pytest.fail(f"required tool {path_or_name!r} not found (scripts/test.sh installs it)")
    return found


def run_on_each(servers, statements) -> list:
    """Runs `statements` on each server in autocommit: the same starting point for a
    differential test. Returns `servers`."""
    import psycopg
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            for sql in statements:
                c.execute(sql)
    return list(servers)


def pg_tool(name: str) -> str:
    p = PG_BINDIR / name
    if p.exists():
        return str(p)
    return require_tool(name)


# --------------------------------------------------------------------------------------
# process helpers
# --------------------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    out += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def process_tree(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo += _children(p)
    return seen


def vm_hwm_bytes(pid: int) -> int:
    """Peak resident set size (VmHWM) of one process, in bytes; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


class _OutputPump(threading.Thread):
    """Copies a child's combined stdout/stderr into the log file; signals the ready line."""

    def __init__(self, proc: subprocess.Popen, log_path: Path):
        super().__init__(daemon=True)
        self.proc = proc
        self.log_path = log_path
        self.ready = threading.Event()
        self.metrics_url: str | None = None

    def run(self):
        with open(self.log_path, "ab", buffering=0) as log:
            for line in iter(self.proc.stdout.readline, b""):
                log.write(line)
                if (m := METRICS_URL_PATTERN.search(line)) and not self.metrics_url:
                    self.metrics_url = m.group(1).decode()
                if READY_PATTERN.encode() in line:
                    self.ready.set()
        self.proc.stdout.close()


def log_tail(path: Path, max_bytes: int = 12000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return "(no log)"
    return data[-max_bytes:].decode("utf-8", "replace")


# --------------------------------------------------------------------------------------
# server handles
# --------------------------------------------------------------------------------------

class Access:
    """Who may connect: ``hba`` (pg_hba.conf text; None: trust everyone), ``tls``
    ((certificate file, key file) in PEM), ``superuser_password`` (of ``postgres``),
    ``max_connections``."""

    def __init__(self, hba: str | None = None, tls: tuple[str, str] | None = None,
                 superuser_password: str | None = None, max_connections: int | None = None):
        self.hba = hba
        self.tls = tls
        self.superuser_password = superuser_password
        self.max_connections = max_connections

    def hba_path(self, base_dir: Path) -> Path:
        path = Path(base_dir) / "pg_hba.conf"
        path.write_text(self.hba)
        os.chmod(path, 0o644)
        return path

    def meridian_args(self, base_dir: Path) -> list[str]:
        args = []
        if self.hba is not None:
            args += ["--hba-file", str(self.hba_path(base_dir))]
        if self.tls:
            args += ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
        if self.superuser_password is not None:
            args += ["--superuser-password", self.superuser_password]
        if self.max_connections is not None:
            args += ["--max-connections", str(self.max_connections)]
        return args


class ServerHandle:
    """A server started on a free loopback port in its own data directory."""

    kind = "?"
    # Whether a first start may move to another port when its free port was taken
    # between `free_port`'s check and the server's bind (by another test's server):
    # not for a GTM or datanode, whose address other processes are given beforehand.
    port_may_move = True

    def __init__(self, base_dir: Path, cache_size: str | None = None,
                 synchronous_commit: str | None = None, config: str | None = None,
                 port: int | None = None, access: Access | None = None,
                 query_memory: str | None = None, http_metrics: bool = False):
        self.base_dir = Path(base_dir)
        # Meridian's --http-listen on a free port (PostgreSQL has no such port)
        self.http_metrics = http_metrics
        self.access = access
        self.data_dir = self.base_dir / "data"
        self.log_path = self.base_dir / "server.log"
        self.host = "127.0.0.1"
        # where the Unix-domain socket .s.PGSQL.<port> is created
        self.socket_dir = self.base_dir
        self.port = port or free_port()
        self._port_moves_left = 0 if port else 3
        self.cache_size = cache_size
        self.synchronous_commit = synchronous_commit
        self.config = config
        # Meridian's --query-memory (PostgreSQL has no such bound and ignores it)
        self.query_memory = query_memory
        self.proc: subprocess.Popen | None = None
        self._pump: _OutputPump | None = None
        self._expect_exit = False
        self.starts = 0

    # connection strings ---------------------------------------------------------------
    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user=postgres dbname=postgres connect_timeout=10"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def metrics_url(self) -> str | None:
        """Where the running process serves /metrics (``http_metrics=True``)."""
        return self._pump.metrics_url if self._pump else None

    def http_args(self) -> list[str]:
        return ["--http-listen", f"{self.host}:0"] if self.http_metrics else []

    def connect(self, **kw):
        import psycopg
        return psycopg.connect(self.dsn, **kw)

    # life cycle -------------------------------------------------------------------------
    def _command(self) -> list[str]:
        raise NotImplementedError

    def _popen_kwargs(self) -> dict:
        return {}

    def start(self):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start #{self.starts} ({self.kind}) at {time.ctime()}: "
                      f"{' '.join(self._command())}\n".encode())
        self.proc = subprocess.Popen(
            self._command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, **self._popen_kwargs())
        self._expect_exit = False
        self._pump = _OutputPump(self.proc, self.log_path)
        self._pump.start()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._pump.ready.wait(0.1):
                self._wait_port()
                return self
            if self.proc.poll() is not None:
                self._pump.join(5)
                if (self.starts == 1 and self.port_may_move and self._port_moves_left > 0
                        and "Address already in use" in log_tail(self.log_path)):
                    self._port_moves_left -= 1
                    self.port = free_port()
                    self.starts = 0
                    return self.start()
                raise RuntimeError(
                    f"{self.kind} exited with code {self.proc.returncode} before printing "
                    f"{READY_PATTERN!r}; log {self.log_path}:\n{log_tail(self.log_path)}")
        self._kill_group(signal.SIGKILL)
        raise RuntimeError(
            f"{self.kind} did not print {READY_PATTERN!r} within {START_TIMEOUT}s; "
            f"log {self.log_path}:\n{log_tail(self.log_path)}")

    def _wait_port(self, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.kind} printed the ready line but "
                                       f"{self.host}:{self.port} does not accept connections")
                time.sleep(0.05)

    def _kill_group(self, sig):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def is_alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        """SIGKILL the server (its whole process group) without any chance to clean up."""
        assert self.is_alive(), f"{self.kind} is not running (log {self.log_path})"
        self._expect_exit = True
        self._kill_group(signal.SIGKILL)
        self.proc.wait(30)
        if self._pump:
            self._pump.join(10)
        # make sure nothing from the old process group lingers (e.g. PostgreSQL backends)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)

    def pause(self):
        """SIGSTOP the server: its sockets stay open but nothing answers."""
        self._kill_group(signal.SIGSTOP)

    def resume(self):
        """SIGCONT a server stopped with pause()."""
        self._kill_group(signal.SIGCONT)

    def stop_signal(self):
        return signal.SIGTERM

    def stop(self):
        """Graceful shutdown; raises if the server does not exit in time."""
        if not self.is_alive():
            return
        self._expect_exit = True
        self.proc.send_signal(self.stop_signal())
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._kill_group(signal.SIGKILL)
            self.proc.wait(30)
            raise RuntimeError(f"{self.kind} did not exit within {STOP_TIMEOUT}s of "
                               f"{self.stop_signal().name}; killed it")
        finally:
            if self._pump:
                self._pump.join(10)
        self._kill_group(signal.SIGKILL)  # stragglers, if any

    def restart(self):
        """Start again on the same data directory and port (after kill9() or stop())."""
        if self.is_alive():
            self.stop()
        return self.start()

    def crashed(self) -> bool:
        """True when the server exited without being asked to."""
        return self.proc is not None and self.proc.poll() is not None and not self._expect_exit

    def peak_rss_bytes(self) -> int:
        raise NotImplementedError

    def cleanup(self):
        try:
            if self.is_alive():
                self.stop()
        finally:
            self._kill_group(signal.SIGKILL)
            if not os.environ.get("MERIDIAN_KEEP_TEST_DIRS"):
                shutil.rmtree(self.data_dir, ignore_errors=True)

    def describe(self) -> str:
        return f"{self.kind} on {self.host}:{self.port}, data {self.data_dir}, log {self.log_path}"

    def __repr__(self):
        return f"<{self.describe()}>"


class MeridianServer(ServerHandle):
    kind = "meridian"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.bin = meridian_bin()
        if not self.bin.exists():
            raise RuntimeError(
                f"Meridian binary not found at {self.bin}: build it with "
                f"`cargo build --release -p meridian` or set MERIDIAN_BIN")
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def _command(self):
        cmd = [str(self.bin), "start", "--data-dir", str(self.data_dir),
               "--listen", f"{self.host}:{self.port}", "--unix-socket-dir", str(self.socket_dir)]
        if self.cache_size:
            cmd += ["--cache-size", self.cache_size]
        if self.config:
            cmd += ["--config", self.config]
        if self.query_memory:
            cmd += ["--query-memory", self.query_memory]
        if self.synchronous_commit:
            cmd += ["--synchronous-commit", self.synchronous_commit]
        if self.access:
            cmd += self.access.meridian_args(self.base_dir)
        return cmd + self.http_args()

    def peak_rss_bytes(self) -> int:
        # Meridian is one process; should it ever fork helpers, they count too.
        return sum(vm_hwm_bytes(p) for p in process_tree(self.pid))


def _pg_os_user() -> pwd.struct_passwd | None:
    """The non-root user PostgreSQL runs as (None: we are not root, run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("meridian-test", "postgres"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    "meridian-test"], check=True)
    return pwd.getpwnam("meridian-test")


def _size_to_pg(size: str) -> str:
    m = re.fullmatch(r"(?i)\s*(\d+)\s*([kmgt]?)i?b?\s*", size)
    if not m:
        raise ValueError(f"cannot parse size {size!r}")
    n, unit = m.groups()
    if not unit:
        return f"{int(n) // 1024}kB"
    return f"{n}kB" if unit.lower() == "k" else f"{n}{unit.upper()}B"


class PostgresServer(ServerHandle):
    """A real PostgreSQL 15 with the same life cycle interface as MeridianServer."""

    kind = "postgres"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.os_user = _pg_os_user()
        self.postgres_bin = pg_tool("postgres")
        initdb = pg_tool("initdb")
        if self.os_user:
            os.chown(self.base_dir, self.os_user.pw_uid, self.os_user.pw_gid)
        os.chmod(self.base_dir, 0o755)
        res = subprocess.run(
            [initdb, "-D", str(self.data_dir), "-U", "postgres", "-A", "trust",
             "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"],
            capture_output=True, text=True, cwd=self.base_dir, env=self._env(),
            **self._user_kwargs())
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{res.stdout}\n{res.stderr}")

    def _env(self):
        env = dict(os.environ)
        env.pop("PGDATA", None)
        env["LC_ALL"] = "C.UTF-8"
        if self.os_user:
            env["HOME"] = str(self.base_dir)
            env["USER"] = env["LOGNAME"] = self.os_user.pw_name
        return env

    def _user_kwargs(self):
        if not self.os_user:
            return {}
        return {"user": self.os_user.pw_uid, "group": self.os_user.pw_gid, "extra_groups": []}

    def _popen_kwargs(self):
        return {"cwd": self.base_dir, "env": self._env(), **self._user_kwargs()}

    def _command(self):
        cmd = [self.postgres_bin, "-D", str(self.data_dir), "-p", str(self.port),
               "-c", f"listen_addresses={self.host}",
               "-c", f"unix_socket_directories={self.socket_dir}",
               "-c", "fsync=on", "-c", "max_connections=100",
               # PREPARE TRANSACTION is refused while this is 0 (its default).
               "-c", "max_prepared_transactions=20",
               # Meridian always has pg_stat_statements loaded; the extension's objects
               # exist only in a database that runs CREATE EXTENSION.
               "-c", "shared_preload_libraries=pg_stat_statements",
               "-c", "logging_collector=off"]
        if self.cache_size:
            cmd += ["-c", f"shared_buffers={_size_to_pg(self.cache_size)}"]
        if self.synchronous_commit:
            cmd += ["-c", f"synchronous_commit={self.synchronous_commit}"]
        if self.access:
            cmd += self._access_settings()
        return cmd

    def _access_settings(self) -> list[str]:
        """`access` as PostgreSQL's settings; the key is copied where only the server's
        user may read it, as PostgreSQL demands."""
        a = self.access
        out = []
        if a.hba is not None:
            out += ["-c", f"hba_file={a.hba_path(self.base_dir)}"]
        if a.tls:
            cert, key = self.base_dir / "server.crt", self.base_dir / "server.key"
            shutil.copyfile(a.tls[0], cert)
            shutil.copyfile(a.tls[1], key)
            os.chmod(key, 0o600)
            if self.os_user:
                for f in (cert, key):
                    os.chown(f, self.os_user.pw_uid, self.os_user.pw_gid)
            out += ["-c", "ssl=on", "-c", f"ssl_cert_file={cert}", "-c", f"ssl_key_file={key}"]
        if a.max_connections is not None:
            out += ["-c", f"max_connections={a.max_connections}"]
        return out

    def start(self):
        super().start()
        if self.access and self.access.superuser_password is not None and self.starts == 1:
            # As Meridian's flag does; over the socket, which the test's rules must trust
            # for postgres.
            subprocess.run(
                [pg_tool("psql"), "-X", "-q", "-h", str(self.socket_dir), "-p", str(self.port),
                 "-U", "postgres", "-d", "postgres", "-c",
                 f"ALTER ROLE postgres PASSWORD '{self.access.superuser_password}'"],
                check=True, capture_output=True)
        return self

    def stop_signal(self):
        return signal.SIGINT  # "fast" shutdown; SIGTERM ("smart") waits for clients

    def peak_rss_bytes(self) -> int:
        # PostgreSQL is a postmaster plus one backend per connection that all map the same
        # shared buffers, so summing would count the cache many times: take the largest.
        return max(vm_hwm_bytes(p) for p in process_tree(self.pid))


class MeridianMessagesServer(MeridianServer):
    """Meridian whose coordinator reaches its datanode through the coordinator-datanode
    protocol's messages (`--datanode-link messages`), the path a cluster takes."""

    def _command(self):
        return super()._command() + ["--datanode-link", "messages"]


class GtmServer(ServerHandle):
    """`meridian gtm`: the timestamp oracle as its own process."""

    kind = "gtm"
    port_may_move = False

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.bin = meridian_bin()
        self.data_dir.mkdir(parents=True, exist_ok=True)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    def _command(self):
        return [str(self.bin), "gtm", "--data-dir", str(self.data_dir),
                "--listen", self.addr, *self.http_args()]


class DatanodeServer(ServerHandle):
    """`meridian datanode`: row storage as its own process, on the GTM at ``gtm_addr``."""

    kind = "datanode"
    port_may_move = False

    def __init__(self, *a, gtm_addr: str, **kw):
        super().__init__(*a, **kw)
        self.bin = meridian_bin()
        self.gtm_addr = gtm_addr
        self.data_dir.mkdir(parents=True, exist_ok=True)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    def _command(self):
        cmd = [str(self.bin), "datanode", "--data-dir", str(self.data_dir),
               "--listen", self.addr, "--gtm", self.gtm_addr]
        if self.cache_size:
            cmd += ["--cache-size", self.cache_size]
        if self.synchronous_commit:
            cmd += ["--synchronous-commit", self.synchronous_commit]
        return cmd + self.http_args()

    def peak_rss_bytes(self) -> int:
        return vm_hwm_bytes(self.pid)


class CoordinatorServer(ServerHandle):
    """`meridian coordinator`: sessions over the datanodes registered at the GTM."""

    kind = "coordinator"

    def __init__(self, *a, gtm_addr: str, datanodes: int, **kw):
        super().__init__(*a, **kw)
        self.bin = meridian_bin()
        self.gtm_addr = gtm_addr
        self.datanode_count = datanodes
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def _command(self):
        return [str(self.bin), "coordinator", "--data-dir", str(self.data_dir),
                "--listen", f"{self.host}:{self.port}", "--unix-socket-dir", str(self.socket_dir),
                "--gtm", self.gtm_addr, "--datanodes", str(self.datanode_count),
                *(self.access.meridian_args(self.base_dir) if self.access else []),
                *self.http_args()]


class MeridianClusterServer(MeridianServer):
    """A GTM, ``DATANODES`` datanodes and two coordinators, each its own process. The
    handle's address, ``kill9()``, ``stop()`` and ``restart()`` are the first
    coordinator's, and take the other processes with them; ``second`` is the other
    coordinator; ``members`` are the GTM, the datanodes and the second coordinator."""

    kind = "meridian-cluster"
    DATANODES = 3

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        if self.config:
            raise NotImplementedError("a settings file applies to `meridian start` only")
        self.gtm = GtmServer(self.base_dir / "gtm", http_metrics=self.http_metrics)
        self.datanodes = [
            DatanodeServer(self.base_dir / f"datanode{i}", gtm_addr=self.gtm.addr,
                           cache_size=self.cache_size,
                           synchronous_commit=self.synchronous_commit,
                           http_metrics=self.http_metrics)
            for i in range(self.DATANODES)]
        self.second = CoordinatorServer(self.base_dir / "coordinator2", gtm_addr=self.gtm.addr,
                                        datanodes=self.DATANODES, access=self.access,
                                        http_metrics=self.http_metrics)
        self.members = [self.gtm, *self.datanodes, self.second]

    def _command(self):
        return [str(self.bin), "coordinator", "--data-dir", str(self.data_dir),
                "--listen", f"{self.host}:{self.port}", "--unix-socket-dir", str(self.socket_dir),
                "--gtm", self.gtm.addr, "--datanodes", str(self.DATANODES),
                *(["--query-memory", self.query_memory] if self.query_memory else []),
                *(self.access.meridian_args(self.base_dir) if self.access else []),
                *self.http_args()]

    def start(self):
        for m in self.members:
            if not m.is_alive():
                m.start()
        return super().start()

    def kill9_coordinator(self):
        """SIGKILL the first coordinator alone; start() brings it back."""
        super().kill9()

    def kill9(self):
        super().kill9()
        for m in reversed(self.members):
            if m.is_alive():
                m.kill9()

    def stop(self):
        try:
            super().stop()
        finally:
            for m in reversed(self.members):
                m.stop()

    def crashed(self) -> bool:
        return super().crashed() or any(m.crashed() for m in self.members)

    def peak_rss_bytes(self) -> int:
        # The bounds the tests check are each process's (its cache plus overhead): the
        # largest peak of the cluster's processes.
        return max([vm_hwm_bytes(self.pid), *(vm_hwm_bytes(m.pid) for m in self.members)])

    def cleanup(self):
        try:
            super().cleanup()
        finally:
            for m in self.members:
                m.cleanup()

    def describe(self) -> str:
        return "; ".join([super().describe(), *(m.describe() for m in self.members)])


SERVER_CLASSES = {"meridian": MeridianServer, "meridian-messages": MeridianMessagesServer,
                  "meridian-cluster": MeridianClusterServer, "postgres": PostgresServer}


def _new_base_dir(kind: str) -> Path:
    # Not under pytest's tmp_path: that is 0700 root-owned and PostgreSQL runs as another
    # user.  mkdtemp makes a private directory which PostgresServer chowns.
    return Path(tempfile.mkdtemp(prefix=f"meridian-test-{kind}-"))


def start_server(kind: str, **opts) -> ServerHandle:
    base = _new_base_dir(kind)
    handle = SERVER_CLASSES[kind](base, **opts)
    try:
        handle.start()
    except Exception:
        handle.cleanup()
        raise
    return handle


def finish_server(handle: ServerHandle):
    crashed = handle.crashed()
    code = handle.proc.returncode if handle.proc else None
    handle.cleanup()
    if crashed:
        raise AssertionError(
            f"{handle.kind} exited unexpectedly with code {code} during the test; "
            f"log {handle.log_path}:\n{log_tail(handle.log_path)}")


# --------------------------------------------------------------------------------------
# pytest wiring
# --------------------------------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long running test")
    test_targets()  # validate early


def pytest_generate_tests(metafunc):
    if "server_kind" in metafunc.fixturenames:
        metafunc.parametrize("server_kind", test_targets(), indirect=True, scope="session")


@pytest.fixture(scope="session")
def server_kind(request) -> str:
    return request.param


@pytest.fixture
def meridian_factory(server_kind):
    """Start servers under test with options: ``meridian_factory(cache_size="32MB")``."""
    started: list[ServerHandle] = []

    def factory(**opts) -> ServerHandle:
        h = start_server(server_kind, **opts)
        started.append(h)
        return h

    factory.started = started  # for the failure report
    yield factory
    errors = []
    for h in started:
        try:
            finish_server(h)
        except Exception as e:  # report all of them
            errors.append(str(e))
    if errors:
        raise AssertionError("\n\n".join(errors))


@pytest.fixture
def meridian(meridian_factory) -> ServerHandle:
    """A fresh server under test (Meridian, or real PostgreSQL when validating)."""
    return meridian_factory()


@pytest.fixture(scope="module")
def target(server_kind) -> ServerHandle:
    """One server under test shared by the tests of a module."""
    h = start_server(server_kind)
    yield h
    finish_server(h)


@pytest.fixture
def meridian_cluster() -> MeridianClusterServer:
    """A fresh cluster of processes (GTM, three datanodes, two coordinators), whatever
    the targets: for tests of the cluster itself."""
    h = MeridianClusterServer(_new_base_dir("cluster"))
    try:
        h.start()
    except Exception:
        h.cleanup()
        raise
    yield h
    finish_server(h)


@pytest.fixture(scope="session")
def postgres() -> ServerHandle:
    """The reference: a real PostgreSQL 15 (fsync on, trust auth), whole session."""
    h = start_server("postgres")
    yield h
    finish_server(h)


@pytest.fixture(scope="module")
def postgres_fresh() -> ServerHandle:
    """A reference PostgreSQL 15 private to one module (for output comparisons)."""
    h = start_server("postgres")
    yield h
    finish_server(h)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        funcargs = getattr(item, "funcargs", {}) or {}
        shown = set()
        for name, value in funcargs.items():
            handles = [value] if isinstance(value, ServerHandle) else getattr(value, "started", [])
            for h in handles:
                if isinstance(h, ServerHandle) and id(h) not in shown:
                    shown.add(id(h))
                    report.sections.append(
                        (f"server log: {name} = {h.describe()}", log_tail(h.log_path)))
