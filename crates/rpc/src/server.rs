//! The server: accepts connections and runs the user's handler once per request, each in
//! its own task, so many requests of one connection are in flight at once.

use std::collections::hash_map::Entry;
use std::future::Future;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use rustc_hash::FxHashMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::AbortHandle;

use crate::frame::{self, FrameReader, Outbox};

/// Accepts connections on `listener` and serves each with `handler` until accepting fails.
/// `handler(request, responder)` returns the final response; it may stream messages
/// before that through the [`Responder`].
pub async fn serve<Req, Resp, H, F>(listener: TcpListener, handler: H) -> io::Result<()>
where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    H: Fn(Req, Responder<Resp>) -> F + Send + Sync + 'static,
    F: Future<Output = Resp> + Send + 'static,
{
    serve_with_close(listener, handler, |_| {}).await
}

/// `serve`, calling `on_close(connection)` once a connection has ended and its running
/// handlers have been cancelled (`Responder::connection` names the connection a request
/// came on): a server that keeps state per client connection drops it there.
pub async fn serve_with_close<Req, Resp, H, F, C>(
    listener: TcpListener,
    handler: H,
    on_close: C,
) -> io::Result<()>
where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    H: Fn(Req, Responder<Resp>) -> F + Send + Sync + 'static,
    F: Future<Output = Resp> + Send + 'static,
    C: Fn(u64) + Send + Sync + 'static,
{
    let handler = Arc::new(handler);
    let on_close = Arc::new(on_close);
    let mut next_connection = 1u64;
    loop {
        let (stream, _) = listener.accept().await?;
        let (handler, on_close) = (handler.clone(), on_close.clone());
        let connection = next_connection;
        next_connection += 1;
        tokio::spawn(async move {
            serve_connection(stream, handler, connection).await;
            on_close(connection);
        });
    }
}

/// Serves one connection accepted elsewhere (a listener shared with another protocol)
/// with `handler`, until the client closes it or it fails.
pub async fn serve_stream<Req, Resp, H, F>(stream: TcpStream, handler: Arc<H>)
where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    H: Fn(Req, Responder<Resp>) -> F + Send + Sync + 'static,
    F: Future<Output = Resp> + Send + 'static,
{
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let connection = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    serve_connection(stream, handler, connection).await
}

/// A request being handled.
struct Running {
    /// Streamed messages the handler may still send before the client's next credit.
    credits: Arc<Semaphore>,
    /// Set right after the handler's task is spawned.
    task: Option<AbortHandle>,
}

struct ServerConn {
    /// Numbers the server's connections (`Responder::connection`).
    connection: u64,
    outbox: Outbox,
    running: Mutex<FxHashMap<u64, Running>>,
}

impl ServerConn {
    /// Stops request `id`: its handler's future is dropped at its next await, and a
    /// [`Responder::send`] waiting for credit returns 57014.
    fn cancel(&self, id: u64) {
        if let Some(r) = self.running.lock().remove(&id) {
            r.credits.close();
            if let Some(task) = r.task {
                task.abort();
            }
        }
    }
}

/// Serves one connection: reads requests, spawns their handlers, writes their responses.
/// Returns when the client closes the connection or it fails; running handlers are
/// then cancelled.
async fn serve_connection<Req, Resp, H, F>(stream: TcpStream, handler: Arc<H>, connection: u64)
where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    H: Fn(Req, Responder<Resp>) -> F + Send + Sync + 'static,
    F: Future<Output = Resp> + Send + 'static,
{
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let (r, w) = stream.into_split();
    let conn = Arc::new(ServerConn {
        connection,
        outbox: Outbox::new(),
        running: Mutex::new(FxHashMap::default()),
    });
    let writer = conn.clone();
    let writer = tokio::spawn(async move {
        // A failed write shows up as a failed read too; the reader ends the connection.
        let _ = writer.outbox.write_loop(w).await;
    });
    let mut frames = FrameReader::new(r);
    while let Ok(Some((id, kind, payload))) = frames.next().await {
        match kind {
            frame::REQUEST => match frame::decode::<Req>(payload) {
                Ok(req) => {
                    if !start(&conn, &handler, id, req) {
                        break; // an id reused while running: not our client
                    }
                }
                Err(e) => conn
                    .outbox
                    .with(|buf| frame::push_raw(buf, id, frame::FAILED, e.as_bytes())),
            },
            frame::CANCEL => conn.cancel(id),
            frame::CREDIT => {
                let Ok(n) = <[u8; 4]>::try_from(payload) else {
                    break;
                };
                if let Some(r) = conn.running.lock().get(&id) {
                    r.credits.add_permits(u32::from_le_bytes(n) as usize);
                }
            }
            _ => break,
        }
    }
    let running = std::mem::take(&mut *conn.running.lock());
    for r in running.into_values() {
        r.credits.close();
        if let Some(task) = r.task {
            task.abort();
        }
    }
    conn.outbox.close();
    let _ = writer.await;
}

