//! The server's side of SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL runs it: the
//! user name in the client's message is ignored (the startup packet's counts), no
//! channel binding (so only `SCRAM-SHA-256` is offered, never `-PLUS`), and a role
//! with no SCRAM secret gets a mock exchange that fails only at the proof, so a client
//! cannot tell a missing role from a wrong password.

use crate::password::{constant_time_eq, hmac, ScramSecret, SCRAM_ITERATIONS};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

pub const MECHANISM: &str = "SCRAM-SHA-256";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramError {
    /// The client broke the protocol (08P01): what was wrong, for the error's detail.
    Malformed(String),
    /// The proof was wrong, or the role has no usable secret (28P01).
    Failed,
}

/// An exchange after the server's first message, waiting for the client's final one.
pub struct ScramExchange {
    secret: ScramSecret,
    /// The secret is made up: the exchange fails whatever the client sends.
    mock: bool,
    gs2_header: String,
    nonce: String,
    client_first_bare: String,
    server_first: String,
}

fn malformed(detail: impl Into<String>) -> ScramError {
    ScramError::Malformed(detail.into())
}

impl ScramExchange {
    /// Reads the client-first-message and returns the exchange with the server-first
    /// message to send. `secret`: the role's, None for a missing role or one whose
    /// password is not a SCRAM verifier (`user` then seeds the mock's salt).
    pub fn start(
        secret: Option<ScramSecret>,
        user: &str,
        client_first: &[u8],
    ) -> Result<(ScramExchange, String), ScramError> {
        let text = std::str::from_utf8(client_first)
            .map_err(|_| malformed("The message is not valid UTF-8."))?;
        let mut parts = text.splitn(3, ',');
        let flag = parts.next().unwrap_or("");
        let authzid = parts
            .next()
            .ok_or_else(|| malformed("Comma expected after the channel binding flag."))?;
        let bare = parts
            .next()
            .ok_or_else(|| malformed("Comma expected after the authorization identity."))?;
        match flag {
            "n" | "y" => {}
            f if f.starts_with("p=") => {
                return Err(malformed(
                    "The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.",
                ))
            }
            f => return Err(malformed(format!("Unexpected channel-binding flag \"{f}\"."))),
        }
        if !authzid.is_empty() {
            return Err(malformed(
                "client uses authorization identity, but it is not supported",
            ));
        }
        let mut attrs = bare.split(',');
        match attrs.next() {
            Some(n) if n.starts_with("n=") => {}
            Some(m) if m.starts_with("m=") => {
                return Err(malformed("client requires an unsupported SCRAM extension"))
            }
            _ => return Err(malformed("Attribute \"n\" expected.")),
        }
        let client_nonce = attrs
            .next()
            .and_then(|r| r.strip_prefix("r="))
            .filter(|r| !r.is_empty() && r.bytes().all(|b| (0x21..=0x7e).contains(&b)))
            .ok_or_else(|| malformed("Attribute \"r\" expected."))?;
        let (secret, mock) = match secret {
            Some(s) => (s, false),
            None => (mock_secret(user), true),
        };
        let mut server_nonce = [0u8; 18];
        rand::thread_rng().fill_bytes(&mut server_nonce);
        let nonce = format!("{client_nonce}{}", BASE64.encode(server_nonce));
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&secret.salt),
            secret.iterations
        );
        Ok((
            ScramExchange {
                secret,
                mock,
                gs2_header: format!("{flag},,"),
                nonce,
                client_first_bare: bare.to_string(),
                server_first: server_first.clone(),
            },
            server_first,
        ))
    }

    /// Checks the client-final-message; Ok: the server-final-message to send.
    pub fn finish(self, client_final: &[u8]) -> Result<String, ScramError> {
        let text = std::str::from_utf8(client_final)
            .map_err(|_| malformed("The message is not valid UTF-8."))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or_else(|| malformed("Could not find proof in client-final-message."))?;
        let mut attrs = without_proof.split(',');
        let binding = attrs
            .next()
            .and_then(|c| c.strip_prefix("c="))
            .ok_or_else(|| malformed("Attribute \"c\" expected."))?;
        if BASE64.decode(binding).ok().as_deref() != Some(self.gs2_header.as_bytes()) {
            return Err(malformed("SCRAM channel binding check failed"));
        }
        let nonce = attrs
            .next()
            .and_then(|r| r.strip_prefix("r="))
            .ok_or_else(|| malformed("Attribute \"r\" expected."))?;
        if nonce != self.nonce {
            return Err(malformed("Nonce does not match."));
        }
        let proof: [u8; 32] = BASE64
            .decode(proof)
            .ok()
            .and_then(|p| p.try_into().ok())
            .ok_or_else(|| malformed("Malformed proof in client-final-message."))?;
        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare, self.server_first
        );
        let signature = hmac(&self.secret.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(signature).map(|(p, s)| p ^ s).collect();
        let stored_key: [u8; 32] = Sha256::digest(&client_key).into();
        if self.mock || !constant_time_eq(&stored_key, &self.secret.stored_key) {
            return Err(ScramError::Failed);
        }
        let server_signature = hmac(&self.secret.server_key, auth_message.as_bytes());
        Ok(format!("v={}", BASE64.encode(server_signature)))
    }
}

