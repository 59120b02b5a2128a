//! A session's socket I/O: the stream it reads and writes, and the buffers it borrows
//! from its thread for that.
//!
//! Why borrowed buffers: a session waiting for its client's next request holds no
//! buffer; it takes one from its thread's pool when a request arrives or an answer is
//! written, and gives it back once the request is consumed or the answer sent. With
//! 1,000 connections, buffers of their own (8 KiB in, 8 KiB out each) were memory
//! gone cold between two requests of the same session, a cache miss for the kernel's
//! copy and for every message decoded or encoded; the pool is last in, first out, so the
//! few dozen buffers in use in one pass over the sessions stay in the cache. Idle
//! connections also cost less memory.

use bytes::BytesMut;
use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::{TcpStream, UnixStream};

/// Capacity of a pooled buffer: one client request or answer fits many times over.
pub const BUFFER_CAPACITY: usize = 8 << 10;
/// Free buffers a thread keeps; more are freed. The pool needs as many as the sessions
/// of one pass hold at once (each holds its answer, and only that, until the pass ends):
/// with 1,000 connections on two threads a pass runs nearly all of a thread's 500
/// sessions (docs/performance.md's git history, "Round 20"). At most 4 MiB per thread.
const MAX_FREE_BUFFERS: usize = 512;

thread_local! {
    static FREE: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// A buffer with at least `BUFFER_CAPACITY / 2` bytes free, from this thread's pool.
pub fn take() -> BytesMut {
    FREE.with(|free| free.borrow_mut().pop())
        .unwrap_or_else(|| BytesMut::with_capacity(BUFFER_CAPACITY))
}

/// Gives an empty `buf` up, leaving an unallocated buffer in its place: back to this
/// thread's pool if it is of the pool's size, freed otherwise. A buffer holding unread
/// bytes (the start of a message) stays where it is.
pub fn give_back(buf: &mut BytesMut) {
    if buf.is_empty() && (BUFFER_CAPACITY / 2..=BUFFER_CAPACITY * 2).contains(&buf.capacity()) {
        let buf = std::mem::take(buf);
        FREE.with(|free| {
            let mut free = free.borrow_mut();
            if free.len() < MAX_FREE_BUFFERS {
                free.push(buf);
            }
        });
    } else if buf.is_empty() {
        *buf = BytesMut::new();
    }
}

/// Free buffers in this thread's pool.
#[cfg(test)]
fn free_buffers() -> usize {
    FREE.with(|free| free.borrow().len())
}

/// A client connection's byte stream, which a session can wait on without holding a
/// buffer.
pub trait SessionStream: AsyncRead + tokio::io::AsyncWrite + Unpin + Send + Sync + AsRawFd {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    fn raw_fd(&self) -> RawFd {
        self.as_raw_fd()
    }
}

impl SessionStream for TcpStream {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        TcpStream::poll_read_ready(self, cx)
    }
}

impl SessionStream for UnixStream {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        UnixStream::poll_read_ready(self, cx)
    }
}

/// How often a running statement checks that its client is still connected.
const CLIENT_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Completes once the peer of the socket `fd` has closed its end (checked every
/// `CLIENT_CHECK_INTERVAL`, as PostgreSQL's client_connection_check_interval does, with
/// POLLRDHUP, which sees a hang-up even behind unread pipelined input). The check does
/// not read, so it needs no access to the stream that the statement may be using.
pub async fn client_gone(fd: RawFd) {
    loop {
        tokio::time::sleep(CLIENT_CHECK_INTERVAL).await;
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout; `fd` stays open while the session that
        // owns the stream runs the statement this future belongs to.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        if ready == 1 && poll.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return;
        }
    }
}

/// Reads from `stream` into `buf` once something is there, borrowing a pooled buffer if
/// `buf` has none. Ok(0) is end of stream.
pub async fn read<S: SessionStream>(stream: &mut S, buf: &mut BytesMut) -> io::Result<usize> {
    std::future::poll_fn(|cx| stream.poll_read_ready(cx)).await?;
    if buf.capacity() == 0 {
        *buf = take();
    } else if buf.capacity() - buf.len() < BUFFER_CAPACITY / 2 {
        buf.reserve(BUFFER_CAPACITY);
    }
    // Through AsyncRead rather than a non-blocking try: a read that leaves the socket
    // drained clears its readiness, so the next wait does not cost a read that finds
    // nothing. (If the readiness was stale, this waits holding the buffer: rare.)
    stream.read_buf(buf).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_buffer_goes_back_to_the_pool_and_is_handed_out_again() {
        let before = free_buffers();
        let mut buf = take();
        let addr = buf.as_ptr();
        give_back(&mut buf);
        assert_eq!(
            buf.capacity(),
            0,
            "the session keeps no buffer once it gave it back"
        );
        assert_eq!(free_buffers(), before + 1);
        let again = take();
        assert_eq!(again.as_ptr(), addr, "last in, first out");
        assert_eq!(free_buffers(), before);
    }

    #[test]
    fn a_buffer_with_unread_bytes_is_not_pooled() {
        let before = free_buffers();
        let mut buf = take();
        buf.extend_from_slice(b"partial message");
        give_back(&mut buf);
        assert_eq!(free_buffers(), before);
    }

    #[test]
    fn a_buffer_outside_the_pool_size_is_not_pooled() {
        let before = free_buffers();
        let mut small = BytesMut::with_capacity(BUFFER_CAPACITY / 4);
        let mut large = BytesMut::with_capacity(BUFFER_CAPACITY * 4);
        give_back(&mut small);
        give_back(&mut large);
        assert_eq!(free_buffers(), before);
        assert_eq!(
            large.capacity(),
            0,
            "an empty buffer is freed, not kept by the session"
        );
    }

    #[test]
    fn the_pool_keeps_at_most_its_cap() {
        let mut bufs: Vec<BytesMut> = (0..MAX_FREE_BUFFERS + 5).map(|_| take()).collect();
        for b in &mut bufs {
            give_back(b);
        }
        assert_eq!(free_buffers(), MAX_FREE_BUFFERS);
    }
}
