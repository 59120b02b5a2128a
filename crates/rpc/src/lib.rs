//! A typed request/response transport over TCP for coordinator ↔ datanode traffic
//! (docs/decisions/0026).
//!
//! - One connection per [`Client`] is shared by all its callers; requests carry ids, and
//!   frames queued by concurrent callers go out in one write (responses likewise).
//! - A request gets one final response, optionally preceded by streamed messages
//!   ([`Client::call_stream`], [`Responder::send`]) under a per-request credit window.
//! - Dropping a call's future or its [`ResponseStream`] cancels the request on the server.
//! - A lost connection fails every waiting caller with 08006; the next call reconnects.
//!
//! Message types are the caller's serde types, encoded with bincode.

mod client;
mod frame;
mod server;

pub use client::{Client, ClientOptions, ResponseStream};
pub use server::{serve, serve_stream, serve_with_close, Responder};
