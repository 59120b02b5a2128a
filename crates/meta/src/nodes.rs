//! The cluster's members: nodes register themselves, and the datanodes the bucket map
//! spreads over are fixed when the first coordinator forms the cluster.

use std::time::{Duration, Instant};

use pgerror::{codes, PgError, PgResult};
use serde::{Deserialize, Serialize};

use crate::client::MetaClient;
use crate::proto::{WriteBatch, WriteOutcome};

const DATANODES: &[u8] = b"nodes/datanode/";
const COORDINATORS: &[u8] = b"nodes/coordinator/";
const NEXT_NODE_ID: &[u8] = b"nodes/next_id";
/// The ids of the bucket map's datanodes, in map order (JSON).
const MEMBERS: &[u8] = b"cluster/datanodes";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    Datanode,
    Coordinator,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Datanode => "datanode",
            Role::Coordinator => "coordinator",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// A datanode's id, kept in its data directory across restarts; 0 for coordinators,
    /// which hold no data and are named by their address.
    pub id: u32,
    pub role: Role,
    /// Where the node serves (clients for coordinators, coordinators for datanodes).
    pub address: String,
}

/// Registers a datanode at `address`: under `id` if it had one, else under a new id,
/// which it must keep (its data belongs to that id).
pub async fn register_datanode(meta: &MetaClient, id: Option<u32>, address: &str) -> PgResult<u32> {
    let id = match id {
        Some(id) => id,
        None => meta.allocate(NEXT_NODE_ID, 1, 1).await? as u32,
    };
    put_node(
        meta,
        &datanode_key(id),
        &Node {
            id,
            role: Role::Datanode,
            address: address.to_string(),
        },
    )
    .await?;
    Ok(id)
}

pub async fn register_coordinator(meta: &MetaClient, address: &str) -> PgResult<()> {
    let mut key = COORDINATORS.to_vec();
    key.extend_from_slice(address.as_bytes());
    put_node(
        meta,
        &key,
        &Node {
            id: 0,
            role: Role::Coordinator,
            address: address.to_string(),
        },
    )
    .await
}

async fn put_node(meta: &MetaClient, key: &[u8], node: &Node) -> PgResult<()> {
    let value = serde_json::to_vec(node).map_err(|e| PgError::internal(e.to_string()))?;
    meta.write(WriteBatch {
        expect: Vec::new(),
        puts: vec![(key.to_vec(), Some(value))],
    })
    .await?;
    Ok(())
}

/// Every registered node: datanodes by id, then coordinators by address.
pub async fn nodes(meta: &MetaClient) -> PgResult<Vec<Node>> {
    let mut all = read_nodes(meta, DATANODES).await?;
    all.extend(read_nodes(meta, COORDINATORS).await?);
    Ok(all)
}

async fn read_nodes(meta: &MetaClient, prefix: &[u8]) -> PgResult<Vec<Node>> {
    meta.scan(prefix)
        .await?
        .entries
        .iter()
        .map(|(_, v)| serde_json::from_slice(v).map_err(corrupt))
        .collect()
}

/// The datanodes the bucket map spreads over, in map order. A coordinator given `form`
/// forms the cluster, if nobody has, from the datanodes registered once there are at
/// least that many; one without waits for it to be formed. Either says what it waits
/// for; every one reads the same list.
pub async fn cluster_datanodes(meta: &MetaClient, form: Option<usize>) -> PgResult<Vec<Node>> {
    let started = Instant::now();
    let mut reported = Instant::now();
    loop {
        let registered = read_nodes(meta, DATANODES).await?;
        let members: Vec<u32> = match meta.scan(MEMBERS).await?.entries.pop() {
            Some((_, v)) => serde_json::from_slice(&v).map_err(corrupt)?,
            None if form.is_some_and(|n| registered.len() >= n.max(1)) => {
                let ids: Vec<u32> = registered.iter().map(|n| n.id).collect();
                let value =
                    serde_json::to_vec(&ids).map_err(|e| PgError::internal(e.to_string()))?;
                let formed = meta
                    .write(WriteBatch {
                        expect: vec![(MEMBERS.to_vec(), None)],
                        puts: vec![(MEMBERS.to_vec(), Some(value))],
                    })
                    .await?;
                if let WriteOutcome::Written { .. } = formed {
                    tracing::info!(datanodes = ids.len(), "formed the cluster");
                }
                continue; // formed by us or by another coordinator: read it
            }
            None => {
                if reported.elapsed() >= Duration::from_secs(5) {
                    reported = Instant::now();
                    let waited = started.elapsed().as_secs();
                    match form {
                        Some(n) => tracing::info!(
                            "waiting for datanodes to register at the GTM: {} of {n} after {waited} s",
                            registered.len()
                        ),
                        None => tracing::info!(
                            "waiting for a coordinator started with --datanodes N to form the \
                             cluster ({} datanodes registered) after {waited} s",
                            registered.len()
                        ),
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        return members
            .iter()
            .map(|id| {
                registered
                    .iter()
                    .find(|n| n.id == *id)
                    .cloned()
                    .ok_or_else(|| {
                        PgError::new(
                            codes::DATA_CORRUPTED,
                            format!("datanode {id} of the cluster is not registered"),
                        )
                    })
            })
            .collect();
    }
}

fn datanode_key(id: u32) -> Vec<u8> {
    let mut key = DATANODES.to_vec();
    key.extend_from_slice(format!("{id:06}").as_bytes());
    key
}

fn corrupt(e: serde_json::Error) -> PgError {
    PgError::new(
        codes::DATA_CORRUPTED,
        format!("cluster metadata: a node record is unreadable: {e}"),
    )
}
