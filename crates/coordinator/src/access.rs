//! Who may connect (decision 0040): the pg_hba.conf rules (reloaded on SIGHUP), the
//! authentication exchange each method needs (SCRAM-SHA-256, md5, cleartext password),
//! the connection limits (`max_connections` with slots reserved for superusers, each
//! role's CONNECTION LIMIT), checked before a session is built, and the slowing down of
//! repeated failed logins.

use crate::role_ddl;
use crate::server::Shared;
use crate::session_io::SessionStream;
use auth::hba::{Connection, Method, Rules};
use auth::password;
use auth::scram::{ScramError, ScramExchange, MECHANISM};
use bytes::{Bytes, BytesMut};
use parking_lot::{Mutex, RwLock};
use pgerror::{codes, PgError, PgResult};
use sql::role::RoleDef;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wire::backend;
use wire::frontend::PasswordBody;
use wire::{decode_message, FrontendMessage};

/// PostgreSQL's superuser_reserved_connections default.
pub const SUPERUSER_RESERVED_CONNECTIONS: usize = 3;
/// The longest authentication message read (a SCRAM message is about 200 bytes).
const MAX_AUTH_MESSAGE: usize = 8 << 10;

/// The rules in force: from the file, or trust for everyone without one.
pub struct AccessRules {
    file: Option<PathBuf>,
    rules: RwLock<Arc<Rules>>,
}

impl AccessRules {
    /// Reads `file` (None: everyone is trusted); a bad file stops the start.
    pub fn load(file: Option<PathBuf>) -> PgResult<AccessRules> {
        let rules = match &file {
            Some(path) => {
                read_rules(path).map_err(|e| PgError::new(codes::CONFIG_FILE_ERROR, e))?
            }
            None => Rules::trust_all(),
        };
        Ok(AccessRules {
            file,
            rules: RwLock::new(Arc::new(rules)),
        })
    }

    /// Reads the file again (SIGHUP): a bad file keeps the rules in force, and says why.
    pub fn reload(&self) {
        let Some(path) = &self.file else { return };
        match read_rules(path) {
            Ok(rules) => {
                *self.rules.write() = Arc::new(rules);
                tracing::info!(file = %path.display(), "reloaded the access rules");
            }
            Err(e) => tracing::warn!("{e}; the previous access rules stay in force"),
        }
    }

    fn method(&self, c: &Connection) -> Option<Method> {
        self.rules.read().method(c)
    }
}

fn read_rules(path: &std::path::Path) -> Result<Rules, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "could not read access rules file \"{}\": {e}",
            path.display()
        )
    })?;
    Rules::parse(&text)
        .map_err(|e| format!("invalid access rules file \"{}\": {e}", path.display()))
}

/// Where a connection comes from, as the rules and the messages name it.
#[derive(Debug, Clone)]
pub struct Peer {
    /// None: the Unix-domain socket.
    pub address: Option<IpAddr>,
    /// The client's port (0 for the Unix-domain socket).
    pub port: u16,
}

impl Peer {
    fn host(&self) -> String {
        self.address
            .map_or_else(|| "[local]".to_string(), |a| a.to_string())
    }
}

/// Open connections, all and per role. A connection holds a `Slot` from its startup
/// packet to its end.
#[derive(Default)]
pub struct ConnectionCounts {
    open: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    all: usize,
    by_role: HashMap<u32, usize>,
}

/// One connection counted in `ConnectionCounts`, released when dropped.
pub struct Slot<'a> {
    counts: &'a ConnectionCounts,
    role: Option<u32>,
}

impl ConnectionCounts {
    /// Counts a new connection, or refuses it when `max` are open.
    pub fn open(&self, max: usize) -> PgResult<Slot<'_>> {
        let mut open = self.open.lock();
        if open.all >= max {
            return Err(too_many("sorry, too many clients already"));
        }
        open.all += 1;
        Ok(Slot {
            counts: self,
            role: None,
        })
    }
}

