//! The HTTP port of a Meridian process (`--http-listen HOST:PORT`).
//!
//! `GET /metrics` answers with every metric registered in the process's default
//! Prometheus registry, in the Prometheus text format (0.0.4); any other path is 404.
//! Each crate defines and registers its own metrics (`coordinator::metrics`,
//! `gtm::metrics`, `storage::metrics`, `datanode::metrics`), so one process shows the
//! metrics of the roles it runs: `meridian start` all three, `meridian gtm` the GTM's.
//! The standard `process_*` metrics (CPU, resident memory, open files, start time) come
//! from the prometheus crate's process collector.
//!
//! The server is hyper 1 over HTTP/1.1, one task per connection; a malformed request
//! ends its connection only (decision 0048). A coordinator's process also serves its web
//! console there (crates/console): every path but `/metrics` goes to the [`Pages`]
//! given to [`HttpEndpoint::spawn`].

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// A client that has not sent its request head by then is dropped, so idle
/// connections cannot pile up.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// An answer to come.
pub type Answer = Pin<Box<dyn Future<Output = Response<Full<Bytes>>> + Send>>;

/// What else a process serves on its HTTP port (the coordinator's web console).
pub trait Pages: Send + Sync + 'static {
    /// Answers a request for any path but `/metrics`, from the client at `peer`.
    fn answer(&self, req: Request<Incoming>, peer: SocketAddr) -> Answer;
}

/// The HTTP port, bound and not yet serving.
pub struct HttpEndpoint {
    listener: TcpListener,
}

impl HttpEndpoint {
    /// Binds `addr` (port 0: a free port, see [`HttpEndpoint::local_addr`]) and registers
    /// the process metrics.
    pub async fn bind(addr: SocketAddr) -> Result<HttpEndpoint, String> {
        register_process_metrics();
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("could not listen for HTTP on {addr}: {e}"))?;
        Ok(HttpEndpoint { listener })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves on a task of the current runtime until the process ends: `/metrics`, and
    /// the other paths from `pages` (404 without).
    pub fn spawn(self, pages: Option<Arc<dyn Pages>>) {
        drop(tokio::spawn(self.serve(pages)));
    }

    async fn serve(self, pages: Option<Arc<dyn Pages>>) {
        loop {
            let (socket, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, most likely: back off instead of spinning.
                    tracing::warn!("HTTP accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let pages = pages.clone();
            drop(tokio::spawn(async move {
                let served = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(
                        TokioIo::new(socket),
                        hyper::service::service_fn(|req| {
                            let pages = pages.clone();
                            async move {
                                Ok::<_, std::convert::Infallible>(match (req.uri().path(), pages) {
                                    ("/metrics", _) | (_, None) => route(&req),
                                    (_, Some(pages)) => pages.answer(req, peer).await,
                                })
                            }
                        }),
                    )
                    .await;
                if let Err(e) = served {
                    tracing::debug!("HTTP connection ended: {e}");
                }
            }));
        }
    }
}

/// The answer to one request.
pub fn route(req: &Request<Incoming>) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => metrics(),
        (_, "/metrics") => plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n".into()),
        _ => plain(StatusCode::NOT_FOUND, "not found\n".into()),
    }
}

fn metrics() -> Response<Full<Bytes>> {
    let encoder = prometheus::TextEncoder::new();
    match encoder.encode_to_string(&prometheus::gather()) {
        Ok(text) => {
            let mut response = plain(StatusCode::OK, text);
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(prometheus::TEXT_FORMAT),
            );
            response
        }
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

fn plain(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The process collector, registered once per process.
fn register_process_metrics() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        let collector = prometheus::process_collector::ProcessCollector::for_self();
        if let Err(e) = prometheus::register(Box::new(collector)) {
            tracing::warn!("no process metrics: {e}");
        }
    });
}
