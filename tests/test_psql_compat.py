"""psql 15 meta-commands give the same output as on PostgreSQL 15.

The pgbench schema (``pgbench -i -s 1``) is created in a fresh real PostgreSQL 15 and in
the server under test; ``\\d``, ``\\dt``, ``\\d pgbench_accounts``, ``\\l`` and ``\\dn``
(default aligned output, ``-X``) must print the same text on both.

Only one thing is normalised: the Collate and Ctype columns of ``\\l``.  They show the
locale the reference cluster was initdb'ed with (C.UTF-8 here), which is a property of
how the reference was set up on this machine, not server behaviour; the server under
test reports its own locale.  Because changing those cells changes column widths, ``\\l``
is compared cell by cell after parsing; everything else is compared byte for byte.
"""

import subprocess

import pytest

from conftest import pg_tool

COMMANDS = [r"\d", r"\dt", r"\d pgbench_accounts", r"\l", r"\dn"]


def psql(server, command):
    cmd = [pg_tool("psql"), "-X", "-P", "pager=off", "-h", server.host, "-p", str(server.port),
           "-U", "postgres", "-d", "postgres", "-c", command]
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PGCONNECT_TIMEOUT": "10"}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    return f"exit={res.returncode}\n{res.stdout}{res.stderr}"


def pgbench_init(server):
    res = subprocess.run([pg_tool("pgbench"), "-i", "-s", "1", "-q", "-h", server.host, "-p",
                          str(server.port), "-U", "postgres", "postgres"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"pgbench -i failed on {server.kind}:\n{res.stdout}{res.stderr}"


@pytest.fixture(scope="module")
def both(postgres_fresh, target):
    pgbench_init(postgres_fresh)
    pgbench_init(target)
    return postgres_fresh, target


def parse_aligned(text):
    """Split psql aligned output into stripped cells per line (continuation '+' removed)."""
    lines = []
    for line in text.splitlines():
        if "|" in line:
            cells = [c.strip() for c in line.split("|")]
            cells = [c[:-1].rstrip() if c.endswith("+") else c for c in cells]
            lines.append(cells)
        elif set(line.strip()) <= set("-+"):
            lines.append(["<rule>"])
        else:
            lines.append([line.strip()])
    return lines


def normalise_l(text):
    rows = parse_aligned(text)
    header = next((r for r in rows if "Collate" in r), None)
    assert header is not None, f"no Collate column in \\l output:\n{text}"
    cols = [header.index("Collate"), header.index("Ctype")]
    out = []
    for r in rows:
        if len(r) == len(header) and r is not header:
            r = ["<locale>" if i in cols and r[i] else c for i, c in enumerate(r)]
        out.append(r)
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_psql_meta_command_matches_postgres(both, command):
    reference, server = both
    expected = psql(reference, command)
    actual = psql(server, command)
    assert expected.startswith("exit=0"), f"reference psql failed:\n{expected}"
    if command == r"\l":
        assert normalise_l(actual) == normalise_l(expected), (
            f"psql {command} differs\n--- PostgreSQL 15\n{expected}\n--- {server.kind}\n{actual}")
    else:
        assert actual == expected, (
            f"psql {command} differs\n--- PostgreSQL 15\n{expected}\n--- {server.kind}\n{actual}")