impl Slot<'_> {
    /// The connection is `role`'s: refused past the slots left to non-superusers or
    /// past the role's CONNECTION LIMIT (superusers are held to neither, as in
    /// PostgreSQL).
    pub fn assign(&mut self, role: &RoleDef, max: usize) -> PgResult<()> {
        let mut open = self.counts.open.lock();
        if !role.superuser {
            if open.all > max.saturating_sub(SUPERUSER_RESERVED_CONNECTIONS) {
                return Err(too_many(
                    "remaining connection slots are reserved for non-replication superuser connections",
                ));
            }
            let of_role = open.by_role.get(&role.oid).copied().unwrap_or(0);
            if role.connection_limit >= 0 && of_role >= role.connection_limit as usize {
                return Err(too_many(&format!(
                    "too many connections for role \"{}\"",
                    role.name
                )));
            }
        }
        *open.by_role.entry(role.oid).or_default() += 1;
        self.role = Some(role.oid);
        Ok(())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut open = self.counts.open.lock();
        open.all -= 1;
        if let Some(role) = self.role {
            if let Some(n) = open.by_role.get_mut(&role) {
                *n -= 1;
                if *n == 0 {
                    open.by_role.remove(&role);
                }
            }
        }
    }
}

/// Consecutive failed password logins per client address and user name. Past
/// `FREE_FAILURES`, each failure's answer waits twice as long as the last (from 100 ms,
/// at most 10 s), so guessing a password is slow while a mistyped one costs nothing; a
/// successful login clears the count. The map is bounded: past `MAX_TRACKED` entries it
/// starts afresh.
#[derive(Default)]
pub struct FailedLogins {
    recent: Mutex<HashMap<(Option<IpAddr>, String), u32>>,
}

const FREE_FAILURES: u32 = 3;
const MAX_TRACKED: usize = 100_000;
const FIRST_DELAY: std::time::Duration = std::time::Duration::from_millis(100);
const MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(10);

impl FailedLogins {
    /// Counts a failure; how long its answer waits.
    fn failed(&self, address: Option<IpAddr>, user: &str) -> std::time::Duration {
        let mut recent = self.recent.lock();
        if recent.len() >= MAX_TRACKED {
            recent.clear();
        }
        let n = recent.entry((address, user.to_string())).or_default();
        *n = n.saturating_add(1);
        match n.checked_sub(FREE_FAILURES + 1) {
            None => std::time::Duration::ZERO,
            Some(past) => FIRST_DELAY.saturating_mul(1 << past.min(16)).min(MAX_DELAY),
        }
    }

    fn passed(&self, address: Option<IpAddr>, user: &str) {
        let mut recent = self.recent.lock();
        if !recent.is_empty() {
            recent.remove(&(address, user.to_string()));
        }
    }
}

fn too_many(message: &str) -> PgError {
    crate::metrics::metrics().connections_refused.inc();
    PgError::fatal(codes::TOO_MANY_CONNECTIONS, message)
}

