//! Bulk loads: the rows of a relation that nobody else reads or writes yet (the datanode
//! makes sure of that), written as sorted tables straight into the LSM tree with fjall's
//! ingestion: no journal, no memtable, no writer thread. fjall fsyncs each table and the
//! version that registers it when the load finishes.
//!
//! The load runs on a thread of its own (`meridian-bulk`), fed chunks of rows through a
//! bounded channel, so memory stays at a few chunks plus the table writers' block
//! buffers whatever the load's size. A chunk holds its rows in one buffer: the thread
//! that fills it allocates nothing per row, and the loading thread frees nothing that
//! another thread allocated per row (the scans' and encoders' buffers stay with them).
//! Loaded chunks go back to the filler, emptied, to be filled again: growing fresh ones
//! cost more in page faults than the rows' copying.

use crate::{encode_prefix_into, io_err, RelId, Store, Timestamp, TAG_PUT, TS_LEN};
use bytes::Bytes;
use pgerror::{PgError, PgResult};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Chunks queued to the loading thread before `write` waits.
const QUEUED_CHUNKS: usize = 4;

/// (key, row) pairs of a relation, keys ascending, copied into one buffer.
#[derive(Default)]
pub struct Chunk {
    bytes: Vec<u8>,
    /// Where each pair's key ends in `bytes` and where its row ends.
    ends: Vec<(usize, usize)>,
}

impl Chunk {
    pub fn push(&mut self, key: &[u8], row: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(row);
        self.ends.push((key_end, self.bytes.len()));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of keys and rows held.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    pub fn last_key(&self) -> Option<&[u8]> {
        let n = self.ends.len();
        let start = if n >= 2 { self.ends[n - 2].1 } else { 0 };
        self.ends
            .last()
            .map(|&(key_end, _)| &self.bytes[start..key_end])
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut start = 0;
        self.ends.iter().map(move |&(key_end, end)| {
            let pair = (&self.bytes[start..key_end], &self.bytes[key_end..end]);
            start = end;
            pair
        })
    }
}

/// One loaded row's entries in `data` and `latest`, sliced from one buffer
/// `prefix | !ts | ts | tag | row`: `latest`'s key is the version key's prefix and `data`'s
/// value is the tail of `latest`'s. Two allocations (the buffer and its shared header)
/// and one copy of the row, where the four entries took six and two copies: the loading
/// thread's instructions −12 %. The tables' indexes keep one key per block, so the
/// buffers of those rows stay until their table is written.
struct LoadedRow {
    data_key: Bytes,
    data_value: Bytes,
    latest_key: Bytes,
    latest_value: Bytes,
}

impl LoadedRow {
    fn encode(rel: RelId, ts: Timestamp, key: &[u8], row: &[u8]) -> Self {
        // Escaping at most doubles the key.
        let mut buf = Vec::with_capacity(8 + 2 * key.len() + 2 + 2 * TS_LEN + 1 + row.len());
        encode_prefix_into(&mut buf, rel, key);
        let prefix_end = buf.len();
        buf.extend_from_slice(&(!ts).to_be_bytes());
        let version_key_end = buf.len();
        buf.extend_from_slice(&ts.to_be_bytes());
        buf.push(TAG_PUT);
        buf.extend_from_slice(row);
        let buf = Bytes::from(buf);
        LoadedRow {
            data_key: buf.slice(..version_key_end),
            data_value: buf.slice(version_key_end + TS_LEN..),
            latest_key: buf.slice(..prefix_end),
            latest_value: buf.slice(version_key_end..),
        }
    }
}

enum Input {
    Rows(Chunk),
    End,
}

/// One bulk load into one relation; see the module comment. Keys must be strictly
/// ascending across all chunks (a key out of order fails the load). Dropped without
/// `finish`, the load is abandoned: nothing becomes visible.
pub struct BulkLoad {
    chunks: Option<mpsc::Sender<Input>>,
    /// Chunks the loader is done with, emptied.
    spare: std::sync::mpsc::Receiver<Chunk>,
    done: oneshot::Receiver<PgResult<u64>>,
}

impl BulkLoad {
    /// An empty chunk to fill: one the loader is done with if there is one.
    pub fn empty_chunk(&self) -> Chunk {
        self.spare.try_recv().unwrap_or_default()
    }

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
        let (spare_tx, spare) = std::sync::mpsc::channel();
        let (done_tx, done) = oneshot::channel();
        let store = self.clone();
        std::thread::Builder::new()
            .name("meridian-bulk".into())
            .spawn(move || {
                let loaded = |mut chunk: Chunk| {
                    chunk.clear();
                    let _ = spare_tx.send(chunk); // the load may be over
                };
                let result = store.ingest(rel, ts, || chunks_rx.blocking_recv(), loaded);
                if result.is_err() {
                    tracing::warn!(rel, "bulk load abandoned: {:?}", result.as_ref().err());
                }
                let _ = done_tx.send(result);
            })
            .map_err(|e| io_err("spawn bulk load thread", e))?;
        Ok(BulkLoad {
            chunks: Some(chunks_tx),
            spare,
            done,
        })
    }

