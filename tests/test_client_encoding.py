"""client_encoding LATIN1 against PostgreSQL 15 in the same test: query text, parameters
in text and binary format, result values and column names, error messages, COPY in both
directions, set by SET and by the startup packet; a character LATIN1 lacks ends the
statement with 22P05 and the session goes on."""

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
