"""Malformed input never takes the server down.

* Raw sockets: random, truncated, oversized protocol messages and absurd declared lengths,
  before and after start-up.  For each, the server must answer with ErrorResponse and/or
  close that connection -- promptly, without waiting for gigabytes that will never come --
  and a session opened beforehand must still answer ``SELECT 1``.
* Random SQL text (hypothesis, bounded number of examples): every statement either
  succeeds or fails with an ErrorResponse carrying a SQLSTATE, and the session still
  answers ``SELECT 1`` afterwards.
* At the end the server process is still alive.
"""

import random
import socket
import struct
import time

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

IO_TIMEOUT = 15.0
PROTOCOL_3 = 196608


# --------------------------------------------------------------------------------------
# raw protocol helpers
# --------------------------------------------------------------------------------------

def msg(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def startup_packet(user="postgres", database="postgres") -> bytes:
    body = struct.pack("!i", PROTOCOL_3)
    body += b"user\0" + user.encode() + b"\0database\0" + database.encode() + b"\0\0"
    return struct.pack("!i", len(body) + 4) + body


def cstr(s: str) -> bytes:
    return s.encode() + b"\0"


def read_messages(sock, until_ready=False, until_error=False, deadline=None):
    """Read backend messages until EOF (or ReadyForQuery when until_ready, or an
    ErrorResponse when until_error).

    Returns (messages, closed). Raises AssertionError on a timeout or on bytes that are
    not a valid backend message stream."""
    deadline = deadline or time.monotonic() + IO_TIMEOUT
    buf = b""
    messages = []
    closed = reset = False
    while True:
        # parse what we have
        while len(buf) >= 5:
            kind = buf[:1]
            (length,) = struct.unpack("!i", buf[1:5])
            assert 4 <= length < 64 * 1024 * 1024, f"bad backend message length {length} ({kind!r})"
            if len(buf) < 1 + length:
                break
            messages.append((kind, buf[5:1 + length]))
            buf = buf[1 + length:]
            if until_ready and kind == b"Z":
                return messages, False
            if until_error and kind == b"E":
                return messages, False
        if closed:
            if len(buf) == 1 and buf in (b"N", b"S") and not messages:
                messages.append((buf, b""))  # SSL/GSS answer byte
                buf = b""
            assert reset or not buf, (
                f"connection closed in the middle of a backend message: {buf[:50]!r}")
            return messages, True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(
                f"server neither answered nor closed within {IO_TIMEOUT}s; got {messages!r}")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            chunk, reset = b"", True
        except socket.timeout:
            continue
        if not chunk:
            closed = True
        buf += chunk


def sqlstate_of(body: bytes):
    for field in body.split(b"\0"):
        if field[:1] == b"C":
            return field[1:].decode()
    return None


def open_raw(server, do_startup=True):
    sock = socket.create_connection((server.host, server.port), timeout=IO_TIMEOUT)
    if do_startup:
        sock.sendall(startup_packet())
        messages, closed = read_messages(sock, until_ready=True)
        assert not closed and messages[-1][0] == b"Z", f"start-up failed: {messages!r}"
    return sock


def send_and_check(server, payload: bytes, do_startup: bool, half_close: bool):
    """Send payload; the server must answer (ErrorResponse) and/or close, never hang."""
    sock = open_raw(server, do_startup)
    try:
        try:
            if payload.startswith(SSL_REQUEST):
                sock.sendall(SSL_REQUEST)
                answer = sock.recv(1)
                assert answer in (b"N", b"S"), f"SSLRequest answered with {answer!r}"
                payload = payload[len(SSL_REQUEST):]
            sock.sendall(payload)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server already closed on us: acceptable
        # half-closed: the server must finish and close; open: an ErrorResponse will do
        messages, closed = read_messages(sock, until_error=not half_close)
    finally:
        sock.close()
    for kind, body in messages:
        if kind == b"E":
            assert sqlstate_of(body), f"ErrorResponse without SQLSTATE: {body!r}"
    return messages


@pytest.fixture(scope="module")
def witness(target):
    """A session opened before any bad input; it must stay usable throughout."""
    conn = psycopg.connect(target.dsn, autocommit=True)
    assert conn.execute("SELECT 1").fetchone() == (1,)
    yield conn
    conn.close()


def assert_healthy(server, witness):
    assert server.is_alive(), f"server process died (log {server.log_path})"
    assert witness.execute("SELECT 1").fetchone() == (1,), "earlier session no longer works"
    with psycopg.connect(server.dsn, autocommit=True) as fresh:
        assert fresh.execute("SELECT 1").fetchone() == (1,), "new sessions no longer work"


# --------------------------------------------------------------------------------------
# hand-written protocol abuse
# --------------------------------------------------------------------------------------

HUGE = 0x7FFFFFFF  # declared length nobody will ever send
SSL_REQUEST = struct.pack("!ii", 8, 80877103)

PRE_STARTUP = {
    "garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)),
    "http": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "short_length": struct.pack("!i", 3) + b"\0\0",
    "negative_length": struct.pack("!i", -8) + struct.pack("!i", PROTOCOL_3),
    "huge_length": struct.pack("!i", HUGE) + struct.pack("!i", PROTOCOL_3),
    "truncated_startup": startup_packet()[:13],
    "bad_protocol_version": struct.pack("!ii", 16, 0x00090000) + b"user\0x\0\0\0"[:8],
    "no_user": struct.pack("!ii", 9, PROTOCOL_3) + b"\0",
    "unterminated_params": struct.pack("!ii", 20, PROTOCOL_3) + b"user\0postgres\0dat",
    "cancel_garbage": struct.pack("!iiii", 16, 80877102, 12345, 67890),
    "ssl_then_garbage": SSL_REQUEST + b"\xff" * 64,
    "ssl_then_truncated_startup": SSL_REQUEST + startup_packet()[:20],
}

AFTER_STARTUP = {
    "huge_query": b"Q" + struct.pack("!i", HUGE) + b"SELECT 1",
    "huge_parse": b"P" + struct.pack("!i", HUGE),
    "negative_length": b"Q" + struct.pack("!i", -1),
    "length_below_4": b"Q" + struct.pack("!i", 2),
    "unknown_type": msg(b"z", b"hello"),
    "nul_type": msg(b"\0", b""),
    "query_not_terminated": msg(b"Q", b"SELECT 1"),
    "truncated_query": b"Q" + struct.pack("!i", 100) + b"SELECT",
    "parse_bad_param_count": msg(b"P", cstr("") + cstr("SELECT $1") + struct.pack("!h", 50)),
    "parse_negative_param_count": msg(b"P", cstr("") + cstr("SELECT 1") + struct.pack("!h", -3)),
    "bind_unknown_statement": msg(b"B", cstr("") + cstr("nope") + struct.pack("!hhh", 0, 0, 0))
    + msg(b"E", cstr("") + struct.pack("!i", 0)) + msg(b"S"),
    "bind_garbage_counts": msg(b"P", cstr("") + cstr("SELECT $1::int") + struct.pack("!h", 0))
    + msg(b"B", cstr("") + cstr("") + struct.pack("!hh", 1, 0) + struct.pack("!hi", 1, 1_000_000))
    + msg(b"S"),
    "bind_huge_param_len": msg(b"P", cstr("") + cstr("SELECT $1::text") + struct.pack("!h", 0))
    + msg(b"B", cstr("") + cstr("") + struct.pack("!h", 0) + struct.pack("!hi", 1, HUGE) + b"x")
    + msg(b"S"),
    "bind_binary_int_wrong_size": msg(b"P", cstr("") + cstr("SELECT $1::int") + struct.pack("!hi", 1, 23))
    + msg(b"B", cstr("") + cstr("") + struct.pack("!hh", 1, 1) + struct.pack("!hi", 1, 3) + b"abc"
          + struct.pack("!h", 0))
    + msg(b"E", cstr("") + struct.pack("!i", 0)) + msg(b"S"),
    "execute_without_bind": msg(b"E", cstr("nope") + struct.pack("!i", 0)) + msg(b"S"),
    "describe_bad_kind": msg(b"D", b"X" + cstr("x")) + msg(b"S"),
    "close_bad_kind": msg(b"C", b"X" + cstr("x")) + msg(b"S"),
    "copy_data_out_of_copy": msg(b"d", b"1\t2\n") + msg(b"c") + msg(b"Q", cstr("SELECT 1")),
    "function_call": msg(b"F", struct.pack("!i", 1) + struct.pack("!hhh", 0, 0, 0)),
    "invalid_utf8_query": msg(b"Q", b"SELECT '\xff\xfe\xc3'\0"),
    "multi_statement_extended": msg(b"P", cstr("") + cstr("SELECT 1; SELECT 2") + struct.pack("!h", 0))
    + msg(b"S"),
    "oversized_query_4mb": msg(b"Q", cstr("SELECT '" + "x" * (4 * 1024 * 1024) + "' AS big")),
    "oversized_garbage_4mb": msg(b"Q", random.Random(7).randbytes(4 * 1024 * 1024) + b"\0"),
    "many_tiny_syncs": msg(b"S") * 2000,
}


MUST_REACT_WITHOUT_EOF = {"huge_query", "huge_parse", "negative_length", "length_below_4",
                          "unknown_type", "nul_type"}


@pytest.mark.parametrize("name", list(PRE_STARTUP))
def test_bad_startup(target, witness, name):
    payload = PRE_STARTUP[name]
    # open: the server must react without us closing; half-closed: it must notice EOF
    # incomplete packets can only be detected at EOF: half-close those; everything else
    # must be answered or closed by the server while our side is still open
    half_close = "truncated" in name or name == "unterminated_params"
    send_and_check(target, payload, do_startup=False, half_close=half_close)
    assert_healthy(target, witness)


@pytest.mark.parametrize("name", list(AFTER_STARTUP))
def test_bad_message_after_startup(target, witness, name):
    payload = AFTER_STARTUP[name]
    # Absurd lengths and unknown message types must be answered or closed while our side
    # is still open (no waiting for 2 GB that never come).  The others are half-closed
    # after sending, so the server sees EOF after them, as after a client that vanished.
    half_close = name not in MUST_REACT_WITHOUT_EOF
    send_and_check(target, payload, do_startup=True, half_close=half_close)
    assert_healthy(target, witness)


def test_timeout_while_blocked_writing_leaves_a_whole_message_stream(target, witness):
    """A statement whose rows wait for a client that does not read (the server blocked
    writing to a full socket) and that times out meanwhile ends with 57014; what the
    client then reads is a well-formed stream: the rows sent before, the error, then
    ReadyForQuery, with no message cut short or sent twice."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A small receive window (set before connecting, so it stays small): the server's
    # writes block after a few hundred kilobytes.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(IO_TIMEOUT)
    sock.connect((target.host, target.port))
    try:
        sock.sendall(startup_packet())
        messages, closed = read_messages(sock, until_ready=True)
        assert not closed and messages[-1][0] == b"Z"
        sock.sendall(msg(b"Q", cstr("SET statement_timeout = '500ms'; "
                                    "SELECT repeat('x', 1000) || g FROM generate_series(1, 200000) g")))
        time.sleep(2)
        messages, closed = read_messages(sock, until_ready=True,
                                         deadline=time.monotonic() + 120)
    finally:
        sock.close()
    assert not closed
    kinds = [k for k, _ in messages]
    rows = kinds.count(b"D")
    assert kinds[-1] == b"Z"
    assert all(len(body) == 2 + 4 + 1000 + len(str(i + 1)) for i, (k, body) in
               enumerate(m for m in messages if m[0] == b"D")), "a data row was cut or repeated"
    if target.kind != "postgres":
        # (PostgreSQL acts on a cancel only once its blocked write is done.)
        errors = [sqlstate_of(body) for k, body in messages if k == b"E"]
        assert errors == ["57014"] and 0 < rows < 200000, (errors, rows)
    assert_healthy(target, witness)


def test_random_bytes_fuzz(target, witness):
    """Random mutations of a valid extended-protocol exchange, sent after start-up."""
    rng = random.Random(20240501)
    valid = (msg(b"P", cstr("s1") + cstr("SELECT $1::int + 1, $2::text") + struct.pack("!hii", 2, 23, 25))
             + msg(b"B", cstr("") + cstr("s1") + struct.pack("!h", 0) + struct.pack("!h", 2)
                   + struct.pack("!i", 2) + b"41" + struct.pack("!i", 3) + b"abc" + struct.pack("!h", 0))
             + msg(b"D", b"P" + cstr(""))
             + msg(b"E", cstr("") + struct.pack("!i", 0))
             + msg(b"S"))
    for i in range(60):
        data = bytearray(valid)
        for _ in range(rng.randint(1, 8)):
            op = rng.random()
            pos = rng.randrange(len(data))
            if op < 0.5:
                data[pos] = rng.randrange(256)
            elif op < 0.75:
                del data[pos:pos + rng.randint(1, 10)]
            else:
                data[pos:pos] = rng.randbytes(rng.randint(1, 10))
        if i % 10 == 0:
            data = bytearray(rng.randbytes(rng.randint(1, 300)))
        send_and_check(target, bytes(data), do_startup=True, half_close=True)
    assert_healthy(target, witness)


# --------------------------------------------------------------------------------------
# random SQL text
# --------------------------------------------------------------------------------------

VOCAB = [
    "SELECT", "INSERT", "INTO", "UPDATE", "DELETE", "FROM", "WHERE", "VALUES", "SET", "AND",
    "OR", "NOT", "NULL", "IS", "IN", "AS", "ON", "JOIN", "LEFT", "GROUP", "BY", "ORDER",
    "HAVING", "LIMIT", "OFFSET", "UNION", "ALL", "DISTINCT", "CASE", "WHEN", "THEN", "ELSE",
    "END", "CREATE", "TABLE", "DROP", "ALTER", "ADD", "PRIMARY", "KEY", "INDEX", "BEGIN",
    "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "CAST", "int", "bigint", "text", "numeric",
    "bool", "timestamp", "count(*)", "sum(", "max(", "coalesce(", "fuzz_t", "a", "b", "x",
    "1", "0", "-1", "2147483648", "9223372036854775808", "1e400", "'a'", "''",
    "'it''s'", "E'\\\\x'", "$1", "(", ")", ",", ";", "*", "+", "-", "/", "%", "=", "<>", "<",
    ">=", "::", ".", "[", "]", "'", "\"", "--", "/*", "*/", "\\", "true", "false",
]

sql_soup = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=25).map(" ".join)
sql_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=0, max_size=200)


@pytest.fixture(scope="module")
def fuzz_conn(target):
    conn = psycopg.connect(target.dsn, autocommit=True)
    conn.execute("DROP TABLE IF EXISTS fuzz_t")
    conn.execute("CREATE TABLE fuzz_t (a int PRIMARY KEY, b text, x numeric)")
    conn.execute("INSERT INTO fuzz_t VALUES (1, 'one', 1.5), (2, NULL, NULL)")
    yield conn
    conn.close()


@settings(max_examples=150, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sql=st.one_of(sql_soup, sql_text))
def test_random_sql_text(target, fuzz_conn, sql):
    conn = fuzz_conn
    try:
        # bytes: no client-side placeholder handling; prepare=False: always a simple Query
        # (psycopg would otherwise switch to named prepared statements after 5 uses)
        conn.execute(sql.encode(), prepare=False)
    except psycopg.Error as e:
        assert not conn.closed and not conn.broken, (
            f"connection lost after {sql!r}: {e!r} (log {target.log_path})")
        assert e.sqlstate is not None, f"error without SQLSTATE for {sql!r}: {e!r}"
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.execute("ROLLBACK", prepare=False)
    assert conn.execute("SELECT 1", prepare=False).fetchone() == (1,), (
        f"session unusable after {sql!r}")


def test_server_still_alive_at_the_end(target, witness):
    assert_healthy(target, witness)
