//! The client: one connection per [`Client`] and tokio runtime, shared by every caller on
//! that runtime.
//!
//! A caller registers a slot under a fresh request id, appends its frame to the
//! connection's [`Outbox`] and waits on the slot. One reader task per connection routes
//! response frames to slots by id; one writer task sends whatever callers queued meanwhile
//! in one write. When the connection fails, every waiting caller gets 08006 and the next
//! call opens a new connection.
//!
//! Why a connection per runtime: a coordinator runs its sessions on single-threaded
//! runtimes, one per thread (`coordinator::executors`). A connection whose reader and
//! writer tasks live on another runtime costs two cross-thread wake-ups per call (an
//! eventfd write and, on a VM, an inter-processor interrupt each way); with the tasks on
//! the caller's own runtime, a call is queued, written and answered on one thread.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use rustc_hash::FxHashMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::frame::{self, FrameReader, Outbox};

/// Options for [`Client::new`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Longest a call waits for a new connection before failing with 08006.
    pub connect_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// A typed client for one server address. Calls from many tasks on one runtime share its
/// connection there.
///
/// Requests on different runtimes travel on different connections, so a server that keeps
/// state per connection sees one caller's requests together only if that caller stays on
/// one runtime (a coordinator session does: it is pinned to its thread).
pub struct Client<Req, Resp> {
    addr: String,
    opts: ClientOptions,
    /// The connection of each runtime that called, most recently opened last.
    current: Mutex<Vec<(RuntimeId, Arc<Conn<Resp>>)>>,
    /// Held while opening a connection, so concurrent callers open one, not one each.
    connecting: tokio::sync::Mutex<()>,
    _req: PhantomData<fn(&Req)>,
}

type RuntimeId = tokio::runtime::Id;

impl<Req, Resp> Drop for Client<Req, Resp> {
    fn drop(&mut self) {
        for (_, conn) in self.current.lock().drain(..) {
            conn.outbox.close();
        }
    }
}

/// What a response frame delivers to a waiting stream.
enum Event<Resp> {
    Item(Resp),
    End(Resp),
    Failed(PgError),
}

enum Slot<Resp> {
    Unary(oneshot::Sender<PgResult<Resp>>),
    /// Unbounded, but the server sends at most [`frame::STREAM_WINDOW`] messages ahead of
    /// the consumer's credits.
    Stream(mpsc::UnboundedSender<Event<Resp>>),
}

struct Slots<Resp> {
    next_id: u64,
    by_id: FxHashMap<u64, Slot<Resp>>,
    /// Set once the connection failed; no new request is registered after that.
    failed: bool,
}

struct Conn<Resp> {
    addr: String,
    outbox: Outbox,
    slots: Mutex<Slots<Resp>>,
}

fn connection_failure(msg: String) -> PgError {
    PgError::new(codes::CONNECTION_FAILURE, msg)
}

impl<Req, Resp> Client<Req, Resp>
where
    Req: Serialize,
    Resp: DeserializeOwned + Send + 'static,
{
    /// A client for `addr`; it connects on the first call, on the current tokio runtime.
    pub fn new(addr: impl Into<String>, opts: ClientOptions) -> Self {
        Client {
            addr: addr.into(),
            opts,
            current: Mutex::new(Vec::new()),
            connecting: tokio::sync::Mutex::new(()),
            _req: PhantomData,
        }
    }

    /// Sends `req` and waits for its single response. Dropping the future cancels the
    /// request on the server.
    pub async fn call(&self, req: &Req) -> PgResult<Resp> {
        let conn = self.connection().await?;
        let (tx, rx) = oneshot::channel();
        let id = conn.start(req, Slot::Unary(tx))?;
        let cancel = CancelOnDrop { conn: &conn, id };
        let result = rx.await;
        // Answered (or failed): the slot is gone, nothing to cancel. The guard owns nothing.
        std::mem::forget(cancel);
        match result {
            Ok(r) => r,
            Err(_) => Err(conn.lost()),
        }
    }

    /// Sends `req` and returns the stream of its responses: the streamed messages, then
    /// the final one. Dropping the stream before its end cancels the request.
    pub async fn call_stream(&self, req: &Req) -> PgResult<ResponseStream<Resp>> {
        let conn = self.connection().await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let id = conn.start(req, Slot::Stream(tx))?;
        Ok(ResponseStream {
            conn,
            id,
            rx,
            unacknowledged: 0,
            done: false,
        })
    }

    /// This runtime's live connection, or a new one (its tasks on this runtime) if there
    /// is none or it failed.
    async fn connection(&self) -> PgResult<Arc<Conn<Resp>>> {
        let runtime = tokio::runtime::Handle::current().id();
        if let Some(conn) = self.live(runtime) {
            return Ok(conn);
        }
        let _connecting = self.connecting.lock().await;
        if let Some(conn) = self.live(runtime) {
            return Ok(conn);
        }
        let conn = Conn::open(&self.addr, &self.opts).await?;
        let mut current = self.current.lock();
        current.retain(|(r, _)| *r != runtime);
        current.push((runtime, conn.clone()));
        Ok(conn)
    }

    /// Whether the connection opened last has not failed: the server answered the latest
    /// attempt to reach it.
    pub fn is_connected(&self) -> bool {
        let current = self.current.lock();
        current.last().is_some_and(|(_, c)| !c.slots.lock().failed)
    }

    fn live(&self, runtime: RuntimeId) -> Option<Arc<Conn<Resp>>> {
        let current = self.current.lock();
        current
            .iter()
            .find(|(r, c)| *r == runtime && !c.slots.lock().failed)
            .map(|(_, c)| c.clone())
    }
}

