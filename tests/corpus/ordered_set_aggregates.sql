-- Ordered-set aggregates: percentile_cont, percentile_disc, mode() WITHIN GROUP.
DROP TABLE IF EXISTS cos_t;
DROP TABLE IF EXISTS cos_small;
CREATE TABLE cos_t (id int PRIMARY KEY, g int, i int, f float8, n numeric(8,2), s text, d date, iv interval);
INSERT INTO cos_t SELECT x, x % 5,
  CASE WHEN x % 11 = 0 THEN NULL ELSE (x * 37) % 101 END,
  CASE WHEN x % 13 = 0 THEN NULL ELSE ((x * 13) % 97) / 4.0 END,
  CASE WHEN x % 17 = 0 THEN NULL ELSE ((x * 7) % 53) * 0.25 END,
  CASE WHEN x % 19 = 0 THEN NULL ELSE 's' || lpad(((x * 3) % 89)::text, 3, '0') END,
  CASE WHEN x % 23 = 0 THEN NULL ELSE DATE '2020-01-01' + (x * 11) % 400 END,
  CASE WHEN x % 29 = 0 THEN NULL ELSE interval '1 hour' * ((x * 5) % 31) END
FROM generate_series(1, 3000) AS x;
CREATE TABLE cos_small (id int PRIMARY KEY, g text, v int);
INSERT INTO cos_small VALUES (1, 'a', 1), (2, 'a', 2), (3, 'a', 2), (4, 'a', 3), (5, 'b', 10), (6, 'b', NULL), (7, 'b', 20), (8, 'c', NULL), (9, 'd', 5);
SELECT count(*) FROM cos_t;

-- over VALUES
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (3), (4)) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (3), (4)) AS v(x);
SELECT mode() WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (2), (3), (3), (4)) AS v(x);
SELECT mode() WITHIN GROUP (ORDER BY x DESC) FROM (VALUES (1), (2), (2), (3), (3), (4)) AS v(x);
SELECT percentile_cont(0) WITHIN GROUP (ORDER BY x), percentile_cont(1) WITHIN GROUP (ORDER BY x) FROM (VALUES (5), (1), (9)) AS v(x);
SELECT percentile_disc(0) WITHIN GROUP (ORDER BY x), percentile_disc(1) WITHIN GROUP (ORDER BY x) FROM (VALUES (5), (1), (9)) AS v(x);
SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY x), percentile_cont(0.75) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (3), (4), (5)) AS v(x);
SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY x), percentile_disc(0.75) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (3), (4), (5)) AS v(x);
SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY x) FROM (VALUES (1.5), (2.5), (10.0)) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x DESC) FROM (VALUES (1), (2), (10)) AS v(x);
SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY x DESC) FROM (VALUES (1), (2), (10), (40)) AS v(x);
SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY x DESC) FROM (VALUES (1), (2), (10), (40)) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (7)) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY x) FROM (VALUES ('pear'), ('apple'), ('fig'), ('apple')) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x DESC) FROM (VALUES ('pear'), ('apple'), ('fig')) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1.5::float4), (2.5::float4)) AS v(x);
SELECT percentile_cont(0.1) WITHIN GROUP (ORDER BY x) FROM (VALUES (1e300::float8), (-1e300::float8)) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1::bigint), (2::bigint)) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (true), (false), (true)) AS v(x);
SELECT mode() WITHIN GROUP (ORDER BY x) FROM (VALUES (true), (false), (true)) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (DATE '2021-03-01'), (DATE '2020-01-01'), (DATE '2022-12-31')) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (TIMESTAMP '2021-03-01 10:00'), (TIMESTAMP '2020-01-01 00:00')) AS v(x);

-- NULL inputs, empty input, NULL fraction, out of range
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (NULL), (3), (NULL)) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (NULL::int), (NULL), (5)) AS v(x);
SELECT mode() WITHIN GROUP (ORDER BY x) FROM (VALUES (NULL::int), (NULL), (5)) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY x) FROM (VALUES (NULL::int), (NULL)) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i) FROM cos_t WHERE false;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY s), mode() WITHIN GROUP (ORDER BY d) FROM cos_t WHERE id < 0;
SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY i) FROM cos_t WHERE false;
SELECT percentile_cont(NULL) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_disc(NULL) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_cont(-0.1) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_disc(2) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_disc('NaN'::float8) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (NULL::int)) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i) FROM cos_t WHERE i IS NULL;
SELECT percentile_cont('0.5') WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (4)) AS v(x);

