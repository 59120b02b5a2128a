//! The durable side of a transaction's DDL (decision 0038): while a transaction that
//! changed the catalog is open, the metadata service holds its *pending record*,
//! `catalog/pending/<start ts>`, written in the same compare-and-set as each of its
//! catalog changes: every key it wrote with the value before and after, the storage it
//! created and the storage it released. A transaction with DDL commits in two phases,
//! decided at the GTM, and removes its record between the decision and its parts' commit.
//!
//! A record left behind (its coordinator died, or could not learn its decision) is
//! resolved by the GTM's decision for its start: committed, the record goes and the
//! released storage is dropped; aborted (or never decided, which `resolve` records as
//! aborted once nobody holds the transaction), the keys are put back as they were and
//! the created storage is dropped. Each coordinator resolves the records before it loads
//! the catalog, and then every `RESOLVE_INTERVAL`.

use distribution::Datanodes;
use gtm::{GtmClient, Resolution, Timestamp};
use meta::{MetaClient, WriteBatch, WriteOutcome};
use pgerror::{codes, PgError, PgResult};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const PENDING_PREFIX: &[u8] = b"catalog/pending/";
/// How often a coordinator looks for records their own coordinators left behind.
const RESOLVE_INTERVAL: Duration = Duration::from_secs(2);
const FORMAT: u8 = 1;

/// A metadata key's value (`None`: absent).
type Value = Option<Vec<u8>>;

/// One thing a transaction's DDL did.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// A metadata key it wrote: its value before and after (`None`: absent).
    Key {
        key: Vec<u8>,
        before: Option<Vec<u8>>,
        after: Option<Vec<u8>>,
    },
    /// Storage it created: dropped if it is undone.
    Created(u64),
    /// Storage no record refers to any more: dropped once it commits.
    Released(u64),
    /// The counter of a sequence it dropped: removed once it commits.
    Counter(u32),
}

pub fn record_key(start: Timestamp) -> Vec<u8> {
    let mut k = PENDING_PREFIX.to_vec();
    k.extend_from_slice(format!("{start:020}").as_bytes());
    k
}

/// Format: u8 format (1), then per entry a u8 tag — 1 key (bytes key, optional before,
/// optional after), 2 created (u64), 3 released (u64), 4 counter (u32). Bytes are u32
/// length + bytes; an optional value is u8 0 (absent) or 1 + bytes; little-endian.
pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut b = vec![FORMAT];
    for e in entries {
        match e {
            Entry::Key { key, before, after } => {
                b.push(1);
                put_bytes(&mut b, key);
                put_optional(&mut b, before.as_deref());
                put_optional(&mut b, after.as_deref());
            }
            Entry::Created(rel) => {
                b.push(2);
                b.extend_from_slice(&rel.to_le_bytes());
            }
            Entry::Released(rel) => {
                b.push(3);
                b.extend_from_slice(&rel.to_le_bytes());
            }
            Entry::Counter(oid) => {
                b.push(4);
                b.extend_from_slice(&oid.to_le_bytes());
            }
        }
    }
    b
}

fn put_bytes(b: &mut Vec<u8>, v: &[u8]) {
    b.extend_from_slice(&(v.len() as u32).to_le_bytes());
    b.extend_from_slice(v);
}

fn put_optional(b: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => b.push(0),
        Some(v) => {
            b.push(1);
            put_bytes(b, v);
        }
    }
}

pub fn decode(record: &[u8]) -> PgResult<Vec<Entry>> {
    let mut r = Reader(record);
    if r.take(1)? != [FORMAT] {
        return Err(corrupt());
    }
    let mut entries = Vec::new();
    while !r.0.is_empty() {
        entries.push(match r.take(1)?[0] {
            1 => Entry::Key {
                key: r.bytes()?,
                before: r.optional()?,
                after: r.optional()?,
            },
            2 => Entry::Created(r.u64()?),
            3 => Entry::Released(r.u64()?),
            4 => Entry::Counter(u32::from_le_bytes(r.take(4)?.try_into().unwrap())),
            _ => return Err(corrupt()),
        });
    }
    Ok(entries)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> PgResult<&'a [u8]> {
        if self.0.len() < n {
            return Err(corrupt());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self) -> PgResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    fn bytes(&mut self) -> PgResult<Vec<u8>> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().unwrap()) as usize;
        Ok(self.take(n)?.to_vec())
    }

    fn optional(&mut self) -> PgResult<Option<Vec<u8>>> {
        match self.take(1)?[0] {
            0 => Ok(None),
            1 => self.bytes().map(Some),
            _ => Err(corrupt()),
        }
    }
}

fn corrupt() -> PgError {
    PgError::new(
        codes::DATA_CORRUPTED,
        "a pending DDL record in the metadata service is unreadable",
    )
}

