//! How a coordinator or datanode reaches the metadata service: in this process, or over
//! the network at the GTM's address.

use std::sync::Arc;
use std::time::Duration;

use pgerror::{codes, PgError, PgResult};

use crate::proto::{Request, Reserve, Response, Snapshot, WriteBatch, WriteOutcome};
use crate::service::MetaService;

/// Longest a remote request waits for its answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct MetaClient(Arc<Inner>);

enum Inner {
    Local(Arc<MetaService>),
    Remote {
        addr: String,
        client: rpc::Client<Request, Response>,
    },
}

impl MetaClient {
    pub fn local(service: Arc<MetaService>) -> MetaClient {
        MetaClient(Arc::new(Inner::Local(service)))
    }

    /// The service at a GTM's address (`meridian gtm` hosts it).
    pub fn remote(addr: &str) -> MetaClient {
        MetaClient(Arc::new(Inner::Remote {
            addr: addr.to_string(),
            client: rpc::Client::new(addr, rpc::ClientOptions::default()),
        }))
    }

    async fn call(&self, req: Request) -> PgResult<Response> {
        let resp = match &*self.0 {
            Inner::Local(service) => service.handle(req).await,
            Inner::Remote { addr, client } => {
                match tokio::time::timeout(REQUEST_TIMEOUT, client.call(&req)).await {
                    Ok(r) => r?,
                    Err(_) => {
                        return Err(PgError::new(
                            codes::CONNECTION_FAILURE,
                            format!("the metadata service at {addr} did not answer within 5 s"),
                        ))
                    }
                }
            }
        };
        match resp {
            Response::Error { code, message } => Err(PgError::new(
                codes::known(&code).unwrap_or(codes::INTERNAL_ERROR),
                format!("metadata service: {message}"),
            )),
            resp => Ok(resp),
        }
    }

    pub async fn scan(&self, prefix: &[u8]) -> PgResult<Snapshot> {
        match self
            .call(Request::Scan {
                prefix: prefix.to_vec(),
            })
            .await?
        {
            Response::Snapshot(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    /// The values of `keys` (`None`: absent), in order, read together.
    pub async fn get(&self, keys: Vec<Vec<u8>>) -> PgResult<Vec<Option<Vec<u8>>>> {
        match self.call(Request::Get { keys }).await? {
            Response::Values(v) => Ok(v),
            other => Err(unexpected(other)),
        }
    }

    pub async fn write(&self, batch: WriteBatch) -> PgResult<WriteOutcome> {
        match self.call(Request::Write(batch)).await? {
            Response::Written(o) => Ok(o),
            other => Err(unexpected(other)),
        }
    }

    /// Reserves `n` values of the counter `key` (first value `floor`); returns the first.
    pub async fn allocate(&self, key: &[u8], n: u64, floor: u64) -> PgResult<u64> {
        match self
            .call(Request::Allocate {
                key: key.to_vec(),
                n,
                floor,
            })
            .await?
        {
            Response::Allocated { first } => Ok(first),
            other => Err(unexpected(other)),
        }
    }

    /// Reserves up to `r.n` values of a sequence counter: (first, count), count 0 when it
    /// is exhausted.
    pub async fn reserve(&self, r: Reserve) -> PgResult<(i64, u64)> {
        match self.call(Request::Reserve(r)).await? {
            Response::Reserved { first, count } => Ok((first, count)),
            other => Err(unexpected(other)),
        }
    }

    /// Sets a sequence counter's next value.
    pub async fn restart(&self, key: &[u8], next: i128) -> PgResult<()> {
        match self
            .call(Request::Restart {
                key: key.to_vec(),
                next,
            })
            .await?
        {
            Response::Restarted => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    pub async fn version(&self) -> PgResult<u64> {
        match self.call(Request::Version).await? {
            Response::Version(v) => Ok(v),
            other => Err(unexpected(other)),
        }
    }
}

fn unexpected(resp: Response) -> PgError {
    PgError::new(
        codes::PROTOCOL_VIOLATION,
        format!("metadata service: unexpected answer {resp:?}"),
    )
}