-- array forms
SELECT percentile_cont(ARRAY[0.0, 0.25, 0.5, 1.0]) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (3), (4), (5)) AS v(x);
SELECT percentile_disc(ARRAY[0.0, 0.25, 0.5, 1.0]) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (3), (4), (5)) AS v(x);
SELECT percentile_cont(ARRAY[0.5, NULL, 0.1]) WITHIN GROUP (ORDER BY x) FROM (VALUES (10), (20)) AS v(x);
SELECT percentile_disc(ARRAY[0.9, 0.1]) WITHIN GROUP (ORDER BY x DESC) FROM (VALUES ('a'), ('b'), ('c')) AS v(x);
SELECT percentile_cont(ARRAY[0.5, 1.5]) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_cont(ARRAY[0.5, 1.5]) WITHIN GROUP (ORDER BY x) FROM (VALUES (NULL::int)) AS v(x);
SELECT percentile_disc(ARRAY[]::float8[]) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_disc(NULL::float8[]) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2)) AS v(x);
SELECT percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY i) FROM cos_t WHERE false;
SELECT percentile_cont(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY f), percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY n) FROM cos_t;
SELECT percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY d), percentile_disc(ARRAY[0.33, 0.66]) WITHIN GROUP (ORDER BY s DESC) FROM cos_t;

-- over the table: ints, floats, numerics, text, dates, intervals
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i), percentile_disc(0.5) WITHIN GROUP (ORDER BY i), mode() WITHIN GROUP (ORDER BY i) FROM cos_t;
SELECT percentile_cont(0.37) WITHIN GROUP (ORDER BY f), percentile_disc(0.37) WITHIN GROUP (ORDER BY f), mode() WITHIN GROUP (ORDER BY f) FROM cos_t;
SELECT percentile_cont(0.61) WITHIN GROUP (ORDER BY n), percentile_disc(0.61) WITHIN GROUP (ORDER BY n), mode() WITHIN GROUP (ORDER BY n) FROM cos_t;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY s), mode() WITHIN GROUP (ORDER BY s), percentile_disc(0.01) WITHIN GROUP (ORDER BY s DESC) FROM cos_t;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY d), mode() WITHIN GROUP (ORDER BY d), percentile_disc(0.99) WITHIN GROUP (ORDER BY d DESC) FROM cos_t;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY iv), percentile_cont(0.33) WITHIN GROUP (ORDER BY iv), percentile_disc(0.5) WITHIN GROUP (ORDER BY iv) FROM cos_t;
SELECT percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY iv DESC) FROM cos_t;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.3) WITHIN GROUP (ORDER BY x DESC) FROM (VALUES (interval '1 day'), (interval '1 month 3 hours'), (NULL)) AS v(x);
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY x) FROM (VALUES (interval '2 hours'), (interval '1 day'), (interval '2 hours')) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.25) WITHIN GROUP (ORDER BY x) FROM (VALUES ('Infinity'::float8), (1), (2)) AS v(x);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(1) WITHIN GROUP (ORDER BY x) FROM (VALUES ('NaN'::float8), (1), (2)) AS v(x);
SELECT percentile_cont(0) WITHIN GROUP (ORDER BY i), percentile_cont(1) WITHIN GROUP (ORDER BY i), min(i), max(i) FROM cos_t;
SELECT percentile_disc(0) WITHIN GROUP (ORDER BY f DESC), percentile_disc(1) WITHIN GROUP (ORDER BY f DESC), max(f), min(f) FROM cos_t;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i DESC), percentile_cont(0.2) WITHIN GROUP (ORDER BY i DESC), percentile_cont(0.8) WITHIN GROUP (ORDER BY i) FROM cos_t;
SELECT mode() WITHIN GROUP (ORDER BY g DESC), mode() WITHIN GROUP (ORDER BY g) FROM cos_t;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i + f) FROM cos_t;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY length(s)), mode() WITHIN GROUP (ORDER BY i % 7) FROM cos_t;

