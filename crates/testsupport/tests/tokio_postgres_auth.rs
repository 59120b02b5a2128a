//! tokio-postgres logging in to a Meridian server that asks for passwords
//! (`--hba-file`, `--superuser-password`; docs/decisions/0040): SCRAM-SHA-256 and md5
//! through tokio-postgres' own implementation, a wrong password and a missing role
//! refused with 28P01, a rejected one with 28000, and `current_user` the role that
//! logged in.

use testsupport::{ServerOptions, TestServer};
use tokio_postgres::{Client, NoTls};

const HBA: &str = "\
host all md5user 127.0.0.1/32 md5
host all shut_out 127.0.0.1/32 reject
host all all 127.0.0.1/32 scram-sha-256
";

async fn login(server: &TestServer, user: &str, password: &str) -> Result<Client, String> {
    let mut config = tokio_postgres::Config::new();
    config
        .host(&server.host)
        .port(server.port)
        .user(user)
        .password(password)
        .dbname("postgres")
        .connect_timeout(std::time::Duration::from_secs(10));
    match config.connect(NoTls).await {
        Ok((client, connection)) => {
            tokio::spawn(connection);
            Ok(client)
        }
        Err(e) => Err(e
            .code()
            .map_or_else(|| e.to_string(), |c| c.code().to_string())),
    }
}

async fn current_user(client: &Client) -> String {
    client
        .query_one("SELECT current_user", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_and_md5_logins() {
    let dir = std::env::temp_dir().join(format!("meridian-tokio-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hba = dir.join("pg_hba.conf");
    std::fs::write(&hba, HBA).unwrap();
    let server = TestServer::start_with(ServerOptions {
        args: vec![
            "--hba-file".into(),
            hba.display().to_string(),
            "--superuser-password".into(),
            "su secret".into(),
        ],
        ..Default::default()
    });
    let admin = login(&server, "postgres", "su secret")
        .await
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log_tail()));
    assert_eq!(current_user(&admin).await, "postgres");
    admin
        .batch_execute(
            "CREATE USER scram_user PASSWORD 'p1'; \
             SET password_encryption = 'md5'; CREATE USER md5user PASSWORD 'p2'; \
             CREATE USER shut_out PASSWORD 'p3'",
        )
        .await
        .unwrap();

    let scram = login(&server, "scram_user", "p1").await.unwrap();
    assert_eq!(current_user(&scram).await, "scram_user");
    let md5 = login(&server, "md5user", "p2").await.unwrap();
    assert_eq!(current_user(&md5).await, "md5user");

    for (user, password, code) in [
        ("scram_user", "wrong", "28P01"),
        ("md5user", "wrong", "28P01"),
        ("postgres", "", "28P01"),
        ("nobody", "x", "28P01"),
        ("shut_out", "p3", "28000"),
    ] {
        assert_eq!(
            login(&server, user, password).await.err().as_deref(),
            Some(code),
            "{user}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("the openssl CLI (scripts/test.sh installs it)");
    assert!(status.success(), "openssl {args:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_over_tls() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    let dir = std::env::temp_dir().join(format!("meridian-tokio-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=test CA",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName = IP:127.0.0.1\n").unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ],
    );
    std::fs::write(
        dir.join("pg_hba.conf"),
        "hostssl all all 127.0.0.1/32 scram-sha-256\n",
    )
    .unwrap();
    let path = |f: &str| dir.join(f).display().to_string();
    let server = TestServer::start_with(ServerOptions {
        args: vec![
            "--hba-file".into(),
            path("pg_hba.conf"),
            "--tls-cert".into(),
            path("server.crt"),
            "--tls-key".into(),
            path("server.key"),
            "--superuser-password".into(),
            "over tls".into(),
        ],
        ..Default::default()
    });

    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(dir.join("ca.crt")).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut config = tokio_postgres::Config::new();
    config
        .host(&server.host)
        .port(server.port)
        .user("postgres")
        .password("over tls")
        .dbname("postgres")
        .ssl_mode(tokio_postgres::config::SslMode::Require)
        .connect_timeout(std::time::Duration::from_secs(10));
    let (client, connection) = config
        .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
        .await
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log_tail()));
    tokio::spawn(connection);
    assert_eq!(current_user(&client).await, "postgres");

    // The rules admit TLS connections only.
    let plain = login(&server, "postgres", "over tls").await.err();
    assert_eq!(plain.as_deref(), Some("28000"));
    std::fs::remove_dir_all(&dir).ok();
}
