//! Whatever a client or a rules file says, the parsers answer (an error at worst) and
//! never panic: random and mutated SCRAM messages, random rules files.

use auth::hba::Rules;
use auth::password::{encrypt, Encryption, ScramSecret};
use auth::scram::{ScramError, ScramExchange};
use proptest::prelude::*;

fn secret() -> ScramSecret {
    ScramSecret::parse(&encrypt("pw", "u", Encryption::ScramSha256)).unwrap()
}

/// A well-formed message with a few of its bytes replaced.
fn mutated(base: &'static str) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec((0..base.len(), any::<u8>()), 0..4).prop_map(move |edits| {
        let mut bytes = base.as_bytes().to_vec();
        for (at, b) in edits {
            bytes[at] = b;
        }
        bytes
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn client_first_messages(first in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        mutated("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"),
    ]) {
        let _ = ScramExchange::start(Some(secret()), "u", &first);
        let _ = ScramExchange::start(None, "u", &first);
    }

    #[test]
    fn client_final_messages(last in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..128),
        mutated("c=biws,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
    ]) {
        let (exchange, _) = ScramExchange::start(Some(secret()), "u", b"n,,n=,r=abc").unwrap();
        // Random bytes never prove the password.
        prop_assert_ne!(exchange.finish(&last).map(drop), Ok(()));
    }

    #[test]
    fn rules_files(text in prop_oneof![
        "[ -~\t\n]{0,200}",
        "(local|host|hostssl|hostnossl|#|\"|,| |all|md5|trust|10.0.0.0/8|::1/128|x){0,24}",
    ]) {
        let _ = Rules::parse(&text);
    }

    #[test]
    fn stored_passwords(stored in "(SCRAM-SHA-256\\$|md5|\\$|:|[A-Za-z0-9+/=]){0,80}") {
        let _ = ScramSecret::parse(&stored);
        let _ = auth::password::cleartext_matches(&stored, "u", "pw");
        let _ = auth::password::md5_response_matches(&stored, [1, 2, 3, 4], "md5x");
    }
}

#[test]
fn an_exchange_is_refused_not_failed_for_broken_framing() {
    let (exchange, _) = ScramExchange::start(Some(secret()), "u", b"n,,n=,r=abc").unwrap();
    assert!(matches!(
        exchange.finish(b"p="),
        Err(ScramError::Malformed(_))
    ));
}