/// Spawns the handler for request `id`; false if `id` is already running.
fn start<Req, Resp, H, F>(conn: &Arc<ServerConn>, handler: &Arc<H>, id: u64, req: Req) -> bool
where
    Req: Send + 'static,
    Resp: Serialize + Send + 'static,
    H: Fn(Req, Responder<Resp>) -> F + Send + Sync + 'static,
    F: Future<Output = Resp> + Send + 'static,
{
    let credits = Arc::new(Semaphore::new(frame::STREAM_WINDOW as usize));
    match conn.running.lock().entry(id) {
        Entry::Occupied(_) => return false,
        Entry::Vacant(e) => e.insert(Running {
            credits: credits.clone(),
            task: None,
        }),
    };
    let responder = Responder {
        conn: conn.clone(),
        id,
        credits,
        _resp: std::marker::PhantomData,
    };
    let handler = handler.clone();
    let finish = Finish {
        conn: conn.clone(),
        id,
        ended: false,
    };
    let mut run = Box::pin(async move {
        let resp = handler(req, responder).await;
        finish.end(&resp);
    });
    // Most requests (a point read, a queued write) finish without waiting: run here, on
    // the reader, they cost no task and no wake-up of another worker. One that waits
    // goes on in a task of its own (a future may move once pinned; it registers the
    // task's waker on its next poll). A panic fails only this request, as in a task.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.as_mut().poll(&mut cx))) {
        Ok(std::task::Poll::Ready(())) | Err(_) => return true,
        Ok(std::task::Poll::Pending) => {}
    }
    let task = tokio::spawn(run);
    if let Some(r) = conn.running.lock().get_mut(&id) {
        r.task = Some(task.abort_handle());
    }
    true
}

/// Sends the final frame of a request, or FAILED if the handler never returned (it
/// panicked); nothing if the request was cancelled.
struct Finish {
    conn: Arc<ServerConn>,
    id: u64,
    ended: bool,
}

impl Finish {
    fn end<Resp: Serialize>(mut self, resp: &Resp) {
        self.ended = true;
        if self.conn.running.lock().remove(&self.id).is_some() {
            let id = self.id;
            self.conn.outbox.with(|buf| {
                if let Err(e) = frame::push(buf, id, frame::END, resp) {
                    frame::push_raw(buf, id, frame::FAILED, e.as_bytes());
                }
            });
        }
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        if !self.ended && self.conn.running.lock().remove(&self.id).is_some() {
            let id = self.id;
            self.conn
                .outbox
                .with(|buf| frame::push_raw(buf, id, frame::FAILED, b"the handler panicked"));
        }
    }
}

/// Streams messages of one request to the client ahead of its final response.
pub struct Responder<Resp> {
    conn: Arc<ServerConn>,
    id: u64,
    credits: Arc<Semaphore>,
    _resp: std::marker::PhantomData<fn(&Resp)>,
}

impl<Resp: Serialize> Responder<Resp> {
    /// The connection this request came on (see `serve_with_close`).
    pub fn connection(&self) -> u64 {
        self.conn.connection
    }

    /// Sends one streamed message. Waits while the client holds a full window of
    /// unconsumed messages (back-pressure); fails with 57014 once the request is cancelled.
    pub async fn send(&self, msg: &Resp) -> PgResult<()> {
        match self.credits.acquire().await {
            Ok(permit) => permit.forget(),
            Err(_) => {
                return Err(PgError::new(
                    codes::QUERY_CANCELED,
                    "the client cancelled the request",
                ))
            }
        }
        let id = self.id;
        self.conn
            .outbox
            .with(|buf| frame::push(buf, id, frame::ITEM, msg))
            .map_err(PgError::internal)
    }
}
