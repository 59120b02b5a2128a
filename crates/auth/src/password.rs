//! Stored passwords as PostgreSQL stores them: a SCRAM-SHA-256 verifier
//! (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64) or an md5 hash
//! (`md5` + md5(password + user) in hex); never the password itself.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// PostgreSQL's scram_iterations default.
pub const SCRAM_ITERATIONS: u32 = 4096;
const SALT_LEN: usize = 16;

/// How a new password is stored (the `password_encryption` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encryption {
    ScramSha256,
    Md5,
}

impl Encryption {
    /// The setting's value; PostgreSQL 15 accepts exactly these two.
    pub fn from_setting(value: &str) -> Option<Encryption> {
        match value.to_ascii_lowercase().as_str() {
            "scram-sha-256" => Some(Encryption::ScramSha256),
            "md5" => Some(Encryption::Md5),
            _ => None,
        }
    }
}

/// The text to store for `password` given in CREATE/ALTER ROLE: a password already
/// hashed by the client (an md5 hash or a SCRAM verifier) is stored as given, as
/// PostgreSQL does, so that the server never sees the password.
pub fn encrypt(password: &str, user: &str, encryption: Encryption) -> String {
    if is_md5(password) || ScramSecret::parse(password).is_some() {
        return password.to_string();
    }
    match encryption {
        Encryption::Md5 => md5_verifier(password, user),
        Encryption::ScramSha256 => {
            let mut salt = [0u8; SALT_LEN];
            rand::thread_rng().fill_bytes(&mut salt);
            ScramSecret::derive(password, &salt, SCRAM_ITERATIONS).encode()
        }
    }
}

/// Whether `password` (sent in clear) is the one `stored` was made from.
pub fn cleartext_matches(stored: &str, user: &str, password: &str) -> bool {
    if let Some(secret) = ScramSecret::parse(stored) {
        let again = ScramSecret::derive(password, &secret.salt, secret.iterations);
        return constant_time_eq(&again.stored_key, &secret.stored_key);
    }
    is_md5(stored) && constant_time_eq(md5_verifier(password, user).as_bytes(), stored.as_bytes())
}

/// Whether an md5 authentication's response (`md5` + md5(hash + salt)) matches the
/// stored md5 hash.
pub fn md5_response_matches(stored: &str, salt: [u8; 4], response: &str) -> bool {
    let Some(hash) = stored.strip_prefix("md5").filter(|_| is_md5(stored)) else {
        return false;
    };
    let mut input = hash.as_bytes().to_vec();
    input.extend_from_slice(&salt);
    let expected = format!("md5{}", hex(&Md5::digest(&input)));
    constant_time_eq(expected.as_bytes(), response.as_bytes())
}

/// A fresh salt for an md5 challenge.
pub fn md5_salt() -> [u8; 4] {
    let mut salt = [0u8; 4];
    rand::thread_rng().fill_bytes(&mut salt);
    salt
}

pub fn is_md5(stored: &str) -> bool {
    stored.len() == 35
        && stored.starts_with("md5")
        && stored[3..].bytes().all(|b| b.is_ascii_hexdigit())
}

fn md5_verifier(password: &str, user: &str) -> String {
    let mut input = password.as_bytes().to_vec();
    input.extend_from_slice(user.as_bytes());
    format!("md5{}", hex(&Md5::digest(&input)))
}

/// A role's SCRAM-SHA-256 secret (RFC 5802 with SHA-256, RFC 7677).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramSecret {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; 32],
    pub server_key: [u8; 32],
}

impl ScramSecret {
    /// From a password: SaltedPassword = PBKDF2-HMAC-SHA-256 of its SASLprep'ed form
    /// (the raw bytes where SASLprep refuses it, as PostgreSQL does).
    pub fn derive(password: &str, salt: &[u8], iterations: u32) -> ScramSecret {
        let prepared = stringprep::saslprep(password)
            .map(|p| p.into_owned())
            .unwrap_or_else(|_| password.to_string());
        let salted = salted_password(prepared.as_bytes(), salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        ScramSecret {
            iterations,
            salt: salt.to_vec(),
            stored_key: Sha256::digest(client_key).into(),
            server_key: hmac(&salted, b"Server Key"),
        }
    }

    /// Reads PostgreSQL's text form; None if `stored` is not one.
    pub fn parse(stored: &str) -> Option<ScramSecret> {
        let rest = stored.strip_prefix("SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored_key, server_key) = keys.split_once(':')?;
        Some(ScramSecret {
            iterations: iterations.parse().ok().filter(|i| *i > 0)?,
            salt: BASE64.decode(salt).ok()?,
            stored_key: BASE64.decode(stored_key).ok()?.try_into().ok()?,
            server_key: BASE64.decode(server_key).ok()?.try_into().ok()?,
        })
    }

    pub fn encode(&self) -> String {
        format!(
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            BASE64.encode(&self.salt),
            BASE64.encode(self.stored_key),
            BASE64.encode(self.server_key)
        )
    }
}

/// Hi() of RFC 5802: PBKDF2 with HMAC-SHA-256, one block.
fn salted_password(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut first = salt.to_vec();
    first.extend_from_slice(&1u32.to_be_bytes());
    let mut u = hmac(password, &first);
    let mut result = u;
    for _ in 1..iterations {
        u = hmac(password, &u);
        for (r, x) in result.iter_mut().zip(u) {
            *r ^= x;
        }
    }
    result
}

pub(crate) fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Compares without stopping at the first difference, so timing tells nothing.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_is_postgresql_s() {
        // SELECT 'md5' || md5('secret' || 'alice') in PostgreSQL.
        assert_eq!(
            encrypt("secret", "alice", Encryption::Md5),
            "md54a0a68b43b6cd5cf266fa02f196e2371"
        );
        assert!(cleartext_matches(
            "md54a0a68b43b6cd5cf266fa02f196e2371",
            "alice",
            "secret"
        ));
        assert!(!cleartext_matches(
            "md54a0a68b43b6cd5cf266fa02f196e2371",
            "alice",
            "Secret"
        ));
    }

    #[test]
    fn scram_verifier_round_trips_and_checks_the_password() {
        let stored = encrypt("pencil", "u", Encryption::ScramSha256);
        assert!(stored.starts_with("SCRAM-SHA-256$4096:"));
        let secret = ScramSecret::parse(&stored).unwrap();
        assert_eq!(secret.encode(), stored);
        assert!(cleartext_matches(&stored, "u", "pencil"));
        assert!(!cleartext_matches(&stored, "u", "pencil2"));
    }

    #[test]
    fn a_prehashed_password_is_stored_as_given() {
        let scram = encrypt("x", "u", Encryption::ScramSha256);
        assert_eq!(encrypt(&scram, "v", Encryption::Md5), scram);
        let md5 = encrypt("x", "u", Encryption::Md5);
        assert_eq!(encrypt(&md5, "v", Encryption::ScramSha256), md5);
    }

    #[test]
    fn rfc7677_test_vector() {
        // RFC 7677 section 3: password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096.
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let secret = ScramSecret::derive("pencil", &salt, 4096);
        let salted = salted_password(b"pencil", &salt, 4096);
        let client_key = hmac(&salted, b"Client Key");
        let auth = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let signature = hmac(&secret.stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(
            BASE64.encode(proof),
            "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            BASE64.encode(hmac(&secret.server_key, auth.as_bytes())),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }
}
