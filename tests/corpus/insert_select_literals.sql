-- INSERT … SELECT with string literals in the select list, which PostgreSQL types by the
-- target columns (a plain SELECT only: under UNION or in a subquery they are text)
-- (prefix cil_).
DROP TABLE IF EXISTS cil_t;
CREATE TABLE cil_t (id int PRIMARY KEY, j jsonb, ts timestamp, n numeric(6,2), v varchar(3), b bool, d date);
INSERT INTO cil_t SELECT i, '[1, 2]', '2020-01-02 03:04:05', '1.005', 'abc', 't', '2024-02-29' FROM generate_series(1, 3) i;
INSERT INTO cil_t (id, j) SELECT 4, '{"a": 1}';
INSERT INTO cil_t (id, n, b) SELECT 5 AS id, '12.5' AS n, 'yes' AS b;
INSERT INTO cil_t (id, j) SELECT 6, '{bad';
INSERT INTO cil_t (id, n) SELECT 7, 'x';
INSERT INTO cil_t (id, v) SELECT 8, 'abcd';
INSERT INTO cil_t (id, j) SELECT 10, '[1]' UNION ALL SELECT 11, '[2]';
INSERT INTO cil_t (id, j) SELECT * FROM (SELECT 20, '[1]') s;
INSERT INTO cil_t (id, d) SELECT 30, $$2024-03-01$$;
SELECT * FROM cil_t ORDER BY id;
DROP TABLE cil_t;
