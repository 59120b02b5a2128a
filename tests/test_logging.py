"""The server's log (issue 32 item 6): plain text without colour codes when stderr is not
a terminal, one JSON object per event with MERIDIAN_LOG_FORMAT=json, and
log_min_duration_statement's lines; a real `meridian start` whose stderr is a file, as
under a service manager. The setting's values and errors are compared with PostgreSQL."""

import json
import os
import re
import subprocess
import time

import psycopg
import pytest

from conftest import free_port, meridian_bin


def probe(c):
    c.execute("CREATE TABLE log_probe (x int)")
    c.execute("DROP TABLE log_probe")


def run_server(tmp_path, env_extra, work=probe):
    port = free_port()
    log = tmp_path / "server.log"
    env = dict(os.environ, **env_extra)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(meridian_bin()), "start", "--data-dir", str(tmp_path / "data"),
             "--listen", f"127.0.0.1:{port}", "--unix-socket-dir", str(tmp_path)],
            stdout=out, stderr=out, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(host="127.0.0.1", port=port, user="postgres",
                                     dbname="postgres", connect_timeout=2,
                                     autocommit=True) as c:
                    work(c)
                break
            except psycopg.OperationalError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return log.read_bytes()


def test_text_log_has_no_colour_codes_off_a_terminal(tmp_path):
    log = run_server(tmp_path, {"MERIDIAN_LOG_FORMAT": "text"})
    assert b"INFO" in log
    assert b"\x1b[" not in log


def test_json_log_has_one_object_per_line(tmp_path):
    log = run_server(tmp_path, {"MERIDIAN_LOG_FORMAT": "json"})
    events = [json.loads(line) for line in log.decode().splitlines()
              if line.startswith("{")]
    assert events, log
    assert all(e["level"] in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR") for e in events)
    assert all("timestamp" in e and "fields" in e for e in events)
    # nothing else on stderr but those objects (the start banner goes to stdout)
    others = [line for line in log.decode().splitlines() if not line.startswith("{")]
    assert all("listening" in line or "ready" in line for line in others), others


def slow_and_fast(c):
    c.execute("SET log_min_duration_statement = 0")
    c.execute("SELECT 42 AS logged_simple")
    c.execute("SELECT %s::int AS logged_extended", (7,))
    c.execute("SET log_min_duration_statement = '1h'")
    c.execute("SELECT 43 AS not_logged")


def test_log_min_duration_statement_logs_what_ran_that_long(tmp_path):
    log = run_server(tmp_path, {"MERIDIAN_LOG_FORMAT": "text"}, slow_and_fast).decode()
    assert re.search(r"duration: \d+\.\d{3} ms  statement: SELECT 42 AS logged_simple", log), log
    assert re.search(r"duration: \d+\.\d{3} ms  execute <unnamed>: SELECT \$1::int AS logged_extended",
                     log), log
    assert "not_logged" not in log


@pytest.mark.parametrize("value", ["0", "250", "'1s'", "-1", "'90min'", "'abc'", "-2"])
def test_log_min_duration_statement_values_as_postgres(target, postgres, value):
    answers = []
    for server in (postgres, target):
        with psycopg.connect(server.dsn, autocommit=True) as c:
            try:
                c.execute(f"SET log_min_duration_statement = {value}")
                answers.append(c.execute("SHOW log_min_duration_statement").fetchone())
            except psycopg.Error as e:
                answers.append((e.sqlstate, e.diag.message_primary))
    assert answers[1] == answers[0]
