//! TLS for client connections (decision 0040): the server's certificate and key read
//! from PEM files into a rustls configuration, and a TLS connection as a session's
//! stream. Only TCP connections are offered TLS (as PostgreSQL, never the Unix socket).

use crate::session_io::SessionStream;
use pgerror::{PgError, PgResult};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
pub use tokio_rustls::TlsAcceptor;

/// The acceptor for `cert` (a PEM chain, the server's certificate first) and `key`.
pub fn acceptor(cert: &Path, key: &Path) -> PgResult<TlsAcceptor> {
    let unreadable = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
        PgError::io(
            &format!("could not load {what} file \"{}\"", path.display()),
            e,
        )
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| unreadable("server certificate", cert, &e))?;
    if certs.is_empty() {
        return Err(unreadable(
            "server certificate",
            cert,
            &"no certificate in it",
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| unreadable("private key", key, &e))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
    .map_err(|e| PgError::io("could not use the server certificate and key", e))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

impl SessionStream for TlsStream<TcpStream> {
    /// Ready when rustls holds decrypted bytes not yet read (the socket may have
    /// nothing more to say), else when the socket is.
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (socket, connection) = self.get_ref();
        if !connection.wants_read() {
            return Poll::Ready(Ok(()));
        }
        socket.poll_read_ready(cx)
    }
}
