//! The durable, versioned key-value store behind the metadata service.
//!
//! Metadata is small (a record per table and per node) and changes only with DDL and
//! membership, so the whole store is one file, `DIR/meta.bin`, rewritten on every write:
//! written beside it, fsynced, renamed over it, the directory fsynced. A write is
//! acknowledged only after that, so an acknowledged write survives kill -9, and a crash
//! mid-write leaves the previous file whole.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use serde::{Deserialize, Serialize};

use crate::proto::{Reserve, Snapshot, WriteBatch, WriteOutcome};

const FILE: &str = "meta.bin";
const TEMP: &str = "meta.bin.tmp";

#[derive(Clone, Default, Serialize, Deserialize)]
struct State {
    /// Raised by every write.
    version: u64,
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

pub struct MetaStore {
    dir: PathBuf,
    /// Held across a write's file replacement, so writes are stored in version order.
    state: Mutex<State>,
}

impl MetaStore {
    /// Opens the store in `dir` (created if missing); empty if it holds no store yet.
    pub fn open(dir: &Path) -> PgResult<MetaStore> {
        fs::create_dir_all(dir)
            .map_err(|e| PgError::io(&format!("creating {}", dir.display()), e))?;
        let path = dir.join(FILE);
        let state = match fs::read(&path) {
            Ok(bytes) => bincode::deserialize(&bytes).map_err(|e| {
                PgError::new(
                    codes::DATA_CORRUPTED,
                    format!("cluster metadata {} is unreadable: {e}", path.display()),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::default(),
            Err(e) => return Err(PgError::io(&format!("reading {}", path.display()), e)),
        };
        Ok(MetaStore {
            dir: dir.to_path_buf(),
            state: Mutex::new(state),
        })
    }

    pub fn version(&self) -> u64 {
        self.state.lock().version
    }

    /// Every entry whose key starts with `prefix`, with the version they are current at.
    pub fn scan(&self, prefix: &[u8]) -> Snapshot {
        let st = self.state.lock();
        Snapshot {
            version: st.version,
            entries: st
                .entries
                .range(prefix.to_vec()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// The values of `keys` (`None`: absent), read together.
    pub fn get(&self, keys: &[Vec<u8>]) -> Vec<Option<Vec<u8>>> {
        let st = self.state.lock();
        keys.iter().map(|k| st.entries.get(k).cloned()).collect()
    }

    /// Applies `batch` atomically and durably if every expectation holds.
    pub fn write(&self, batch: &WriteBatch) -> PgResult<WriteOutcome> {
        let mut st = self.state.lock();
        for (key, expected) in &batch.expect {
            if st.entries.get(key) != expected.as_ref() {
                return Ok(WriteOutcome::Conflict { key: key.clone() });
            }
        }
        let mut next = st.clone();
        next.version += 1;
        for (key, value) in &batch.puts {
            match value {
                Some(v) => next.entries.insert(key.clone(), v.clone()),
                None => next.entries.remove(key),
            };
        }
        self.persist(&next)?;
        *st = next;
        Ok(WriteOutcome::Written {
            version: st.version,
        })
    }

    /// Reserves `n` consecutive values of the counter `key` (starting at `floor` when it
    /// is new) and returns the first. Counters are not what caches follow: the version
    /// stays.
    pub fn allocate(&self, key: &[u8], n: u64, floor: u64) -> PgResult<u64> {
        let mut st = self.state.lock();
        let first = match st.entries.get(key) {
            Some(v) => u64::from_le_bytes(v.as_slice().try_into().map_err(|_| {
                PgError::new(
                    codes::DATA_CORRUPTED,
                    "cluster metadata: a counter is not 8 bytes",
                )
            })?),
            None => floor,
        };
        let end = first.checked_add(n).ok_or_else(|| {
            PgError::new(codes::PROGRAM_LIMIT_EXCEEDED, "identifier space exhausted")
        })?;
        let mut next = st.clone();
        next.entries
            .insert(key.to_vec(), end.to_le_bytes().to_vec());
        self.persist(&next)?;
        *st = next;
        Ok(first)
    }

    /// Reserves up to `r.n` values of the sequence counter `r.key` (see `Reserve`):
    /// (first, count), count 0 when it is exhausted and does not wrap.
    pub fn reserve(&self, r: &Reserve) -> PgResult<(i64, u64)> {
        let mut st = self.state.lock();
        let mut next = match st.entries.get(&r.key) {
            Some(v) => sequence_counter(v)?,
            None => r.start.into(),
        };
        let left = |next: i128| {
            let (step, bound) = (i128::from(r.step), i128::from(r.bound));
            let span = if step > 0 { bound - next } else { next - bound };
            if span < 0 {
                0
            } else {
                span / step.abs() + 1
            }
        };
        if left(next) == 0 {
            match r.wrap {
                Some(w) => next = w.into(),
                None => return Ok((0, 0)),
            }
        }
        let count = left(next).min(r.n.into());
        let mut after = st.clone();
        after.entries.insert(
            r.key.clone(),
            (next + count * i128::from(r.step)).to_le_bytes().to_vec(),
        );
        self.persist(&after)?;
        *st = after;
        Ok((next as i64, count as u64))
    }

    /// Sets the sequence counter `key`'s next value.
    pub fn restart(&self, key: &[u8], next: i128) -> PgResult<()> {
        let mut st = self.state.lock();
        let mut after = st.clone();
        after
            .entries
            .insert(key.to_vec(), next.to_le_bytes().to_vec());
        self.persist(&after)?;
        *st = after;
        Ok(())
    }

    fn persist(&self, state: &State) -> PgResult<()> {
        let io = |what: &str, e: std::io::Error| {
            PgError::io(
                &format!("{what} cluster metadata in {}", self.dir.display()),
                e,
            )
        };
        let bytes = bincode::serialize(state).map_err(|e| PgError::internal(e.to_string()))?;
        let temp = self.dir.join(TEMP);
        let mut f = File::create(&temp).map_err(|e| io("writing", e))?;
        f.write_all(&bytes).map_err(|e| io("writing", e))?;
        f.sync_all().map_err(|e| io("syncing", e))?;
        fs::rename(&temp, self.dir.join(FILE)).map_err(|e| io("replacing", e))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("syncing the directory of", e))
    }
}

/// A sequence counter's next value, from its stored bytes.
pub fn sequence_counter(v: &[u8]) -> PgResult<i128> {
    Ok(i128::from_le_bytes(v.try_into().map_err(|_| {
        PgError::new(
            codes::DATA_CORRUPTED,
            "cluster metadata: a sequence counter is not 16 bytes",
        )
    })?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(k: &str, v: &str) -> (Vec<u8>, Option<Vec<u8>>) {
        (k.as_bytes().to_vec(), Some(v.as_bytes().to_vec()))
    }

    #[test]
    fn writes_survive_reopening_and_expectations_guard_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = MetaStore::open(dir.path()).unwrap();
        let created = WriteBatch {
            expect: vec![(b"t/a".to_vec(), None)],
            puts: vec![put("t/a", "1"), put("u/x", "2")],
        };
        assert_eq!(
            store.write(&created).unwrap(),
            WriteOutcome::Written { version: 1 }
        );
        assert_eq!(
            store.write(&created).unwrap(),
            WriteOutcome::Conflict {
                key: b"t/a".to_vec()
            },
            "the key exists now"
        );
        assert_eq!(store.allocate(b"n", 10, 100).unwrap(), 100);
        assert_eq!(store.allocate(b"n", 1, 100).unwrap(), 110);
        drop(store);
        let store = MetaStore::open(dir.path()).unwrap();
        assert_eq!(store.version(), 1, "counters do not move the version");
        let snap = store.scan(b"t/");
        assert_eq!(snap.entries, vec![(b"t/a".to_vec(), b"1".to_vec())]);
        assert_eq!(
            store.get(&[b"u/x".to_vec(), b"t/".to_vec(), b"t/a".to_vec()]),
            vec![Some(b"2".to_vec()), None, Some(b"1".to_vec())],
            "exact keys, not prefixes"
        );
        assert_eq!(store.allocate(b"n", 1, 100).unwrap(), 111);
    }

    #[test]
    fn sequence_counters_stop_at_their_bound_or_wrap_and_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = MetaStore::open(dir.path()).unwrap();
        let up = |n, wrap| Reserve {
            key: b"s".to_vec(),
            n,
            start: 5,
            step: 2,
            bound: 12,
            wrap,
        };
        assert_eq!(store.reserve(&up(3, None)).unwrap(), (5, 3), "5, 7, 9");
        assert_eq!(
            store.reserve(&up(3, None)).unwrap(),
            (11, 1),
            "13 is past 12"
        );
        assert_eq!(store.reserve(&up(3, None)).unwrap().1, 0, "exhausted");
        assert_eq!(
            store.reserve(&up(2, Some(1))).unwrap(),
            (1, 2),
            "cycles to 1"
        );
        store.restart(b"s", 12).unwrap();
        drop(store);
        let store = MetaStore::open(dir.path()).unwrap();
        assert_eq!(store.reserve(&up(3, None)).unwrap(), (12, 1));
        let down = Reserve {
            key: b"d".to_vec(),
            n: 10,
            start: i64::MIN + 1,
            step: -1,
            bound: i64::MIN,
            wrap: None,
        };
        assert_eq!(store.reserve(&down).unwrap(), (i64::MIN + 1, 2));
        assert_eq!(store.reserve(&down).unwrap().1, 0);
        assert_eq!(store.version(), 0, "counters do not move the version");
    }

    #[test]
    fn a_corrupt_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(FILE),
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        )
        .unwrap();
        let err = MetaStore::open(dir.path()).err().unwrap();
        assert_eq!(err.code, codes::DATA_CORRUPTED);
    }
}
