"""String functions applications use (issue 31, item 7) against a real PostgreSQL 15:
the same expressions give the same results, in psycopg's text and binary formats, and
the same SQLSTATEs on errors.

Covered: chr, ascii, lpad, rpad, split_part (negative fields), strpos, initcap, reverse,
translate, starts_with, to_hex (int4 and int8 two's complements), octet_length,
bit_length, concat_ws (NULLs skipped), on literals, on NULLs, on random strings with
multi-byte characters, and on a table's column in WHERE, the select list and ORDER BY
(in a cluster the WHERE runs on the datanodes).
"""

import functools
import random

import psycopg
import pytest

from conftest import run_on_each
from differential import conns, same as differential_same  # noqa: F401 (conns is a fixture)

# Strings' error messages are not compared (only their SQLSTATEs).
same = functools.partial(differential_same, message=False)


EXPRESSIONS = [
    # chr / ascii
    "chr(65)", "chr(233)", "chr(8364)", "chr(128512)", "chr(1114111)", "chr(0)",
    "chr(-1)", "chr(1114112)", "chr(55296)", "chr(NULL)",
    "ascii('A')", "ascii('é')", "ascii('€uro')", "ascii('')", "ascii(NULL)",
    # lpad / rpad
    "lpad('hi', 5)", "lpad('hi', 5, 'xy')", "lpad('hello', 3)", "lpad('hi', 0)",
    "lpad('hi', -2)", "lpad('hi', 5, '')", "lpad('é', 4, 'ü')", "lpad(NULL, 3)",
    "lpad('a', NULL)", "lpad('a', 3, NULL)",
    "rpad('hi', 5)", "rpad('hi', 6, 'xyz')", "rpad('hello', 2)", "rpad('hi', 4, '')",
    "rpad('ab', 5, 'é')", "rpad('', 3, 'x')",
    # split_part
    "split_part('a,b,c', ',', 1)", "split_part('a,b,c', ',', 3)",
    "split_part('a,b,c', ',', 4)", "split_part('a,b,c', ',', -1)",
    "split_part('a,b,c', ',', -3)", "split_part('a,b,c', ',', -4)",
    "split_part('a,b,c', ',', 0)", "split_part('abc', '', 1)", "split_part('abc', '', 2)",
    "split_part('abc', '', -1)", "split_part('', ',', 1)", "split_part('a::b::c', '::', 2)",
    "split_part(',a,', ',', 1)", "split_part(',a,', ',', 3)", "split_part('é|ü', '|', 2)",
    "split_part(NULL, ',', 1)", "split_part('a', ',', NULL)",
    # strpos
    "strpos('high', 'ig')", "strpos('high', 'x')", "strpos('high', '')",
    "strpos('', '')", "strpos('éüa', 'a')", "strpos('abab', 'b')", "strpos(NULL, 'a')",
    # initcap
    "initcap('hi THOMAS')", "initcap('hello-world foo_bar 3rd x1y')", "initcap('')",
    "initcap('éCOLE à paris')", "initcap('  multiple   spaces ')", "initcap(NULL)",
    # reverse
    "reverse('abc')", "reverse('')", "reverse('héllo')", "reverse(NULL)",
    # translate
    "translate('12345', '143', 'ax')", "translate('hello', 'l', 'L')",
    "translate('hello', 'lo', '')", "translate('hello', '', 'x')",
    "translate('aab', 'aa', 'xy')", "translate('héllo', 'é', 'e')", "translate(NULL, 'a', 'b')",
    # starts_with
    "starts_with('alphabet', 'alph')", "starts_with('alphabet', 'beta')",
    "starts_with('alphabet', '')", "starts_with('', 'a')", "starts_with(NULL, 'a')",
    # to_hex
    "to_hex(255)", "to_hex(0)", "to_hex(-1)", "to_hex(2147483647)", "to_hex(-2147483648)",
    "to_hex(9223372036854775807)", "to_hex(-1::bigint)", "to_hex(4294967296)",
    "to_hex(NULL::int)",
    # octet_length / bit_length
    "octet_length('abc')", "octet_length('é€')", "octet_length('')", "bit_length('abc')",
    "bit_length('é')", "octet_length(NULL::text)",
    # concat_ws
    "concat_ws(',', 'a', 'b', 'c')", "concat_ws(',', 'a', NULL, 'c')",
    "concat_ws(NULL, 'a', 'b')", "concat_ws(',')", "concat_ws('', 'a', 'b')",
    "concat_ws(' - ', 1, 2.50, true)", "concat_ws(',', NULL, NULL)",
    # composed
    "lpad(to_hex(255), 8, '0')", "upper(reverse(split_part('x.y.z', '.', 2)))",
    "length(rpad('ab', 10, 'é'))", "ascii(chr(1000))",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_expression(conns, expr):
    same(conns, f"SELECT {expr}")


def test_random_strings(conns):
    """lpad/rpad/split_part/strpos/translate/initcap/reverse on random strings with
    multi-byte characters and random lengths and field numbers."""
    rng = random.Random(36)
    alphabet = "ab,c é€ÜX1-_"
    for _ in range(150):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
        n = rng.randint(-6, 14)
        same(conns,
             "SELECT lpad(%s, %s, %s), rpad(%s, %s, %s), split_part(%s, %s, %s), "
             "strpos(%s, %s), translate(%s, %s, 'xyz'), initcap(%s), reverse(%s), "
             "starts_with(%s, %s), octet_length(%s), ascii(%s)",
             (s, n, t, s, n, t, s, t or ",", n or 1, s, t, s, t, s, s, s, t, s, s))


@pytest.fixture
def people(target, postgres):
    servers = run_on_each([target, postgres], [
        "DROP TABLE IF EXISTS people",
        "CREATE TABLE people (id int PRIMARY KEY, email text, code int)",
        "INSERT INTO people VALUES (1, 'ann@example.com', 255), (2, 'Bob@Mail.org', 4096),"
        " (3, 'carl@example.com', -1), (4, NULL, NULL), (5, 'dé@exämple.net', 17)",
    ])
    yield
    run_on_each(servers, ["DROP TABLE people"])


@pytest.mark.parametrize("sql", [
    "SELECT id, split_part(email, '@', 2) AS domain FROM people ORDER BY id",
    "SELECT id FROM people WHERE split_part(email, '@', -1) = 'example.com' ORDER BY id",
    "SELECT id, initcap(split_part(email, '@', 1)), lpad(to_hex(code), 8, '0') FROM people"
    " ORDER BY 3, 1",
    "SELECT id FROM people WHERE starts_with(lower(email), 'b') ORDER BY id",
    "SELECT concat_ws('/', id, email, code) FROM people ORDER BY reverse(email) NULLS FIRST",
    "SELECT split_part(email, '@', 2), count(*) FROM people GROUP BY 1 ORDER BY 1",
    "SELECT id, strpos(email, '@'), octet_length(email) FROM people WHERE id > 1 ORDER BY id",
])
def test_on_a_table(conns, people, sql):
    same(conns, sql)
