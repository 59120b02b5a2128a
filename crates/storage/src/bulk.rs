//! Bulk loads: the rows of a relation that nobody else reads or writes yet (the datanode
//! makes sure of that), written as sorted tables straight into the LSM tree with fjall's
//! ingestion: no journal, no memtable, no writer thread. fjall fsyncs each table and the
//! version that registers it when the load finishes.
//!
//! The load runs on a thread of its own (`meridian-bulk`), fed chunks of rows through a
//! bounded channel, so memory stays at a few chunks plus the table writers' block
//! buffers whatever the load's size.

use crate::{encode_latest, encode_prefix_into, encode_value, io_err, version_key, RelId, Store, Timestamp};
use bytes::Bytes;
use pgerror::{PgError, PgResult};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Chunks queued to the loading thread before `write` waits.
const QUEUED_CHUNKS: usize = 4;

/// A relation's rows as sorted (key, row) pairs.
pub type Chunk = Vec<(Vec<u8>, Bytes)>;

enum Input {
    Rows(Chunk),
    End,
}

/// One bulk load into one relation; see the module comment. Keys must be strictly
/// ascending across all chunks (a key out of order fails the load). Dropped without
/// `finish`, the load is abandoned: nothing becomes visible.
pub struct BulkLoad {
    chunks: Option<mpsc::Sender<Input>>,
    done: oneshot::Receiver<PgResult<u64>>,
}

impl BulkLoad {
    /// Queues a chunk of rows; waits while the loader is `QUEUED_CHUNKS` behind.
    pub async fn write(&mut self, chunk: Chunk) -> PgResult<()> {
        let sender = self.chunks.as_ref().expect("write after finish");
        if sender.send(Input::Rows(chunk)).await.is_err() {
            // The loader stopped on an error: report it.
            self.chunks = None;
            return Err(match (&mut self.done).await {
                Ok(Err(e)) => e,
                _ => PgError::internal("bulk load thread ended"),
            });
        }
        Ok(())
    }

    /// Ends the input, waits until every row is in the tree (durably), and returns how
    /// many rows were loaded.
    pub async fn finish(mut self) -> PgResult<u64> {
        if let Some(sender) = self.chunks.take() {
            // A send error means the loader already stopped; `done` has its error.
            let _ = sender.send(Input::End).await;
        }
        match (&mut self.done).await {
            Ok(r) => r,
            Err(_) => Err(PgError::internal("bulk load thread ended")),
        }
    }
}

impl Store {
    /// Starts a bulk load of `rel`'s rows as versions committed at `ts`. The caller
    /// guarantees that no other transaction reads or writes `rel` until it is done with
    /// the load (including its removal when the loading transaction aborts), and that
    /// `rel` holds no version of any key it loads.
    pub fn bulk_load(self: &Arc<Self>, rel: RelId, ts: Timestamp) -> PgResult<BulkLoad> {
        let (chunks_tx, mut chunks_rx) = mpsc::channel::<Input>(QUEUED_CHUNKS);
        let (done_tx, done) = oneshot::channel();
        let store = self.clone();
        std::thread::Builder::new()
            .name("meridian-bulk".into())
            .spawn(move || {
                let result = store.ingest(rel, ts, || chunks_rx.blocking_recv());
                if result.is_err() {
                    tracing::warn!(rel, "bulk load abandoned: {:?}", result.as_ref().err());
                }
                let _ = done_tx.send(result);
            })
            .map_err(|e| io_err("spawn bulk load thread", e))?;
        Ok(BulkLoad { chunks: Some(chunks_tx), done })
    }

    /// Writes every chunk `next` yields into one ingestion of `data` and one of `latest`,
    /// and registers both at `Input::End`; the input ending without it (the `BulkLoad`
    /// dropped) abandons them: unregistered tables are never read.
    fn ingest(&self, rel: RelId, ts: Timestamp, mut next: impl FnMut() -> Option<Input>) -> PgResult<u64> {
        let ingest_err = |e| io_err("bulk load", e);
        let mut data = self.data.start_ingestion().map_err(ingest_err)?;
        let mut latest = self.latest.start_ingestion().map_err(ingest_err)?;
        let mut prefix = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        let mut rows = 0u64;
        loop {
            let chunk = match next() {
                Some(Input::Rows(chunk)) => chunk,
                Some(Input::End) => break,
                None => return Err(PgError::internal("bulk load abandoned")),
            };
            for (key, row) in chunk {
                if last.as_ref().is_some_and(|l| *l >= key) {
                    // Leaving the ingestions unfinished abandons them.
                    return Err(PgError::internal("bulk load: keys not in ascending order"));
                }
                prefix.clear();
                encode_prefix_into(&mut prefix, rel, &key);
                let value = encode_value(&Some(row));
                latest.write(prefix.clone(), encode_latest(ts, &value)).map_err(ingest_err)?;
                data.write(version_key(&prefix, ts), value).map_err(ingest_err)?;
                last = Some(key);
                rows += 1;
            }
        }
        data.finish().map_err(ingest_err)?;
        latest.finish().map_err(ingest_err)?;
        Ok(rows)
    }
}