impl<Resp: DeserializeOwned + Send + 'static> Conn<Resp> {
    async fn open(addr: &str, opts: &ClientOptions) -> PgResult<Arc<Self>> {
        let stream = match tokio::time::timeout(opts.connect_timeout, TcpStream::connect(addr))
            .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(connection_failure(format!("cannot connect to {addr}: {e}"))),
            Err(_) => {
                return Err(connection_failure(format!(
                    "cannot connect to {addr}: timed out after {:?}",
                    opts.connect_timeout
                )))
            }
        };
        stream.set_nodelay(true).map_err(|e| {
            connection_failure(format!("cannot configure connection to {addr}: {e}"))
        })?;
        let (r, w) = stream.into_split();
        let conn = Arc::new(Conn {
            addr: addr.to_string(),
            outbox: Outbox::new(),
            slots: Mutex::new(Slots {
                next_id: 0,
                by_id: FxHashMap::default(),
                failed: false,
            }),
        });
        let writer = conn.clone();
        tokio::spawn(async move {
            let result = writer.outbox.write_loop(w).await;
            if let Err(e) = result {
                writer.fail(&format!("write failed: {e}"));
            }
        });
        let reader = conn.clone();
        tokio::spawn(async move {
            let reason = match reader.read_loop(FrameReader::new(r)).await {
                Ok(()) => "closed by the server".to_string(),
                Err(e) => e,
            };
            reader.fail(&reason);
        });
        Ok(conn)
    }

    fn lost(&self) -> PgError {
        connection_failure(format!("connection to {} lost", self.addr))
    }

    /// Registers `slot` under a new id and queues the request frame.
    fn start<Req: Serialize>(&self, req: &Req, slot: Slot<Resp>) -> PgResult<u64> {
        let id = {
            let mut slots = self.slots.lock();
            if slots.failed {
                return Err(self.lost());
            }
            let id = slots.next_id;
            slots.next_id += 1;
            slots.by_id.insert(id, slot);
            id
        };
        self.outbox
            .with(|buf| frame::push(buf, id, frame::REQUEST, req))
            .map_err(|e| {
                self.slots.lock().by_id.remove(&id);
                PgError::internal(e)
            })?;
        Ok(id)
    }

    /// Forgets request `id` and tells the server to stop it.
    fn cancel(&self, id: u64) {
        let mut slots = self.slots.lock();
        if slots.by_id.remove(&id).is_some() && !slots.failed {
            drop(slots);
            self.outbox
                .with(|buf| frame::push_raw(buf, id, frame::CANCEL, &[]));
        }
    }

    /// Fails every waiting caller and stops the writer; later calls reconnect.
    fn fail(&self, reason: &str) {
        let waiting = {
            let mut slots = self.slots.lock();
            slots.failed = true;
            std::mem::take(&mut slots.by_id)
        };
        self.outbox.close();
        let err = || connection_failure(format!("connection to {} lost: {reason}", self.addr));
        for slot in waiting.into_values() {
            match slot {
                Slot::Unary(tx) => drop(tx.send(Err(err()))),
                Slot::Stream(tx) => drop(tx.send(Event::Failed(err()))),
            }
        }
    }

    async fn read_loop(
        &self,
        mut frames: FrameReader<tokio::net::tcp::OwnedReadHalf>,
    ) -> Result<(), String> {
        while let Some((id, kind, payload)) = frames
            .next()
            .await
            .map_err(|e| format!("read failed: {e}"))?
        {
            let event = match kind {
                frame::ITEM => Event::Item(frame::decode(payload)?),
                frame::END => Event::End(frame::decode(payload)?),
                frame::FAILED => Event::Failed(PgError::internal(format!(
                    "request failed on {}: {}",
                    self.addr,
                    String::from_utf8_lossy(payload)
                ))),
                other => return Err(format!("unexpected frame kind {other} from the server")),
            };
            self.deliver(id, event);
        }
        Ok(())
    }

    fn deliver(&self, id: u64, event: Event<Resp>) {
        let mut slots = self.slots.lock();
        let more = matches!(event, Event::Item(_));
        let slot = if more {
            match slots.by_id.get(&id) {
                Some(Slot::Stream(tx)) => {
                    // A closed receiver means the stream is being dropped; its drop cancels.
                    let _ = tx.send(event);
                    return;
                }
                Some(Slot::Unary(_)) => slots.by_id.remove(&id),
                None => return,
            }
        } else {
            slots.by_id.remove(&id)
        };
        drop(slots);
        match (slot, event) {
            (Some(Slot::Unary(tx)), Event::Item(_)) => {
                let _ = tx.send(Err(PgError::new(
                    codes::PROTOCOL_VIOLATION,
                    format!("{} streamed the response to a unary call", self.addr),
                )));
                self.outbox
                    .with(|buf| frame::push_raw(buf, id, frame::CANCEL, &[]));
            }
            (Some(Slot::Unary(tx)), Event::End(r)) => drop(tx.send(Ok(r))),
            (Some(Slot::Unary(tx)), Event::Failed(e)) => drop(tx.send(Err(e))),
            (Some(Slot::Stream(tx)), event) => drop(tx.send(event)),
            (None, _) => {}
        }
    }
}

