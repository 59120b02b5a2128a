// node-postgres checks; connection from env PGURL. Exits non-zero on the first failure.
'use strict';
const assert = require('assert/strict');
const { Client } = require('pg');

// parse timestamps (without time zone) as strings so the check does not depend on TZ
const types = require('pg').types;
types.setTypeParser(1114, (v) => v);

async function expectError(client, sql, params, sqlstate) {
  try {
    await client.query(sql, params);
  } catch (e) {
    assert.equal(e.code, sqlstate, `${sql}: expected SQLSTATE ${sqlstate}, got ${e.code} (${e.message})`);
    return;
  }
  throw new Error(`${sql}: expected an error ${sqlstate}`);
}

async function main() {
  const client = new Client({ connectionString: process.env.PGURL, connectionTimeoutMillis: 10000 });
  await client.connect();
  try {
    await client.query('DROP TABLE IF EXISTS drv_node');
    await client.query('CREATE TABLE drv_node (id int PRIMARY KEY, i int, b bigint, n numeric(20, 6), ' +
                       't text, f bool, ts timestamp, x int)');
    const rows = [
      [1, 42, '9223372036854775807', '12345678901234.123456', 'plain ascii', true, '2024-01-02 03:04:05.678901', null],
      [2, -2147483648, '-9223372036854775808', '-0.000001', 'quotes \' " back\\slash, unicode: żółw 漢字 🐢', false, '1999-12-31 23:59:59', 7],
      [3, 0, '0', '0', '', true, '2000-02-29 00:00:00', null],
    ];
    for (const r of rows) {
      const res = await client.query('INSERT INTO drv_node (id, i, b, n, t, f, ts, x) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', r);
      assert.equal(res.rowCount, 1);
      assert.equal(res.command, 'INSERT');
    }
    const res = await client.query('SELECT id, i, b, n, t, f, ts, x FROM drv_node ORDER BY id');
    assert.equal(res.rows.length, 3);
    const expected = [
      { id: 1, i: 42, b: '9223372036854775807', n: '12345678901234.123456', t: 'plain ascii', f: true, ts: '2024-01-02 03:04:05.678901', x: null },
      { id: 2, i: -2147483648, b: '-9223372036854775808', n: '-0.000001', t: rows[1][4], f: false, ts: '1999-12-31 23:59:59', x: 7 },
      { id: 3, i: 0, b: '0', n: '0.000000', t: '', f: true, ts: '2000-02-29 00:00:00', x: null },
    ];
    assert.deepEqual(res.rows, expected);
    // simple query protocol (no parameters)
    const simple = await client.query('SELECT count(*) AS c FROM drv_node WHERE x IS NULL');
    assert.equal(simple.rows[0].c, '2');
    const nul = await client.query('SELECT $1::int IS NULL AS isnull', [null]);
    assert.equal(nul.rows[0].isnull, true);
    const upd = await client.query('UPDATE drv_node SET x = $1 WHERE id = $2', [5, 3]);
    assert.equal(upd.rowCount, 1);

    // transactions
    await client.query('BEGIN');
    await client.query('UPDATE drv_node SET x = 1000 WHERE id = 1');
    await client.query('ROLLBACK');
    assert.equal((await client.query('SELECT x FROM drv_node WHERE id = 1')).rows[0].x, null);
    await client.query('BEGIN');
    await client.query('UPDATE drv_node SET x = 1 WHERE id = 1');
    await client.query('SAVEPOINT sp');
    await client.query('UPDATE drv_node SET x = 2 WHERE id = 1');
    await expectError(client, 'INSERT INTO drv_node (id) VALUES ($1)', [1], '23505');
    await client.query('ROLLBACK TO SAVEPOINT sp');
    await client.query('RELEASE SAVEPOINT sp');
    await client.query('COMMIT');
    assert.equal((await client.query('SELECT x FROM drv_node WHERE id = 1')).rows[0].x, 1);

    // errors: SQLSTATE, session continues
    await expectError(client, 'INSERT INTO drv_node (id) VALUES ($1)', [1], '23505');
    await expectError(client, 'SELECT 1 / 0', [], '22012');
    await expectError(client, 'SELECT 1 / $1::int', [0], '22012');
    await expectError(client, 'SELECT * FROM drv_no_such_table', [], '42P01');
    await client.query('BEGIN');
    await expectError(client, 'SELECT 1 / 0', [], '22012');
    await expectError(client, 'SELECT 1', [], '25P02');
    await client.query('ROLLBACK');
    assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1);
  } finally {
    await client.end();
  }
  console.log('node-postgres: all checks passed');
}

main().catch((e) => {
  console.error('node-postgres check failed:', e && e.stack ? e.stack : e);
  process.exit(1);
});
