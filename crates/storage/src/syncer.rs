//! The journal syncer (`meridian-fsync`): the fdatasync half of group commit.
//!
//! The writer thread applies batches; the syncer makes them durable. Split in two because
//! fjall holds its journal lock through `persist(SyncData)`: a writer that fsyncs through
//! fjall cannot apply the batches that arrive meanwhile, and each of them then waits for
//! the current fsync, its own write, and the next fsync. Here the syncer hands fjall's
//! buffer to the OS (`persist(Buffer)`, a short write under the lock) and calls
//! fdatasync on its own descriptor of the journal file, without the lock, so the writer
//! applies the next batches during the fsync and the next fsync starts as soon as this
//! one ends (docs/decisions/0011).

use fjall::{Database, PersistMode};
use parking_lot::{Condvar, Mutex};
use pgerror::{PgError, PgResult};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{io_err, WriterStats, ASYNC_FLUSH_INTERVAL};

pub(crate) type Reply = tokio::sync::oneshot::Sender<PgResult<()>>;

/// How long the syncer polls for the next applied commit before it sleeps: under load the
/// writer hands over the next group within microseconds, and waking a sleeping thread
/// costs more than that on a VM.
const SYNCER_POLL: Duration = Duration::from_micros(50);

/// Commits applied by the writer thread and not yet fsynced.
pub(crate) struct SyncQueue {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Durable commits applied since the syncer last took the list.
    waiters: Vec<Reply>,
    /// Something (durable or not) was applied since the syncer last took the list.
    dirty: bool,
    /// The syncer waits on `wake` (the writer notifies only then).
    sleeping: bool,
    shutdown: bool,
}

impl SyncQueue {
    pub(crate) fn new() -> Arc<SyncQueue> {
        Arc::new(SyncQueue {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        })
    }

    /// Called by the writer after applying batches (`durable` are the replies of those
    /// that wait for the fsync; asynchronous commits only mark the journal dirty).
    pub(crate) fn push(&self, durable: impl IntoIterator<Item = Reply>) {
        let mut st = self.state.lock();
        st.waiters.extend(durable);
        st.dirty = true;
        if st.sleeping {
            self.wake.notify_one();
        }
    }
}

/// The writer's end of the queue: dropping it (the writer's loop ended, or panicked)
/// makes the syncer sync what was pushed and exit, so `Store::close` never waits for it.
pub(crate) struct Pusher(pub(crate) Arc<SyncQueue>);

impl std::ops::Deref for Pusher {
    type Target = SyncQueue;
    fn deref(&self) -> &SyncQueue {
        &self.0
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        let mut st = self.0.state.lock();
        st.shutdown = true;
        self.0.wake.notify_one();
    }
}

/// The journal file fjall currently appends to, opened for fdatasync.
///
/// fjall names its journals `<id>.jnl` in the database directory and seals one (fsyncing
/// it) before it creates the next (`journal::Writer::rotate`). So data appended before a
/// given moment is in the newest journal that exists at that moment, or in a sealed one:
/// syncing the newest one is enough. (fjall is pinned to an exact version for this.)
pub(crate) struct JournalFile {
    dir: PathBuf,
    id: u64,
    file: File,
}

impl JournalFile {
    pub(crate) fn open(dir: &Path) -> std::io::Result<JournalFile> {
        let id = newest_journal(dir)?;
        let file = File::open(journal_path(dir, id))?;
        Ok(JournalFile {
            dir: dir.to_path_buf(),
            id,
            file,
        })
    }

    /// The id of the journal this follows.
    #[cfg(test)]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Follows fjall to its newest journal, then fdatasyncs it.
    pub(crate) fn sync_data(&mut self) -> std::io::Result<()> {
        // fjall deletes journals oldest first, so while this one exists the next id is
        // the only one that can be newer.
        let unlinked = |file: &File| -> std::io::Result<bool> { Ok(file.metadata()?.nlink() == 0) };
        if journal_path(&self.dir, self.id + 1).exists() || unlinked(&self.file)? {
            // Rotated since the last sync (rare): the newest may be further on, and a
            // journal fjall has already flushed and deleted cannot be opened.
            let id = newest_journal(&self.dir)?;
            self.file = File::open(journal_path(&self.dir, id))?;
            self.id = id;
        }
        self.file.sync_data()
    }
}

fn journal_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id}.jnl"))
}

fn newest_journal(dir: &Path) -> std::io::Result<u64> {
    let mut newest = None;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let id = name
            .to_str()
            .and_then(|n| n.strip_suffix(".jnl"))
            .and_then(|n| n.parse::<u64>().ok());
        newest = newest.max(id);
    }
    newest.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no journal file in the data directory",
        )
    })
}

