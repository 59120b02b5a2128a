"""client_encoding against PostgreSQL 15 in the same test. LATIN1: query text, parameters
in text and binary format, result values and column names, error messages, COPY in both
directions (COPY FROM also in binary), set by SET and by the startup packet; a character LATIN1 lacks ends the
statement with 22P05 and the session goes on. Every single-byte encoding: each byte's
character (or 22P05 where PostgreSQL maps none), each character's byte, the names and
aliases SET accepts."""

import psycopg
import pytest


def latin1_session(dsn, startup):
    if startup:
        return psycopg.connect(dsn, autocommit=True, client_encoding="latin1")
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SET client_encoding = 'LATIN1'")
    return conn


def outcome(conn, sql, params=None):
    try:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else cur.statusmessage
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary)


def workload(dsn, startup, binary):
    out = []
    with latin1_session(dsn, startup) as c:
        out.append((c.info.encoding, c.execute("SHOW client_encoding").fetchone()))
        c.execute("DROP TABLE IF EXISTS ce_words")
        c.execute("CREATE TABLE ce_words (id int PRIMARY KEY, t text)")
        cur = c.cursor(binary=binary)
        cur.execute("INSERT INTO ce_words VALUES (1, %s), (2, 'déjà vu')", ("café ÿ",))
        out.append(cur.execute("SELECT t, length(t), octet_length(t), lower(t) FROM ce_words"
                               " ORDER BY id").fetchall())
        out.append(cur.execute('SELECT t AS "nom été" FROM ce_words WHERE t = %s',
                               ("café ÿ",)).description[0].name)
        out.append(outcome(c, "SELECT chr(28450)"))  # 漢: not in LATIN1
        out.append(outcome(c, 'SELECT * FROM "tablé"'))
        out.append(outcome(c, "SELECT t FROM ce_words WHERE id = 2"))
        with c.cursor().copy("COPY ce_words TO STDOUT") as cp:
            out.append(b"".join(bytes(x) for x in cp))
        with c.cursor().copy("COPY ce_words TO STDOUT (FORMAT csv, HEADER)") as cp:
            out.append(b"".join(bytes(x) for x in cp))
        with c.cursor().copy("COPY ce_words FROM STDIN") as cp:
            cp.write("3\tnaïve\n")
        with c.cursor().copy("COPY ce_words FROM STDIN (FORMAT binary)") as cp:
            cp.set_types(["int4", "text"])
            cp.write_row((5, "ouvre à côté ÿ"))
        out.append(outcome(c, "INSERT INTO ce_words VALUES (4, chr(28450))"))
        try:
            with c.cursor().copy("COPY ce_words TO STDOUT") as cp:
                out.append(b"".join(bytes(x) for x in cp))
        except psycopg.Error as e:
            out.append(("error", e.sqlstate, e.diag.message_primary))
        c.execute("DELETE FROM ce_words WHERE id = 4")
        out.append(outcome(c, "SELECT t FROM ce_words ORDER BY id"))
        c.execute("SET client_encoding = 'UTF8'")
        out.append(outcome(c, "SELECT t FROM ce_words ORDER BY id"))
        c.execute("DROP TABLE ce_words")
    return out


@pytest.mark.parametrize("startup", [False, True], ids=["set", "startup"])
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_latin1_as_postgres(target, postgres, startup, binary):
    assert workload(target.dsn, startup, binary) == workload(postgres.dsn, startup, binary)


def test_unknown_encoding_is_refused_as_postgres(target, postgres):
    answers = []
    for server in (postgres, target):
        with psycopg.connect(server.dsn, autocommit=True) as c:
            answers.append((outcome(c, "SET client_encoding = 'KLINGON'"), outcome(c, "SELECT 1")))
    assert answers[1] == answers[0]


SINGLE_BYTE = ["LATIN1", "LATIN2", "LATIN3", "LATIN4", "LATIN5", "LATIN6", "LATIN7", "LATIN8",
               "LATIN9", "LATIN10", "ISO_8859_5", "ISO_8859_6", "ISO_8859_7", "ISO_8859_8",
               "WIN866", "WIN874", "WIN1250", "WIN1251", "WIN1252", "WIN1253", "WIN1254",
               "WIN1255", "WIN1256", "WIN1257", "WIN1258", "KOI8R", "KOI8U"]


class RawText(psycopg.adapt.Loader):
    """A text value's bytes as the server sent them (in the client's encoding)."""

    def load(self, data):
        return bytes(data)


class Raw:
    def __init__(self, data):
        self.data = data


class RawDumper(psycopg.adapt.Dumper):
    """A text parameter sent as the given bytes (in the client's encoding)."""
    oid = psycopg.adapters.types["text"].oid

    def dump(self, obj):
        return obj.data


def byte_table(dsn, encoding):
    """What the server makes of each byte 0x80-0xFF sent in `encoding` (its code point
    or the error), and the bytes it sends back for those code points."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.adapters.register_loader("text", RawText)
        c.adapters.register_dumper(Raw, RawDumper)
        c.execute(f"SET client_encoding = '{encoding}'")
        shown = c.execute("SHOW client_encoding").fetchone()
        read = {}
        for b in range(0x80, 0x100):
            read[b] = outcome(c, "SELECT ascii(%s)", (Raw(bytes([b])),))
        points = [r[0][0] for r in read.values() if isinstance(r, list)]
        written = c.execute("SELECT chr(cp) FROM unnest(%s::int[]) cp", (points,)).fetchall()
        lacking = outcome(c, "SELECT chr(28450)")
        return shown, read, written, lacking


@pytest.mark.parametrize("encoding", SINGLE_BYTE)
def test_single_byte_encodings_as_postgres(target, postgres, encoding):
    """Every byte of each single-byte encoding reads as the same character as in
    PostgreSQL (or fails alike where PostgreSQL maps nothing), and every character goes
    back as the same byte."""
    ours, theirs = byte_table(target.dsn, encoding), byte_table(postgres.dsn, encoding)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert ours[2:] == theirs[2:]


@pytest.mark.parametrize("alias", ["win", "alt", "koi8", "iso_8859_5", "windows-1251", "ISO8859-9",
                                   "tcvn", "cp1252"])
def test_encoding_aliases_as_postgres(target, postgres, alias):
    answers = []
    for server in (postgres, target):
        with psycopg.connect(server.dsn, autocommit=True) as c:
            answers.append((outcome(c, f"SET client_encoding = '{alias}'"),
                            c.execute("SHOW client_encoding").fetchone()))
    assert answers[1] == answers[0]


@pytest.mark.parametrize("encoding,text", [("UTF8", b"'\xff\xfe'"), ("UTF8", b"'a\xc3'"),
                                           ("WIN1252", b"'\x81'"), ("KOI8U", b"'\xae'")])
def test_unreadable_query_text_ends_the_statement_as_postgres(target, postgres, encoding, text):
    """Bytes the client's encoding cannot read in the query text: an error for that
    statement (simple and extended protocol), and the session goes on."""
    answers = []
    for server in (postgres, target):
        with psycopg.connect(server.dsn, autocommit=True) as c:
            c.execute(f"SET client_encoding = '{encoding}'")
            answers.append([outcome(c, b"SELECT " + text),
                            outcome(c, b"SELECT " + text + b", %s", (1,)),
                            outcome(c, "SELECT 1")])
    assert answers[1] == answers[0]