-- GROUP BY, HAVING, FILTER, mixed with other aggregates
SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY i), percentile_disc(0.5) WITHIN GROUP (ORDER BY i), mode() WITHIN GROUP (ORDER BY i) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, percentile_cont(0.9) WITHIN GROUP (ORDER BY f), percentile_disc(0.1) WITHIN GROUP (ORDER BY n) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY s), mode() WITHIN GROUP (ORDER BY d DESC) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, count(*), sum(i), avg(n), percentile_cont(0.5) WITHIN GROUP (ORDER BY i) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, count(i), min(s), percentile_disc(0.5) WITHIN GROUP (ORDER BY s), max(s) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY i) FILTER (WHERE id % 2 = 0), percentile_cont(0.5) WITHIN GROUP (ORDER BY i) FILTER (WHERE id % 2 = 1) FROM cos_t GROUP BY g ORDER BY g;
SELECT mode() WITHIN GROUP (ORDER BY i) FILTER (WHERE g = 3), percentile_disc(0.5) WITHIN GROUP (ORDER BY i) FILTER (WHERE false) FROM cos_t;
SELECT percentile_cont(2) WITHIN GROUP (ORDER BY i) FILTER (WHERE false) FROM cos_t;
SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY i) AS med FROM cos_t GROUP BY g HAVING percentile_cont(0.5) WITHIN GROUP (ORDER BY i) > 49 ORDER BY g;
SELECT g FROM cos_t GROUP BY g HAVING mode() WITHIN GROUP (ORDER BY i) < 50 ORDER BY g;
SELECT g, count(*) FROM cos_t GROUP BY g HAVING percentile_disc(0.5) WITHIN GROUP (ORDER BY s) >= 's044' ORDER BY g;
SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY i) FROM cos_t GROUP BY g ORDER BY percentile_cont(0.5) WITHIN GROUP (ORDER BY i) DESC, g;
SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY i) - percentile_cont(0.25) WITHIN GROUP (ORDER BY i) AS spread FROM cos_t GROUP BY g ORDER BY g;
SELECT g, array_agg(i ORDER BY i DESC) FILTER (WHERE id <= 20), percentile_disc(0.5) WITHIN GROUP (ORDER BY s) FILTER (WHERE id <= 20) FROM cos_t GROUP BY g ORDER BY g;
SELECT string_agg(s, ',' ORDER BY s) FILTER (WHERE id < 30), percentile_disc(0.5) WITHIN GROUP (ORDER BY i DESC) FROM cos_t;
SELECT g, percentile_disc(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY i) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY n DESC) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, percentile_disc(g / 10.0) WITHIN GROUP (ORDER BY i) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, percentile_cont(g / 4.0) WITHIN GROUP (ORDER BY f) FROM cos_t GROUP BY g ORDER BY g;
SELECT g, percentile_cont(g / 2.0) WITHIN GROUP (ORDER BY f) FROM cos_t GROUP BY g ORDER BY g;
SELECT i % 10 AS k, mode() WITHIN GROUP (ORDER BY g), count(*) FROM cos_t WHERE i IS NOT NULL GROUP BY i % 10 ORDER BY k;
SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY v), percentile_disc(0.5) WITHIN GROUP (ORDER BY v), mode() WITHIN GROUP (ORDER BY v), count(v) FROM cos_small GROUP BY g ORDER BY g;
SELECT g, percentile_cont(1.5) WITHIN GROUP (ORDER BY v) FROM cos_small GROUP BY g ORDER BY g;
SELECT g, percentile_cont(1.5) WITHIN GROUP (ORDER BY v) FILTER (WHERE v IS NULL) FROM cos_small WHERE g IN ('c', 'd') GROUP BY g ORDER BY g;
SELECT (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM cos_small s WHERE s.g = o.g) FROM (VALUES ('a'), ('b'), ('z')) AS o(g) ORDER BY 1;
SELECT * FROM (SELECT g, mode() WITHIN GROUP (ORDER BY i) AS m FROM cos_t GROUP BY g) AS sub WHERE m IS NOT NULL ORDER BY g;
SELECT count(*) FROM cos_t WHERE i > (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i) FROM cos_t);

-- result types
SELECT pg_typeof(percentile_cont(0.5) WITHIN GROUP (ORDER BY i)), pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY i)), pg_typeof(mode() WITHIN GROUP (ORDER BY i)) FROM cos_t;
SELECT pg_typeof(percentile_cont(0.5) WITHIN GROUP (ORDER BY n)), pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY n)), pg_typeof(mode() WITHIN GROUP (ORDER BY s)) FROM cos_t;
SELECT pg_typeof(percentile_cont(0.5) WITHIN GROUP (ORDER BY iv)), pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY d)), pg_typeof(percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY d)) FROM cos_t;
SELECT pg_typeof(percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY i)), pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY f)) FROM cos_t;

-- errors
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM cos_t;
SELECT percentile_cont(0.5) FROM cos_t;
SELECT mode(i) WITHIN GROUP (ORDER BY i) FROM cos_t;
SELECT sum(i) WITHIN GROUP (ORDER BY i) FROM cos_t;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i) OVER () FROM cos_t;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i, f) FROM cos_t;
SELECT percentile_disc(i) WITHIN GROUP (ORDER BY i) FROM cos_t;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY sum(i)) FROM cos_t;
SELECT id, percentile_disc(0.5) WITHIN GROUP (ORDER BY i) FROM cos_t;
SELECT * FROM cos_t WHERE percentile_disc(0.5) WITHIN GROUP (ORDER BY i) > 1;

DROP TABLE cos_t;
DROP TABLE cos_small;