/// Undoes `undone` (a transaction's entries, oldest first) in one write: each key it
/// wrote goes back to its value before the first of them, unless someone changed it
/// since (then it is left as it is), and the pending record moves from `recorded` to
/// `remaining` (`None`: removed). False if the record was not `recorded` any more
/// (someone else resolved it): nothing was written.
pub async fn restore(
    meta: &MetaClient,
    key: &[u8],
    recorded: Option<Vec<u8>>,
    remaining: Option<Vec<u8>>,
    undone: &[Entry],
) -> PgResult<bool> {
    // Each key's value before the first undone write and after the last.
    let mut keys: BTreeMap<&[u8], (&Value, &Value)> = BTreeMap::new();
    for e in undone {
        if let Entry::Key { key, before, after } = e {
            keys.entry(key)
                .and_modify(|(_, last)| *last = after)
                .or_insert((before, after));
        }
    }
    let mut read: Vec<Vec<u8>> = keys.keys().map(|k| k.to_vec()).collect();
    read.push(key.to_vec());
    // A conflict means a key changed between the read and the write: read again.
    loop {
        let current = meta.get(read.clone()).await?;
        if current.last() != Some(&recorded) {
            return Ok(false);
        }
        let mut batch = WriteBatch {
            expect: vec![(key.to_vec(), recorded.clone())],
            puts: vec![(key.to_vec(), remaining.clone())],
        };
        for ((k, (before, after)), now) in keys.iter().zip(&current) {
            if now == *after {
                batch.expect.push((k.to_vec(), now.clone()));
                batch.puts.push((k.to_vec(), (*before).clone()));
            } else {
                tracing::warn!(
                    key = %String::from_utf8_lossy(k),
                    "a catalog entry changed by others since an undone DDL wrote it stays"
                );
            }
        }
        if let WriteOutcome::Written { .. } = meta.write(batch).await? {
            return Ok(true);
        }
    }
}

/// Resolves every pending record whose transaction has an outcome; returns how many.
pub async fn resolve_all(
    meta: &MetaClient,
    gtm: &GtmClient,
    datanodes: &Datanodes,
) -> PgResult<usize> {
    let mut resolved = 0;
    for (key, record) in meta.scan(PENDING_PREFIX).await?.entries {
        let start = std::str::from_utf8(&key[PENDING_PREFIX.len()..])
            .ok()
            .and_then(|s| s.parse::<Timestamp>().ok())
            .ok_or_else(corrupt)?;
        let entries = decode(&record)?;
        let (committed, gone) = match gtm.resolve(start).await? {
            Resolution::Pending => continue,
            Resolution::Committed(_) => {
                let batch = WriteBatch {
                    expect: vec![(key.clone(), Some(record))],
                    puts: vec![(key.clone(), None)],
                };
                let written = meta.write(batch).await?;
                (true, matches!(written, WriteOutcome::Written { .. }))
            }
            Resolution::Aborted => (
                false,
                restore(meta, &key, Some(record), None, &entries).await?,
            ),
        };
        if gone {
            tracing::info!(
                start,
                committed,
                "resolved the DDL of a transaction left open"
            );
            drop_storage(datanodes, meta, &entries, committed).await;
            resolved += 1;
        }
    }
    Ok(resolved)
}

/// Drops what the entries' transaction left without a reference: what it released if
/// it committed, what it created if not.
pub async fn drop_storage(
    datanodes: &Datanodes,
    meta: &MetaClient,
    entries: &[Entry],
    committed: bool,
) {
    for e in entries {
        let dropped = match (e, committed) {
            (Entry::Released(rel), true) | (Entry::Created(rel), false) => {
                datanodes.drop_rel(*rel).await
            }
            (Entry::Counter(oid), true) => {
                let batch = WriteBatch {
                    expect: Vec::new(),
                    puts: vec![(
                        crate::catalog::LiveCatalog::sequence_counter_key(*oid),
                        None,
                    )],
                };
                meta.write(batch).await.map(drop)
            }
            _ => Ok(()),
        };
        if let Err(e) = dropped {
            tracing::warn!(error = %e, "dropping storage a DDL transaction left failed");
        }
    }
}

/// Resolves the records left behind every `RESOLVE_INTERVAL`, for as long as the
/// coordinator runs (another coordinator's, or this one's whose decision was not known).
pub fn start_resolver(meta: MetaClient, gtm: GtmClient, datanodes: Arc<Datanodes>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(RESOLVE_INTERVAL).await;
            if let Err(e) = resolve_all(&meta, &gtm, &datanodes).await {
                tracing::warn!(error = %e, "resolving pending DDL");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let entries = vec![
            Entry::Key {
                key: b"catalog/table/1".to_vec(),
                before: None,
                after: Some(b"{}".to_vec()),
            },
            Entry::Key {
                key: b"catalog/name/t".to_vec(),
                before: Some(vec![0, 1, 2, 3]),
                after: None,
            },
            Entry::Created(7),
            Entry::Released(u64::MAX),
            Entry::Counter(16384),
        ];
        assert_eq!(decode(&encode(&entries)).unwrap(), entries);
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
        let mut cut = encode(&entries);
        cut.pop();
        assert_eq!(decode(&cut).unwrap_err().code, codes::DATA_CORRUPTED);
    }
}