/// Cancels a unary call whose future is dropped before its answer arrived.
struct CancelOnDrop<'a, Resp: DeserializeOwned + Send + 'static> {
    conn: &'a Conn<Resp>,
    id: u64,
}

impl<Resp: DeserializeOwned + Send + 'static> Drop for CancelOnDrop<'_, Resp> {
    fn drop(&mut self) {
        self.conn.cancel(self.id);
    }
}

/// The responses to one request, streamed messages first and the final one last.
/// Implements [`futures_core::Stream`]; [`ResponseStream::next`] needs no extra crate.
pub struct ResponseStream<Resp: DeserializeOwned + Send + 'static> {
    conn: Arc<Conn<Resp>>,
    id: u64,
    rx: mpsc::UnboundedReceiver<Event<Resp>>,
    /// Streamed messages taken by the consumer and not yet credited back to the server.
    unacknowledged: u32,
    done: bool,
}

impl<Resp: DeserializeOwned + Send + 'static> ResponseStream<Resp> {
    /// The next response; `None` after the final one (or after an error).
    pub async fn next(&mut self) -> Option<PgResult<Resp>> {
        std::future::poll_fn(|cx| self.poll_next_item(cx)).await
    }

    fn poll_next_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<PgResult<Resp>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let event = match self.rx.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(event) => event,
        };
        Poll::Ready(Some(match event {
            Some(Event::Item(r)) => {
                self.unacknowledged += 1;
                if self.unacknowledged >= frame::STREAM_WINDOW / 2 {
                    let n = std::mem::take(&mut self.unacknowledged);
                    let id = self.id;
                    self.conn
                        .outbox
                        .with(|buf| frame::push_raw(buf, id, frame::CREDIT, &n.to_le_bytes()));
                }
                Ok(r)
            }
            Some(Event::End(r)) => {
                self.done = true;
                Ok(r)
            }
            Some(Event::Failed(e)) => {
                self.done = true;
                Err(e)
            }
            None => {
                self.done = true;
                Err(self.conn.lost())
            }
        }))
    }
}

impl<Resp: DeserializeOwned + Send + 'static> futures_core::Stream for ResponseStream<Resp> {
    type Item = PgResult<Resp>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_next_item(cx)
    }
}

impl<Resp: DeserializeOwned + Send + 'static> Drop for ResponseStream<Resp> {
    fn drop(&mut self) {
        if !self.done {
            self.conn.cancel(self.id);
        }
    }
}
