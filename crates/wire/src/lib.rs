//! PostgreSQL frontend/backend protocol v3: the server side's message codec.
//!
//! Pure codec: bytes in, messages out ([`frontend`]), and messages in, bytes out
//! ([`backend`]). No sockets, no async runtime, no SQL. The coordinator owns the
//! connection, the buffers and the protocol state machine (start-up, authentication,
//! extended-query error recovery); this crate only guarantees that every byte it reads is
//! bounds-checked and every message it writes is correctly framed.
//!
//! Invariants:
//! * decoding never panics and never allocates from an unchecked count or length;
//! * `Ok(None)` from a decoder means "need more bytes" and consumes nothing;
//! * an over-long or malformed header is rejected before its body is buffered;
//! * every encoder appends exactly one complete message.
//!
//! ```
//! use bytes::BytesMut;
//! use wire::backend::{self, TransactionStatus};
//! use wire::{decode_message, FrontendMessage};
//!
//! let mut inbuf = BytesMut::from(&b"Q\0\0\0\x0dselect 1\0S\0\0"[..]); // Sync not complete yet
//! let mut outbuf = BytesMut::new();
//! while let Some(msg) = decode_message(&mut inbuf, 1 << 20).unwrap() {
//!     if let FrontendMessage::Query(sql) = msg {
//!         assert_eq!(sql, "select 1");
//!         let mut row = backend::DataRowWriter::begin(&mut outbuf, 1);
//!         row.field(b"1");
//!         row.finish();
//!         backend::command_complete(&mut outbuf, "SELECT 1");
//!         backend::ready_for_query(&mut outbuf, TransactionStatus::Idle);
//!     }
//! }
//! assert_eq!(&inbuf[..], b"S\0\0"); // the partial message stays for the next read
//! ```

pub mod backend;
pub mod encoding;
pub mod frontend;

pub use encoding::ClientEncoding;
pub use frontend::{decode_message, decode_message_in, decode_startup};
pub use frontend::{DescribeKind, ProtocolErrorKind};
pub use frontend::{FrontendMessage, ProtocolError, StartupPacket};