/// Authenticates `user` for `database` as the first matching rule says, talking to the
/// client over `stream`; Ok: the role, allowed to log in. None: the client went away
/// during the exchange (as psql does to ask for a password), which is no failure.
pub async fn authenticate<S: SessionStream>(
    shared: &Shared,
    stream: &mut S,
    buf: &mut BytesMut,
    peer: &Peer,
    ssl: bool,
    user: &str,
    database: &str,
) -> PgResult<Option<Arc<RoleDef>>> {
    let connection = Connection {
        address: peer.address,
        ssl,
        user,
        database,
    };
    let encryption = if ssl {
        "SSL encryption"
    } else {
        "no encryption"
    };
    let denied = |what: &str| {
        let e = PgError::fatal(
            codes::INVALID_AUTHORIZATION_SPECIFICATION,
            format!(
                "{what} for host \"{}\", user \"{user}\", database \"{database}\", {encryption}",
                peer.host()
            ),
        );
        tracing::warn!(host = %peer.host(), user, database, "{}", e.message);
        e
    };
    let method = match shared.access_rules.method(&connection) {
        None => return Err(denied("no pg_hba.conf entry")),
        Some(Method::Reject) => return Err(denied("pg_hba.conf rejects connection")),
        Some(m) => m,
    };
    // A role created, altered or dropped through another coordinator counts at once
    // (one version check at the metadata service; a reload only when it moved).
    shared.catalog.refresh().await?;
    let role = role_ddl::find(shared, user);
    if method != Method::Trust {
        let mut exchange = Exchange { stream, buf, user };
        let verdict = match method {
            Method::ScramSha256 => exchange.scram(role.as_deref()).await?,
            Method::Md5 => match role.as_deref().and_then(|r| r.password.as_deref()) {
                Some(stored) if password::is_md5(stored) => exchange.md5(role.as_deref()).await?,
                // A SCRAM verifier cannot answer an md5 challenge: SCRAM it is, as in
                // PostgreSQL.
                _ => exchange.scram(role.as_deref()).await?,
            },
            _ => exchange.cleartext(role.as_deref()).await?,
        };
        match verdict {
            Verdict::Gone => return Ok(None),
            Verdict::Failed(why) => {
                tracing::warn!(host = %peer.host(), user, database, "password authentication failed: {why}");
                let delay = shared.failed_logins.failed(peer.address, user);
                if !delay.is_zero() {
                    tracing::warn!(host = %peer.host(), user, "repeated failed logins: the answer waits {} ms", delay.as_millis());
                    tokio::time::sleep(delay).await;
                }
                return Err(PgError::fatal(
                    codes::INVALID_PASSWORD,
                    format!("password authentication failed for user \"{user}\""),
                ));
            }
            Verdict::Passed => shared.failed_logins.passed(peer.address, user),
        }
    }
    let Some(role) = role else {
        tracing::warn!(host = %peer.host(), user, database, "role does not exist");
        return Err(PgError::fatal(
            codes::INVALID_AUTHORIZATION_SPECIFICATION,
            format!("role \"{user}\" does not exist"),
        ));
    };
    if !role.login {
        tracing::warn!(host = %peer.host(), user, database, "role may not log in");
        return Err(PgError::fatal(
            codes::INVALID_AUTHORIZATION_SPECIFICATION,
            format!("role \"{user}\" is not permitted to log in"),
        ));
    }
    Ok(Some(role))
}

enum Verdict {
    Passed,
    /// Why, for the log only: the client learns nothing but 28P01.
    Failed(&'static str),
    Gone,
}

/// The password a role may log in with: none if it has none or it expired.
fn usable_password(role: Option<&RoleDef>) -> Result<&str, &'static str> {
    let role = role.ok_or("the role does not exist")?;
    let stored = role.password.as_deref().ok_or("the role has no password")?;
    if role
        .valid_until
        .is_some_and(|until| until < types::datetime::now_timestamp())
    {
        return Err("the role's password has expired");
    }
    Ok(stored)
}

struct Exchange<'a, S> {
    stream: &'a mut S,
    buf: &'a mut BytesMut,
    user: &'a str,
}