    /// Writes every chunk `next` yields into one ingestion of `data` and one of `latest`,
    /// and registers both at `Input::End`; the input ending without it (the `BulkLoad`
    /// dropped) abandons them: unregistered tables are never read. Each chunk goes to
    /// `loaded` once written.
    fn ingest(
        &self,
        rel: RelId,
        ts: Timestamp,
        mut next: impl FnMut() -> Option<Input>,
        loaded: impl Fn(Chunk),
    ) -> PgResult<u64> {
        let ingest_err = |e| io_err("bulk load", e);
        let mut data = self.data.start_ingestion().map_err(ingest_err)?;
        let mut latest = self.latest.start_ingestion().map_err(ingest_err)?;
        let mut last: Vec<u8> = Vec::new();
        let mut rows = 0u64;
        loop {
            let chunk = match next() {
                Some(Input::Rows(chunk)) => chunk,
                Some(Input::End) => break,
                None => return Err(PgError::internal("bulk load abandoned")),
            };
            for (key, row) in chunk.iter() {
                if rows > 0 && last.as_slice() >= key {
                    // Leaving the ingestions unfinished abandons them (fjall would panic).
                    return Err(PgError::internal("bulk load: keys not in ascending order"));
                }
                let entries = LoadedRow::encode(rel, ts, key, row);
                latest
                    .write(entries.latest_key, entries.latest_value)
                    .map_err(ingest_err)?;
                data.write(entries.data_key, entries.data_value)
                    .map_err(ingest_err)?;
                last.clear();
                last.extend_from_slice(key);
                rows += 1;
            }
            loaded(chunk);
        }
        data.finish().map_err(ingest_err)?;
        latest.finish().map_err(ingest_err)?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    fn store() -> (tempfile::TempDir, Arc<Store>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(StoreOptions {
            path: dir.path().join("s"),
            cache_size: 32 << 20,
        })
        .unwrap();
        (dir, store)
    }

    fn chunk(pairs: &[(&[u8], &[u8])]) -> Chunk {
        let mut c = Chunk::default();
        for (k, r) in pairs {
            c.push(k, r);
        }
        c
    }

    #[test]
    fn chunk_keeps_pairs_in_order() {
        let c = chunk(&[(b"a", b"row a"), (b"", b""), (b"bb", b"")]);
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![
                (&b"a"[..], &b"row a"[..]),
                (&b""[..], &b""[..]),
                (&b"bb"[..], &b""[..])
            ]
        );
        assert_eq!(
            (c.len(), c.byte_len(), c.last_key()),
            (3, 8, Some(&b"bb"[..]))
        );
        assert_eq!(Chunk::default().last_key(), None);
    }

    #[test]
    fn loaded_row_entries_are_the_write_paths_encodings() {
        let (key, row) = (&b"k\x00y"[..], &b"row bytes"[..]);
        let e = LoadedRow::encode(7, 42, key, row);
        let prefix = crate::encode_prefix(7, key);
        let value = crate::encode_put(row);
        assert_eq!(&e.latest_key[..], &prefix[..]);
        assert_eq!(&e.data_key[..], &crate::version_key(&prefix, 42)[..]);
        assert_eq!(&e.data_value[..], &value[..]);
        assert_eq!(&e.latest_value[..], &crate::encode_latest(42, &value)[..]);
    }

    #[tokio::test]
    async fn loaded_rows_are_versions_at_the_load_timestamp() {
        let (_dir, store) = store();
        let mut load = store.bulk_load(7, 100).unwrap();
        load.write(chunk(&[(b"a", b"1"), (b"b", b"2")]))
            .await
            .unwrap();
        load.write(chunk(&[(b"c", b"3")])).await.unwrap();
        assert_eq!(load.finish().await.unwrap(), 3);
        let read = |key: &[u8], at| store.get(7, key, at).unwrap().and_then(|v| v.row);
        assert_eq!(read(b"b", 100).as_deref(), Some(&b"2"[..]));
        assert_eq!(read(b"b", 99), None);
        let newest = store.latest(7, b"c").unwrap().unwrap();
        assert_eq!(
            (newest.commit_ts, newest.row.as_deref()),
            (100, Some(&b"3"[..]))
        );
        assert_eq!(store.version_count(7, b"a").unwrap(), 1);
    }

    #[tokio::test]
    async fn keys_out_of_order_fail_the_load_and_store_nothing() {
        let (_dir, store) = store();
        let mut load = store.bulk_load(7, 100).unwrap();
        load.write(chunk(&[(b"a", b"1"), (b"c", b"2")]))
            .await
            .unwrap();
        // The loader may stop before the second chunk is taken, or after.
        let failed = match load.write(chunk(&[(b"c", b"3")])).await {
            Err(_) => true,
            Ok(()) => load.finish().await.is_err(),
        };
        assert!(failed);
        assert_eq!(store.version_count(7, b"a").unwrap(), 0);
    }
}
