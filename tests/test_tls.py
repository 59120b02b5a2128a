"""TLS for client connections (issue 32; docs/decisions/0040).

The test makes its own CA and a server certificate for 127.0.0.1 with the openssl CLI,
starts the server under test and PostgreSQL 15 with them and the same pg_hba.conf
(``hostssl`` / ``hostnossl`` rules), and checks that psql, psycopg (libpq) and asyncpg
(its own TLS through Python's ssl) connect with ``sslmode=require`` and
``verify-full`` exactly where PostgreSQL lets them, with PostgreSQL's messages where not.
"""

import asyncio
import ssl
import subprocess

import asyncpg
import psycopg
import pytest

from conftest import Access, finish_server, pg_tool, require_tool, start_server

HBA = """\
local      all  postgres                 trust
hostssl    all  secure     127.0.0.1/32  scram-sha-256
hostnossl  all  plain      127.0.0.1/32  scram-sha-256
host       all  postgres   127.0.0.1/32  trust
"""


def openssl(*args, cwd):
    subprocess.run([require_tool("openssl"), *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate it signed for IP 127.0.0.1, and a CA that signed nothing."""
    d = tmp_path_factory.mktemp("tls")
    d.chmod(0o755)
    for ca in ("ca", "other_ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-subj", f"/CN=Meridian test {ca}",
                cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "san.ext").write_text("subjectAltName = IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.crt", cwd=d)
    for f in d.iterdir():
        f.chmod(0o644)
    return d


@pytest.fixture
def pair(server_kind, certs):
    started = []
    try:
        for kind in (server_kind, "postgres"):
            s = start_server(kind, access=Access(
                hba=HBA, tls=(str(certs / "server.crt"), str(certs / "server.key"))))
            started.append(s)
            with psycopg.connect(host=str(s.socket_dir), port=s.port, user="postgres",
                                 dbname="postgres", autocommit=True) as c:
                c.execute("CREATE USER secure PASSWORD 'tls-only'")
                c.execute("CREATE USER plain PASSWORD 'no-tls'")
        yield started
    finally:
        for s in started:
            finish_server(s)


def connect(server, user, password, **kw):
    """('ok', whether TLS is in use) or ('error', libpq's message)."""
    try:
        with psycopg.connect(host=server.host, port=server.port, user=user, password=password,
                             dbname="postgres", connect_timeout=10, **kw) as c:
            assert c.execute("SELECT current_user").fetchone() == (user,)
            return ("ok", c.pgconn.ssl_in_use)
    except psycopg.OperationalError as e:
        message = str(e)
        return ("error", message[message.rindex("failed: ") + len("failed: "):].strip()
                if "failed: " in message else message)


def test_libpq_clients_connect_as_with_postgresql(pair, certs):
    ca, other = str(certs / "ca.crt"), str(certs / "other_ca.crt")
    cases = [
        ("secure", "tls-only", dict(sslmode="require")),
        ("secure", "tls-only", dict(sslmode="verify-full", sslrootcert=ca)),
        ("secure", "tls-only", dict(sslmode="verify-ca", sslrootcert=ca)),
        ("secure", "tls-only", dict(sslmode="disable")),
        ("plain", "no-tls", dict(sslmode="require")),
        ("plain", "no-tls", dict(sslmode="disable")),
        ("secure", "wrong", dict(sslmode="require")),
    ]
    for user, password, kw in cases:
        got = connect(pair[0], user, password, **kw)
        want = connect(pair[1], user, password, **kw)
        assert got == want, (user, kw)
    assert connect(pair[0], "secure", "tls-only", sslmode="verify-full", sslrootcert=ca) == (
        "ok", True)
    assert connect(pair[0], "secure", "tls-only", sslmode="disable") == (
        "error", 'FATAL:  no pg_hba.conf entry for host "127.0.0.1", user "secure", '
        'database "postgres", no encryption')
    assert connect(pair[0], "plain", "no-tls", sslmode="require") == (
        "error", 'FATAL:  no pg_hba.conf entry for host "127.0.0.1", user "plain", '
        'database "postgres", SSL encryption')
    # A certificate no trusted CA signed is the client's refusal, before any login.
    for s in pair:
        result = connect(s, "secure", "tls-only", sslmode="verify-full", sslrootcert=other)
        assert result[0] == "error" and "certificate verify failed" in result[1]
    # verify-full checks the name: the certificate is for 127.0.0.1, not localhost.
    for s in pair:
        with pytest.raises(psycopg.OperationalError, match='does not match host name "localhost"'):
            psycopg.connect(host="localhost", hostaddr="127.0.0.1", port=s.port, user="secure",
                            password="tls-only", dbname="postgres", sslmode="verify-full",
                            sslrootcert=ca, connect_timeout=10)


def test_psql_with_verify_full(pair, certs):
    outputs = []
    for s in pair:
        res = subprocess.run(
            [pg_tool("psql"), "-X", "-At", "-c", "SELECT current_user, session_user",
             f"host={s.host} port={s.port} user=secure dbname=postgres sslmode=verify-full "
             f"sslrootcert={certs / 'ca.crt'}"],
            capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "PGPASSWORD": "tls-only", "PGCONNECT_TIMEOUT": "10"})
        assert res.returncode == 0, res.stderr
        outputs.append(res.stdout)
    assert outputs == ["secure|secure\n"] * 2


def test_asyncpg_verifies_the_server_with_its_own_tls(pair, certs):
    async def attempt(server):
        context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        conn = await asyncpg.connect(host=server.host, port=server.port, user="secure",
                                     password="tls-only", database="postgres", ssl=context,
                                     timeout=10)
        try:
            return await conn.fetchval("SELECT current_user")
        finally:
            await conn.close()
    for s in pair:
        assert asyncio.run(attempt(s)) == "secure"


def test_the_unix_socket_never_uses_tls(pair):
    for s in pair:
        # libpq does not ask for TLS over a Unix socket, whatever sslmode says.
        with psycopg.connect(host=str(s.socket_dir), port=s.port, user="postgres",
                             dbname="postgres", sslmode="require") as c:
            assert c.pgconn.ssl_in_use is False


def test_without_a_certificate_tls_is_refused(server_kind):
    servers = [start_server(kind) for kind in (server_kind, "postgres")]
    try:
        got = [connect(s, "postgres", None, sslmode="require") for s in servers]
        assert got[0] == got[1] == ("error", "server does not support SSL, but SSL was required")
        # prefer falls back to a plain connection.
        assert connect(servers[0], "postgres", None, sslmode="prefer") == ("ok", False)
    finally:
        for s in servers:
            finish_server(s)


class Recorder:
    """A TCP relay in front of a server that keeps every byte it passes on."""

    def __init__(self, server):
        import socket
        import threading
        self.target = (server.host, server.port)
        self.captured = bytearray()
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        import threading
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src, dst):
        try:
            while data := src.recv(65536):
                with self.lock:
                    self.captured += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(2)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


def test_a_tls_session_cannot_be_read_on_the_wire(pair):
    marker = "meridian-wire-marker"
    for s in pair:
        for user, password, sslmode, visible in (("plain", "no-tls", "disable", True),
                                                 ("secure", "tls-only", "require", False)):
            relay = Recorder(s)
            try:
                with psycopg.connect(host="127.0.0.1", port=relay.port, user=user,
                                     password=password, dbname="postgres", sslmode=sslmode,
                                     connect_timeout=10) as c:
                    assert c.execute(f"SELECT '{marker}' || 42").fetchone() == (f"{marker}42",)
            finally:
                relay.close()
            assert (marker.encode() in relay.captured) is visible, (s.kind, sslmode)


def test_bytes_sent_before_the_handshake_are_refused(pair):
    """Plain bytes pipelined behind an SSLRequest could be a man in the middle's
    (CVE-2021-23214): Meridian refuses the connection at once, with the message
    PostgreSQL has for it. (PostgreSQL 15 checks only after a handshake, which such a
    client never starts: it waits for authentication_timeout.)"""
    import socket
    import struct
    meridian = pair[0]
    if meridian.kind == "postgres":
        pytest.skip("PostgreSQL waits for a handshake instead")
    params = b"user\0postgres\0database\0postgres\0\0"
    startup = struct.pack("!ii", 8 + len(params), 196608) + params
    with socket.create_connection((meridian.host, meridian.port), timeout=10) as sock:
        sock.sendall(struct.pack("!ii", 8, 80877103) + startup)
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    assert data[:2] == b"SE", data
    fields = {f[:1].decode(): f[1:].decode() for f in data[6:].split(b"\0") if f}
    assert (fields["S"], fields["C"], fields["M"]) == (
        "FATAL", "08P01", "received unencrypted data after SSL request")
    assert fields["D"].startswith("This could be either a client-software bug")
