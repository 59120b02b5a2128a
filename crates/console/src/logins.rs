//! Logged-in browsers: a random token (the cookie) for each, and the connection it logged
//! in with. A login idle for `IDLE_LIMIT` ends, and at most `MAX_LOGINS` are kept (the
//! least recently used goes first), so a console cannot hold many connections.

use coordinator::Connector;
use parking_lot::Mutex;
use rand::RngCore;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, NoTls};

const IDLE_LIMIT: Duration = Duration::from_secs(30 * 60);
const MAX_LOGINS: usize = 64;

/// One browser's login: its role and its connection.
pub(crate) struct Login {
    pub(crate) user: String,
    pub(crate) client: Client,
    last_used: Mutex<Instant>,
}

impl Login {
    /// Connects to the coordinator as `user` as if from `peer`; Err: the server's reason
    /// (its ErrorResponse message, as psql would show it).
    pub(crate) async fn connect(
        connector: &Connector,
        peer: SocketAddr,
        user: &str,
        password: &str,
    ) -> Result<Login, String> {
        let stream = connector
            .connect_as(peer)
            .map_err(|e| format!("could not connect: {e}"))?;
        let mut config = tokio_postgres::Config::new();
        config
            .user(user)
            .dbname("postgres")
            .application_name("meridian console")
            .ssl_mode(SslMode::Disable);
        if !password.is_empty() {
            config.password(password);
        }
        let (client, connection) = config
            .connect_raw(stream, NoTls)
            .await
            .map_err(|e| message(&e))?;
        drop(tokio::spawn(connection));
        tracing::info!(user, %peer, "console login");
        Ok(Login {
            user: user.to_string(),
            client,
            last_used: Mutex::new(Instant::now()),
        })
    }
}

/// What the server said, or what went wrong on the way.
pub(crate) fn message(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map_or_else(|| e.to_string(), |db| db.message().to_string())
}

#[derive(Default)]
pub(crate) struct Logins(Mutex<HashMap<String, Arc<Login>>>);

impl Logins {
    /// Keeps `login` under a new token, which it returns.
    pub(crate) fn insert(&self, login: Login) -> String {
        let mut bytes = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut logins = self.0.lock();
        if logins.len() >= MAX_LOGINS {
            let oldest = (logins.iter())
                .min_by_key(|(_, l)| *l.last_used.lock())
                .map(|(t, _)| t.clone());
            if let Some(oldest) = oldest {
                logins.remove(&oldest);
            }
        }
        logins.insert(token.clone(), Arc::new(login));
        token
    }

    /// The login of `token`, marked used now.
    pub(crate) fn get(&self, token: &str) -> Option<Arc<Login>> {
        let login = self.0.lock().get(token).cloned()?;
        *login.last_used.lock() = Instant::now();
        Some(login)
    }

    /// Ends the login of `token` (its connection closes with the last request using it).
    pub(crate) fn remove(&self, token: &str) {
        self.0.lock().remove(token);
    }

    /// Ends the logins idle too long, or whose connection ended.
    pub(crate) fn expire(&self) {
        self.0
            .lock()
            .retain(|_, l| l.last_used.lock().elapsed() < IDLE_LIMIT && !l.client.is_closed());
    }
}
