//! The tonic candidate (feature `tonic`): gRPC over HTTP/2 with prost messages of the same
//! sizes, hand-written service glue (what tonic-build would generate, without protoc).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use tonic::body::BoxBody;
use tonic::codec::ProstCodec;
use tonic::codegen::{http, BoxFuture, Context, Poll, Service};

use crate::{spawn_loop, Candidate, Request, Response};

const PATH: &str = "/bench.PointSelect/Get";

#[derive(Clone, PartialEq, prost::Message)]
pub struct PbRequest {
    #[prost(fixed32, tag = "1")]
    relation: u32,
    #[prost(sfixed64, tag = "2")]
    key: i64,
    #[prost(fixed64, tag = "3")]
    read_ts: u64,
    #[prost(fixed64, tag = "4")]
    txn: u64,
    #[prost(fixed64, tag = "5")]
    columns: u64,
    #[prost(fixed32, tag = "6")]
    flags: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PbResponse {
    #[prost(bool, tag = "1")]
    found: bool,
    #[prost(bytes = "vec", tag = "2")]
    row: Vec<u8>,
}

#[derive(Clone)]
struct PointSelectService;

impl tonic::server::NamedService for PointSelectService {
    const NAME: &'static str = "bench.PointSelect";
}

struct Get;

impl tonic::server::UnaryService<PbRequest> for Get {
    type Response = PbResponse;
    type Future = BoxFuture<tonic::Response<PbResponse>, tonic::Status>;

    fn call(&mut self, req: tonic::Request<PbRequest>) -> Self::Future {
        let r = req.into_inner();
        let resp = crate::answer(&Request {
            relation: r.relation,
            key: r.key,
            read_ts: r.read_ts,
            txn: r.txn,
            columns: r.columns,
            flags: r.flags,
        });
        Box::pin(async move {
            Ok(tonic::Response::new(PbResponse {
                found: resp.found,
                row: resp.row,
            }))
        })
    }
}

impl Service<http::Request<BoxBody>> for PointSelectService {
    type Response = http::Response<BoxBody>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<BoxBody>) -> Self::Future {
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(ProstCodec::<PbResponse, PbRequest>::default());
            Ok(grpc.unary(Get, req).await)
        })
    }
}

pub struct Tonic {
    channel: Arc<tonic::transport::Channel>,
}

impl Tonic {
    pub fn start(
        server_rt: &tokio::runtime::Runtime,
        client_rt: &tokio::runtime::Runtime,
    ) -> Tonic {
        // tonic's server binds by address: take a free port, then serve on it.
        let addr: SocketAddr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port");
        server_rt.spawn(
            tonic::transport::Server::builder()
                .tcp_nodelay(true)
                .add_service(PointSelectService)
                .serve(addr),
        );
        let channel = client_rt.block_on(async {
            let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                .expect("endpoint")
                .tcp_nodelay(true);
            for _ in 0..100 {
                if let Ok(c) = endpoint.connect().await {
                    return c;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            panic!("cannot connect to the tonic server");
        });
        Tonic {
            channel: Arc::new(channel),
        }
    }
}

impl Candidate for Tonic {
    fn spawn_callers(
        &self,
        rt: &tokio::runtime::Runtime,
        callers: u64,
        stop: Arc<AtomicBool>,
        done: Arc<AtomicU64>,
    ) {
        spawn_loop(
            rt,
            self.channel.clone(),
            callers,
            stop,
            done,
            |channel, req| async move {
                let mut grpc = tonic::client::Grpc::new((*channel).clone());
                grpc.ready().await.expect("tonic channel ready");
                let req = PbRequest {
                    relation: req.relation,
                    key: req.key,
                    read_ts: req.read_ts,
                    txn: req.txn,
                    columns: req.columns,
                    flags: req.flags,
                };
                let resp = grpc
                    .unary(
                        tonic::Request::new(req),
                        http::uri::PathAndQuery::from_static(PATH),
                        ProstCodec::<PbRequest, PbResponse>::default(),
                    )
                    .await
                    .expect("tonic call")
                    .into_inner();
                Response {
                    found: resp.found,
                    row: resp.row,
                }
            },
        );
    }
}