impl<S: SessionStream> Exchange<'_, S> {
    async fn send(&mut self, write: impl FnOnce(&mut BytesMut)) -> PgResult<()> {
        let mut out = BytesMut::new();
        write(&mut out);
        self.stream.write_all(&out).await.map_err(io_error)
    }

    /// The body of the client's next `p` message; None if it closed the connection.
    async fn receive(&mut self) -> PgResult<Option<Bytes>> {
        loop {
            match decode_message(self.buf, MAX_AUTH_MESSAGE) {
                Ok(Some(FrontendMessage::Password(body))) => return Ok(Some(body)),
                Ok(Some(FrontendMessage::Terminate)) => return Ok(None),
                Ok(Some(_)) => {
                    return Err(PgError::fatal(
                        codes::PROTOCOL_VIOLATION,
                        "expected password response",
                    ))
                }
                Ok(None) => {}
                Err(e) => return Err(e.into_pg_error()),
            }
            match self.stream.read_buf(self.buf).await {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
        }
    }

    async fn scram(&mut self, role: Option<&RoleDef>) -> PgResult<Verdict> {
        let usable = usable_password(role);
        let secret = usable.ok().and_then(password::ScramSecret::parse);
        self.send(|out| backend::authentication_sasl(out, &[MECHANISM]))
            .await?;
        let Some(body) = self.receive().await? else {
            return Ok(Verdict::Gone);
        };
        let (mechanism, first) =
            PasswordBody::sasl_initial_response(&body).map_err(|e| e.into_pg_error())?;
        if mechanism != MECHANISM {
            return Err(PgError::fatal(
                codes::PROTOCOL_VIOLATION,
                "client selected an invalid SASL authentication mechanism",
            ));
        }
        let first = first.unwrap_or_default();
        let (exchange, server_first) =
            ScramExchange::start(secret, self.user, &first).map_err(malformed)?;
        self.send(|out| backend::authentication_sasl_continue(out, server_first.as_bytes()))
            .await?;
        let Some(last) = self.receive().await? else {
            return Ok(Verdict::Gone);
        };
        match exchange.finish(&PasswordBody::sasl_response(&last)) {
            Ok(server_final) => {
                self.send(|out| backend::authentication_sasl_final(out, server_final.as_bytes()))
                    .await?;
                Ok(Verdict::Passed)
            }
            Err(ScramError::Failed) => Ok(Verdict::Failed(match usable {
                Err(why) => why,
                Ok(_) if secret_missing(role) => "the role's password is not a SCRAM verifier",
                Ok(_) => "the password does not match",
            })),
            Err(e) => Err(malformed(e)),
        }
    }

    async fn md5(&mut self, role: Option<&RoleDef>) -> PgResult<Verdict> {
        let salt = password::md5_salt();
        self.send(|out| backend::authentication_md5_password(out, salt))
            .await?;
        let Some(response) = self.password().await? else {
            return Ok(Verdict::Gone);
        };
        Ok(match usable_password(role) {
            Err(why) => Verdict::Failed(why),
            Ok(stored) if password::md5_response_matches(stored, salt, &response) => {
                Verdict::Passed
            }
            Ok(_) => Verdict::Failed("the password does not match"),
        })
    }

    async fn cleartext(&mut self, role: Option<&RoleDef>) -> PgResult<Verdict> {
        self.send(backend::authentication_cleartext_password)
            .await?;
        let Some(given) = self.password().await? else {
            return Ok(Verdict::Gone);
        };
        Ok(match usable_password(role) {
            Err(why) => Verdict::Failed(why),
            Ok(stored) if password::cleartext_matches(stored, self.user, &given) => Verdict::Passed,
            Ok(_) => Verdict::Failed("the password does not match"),
        })
    }

    /// A PasswordMessage's password; an empty one is refused as PostgreSQL does.
    async fn password(&mut self) -> PgResult<Option<String>> {
        let Some(body) = self.receive().await? else {
            return Ok(None);
        };
        let given = PasswordBody::password(&body).map_err(|e| e.into_pg_error())?;
        if given.is_empty() {
            return Err(PgError::fatal(
                codes::INVALID_PASSWORD,
                format!("password authentication failed for user \"{}\"", self.user),
            ));
        }
        Ok(Some(given))
    }
}

fn secret_missing(role: Option<&RoleDef>) -> bool {
    role.and_then(|r| r.password.as_deref())
        .and_then(password::ScramSecret::parse)
        .is_none()
}

fn malformed(e: ScramError) -> PgError {
    match e {
        ScramError::Malformed(detail) => {
            PgError::fatal(codes::PROTOCOL_VIOLATION, "malformed SCRAM message").with_detail(detail)
        }
        ScramError::Failed => PgError::internal("a SCRAM failure is not malformed"),
    }
}

fn io_error(e: std::io::Error) -> PgError {
    PgError::new(codes::CONNECTION_FAILURE, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_failures_wait_longer_until_a_login_succeeds() {
        let logins = FailedLogins::default();
        let here = Some(IpAddr::from([127, 0, 0, 1]));
        let waits: Vec<u128> = (0..7)
            .map(|_| logins.failed(here, "alice").as_millis())
            .collect();
        assert_eq!(waits, [0, 0, 0, 100, 200, 400, 800]);
        assert_eq!(logins.failed(here, "bob").as_millis(), 0, "per user");
        assert_eq!(logins.failed(None, "alice").as_millis(), 0, "per address");
        logins.passed(here, "alice");
        assert_eq!(logins.failed(here, "alice").as_millis(), 0);
        for _ in 0..40 {
            logins.failed(here, "carol");
        }
        assert_eq!(logins.failed(here, "carol"), MAX_DELAY);
    }
}