/// A made-up secret whose salt depends only on `user` and this process, so that asking
/// twice for a missing role gives the same salt, as for a real one.
fn mock_secret(user: &str) -> ScramSecret {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    let key = KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut k);
        k
    });
    let salt = hmac(key, user.as_bytes());
    ScramSecret {
        iterations: SCRAM_ITERATIONS,
        salt: salt[..16].to_vec(),
        stored_key: hmac(key, b"stored"),
        server_key: hmac(key, b"server"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's side, for the tests.
    fn client_final(password: &str, client_first_bare: &str, server_first: &str) -> String {
        let attrs: Vec<&str> = server_first.split(',').collect();
        let nonce = &attrs[0][2..];
        let salt = BASE64.decode(&attrs[1][2..]).unwrap();
        let iterations: u32 = attrs[2][2..].parse().unwrap();
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let client_key = client_key(password, &salt, iterations);
        let stored_key: [u8; 32] = Sha256::digest(client_key).into();
        let signature = hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(a, b)| a ^ b)
            .collect();
        format!("{without_proof},p={}", BASE64.encode(proof))
    }

    fn client_key(password: &str, salt: &[u8], iterations: u32) -> [u8; 32] {
        let mut first = salt.to_vec();
        first.extend_from_slice(&1u32.to_be_bytes());
        let mut u = hmac(password.as_bytes(), &first);
        let mut salted = u;
        for _ in 1..iterations {
            u = hmac(password.as_bytes(), &u);
            for (r, x) in salted.iter_mut().zip(u) {
                *r ^= x;
            }
        }
        hmac(&salted, b"Client Key")
    }

    fn secret(password: &str) -> ScramSecret {
        ScramSecret::derive(password, b"0123456789abcdef", 4096)
    }

    #[test]
    fn the_right_password_passes_and_the_server_proves_itself() {
        let (exchange, server_first) =
            ScramExchange::start(Some(secret("pw")), "u", b"n,,n=,r=abcdef").unwrap();
        assert!(server_first.starts_with("r=abcdef"));
        let answer = client_final("pw", "n=,r=abcdef", &server_first);
        let server_final = exchange.finish(answer.as_bytes()).unwrap();
        assert!(server_final.starts_with("v="));
    }

    #[test]
    fn a_wrong_password_or_a_missing_role_fails() {
        let (exchange, first) =
            ScramExchange::start(Some(secret("pw")), "u", b"n,,n=,r=abc").unwrap();
        let answer = client_final("nope", "n=,r=abc", &first);
        assert_eq!(exchange.finish(answer.as_bytes()), Err(ScramError::Failed));
        let (mock, first) = ScramExchange::start(None, "ghost", b"n,,n=,r=abc").unwrap();
        let (_, again) = ScramExchange::start(None, "ghost", b"n,,n=,r=abc").unwrap();
        assert_eq!(
            first.split(',').nth(1),
            again.split(',').nth(1),
            "same salt"
        );
        let answer = client_final("pw", "n=,r=abc", &first);
        assert_eq!(mock.finish(answer.as_bytes()), Err(ScramError::Failed));
    }

    #[test]
    fn malformed_messages_are_protocol_errors() {
        for bad in [
            &b""[..],
            b"n",
            b"x,,n=,r=a",
            b"p=tls-server-end-point,,n=,r=a",
            b"n,a=admin,n=,r=a",
            b"n,,r=a",
            b"n,,n=,r=",
            b"\xff\xfe",
        ] {
            assert!(
                matches!(
                    ScramExchange::start(Some(secret("pw")), "u", bad),
                    Err(ScramError::Malformed(_))
                ),
                "{bad:?}"
            );
        }
        // Each final message is wrong in one way only (the others as they should be).
        let finals: [fn(&str) -> String; 4] = [
            |_| "c=biws".to_string(),
            |nonce| format!("c=eSws,r={nonce},p=AAAA"),
            |_| "c=biws,r=other,p=AAAA".to_string(),
            |nonce| format!("c=biws,r={nonce},p=notbase64!"),
        ];
        for bad in finals {
            let (exchange, first) =
                ScramExchange::start(Some(secret("pw")), "u", b"n,,n=,r=abc").unwrap();
            let nonce = &first.split(',').next().unwrap()[2..];
            let bad = bad(nonce);
            assert!(
                matches!(
                    exchange.finish(bad.as_bytes()),
                    Err(ScramError::Malformed(_))
                ),
                "{bad}"
            );
        }
    }
}
