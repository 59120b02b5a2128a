-- Custom pgbench script: client-side functions, \sleep, \gset, \aset, \if and a
-- pipeline that carries a whole TPC-B transaction, so the TPC-B invariant still holds.
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set z random_zipfian(1, 100, 1.07)
\set g random_gaussian(-500, 500, 2.5)
\set delta (:z - 50) * 7 + :g % 13 - abs(:g) / 100
\sleep 1 ms
SELECT abalance AS before_bal FROM pgbench_accounts WHERE aid = :aid \gset acc_
\if :acc_before_bal >= -1000000000
SELECT :delta AS d2, :aid + 0 AS a2 \aset
\else
SELECT :delta AS d2, :aid AS a2 \aset
\endif
\startpipeline
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :d2 WHERE aid = :a2;
SELECT abalance FROM pgbench_accounts WHERE aid = :a2;
UPDATE pgbench_tellers SET tbalance = tbalance + :d2 WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :d2 WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :a2, :d2, CURRENT_TIMESTAMP);
END;
\endpipeline
