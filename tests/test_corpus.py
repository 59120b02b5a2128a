"""The semantics corpus (issue 31, acceptance 4): every statement of `tests/corpus/*.sql`
runs on the server under test and on PostgreSQL 15, in order, one file per test, and
each must give the same answer: the same command tag, column names and rows (as text,
the wire's text format; in order when the statement ends with a top-level ORDER BY, as
multisets otherwise), or an error with the same SQLSTATE.

`corpus/known_differences.txt` lists the statements known to answer differently, each
with the reason; a listed statement that now answers the same fails the test too, so
that the list only ever says what is true. The format of the files is in
`corpus/README.md`.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

import psycopg
import pytest
from psycopg.pq import DiagnosticField, ExecStatus

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.glob("*.sql"))
SHOWN = 15  # differences quoted in a failure message


def statements(path: Path) -> list[str]:
    """The file's statements: lines up to one that ends with `;` (comment lines, which
    start with `--`, and blank lines between statements are skipped)."""
    out, current = [], []
    for line in path.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("--")):
            continue
        current.append(line)
        if line.rstrip().endswith(";"):
            out.append("\n".join(current).rstrip().rstrip(";").strip())
            current = []
    assert not current, f"{path.name}: the last statement has no `;`"
    return out


def known_differences() -> dict[tuple[str, str], str]:
    """(file name, statement) -> why it answers differently. Format: a line
    `file.sql: reason`, then the statement on the following lines up to `;`."""
    known, header, lines = {}, None, []
    for line in (CORPUS / "known_differences.txt").read_text().splitlines():
        if header is None:
            if line.strip() and not line.startswith("#"):
                header = line
            continue
        lines.append(line)
        if line.rstrip().endswith(";"):
            name, reason = header.split(":", 1)
            known[(name.strip(), "\n".join(lines).rstrip().rstrip(";").strip())] = reason.strip()
            header, lines = None, []
    return known


def ordered(sql: str) -> bool:
    """Whether the statement's rows come in a defined order: a top-level ORDER BY (not
    one inside parentheses, such as a window's or a subquery's)."""
    depth, top = 0, []
    for ch in sql:
        depth += ch == "("
        depth -= ch == ")"
        top.append(ch if depth == 0 else " ")
    return re.search(r"\border\s+by\b", "".join(top), re.IGNORECASE) is not None


def answer(conn: psycopg.Connection, sql: str):
    """The statement's answer through the simple query protocol, values as text."""
    res = conn.pgconn.exec_(sql.encode())
    if res.status == ExecStatus.FATAL_ERROR:
        return ("error", (res.error_field(DiagnosticField.SQLSTATE) or b"").decode())
    if res.status not in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK, ExecStatus.EMPTY_QUERY):
        return ("status", res.status.name)
    names = tuple(res.fname(j).decode() for j in range(res.nfields))
    rows = [
        tuple(None if (v := res.get_value(i, j)) is None else v.decode()
              for j in range(res.nfields))
        for i in range(res.ntuples)
    ]
    if not ordered(sql):
        rows.sort(key=lambda r: tuple((v is None, v or "") for v in r))
    return ("ok", (res.command_status or b"").decode(), names, rows)


def connect(server) -> psycopg.Connection:
    conn = psycopg.connect(server.dsn, autocommit=True)
    conn.execute("SET TIME ZONE 'UTC'")
    return conn


def test_the_corpus_is_large_enough():
    count = sum(len(statements(f)) for f in FILES)
    assert count >= 3000, f"the corpus has {count} statements; acceptance 4 asks for 3,000"


def test_every_known_difference_names_one_corpus_statement():
    """A known difference names its statement by file and text: exactly one."""
    present = collections.Counter((f.name, s) for f in FILES for s in statements(f))
    stray = [k for k in known_differences() if present[k] != 1]
    assert not stray, f"known differences naming no statement, or several: {stray[:SHOWN]}"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_corpus_file(target, postgres, path):
    known = known_differences()
    ours, ref = connect(target), connect(postgres)
    differing, fixed = [], []
    try:
        for sql in statements(path):
            want, got = answer(ref, sql), answer(ours, sql)
            reason = known.get((path.name, sql))
            if got != want and reason is None:
                differing.append(f"{sql}\n    PostgreSQL 15: {want!r}\n    Meridian:      {got!r}")
            elif got == want and reason is not None:
                fixed.append(f"{sql} (listed: {reason})")
    finally:
        ours.close()
        ref.close()
    assert not differing, (f"{len(differing)} statements of {path.name} answer differently:\n"
                           + "\n".join(differing[:SHOWN]))
    assert not fixed, ("listed in known_differences.txt but answering the same now: "
                       + "; ".join(fixed[:SHOWN]))
