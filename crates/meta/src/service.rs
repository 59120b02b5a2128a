//! The service side: answers requests from the store, and publishes each new version
//! (the GTM carries it on every answer, so coordinators learn of changes for free).

use std::sync::Arc;

use pgerror::PgResult;
use tokio::net::TcpStream;

use crate::proto::{Request, Response, WriteOutcome};
use crate::store::MetaStore;

pub struct MetaService {
    store: MetaStore,
    publish: Box<dyn Fn(u64) + Send + Sync>,
}

impl MetaService {
    /// `publish(version)` is called with the store's version now and after each change.
    pub fn new(store: MetaStore, publish: impl Fn(u64) + Send + Sync + 'static) -> MetaService {
        publish(store.version());
        MetaService {
            store,
            publish: Box::new(publish),
        }
    }

    /// Answers one request. Writes touch the disk: they run on the blocking pool.
    pub async fn handle(self: &Arc<Self>, req: Request) -> Response {
        let service = self.clone();
        let answer = tokio::task::spawn_blocking(move || service.apply(req)).await;
        match answer {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) => Response::Error {
                code: e.code.to_string(),
                message: e.message,
            },
            Err(e) => Response::Error {
                code: pgerror::codes::INTERNAL_ERROR.to_string(),
                message: format!("metadata request failed: {e}"),
            },
        }
    }

    fn apply(&self, req: Request) -> PgResult<Response> {
        Ok(match req {
            Request::Scan { prefix } => Response::Snapshot(self.store.scan(&prefix)),
            Request::Get { keys } => Response::Values(self.store.get(&keys)),
            Request::Version => Response::Version(self.store.version()),
            Request::Write(batch) => {
                let outcome = self.store.write(&batch)?;
                if let WriteOutcome::Written { version } = outcome {
                    (self.publish)(version);
                }
                Response::Written(outcome)
            }
            Request::Allocate { key, n, floor } => Response::Allocated {
                first: self.store.allocate(&key, n, floor)?,
            },
            Request::Reserve(r) => {
                let (first, count) = self.store.reserve(&r)?;
                Response::Reserved { first, count }
            }
            Request::Restart { key, next } => {
                self.store.restart(&key, next)?;
                Response::Restarted
            }
        })
    }

    /// Serves one connection (handed over by the GTM's listener).
    pub fn serve(self: &Arc<Self>, stream: TcpStream) {
        let service = self.clone();
        let handler = Arc::new(move |req: Request, _: rpc::Responder<Response>| {
            let service = service.clone();
            async move { service.handle(req).await }
        });
        tokio::spawn(rpc::serve_stream(stream, handler));
    }
}
