//! tokio-postgres against a real Meridian server (see testsupport::TestServer):
//! connect; DDL; parameterised INSERT/SELECT of int, bigint, numeric, text, bool,
//! timestamp and NULL (binary protocol); transactions with commit/rollback; savepoints;
//! errors carry their SQLSTATE and the session keeps working.
//!
//! Fails (does not skip) when the server binary is missing.  To validate this test
//! against another server, run it with MERIDIAN_TEST_ADDR=host:port.

use std::str::FromStr;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use testsupport::TestServer;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

async fn connect(server: &TestServer) -> Client {
    let (client, connection) = tokio_postgres::connect(&server.connection_string(), NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "connect to {}: {e}\nlog:\n{}",
                server.url(),
                server.log_tail()
            )
        });
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("connection error: {e}");
        }
    });
    client
}

fn sqlstate(err: &tokio_postgres::Error) -> Option<String> {
    err.code().map(|c| c.code().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_driver_checks() {
    let server = TestServer::start();
    let client = connect(&server).await;

    client
        .batch_execute("DROP TABLE IF EXISTS drv_tokio")
        .await
        .unwrap();
    client
        .batch_execute(
            "CREATE TABLE drv_tokio (id int PRIMARY KEY, i int, b bigint, n numeric(20, 6), \
             t text, f bool, ts timestamp, x int)",
        )
        .await
        .unwrap();

    let ts1 = NaiveDate::from_ymd_opt(2024, 1, 2)
        .unwrap()
        .and_hms_micro_opt(3, 4, 5, 678_901)
        .unwrap();
    let ts2 = NaiveDate::from_ymd_opt(1999, 12, 31)
        .unwrap()
        .and_hms_opt(23, 59, 59)
        .unwrap();
    let n1 = Decimal::from_str("12345678901234.123456").unwrap();
    let n2 = Decimal::from_str("-0.000001").unwrap();
    let t2 = "quotes ' \" back\\slash, unicode: żółw 漢字 🐢";

    let insert = client
        .prepare("INSERT INTO drv_tokio (id, i, b, n, t, f, ts, x) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .await
        .unwrap();
    let none: Option<i32> = None;
    let n = client
        .execute(
            &insert,
            &[
                &1i32,
                &42i32,
                &i64::MAX,
                &n1,
                &"plain ascii",
                &true,
                &ts1,
                &none,
            ],
        )
        .await
        .unwrap();
    assert_eq!(n, 1);
    let n = client
        .execute(
            &insert,
            &[
                &2i32,
                &i32::MIN,
                &i64::MIN,
                &n2,
                &t2,
                &false,
                &ts2,
                &Some(7i32),
            ],
        )
        .await
        .unwrap();
    assert_eq!(n, 1);

    let rows = client
        .query(
            "SELECT id, i, b, n, t, f, ts, x FROM drv_tokio ORDER BY id",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].get::<_, i32>(0), 1);
    assert_eq!(rows[0].get::<_, i32>(1), 42);
    assert_eq!(rows[0].get::<_, i64>(2), i64::MAX);
    assert_eq!(rows[0].get::<_, Decimal>(3), n1);
    assert_eq!(rows[0].get::<_, String>(4), "plain ascii");
    assert!(rows[0].get::<_, bool>(5));
    assert_eq!(rows[0].get::<_, chrono::NaiveDateTime>(6), ts1);
    assert_eq!(rows[0].get::<_, Option<i32>>(7), None);
    assert_eq!(rows[1].get::<_, i32>(1), i32::MIN);
    assert_eq!(rows[1].get::<_, i64>(2), i64::MIN);
    assert_eq!(rows[1].get::<_, Decimal>(3), n2);
    assert_eq!(rows[1].get::<_, &str>(4), t2);
    assert!(!rows[1].get::<_, bool>(5));
    assert_eq!(rows[1].get::<_, chrono::NaiveDateTime>(6), ts2);
    assert_eq!(rows[1].get::<_, Option<i32>>(7), Some(7));

    // parameter in WHERE, reused prepared statement, NULL parameter
    let by_id = client
        .prepare("SELECT t FROM drv_tokio WHERE id = $1")
        .await
        .unwrap();
    for _ in 0..5 {
        let row = client.query_one(&by_id, &[&2i32]).await.unwrap();
        assert_eq!(row.get::<_, &str>(0), t2);
    }
    let row = client
        .query_one("SELECT $1::int IS NULL", &[&none])
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0));
    let row = client
        .query_one("SELECT count(*) FROM drv_tokio WHERE x IS NULL", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1);
    // simple query protocol
    let msgs = client
        .simple_query("SELECT 1 AS one; SELECT 'two'")
        .await
        .unwrap();
    let data_rows = msgs
        .iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
        .count();
    assert_eq!(data_rows, 2);

    // transactions: rollback and commit
    let mut client = client;
    {
        let tx = client.transaction().await.unwrap();
        tx.execute("UPDATE drv_tokio SET x = 100 WHERE id = 1", &[])
            .await
            .unwrap();
        tx.rollback().await.unwrap();
    }
    let row = client
        .query_one("SELECT x FROM drv_tokio WHERE id = 1", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i32>>(0), None);
    {
        let mut tx = client.transaction().await.unwrap();
        tx.execute("UPDATE drv_tokio SET x = 1 WHERE id = 1", &[])
            .await
            .unwrap();
        {
            let sp = tx.savepoint("sp1").await.unwrap();
            sp.execute("UPDATE drv_tokio SET x = 2 WHERE id = 1", &[])
                .await
                .unwrap();
            let err = sp
                .execute("INSERT INTO drv_tokio (id) VALUES ($1)", &[&1i32])
                .await
                .unwrap_err();
            assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION));
            sp.rollback().await.unwrap();
        }
        {
            let sp = tx.savepoint("sp2").await.unwrap();
            sp.execute("UPDATE drv_tokio SET i = 43 WHERE id = 1", &[])
                .await
                .unwrap();
            sp.commit().await.unwrap(); // RELEASE
        }
        tx.commit().await.unwrap();
    }
    let row = client
        .query_one("SELECT x, i FROM drv_tokio WHERE id = 1", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i32>>(0), Some(1));
    assert_eq!(row.get::<_, i32>(1), 43);

    // errors carry SQLSTATE and the session continues
    for (sql, state) in [
        ("INSERT INTO drv_tokio (id) VALUES (1)", "23505"),
        ("SELECT 1 / 0", "22012"),
        ("SELECT * FROM drv_no_such_table", "42P01"),
    ] {
        let err = client.execute(sql, &[]).await.unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some(state), "{sql}: {err:?}");
        let row = client.query_one("SELECT 1::int", &[]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 1);
    }
    let err = client
        .query("SELECT 1 / $1::int", &[&0i32])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("22012"));
    {
        let tx = client.transaction().await.unwrap();
        let err = tx.execute("SELECT 1 / 0", &[]).await.unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some("22012"));
        let err = tx.execute("SELECT 1", &[]).await.unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some("25P02"));
        tx.rollback().await.unwrap();
    }
    let row = client.query_one("SELECT 1::int", &[]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 1);
}
