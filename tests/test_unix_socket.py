"""Connections over the Unix-domain socket, PostgreSQL's default local transport.

The server creates ``<socket_dir>/.s.PGSQL.<port>`` (PostgreSQL's
``unix_socket_directories``); libpq clients reach it with ``host=<socket_dir>``. Every
test here also runs against real PostgreSQL 15 (``MERIDIAN_TEST_TARGETS=postgres``),
whose behaviour it describes.
"""

import os
import re
import stat
import subprocess

import psycopg
import pytest

from conftest import _new_base_dir, meridian_bin, pg_tool


def socket_path(server):
    return server.socket_dir / f".s.PGSQL.{server.port}"


def psql(server, sql):
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-At", "-h", str(server.socket_dir), "-p", str(server.port),
         "-U", "postgres", "-d", "postgres", "-c", sql],
        capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10"})
    assert res.returncode == 0, f"psql over the socket failed:\n{res.stdout}{res.stderr}"
    return res.stdout


def connect_local(server, **kw):
    return psycopg.connect(host=str(server.socket_dir), port=server.port, user="postgres",
                           dbname="postgres", connect_timeout=10, **kw)


def test_socket_file_is_a_socket_anyone_may_connect_to(meridian):
    mode = os.stat(socket_path(meridian)).st_mode
    assert stat.S_ISSOCK(mode)
    # PostgreSQL's default unix_socket_permissions: connecting needs write permission.
    assert stat.S_IMODE(mode) == 0o777


def test_psql_and_psycopg_over_the_socket(meridian):
    assert psql(meridian, r"\conninfo").startswith(
        f'You are connected to database "postgres" as user "postgres" via socket in "{meridian.socket_dir}"')
    with connect_local(meridian, autocommit=True) as conn:
        conn.execute("CREATE TABLE local_t (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO local_t VALUES (1, 'over the socket')")
        # extended protocol (psycopg binds parameters) over the same transport
        assert conn.execute("SELECT v FROM local_t WHERE id = %s", (1,)).fetchone() == ("over the socket",)
    # TCP and the socket reach the same server
    with meridian.connect() as conn:
        assert conn.execute("SELECT v FROM local_t").fetchall() == [("over the socket",)]
    assert psql(meridian, "SELECT count(*) FROM local_t") == "1\n"


def test_bad_input_over_the_socket_keeps_the_session(meridian):
    with connect_local(meridian, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM no_such_table")
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_restart_after_kill9_replaces_the_stale_socket(meridian):
    with connect_local(meridian, autocommit=True) as conn:
        conn.execute("CREATE TABLE survive (id int PRIMARY KEY)")
        conn.execute("INSERT INTO survive VALUES (42)")
    meridian.kill9()
    # A killed server cannot remove its socket file; the next start must not trip on it.
    assert os.path.exists(socket_path(meridian))
    meridian.restart()
    assert psql(meridian, "SELECT id FROM survive") == "42\n"


def test_clean_shutdown_removes_the_socket(meridian):
    path = socket_path(meridian)
    assert os.path.exists(path)
    meridian.stop()
    assert not os.path.exists(path)


def test_stop_right_after_the_ready_line_is_clean(tmp_path):
    """A signal sent the moment the server says it is ready is a clean shutdown: exit code
    0 and the socket file removed. (The handlers were once installed after the ready
    line; a quick stop then killed the process outright, leaving the socket behind.)"""
    for attempt in range(10):
        base = tmp_path / str(attempt)
        base.mkdir()
        proc = subprocess.Popen(
            [str(meridian_bin()), "start", "--data-dir", str(base / "data"), "--listen", "127.0.0.1:0",
             "--unix-socket-dir", str(base)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
        try:
            ready = proc.stdout.readline()
            assert "ready to accept connections" in ready, ready
            proc.terminate()
            assert proc.wait(60) == 0, f"attempt {attempt}: killed by the signal instead of shutting down"
        finally:
            proc.kill()
            proc.wait()
        assert [f.name for f in base.iterdir() if f.name.startswith(".s.PGSQL.")] == [], f"attempt {attempt}"


def test_second_server_on_a_live_socket_is_refused(meridian):
    # Same port and socket directory, another loopback address: TCP would bind, the
    # Unix-domain socket belongs to the running server.
    other = type(meridian)(_new_base_dir(meridian.kind), port=meridian.port)
    other.host = "127.0.0.2"
    other.socket_dir = meridian.socket_dir
    try:
        with pytest.raises(RuntimeError, match="exited with code") as refused:
            other.start()
    finally:
        other.cleanup()
    # refused because of the socket, not for some other reason
    # (PostgreSQL guards its socket with a lock file beside it)
    assert re.search(r"in use by another server|lock file .*\.s\.PGSQL.* already exists", str(refused.value)), refused.value
    # the running server still owns and serves its socket
    assert psql(meridian, "SELECT 1") == "1\n"