/// The syncer thread's loop: takes every commit applied so far, makes the journal durable,
/// answers them; fsyncs asynchronous commits every `ASYNC_FLUSH_INTERVAL`. After a failed
/// fsync it fails every later commit: the kernel may have dropped the unwritten pages, so
/// nothing written since can be promised (PostgreSQL PANICs for the same reason).
pub(crate) fn syncer_loop(
    db: Database,
    mut journal: JournalFile,
    queue: Arc<SyncQueue>,
    stats: Arc<WriterStats>,
) {
    let mut failed: Option<PgError> = None;
    let mut last_sync = Instant::now();
    loop {
        let (waiters, shutdown) = {
            let mut st = queue.state.lock();
            let poll_until = Instant::now() + SYNCER_POLL;
            loop {
                let due = st.dirty && last_sync.elapsed() >= ASYNC_FLUSH_INTERVAL;
                if !st.waiters.is_empty() || due || st.shutdown {
                    break;
                }
                if Instant::now() < poll_until {
                    parking_lot::MutexGuard::unlocked(&mut st, std::thread::yield_now);
                    continue;
                }
                st.sleeping = true;
                if st.dirty {
                    let left = ASYNC_FLUSH_INTERVAL.saturating_sub(last_sync.elapsed());
                    queue.wake.wait_for(&mut st, left);
                } else {
                    queue.wake.wait(&mut st);
                }
                st.sleeping = false;
            }
            let dirty = std::mem::take(&mut st.dirty);
            (dirty.then(|| std::mem::take(&mut st.waiters)), st.shutdown)
        };
        if let Some(waiters) = waiters {
            let res = match &failed {
                Some(e) => Err(e.clone()),
                None => sync(&db, &mut journal),
            };
            stats.fsyncs.fetch_add(1, Ordering::Relaxed);
            crate::metrics::metrics().journal_fsyncs.inc();
            last_sync = Instant::now();
            if let Err(e) = &res {
                tracing::error!("journal fsync failed; every later commit fails: {e}");
                failed = Some(e.clone());
            }
            for w in waiters {
                let _ = w.send(res.clone());
            }
        }
        // The writer is gone once `shutdown` is set: nothing can follow what was taken.
        if shutdown {
            return;
        }
    }
}

fn sync(db: &Database, journal: &mut JournalFile) -> PgResult<()> {
    db.persist(PersistMode::Buffer)
        .map_err(|e| io_err("write journal", e))?;
    journal.sync_data().map_err(|e| io_err("fsync journal", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Space, Store, StoreOptions};

    /// The assumption the syncer rests on: fjall's journals are `<id>.jnl` in the
    /// database directory, and a rotation creates the next id. Writes past fjall's 64 MB
    /// journal limit force a rotation; the follower must end on the newest journal, and
    /// commits acknowledged on either side of the rotation must be there after reopening.
    #[test]
    fn follows_fjall_journal_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions {
            path: dir.path().to_path_buf(),
            cache_size: 16 << 20,
        };
        let store = Store::open(opts.clone()).unwrap();
        let mut journal = JournalFile::open(dir.path()).unwrap();
        let first = journal.id();
        // Incompressible (fjall may compress its journal).
        let value: Vec<u8> = {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::StdRng::seed_from_u64(11);
            (0..1 << 20).map(|_| rng.gen()).collect()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        // fjall's worker rotates the journal when it flushes a memtable (each 1 MiB write
        // fills one in `sys`) and finds the journal past 64 MB.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut i = 0u32;
        while newest_journal(dir.path()).unwrap() == first {
            assert!(
                Instant::now() < deadline,
                "fjall did not rotate its journal after {i} MiB"
            );
            store
                .meta_put(Space::Sys, format!("big/{i}").as_bytes(), Some(&value))
                .unwrap();
            i += 1;
            if i > 64 {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let write = crate::Write {
            rel: 9,
            key: b"after-rotation".to_vec(),
            op: crate::WriteOp::Put(Some(bytes::Bytes::from_static(b"row"))),
            newest_before: None,
        };
        rt.block_on(store.apply(&[write], 5, true, None))
            .unwrap()
            .unwrap();
        journal.sync_data().unwrap();
        assert!(journal.id() > first);
        assert_eq!(journal.id(), newest_journal(dir.path()).unwrap());
        drop(store);
        let store = Store::open(opts).unwrap();
        assert!(store.get(9, b"after-rotation", 5).unwrap().is_some());
        assert_eq!(
            store.meta_get(Space::Sys, b"big/0").unwrap().as_deref(),
            Some(&value[..])
        );
    }

    #[test]
    fn skips_to_the_newest_of_several_new_journals() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("3.jnl"), b"").unwrap();
        std::fs::write(dir.path().join("other"), b"").unwrap();
        let mut journal = JournalFile::open(dir.path()).unwrap();
        assert_eq!(journal.id(), 3);
        journal.sync_data().unwrap();
        assert_eq!(journal.id(), 3);
        std::fs::write(dir.path().join("4.jnl"), b"").unwrap();
        std::fs::write(dir.path().join("5.jnl"), b"").unwrap();
        journal.sync_data().unwrap();
        assert_eq!(journal.id(), 5);
        // 6 came, then 3 to 6 were flushed and deleted, 7 is being written: the
        // follower's own file is gone and the next id too.
        std::fs::write(dir.path().join("6.jnl"), b"").unwrap();
        for id in [3, 4, 5, 6] {
            std::fs::remove_file(dir.path().join(format!("{id}.jnl"))).unwrap();
        }
        std::fs::write(dir.path().join("7.jnl"), b"").unwrap();
        journal.sync_data().unwrap();
        assert_eq!(journal.id(), 7);
    }
}
