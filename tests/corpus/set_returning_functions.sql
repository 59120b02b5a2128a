-- Set-returning functions (issue 31 item 6; issue 29: no query is quadratic in an
-- array's length): unnest of one and several arrays, WITH ORDINALITY on any function in
-- FROM, and unnest, generate_series and the functions over text and jsonb in select
-- lists, which run in lockstep, also after grouping (prefix csrf_).
DROP TABLE IF EXISTS csrf_t;
CREATE TABLE csrf_t (id int PRIMARY KEY, a int[], s text, j jsonb);
INSERT INTO csrf_t VALUES (1, '{1,2,3}', 'a,b', '[10, "x"]'), (2, '{}', '', '[]'), (3, NULL, NULL, NULL), (4, '{7}', 'z', '{"k": 1, "l": [2]}');
-- unnest in FROM
SELECT * FROM unnest(ARRAY[3, 1, 2]) ORDER BY 1;
SELECT * FROM unnest(ARRAY[3, 1, 2]) WITH ORDINALITY ORDER BY 2;
SELECT * FROM unnest(ARRAY[3, 1, 2]) WITH ORDINALITY AS t ORDER BY 2;
SELECT * FROM unnest(ARRAY[3, 1, 2]) WITH ORDINALITY AS t(v, n) ORDER BY n;
SELECT t.v FROM unnest(ARRAY['x', 'y']) AS t(v) ORDER BY 1;
SELECT t FROM unnest(ARRAY['x', 'y']) AS t ORDER BY 1;
SELECT * FROM unnest(ARRAY[1, 2], ARRAY['a']) ORDER BY 1;
SELECT * FROM unnest(ARRAY[1, 2], ARRAY['a']) AS t ORDER BY 1;
SELECT * FROM unnest(ARRAY[1], ARRAY['a', 'b', 'c']) WITH ORDINALITY AS t(x) ORDER BY 3;
SELECT * FROM unnest(ARRAY[1], ARRAY['a', 'b'], ARRAY[true, false, NULL]) WITH ORDINALITY AS t(x, y, z, n) ORDER BY n;
SELECT * FROM unnest(ARRAY[]::int[], ARRAY[]::text[]);
SELECT * FROM unnest(ARRAY[]::int[], ARRAY[5]);
SELECT * FROM unnest(NULL::int[]);
SELECT * FROM unnest(ARRAY[[1, 2], [3, 4]]) WITH ORDINALITY ORDER BY 2;
SELECT * FROM unnest(ARRAY[[1, 2], [3, 4]], ARRAY[9]) WITH ORDINALITY ORDER BY 3;
SELECT * FROM unnest(ARRAY[1, 2]) WITH ORDINALITY AS t(x, n) WHERE n = 2;
SELECT count(*), sum(x) FROM unnest((SELECT array_agg(i) FROM generate_series(1, 200000) i)) x;
SELECT count(*), max(n) FROM unnest((SELECT array_agg(i) FROM generate_series(1, 200000) i)) WITH ORDINALITY AS t(x, n);
SELECT * FROM unnest(1);
SELECT * FROM unnest(ARRAY[1], 2);
-- other functions WITH ORDINALITY
SELECT * FROM generate_series(5, 7) WITH ORDINALITY ORDER BY 2;
SELECT * FROM generate_series(5, 7) WITH ORDINALITY AS g(v, n) ORDER BY n;
SELECT g.n FROM generate_series(5, 7) WITH ORDINALITY AS g(v, n) WHERE v > 5 ORDER BY 1;
SELECT * FROM regexp_split_to_table('a b c', ' ') WITH ORDINALITY ORDER BY 2;
SELECT * FROM string_to_table('a|b', '|') WITH ORDINALITY AS p(piece, at) ORDER BY at;
SELECT * FROM regexp_matches('a1b22', '(\d+)', 'g') WITH ORDINALITY ORDER BY 2;
SELECT * FROM jsonb_array_elements('[1, "x", null]') WITH ORDINALITY ORDER BY 2;
SELECT * FROM jsonb_array_elements_text('[1, "x", null]') WITH ORDINALITY AS e(v, n) ORDER BY n;
SELECT * FROM jsonb_each('{"a": 1, "b": [2]}') WITH ORDINALITY ORDER BY 3;
SELECT * FROM jsonb_each_text('{"a": "x"}') WITH ORDINALITY AS j(k, v, n);
SELECT * FROM jsonb_object_keys('{"b": 1, "a": 2}') WITH ORDINALITY ORDER BY 2;
SELECT * FROM jsonb_each('{"a": 1}') AS t;
SELECT * FROM jsonb_array_elements('{"a": 1}');
SELECT * FROM jsonb_object_keys('[1]');
SELECT count(*) FROM regexp_split_to_table(repeat('ab,', 50000), ',');
SELECT count(*), count(DISTINCT m) FROM regexp_matches(repeat('ab1', 30000), '\d', 'g') AS t(m);
-- laterally over a table's rows
SELECT id, x FROM csrf_t, unnest(a) AS x ORDER BY id, x;
SELECT id, x, n FROM csrf_t, unnest(a) WITH ORDINALITY AS u(x, n) ORDER BY id, n;
SELECT id, p FROM csrf_t, string_to_table(s, ',') AS p ORDER BY id, p;
SELECT id, e FROM (SELECT * FROM csrf_t WHERE jsonb_typeof(j) = 'array') t, jsonb_array_elements(t.j) AS e ORDER BY id, e::text;
SELECT id, u.* FROM csrf_t LEFT JOIN LATERAL unnest(a) WITH ORDINALITY AS u(x, n) ON true ORDER BY id, n;
-- in select lists: lockstep, NULL past a function's last row
SELECT unnest(ARRAY[1, 2, 3]);
SELECT unnest(ARRAY[1, 2, 3]), unnest(ARRAY['a', 'b']);
SELECT unnest(ARRAY[1, 2, 3]) + 1 AS x, regexp_split_to_table('a,b', ',');
SELECT generate_series(1, 3);
SELECT generate_series(1, 3) AS a, generate_series(1, 2) AS b;
SELECT generate_series(1, 2) + 10 AS g, 'k';
SELECT generate_series('2024-01-01'::timestamp, '2024-01-03', '1 day');
SELECT generate_series(1, 3) LIMIT 2;
SELECT unnest(ARRAY['b', 'a']) AS v ORDER BY v;
SELECT DISTINCT unnest(ARRAY[1, 1, 2]) ORDER BY 1;
SELECT unnest(NULL::int[]), 1;
SELECT unnest(ARRAY[]::int[]), generate_series(1, 0);
SELECT regexp_matches('abcabc', '(b)(c)', 'g'), string_to_table('x y z', ' ');
SELECT jsonb_array_elements('[1, 2]'), jsonb_object_keys('{"a": 1}');
SELECT jsonb_array_elements_text('["p", "q"]') AS v ORDER BY v;
SELECT id, unnest(a) FROM csrf_t ORDER BY 1, 2;
SELECT id, unnest(a) AS x, generate_series(1, 2) AS g FROM csrf_t ORDER BY 1, 3, 2;
SELECT id, generate_series(1, id) FROM csrf_t ORDER BY 1, 2;
SELECT x, unnest(string_to_array(x, ',')) AS u FROM (VALUES ('a,b'), ('c')) v(x) ORDER BY x, u;
SELECT count(*), sum(u) FROM (SELECT unnest(a) AS u FROM csrf_t) s;
SELECT count(*) FROM (SELECT generate_series(1, 100000)) s;
SELECT count(*), sum(x) FROM (SELECT unnest(a) AS x FROM (SELECT array_agg(i) AS a FROM generate_series(1, 200000) i) s) t;
-- after grouping
SELECT g, unnest(array_agg(x ORDER BY x)) FROM (VALUES (1, 3), (1, 2), (2, 5)) v(g, x) GROUP BY g ORDER BY g, 2;
SELECT count(*), generate_series(1, max(x)) AS s FROM (VALUES (2), (3)) v(x);
SELECT DISTINCT unnest(array_agg(x)) AS u FROM (VALUES (1), (1), (2)) v(x) ORDER BY u;
SELECT g, count(*), string_to_table(string_agg(t, ','), ',') AS p FROM (VALUES (1, 'a'), (1, 'b'), (2, 'c')) v(g, t) GROUP BY g HAVING count(*) > 1 ORDER BY p;
SELECT unnest(array_agg(id)) AS i FROM csrf_t WHERE a IS NOT NULL ORDER BY i;
SELECT count(*) FROM (SELECT unnest(array_agg(i)) FROM generate_series(1, 200000) i) s;
DROP TABLE csrf_t;
