//! A bulk load into a relation on several datanodes: each chunk's rows go to their
//! datanodes' loads (keys still ascend within each).

use crate::placement::{BucketMap, RelPlacement};
use datanode_client::{Chunk, DatanodeBulkLoad};
use pgerror::PgResult;

pub enum ClusterBulkLoad {
    One(DatanodeBulkLoad),
    Split {
        /// One per datanode, in `Datanodes`' order.
        loads: Vec<DatanodeBulkLoad>,
        placement: RelPlacement,
        map: BucketMap,
    },
}

impl ClusterBulkLoad {
    pub(crate) fn split(
        loads: Vec<DatanodeBulkLoad>,
        placement: RelPlacement,
        map: BucketMap,
    ) -> Self {
        ClusterBulkLoad::Split {
            loads,
            placement,
            map,
        }
    }

    /// An empty chunk to fill.
    pub fn empty_chunk(&self) -> Chunk {
        match self {
            ClusterBulkLoad::One(load) => load.empty_chunk(),
            ClusterBulkLoad::Split { .. } => Chunk::default(),
        }
    }

    /// Sends a chunk of rows, keys ascending across chunks.
    pub async fn write(&mut self, chunk: Chunk) -> PgResult<()> {
        let (loads, placement, map) = match self {
            ClusterBulkLoad::One(load) => return load.write(chunk).await,
            ClusterBulkLoad::Split {
                loads,
                placement,
                map,
            } => (loads, *placement, &*map),
        };
        let mut parts: Vec<Chunk> = loads.iter().map(|_| Chunk::default()).collect();
        for (key, row) in chunk.iter() {
            match placement.bucket_of_key(key)? {
                Some(bucket) => parts[map.datanode(bucket)].push(key, row),
                None => parts.iter_mut().for_each(|part| part.push(key, row)),
            }
        }
        for (load, part) in loads.iter_mut().zip(parts) {
            if !part.is_empty() {
                load.write(part).await?;
            }
        }
        Ok(())
    }

    /// Ends the load on every datanode, waits until its rows are stored, and returns how
    /// many rows the relation received (a replicated row counted once).
    pub async fn finish(self) -> PgResult<u64> {
        match self {
            ClusterBulkLoad::One(load) => load.finish().await,
            ClusterBulkLoad::Split {
                loads, placement, ..
            } => {
                let copies = match placement {
                    RelPlacement::Replicated => loads.len() as u64,
                    _ => 1,
                };
                let mut stored = 0;
                for load in loads {
                    stored += load.finish().await?;
                }
                Ok(stored / copies)
            }
        }
    }
}
