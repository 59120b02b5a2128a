//! Frames on the wire and the shared, coalescing output buffer.
//!
//! A frame is `len: u32 LE` (bytes after this field), `id: u64 LE` (the request it belongs
//! to), `kind: u8`, then a bincode payload. Both directions use the same layout.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

/// Client → server: a request (payload: the caller's request).
pub(crate) const REQUEST: u8 = 1;
/// Client → server: stop the request (no payload).
pub(crate) const CANCEL: u8 = 2;
/// Client → server: the consumer took this many streamed messages (payload: u32 LE).
pub(crate) const CREDIT: u8 = 3;
/// Server → client: one streamed message; more follow.
pub(crate) const ITEM: u8 = 4;
/// Server → client: the final message of a request.
pub(crate) const END: u8 = 5;
/// Server → client: the request failed in the transport (payload: UTF-8 reason).
pub(crate) const FAILED: u8 = 6;

/// Streamed messages the server may send ahead of the consumer: a slow consumer holds at
/// most this many undelivered messages per stream, then the server's handler waits.
pub(crate) const STREAM_WINDOW: u32 = 32;

/// Largest frame accepted or sent (a scan batch is far smaller; a bigger length means a
/// corrupt stream).
pub(crate) const MAX_FRAME: usize = 256 << 20;

const HEADER: usize = 13;

/// Appends one frame carrying `msg` to `buf`; on error `buf` is left as it was.
pub(crate) fn push<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: u64,
    kind: u8,
    msg: &T,
) -> Result<(), String> {
    let start = buf.len();
    buf.extend_from_slice(&[0; HEADER]);
    if let Err(e) = bincode::serialize_into(&mut *buf, msg) {
        buf.truncate(start);
        return Err(format!("cannot encode message: {e}"));
    }
    let len = buf.len() - start - 4;
    if len > MAX_FRAME {
        buf.truncate(start);
        return Err(format!(
            "message of {len} bytes exceeds the {MAX_FRAME}-byte frame limit"
        ));
    }
    buf[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
    buf[start + 4..start + 12].copy_from_slice(&id.to_le_bytes());
    buf[start + 12] = kind;
    Ok(())
}

/// Appends a frame whose payload is raw bytes (credits, failure reasons).
pub(crate) fn push_raw(buf: &mut Vec<u8>, id: u64, kind: u8, payload: &[u8]) {
    buf.extend_from_slice(&((HEADER - 4 + payload.len()) as u32).to_le_bytes());
    buf.extend_from_slice(&id.to_le_bytes());
    buf.push(kind);
    buf.extend_from_slice(payload);
}

pub(crate) fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, String> {
    bincode::deserialize(payload).map_err(|e| format!("cannot decode message: {e}"))
}

/// Reads frames from one side of a connection.
pub(crate) struct FrameReader<R> {
    r: BufReader<R>,
    payload: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(r: R) -> Self {
        FrameReader {
            r: BufReader::with_capacity(64 << 10, r),
            payload: Vec::new(),
        }
    }

    /// The next frame as (id, kind, payload); `None` at a clean end of the stream.
    pub(crate) async fn next(&mut self) -> io::Result<Option<(u64, u8, &[u8])>> {
        let mut header = [0u8; HEADER];
        match self.r.read_exact(&mut header).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let len = u32::from_le_bytes(header[0..4].try_into().unwrap()) as usize;
        if !(HEADER - 4..=MAX_FRAME).contains(&len) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("frame length {len} out of range"),
            ));
        }
        let id = u64::from_le_bytes(header[4..12].try_into().unwrap());
        self.payload.resize(len - (HEADER - 4), 0);
        self.r.read_exact(&mut self.payload).await?;
        if self.payload.capacity() > 1 << 20 && self.payload.len() < 64 << 10 {
            // Do not keep a large response's buffer for the life of the connection.
            self.payload.shrink_to(64 << 10);
        }
        Ok(Some((id, header[12], &self.payload)))
    }
}

/// Frames queued by many tasks for one connection's writer task. Whatever queues up while
/// the writer is busy goes out in its next single write: that is the batching.
pub(crate) struct Outbox {
    buf: Mutex<Vec<u8>>,
    notify: Notify,
    closed: AtomicBool,
}

impl Outbox {
    pub(crate) fn new() -> Self {
        Outbox {
            buf: Mutex::new(Vec::with_capacity(16 << 10)),
            notify: Notify::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the buffer and wakes the writer if the buffer was empty before.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let (r, wake) = {
            let mut buf = self.buf.lock();
            let was_empty = buf.is_empty();
            let r = f(&mut buf);
            (r, was_empty && !buf.is_empty())
        };
        if wake {
            self.notify.notify_one();
        }
        r
    }

    /// Stops the writer once it has written what is queued.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    /// The writer task: writes queued frames until closed or the socket fails.
    pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(&self, mut w: W) -> io::Result<()> {
        let mut batch = Vec::with_capacity(16 << 10);
        loop {
            std::mem::swap(&mut *self.buf.lock(), &mut batch);
            if batch.is_empty() {
                if self.closed.load(Ordering::Acquire) {
                    return w.shutdown().await;
                }
                self.notify.notified().await;
                // The waker put this task first in line (tokio's LIFO slot): step back
                // behind the tasks already runnable so that their frames join this write.
                tokio::task::yield_now().await;
                continue;
            }
            w.write_all(&batch).await?;
            batch.clear();
            if batch.capacity() > 1 << 20 {
                batch.shrink_to(16 << 10);
            }
        }
    }
}
