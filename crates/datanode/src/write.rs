//! Writes under row locks: `lock_row`, `put`, `put_new_key`, `insert`, and deferred
//! increments (`increment`, `apply_increments`).

use crate::increment::{self, ColumnIncrement};
use crate::locks::LockMode;
use crate::spilled;
use crate::txn::{IncrementFn, Txn};
use crate::{Datanode, Isolation, LockWait, RelId, RowBytes};
use pgerror::{codes, PgError, PgResult};

fn serialization_failure() -> PgError {
    PgError::new(
        codes::SERIALIZATION_FAILURE,
        "could not serialize access due to concurrent update",
    )
}

impl Datanode {
    /// A deferred increment of the row `key` (`increments`, applied to the newest
    /// committed version: `increment::apply`), for READ COMMITTED's `SET c = c + d` on a row found by its
    /// key. Returns None where it takes the ordinary way instead (the caller then locks
    /// the row with `lock_row`): under REPEATABLE READ, when the transaction holds the
    /// row's exclusive lock, or when nobody else has any business with the row (the lock
    /// is taken here: a row nobody else wants is updated at once, not at commit).
    /// Otherwise takes an increment lock (waiting only for an exclusive owner) and returns
    /// whether the row exists, in which case `increments` apply at commit, or earlier when the
    /// transaction touches the row again.
    pub async fn increment(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        increments: Vec<ColumnIncrement>,
    ) -> PgResult<Option<bool>> {
        if txn.isolation != Isolation::ReadCommitted
            || txn.holds_lock(rel, key)?
            || txn.own_write(rel, key)?.is_some()
        {
            return Ok(None);
        }
        if !txn.has_increment_on(rel, key) {
            self.wait_unowned(txn, rel).await?;
            // (Not while a spilled transaction may hold the row: `wait_for_lock` checks.)
            if self.inner.spillers.of(rel, txn.shared.id).is_empty()
                && self.inner.locks.try_lock_idle(&txn.shared, rel, key)
            {
                txn.record_lock(rel, key)?;
                return Ok(None);
            }
            if !txn.increment_locks.contains(&(rel, key.to_vec())) {
                self.wait_for_lock(txn, rel, key, LockMode::Increment)
                    .await?;
                txn.increment_locks.insert((rel, key.to_vec()));
            }
            // Under the increment lock nobody deletes the row or writes it otherwise, so
            // what exists now still exists at commit.
            let exists = txn
                .read_newest_locked(rel, key)?
                .is_some_and(|v| v.row.is_some());
            if !exists {
                return Ok(Some(false));
            }
        }
        let apply: IncrementFn = Box::new(move |row| increment::apply(row, &increments));
        txn.increments.push((rel, key.to_vec(), apply));
        Ok(Some(true))
    }

    /// Applies the transaction's deferred increments before it reads or writes their rows
    /// otherwise: for each row (in key order), takes the owner slot (`LockMode::Apply`:
    /// waits for the owner and for increments being merged, not for the other increment
    /// holders), reads the newest version and writes the incremented one. The row is
    /// then the transaction's like any it locked.
    pub async fn apply_increments(&self, txn: &mut Txn) -> PgResult<()> {
        for ((rel, key), fs) in txn.take_increments_by_row() {
            self.wait_for_lock(txn, rel, &key, LockMode::Apply).await?;
            txn.record_lock(rel, &key)?;
            let Some(mut row) = txn.read_newest_locked(rel, &key)?.and_then(|v| v.row) else {
                continue; // cannot happen: the increment lock kept deleters out
            };
            for f in &fs {
                row = f(&row)?;
            }
            self.put(txn, rel, &key, Some(row))?;
        }
        Ok(())
    }

    /// `lock_row`, or with `LockWait::NoWait` one that does not wait: 55P03 if another
    /// transaction holds the row (SELECT … FOR UPDATE NOWAIT; SKIP LOCKED passes over
    /// such a row).
    pub async fn lock_row_as(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        wait: LockWait,
    ) -> PgResult<Option<RowBytes>> {
        self.lock_row_waiting(txn, rel, key, wait == LockWait::Wait)
            .await
    }

    pub async fn lock_row(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
    ) -> PgResult<Option<RowBytes>> {
        self.lock_row_waiting(txn, rel, key, true).await
    }

    async fn lock_row_waiting(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        wait: bool,
    ) -> PgResult<Option<RowBytes>> {
        if txn.has_increment_on(rel, key) {
            self.apply_increments(txn).await?;
        }
        if let Some(w) = txn.own_write(rel, key)? {
            return Ok(w);
        }
        if !wait && !txn.holds_lock(rel, key)? {
            let free = self.inner.owned.other_owner(rel, txn.shared.id).is_none()
                && self
                    .inner
                    .spilled_holder(txn.shared.id, rel, key)?
                    .is_none()
                && self
                    .inner
                    .locks
                    .try_lock(&txn.shared, rel, key, LockMode::Exclusive);
            if !free {
                return Err(PgError::new(
                    codes::LOCK_NOT_AVAILABLE,
                    "could not obtain lock on row",
                ));
            }
            txn.record_lock(rel, key)?;
        }
        self.acquire(txn, rel, key).await?;
        match txn.read_newest_locked(rel, key)? {
            None => Ok(None),
            Some(v) => {
                if txn.isolation.one_snapshot() && v.commit_ts > txn.shared.start_ts {
                    return Err(serialization_failure());
                }
                Ok(v.row)
            }
        }
    }

    pub fn put(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        row: Option<RowBytes>,
    ) -> PgResult<()> {
        if txn.has_increment_on(rel, key) {
            return Err(PgError::internal(
                "datanode: put on a row with a deferred increment",
            ));
        }
        if self.inner.owned.other_owner(rel, txn.shared.id).is_some() {
            return Err(PgError::internal(
                "datanode: put into a relation another transaction owns",
            ));
        }
        if !txn.holds_lock(rel, key)? {
            if self
                .inner
                .locks
                .try_lock(&txn.shared, rel, key, LockMode::Exclusive)
            {
                txn.record_lock(rel, key)?;
            } else {
                return Err(PgError::internal(
                    "datanode: put on a row locked by another transaction",
                ));
            }
        }
        let size = 2 * key.len() + row.as_ref().map_or(0, |r| r.len()) + spilled::WRITE_OVERHEAD;
        let m = txn.writes.entry(rel).or_default();
        let prev = m.insert(key.to_vec(), row);
        if prev.is_none() {
            txn.n_writes += 1;
        }
        txn.undo.push((rel, key.to_vec(), prev));
        txn.grew(size)
    }

    /// Writes a row under a key that no transaction has used before (a row id just
    /// allocated by `allocate_row_ids`): no version of it exists to check or replace.
    pub async fn put_new_key(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        row: RowBytes,
    ) -> PgResult<()> {
        self.wait_unowned(txn, rel).await?;
        self.put(txn, rel, key, Some(row))?;
        txn.note_newest(rel, key, None);
        Ok(())
    }

    pub async fn insert(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        row: RowBytes,
        unique_violation: impl FnOnce() -> PgError + Send,
    ) -> PgResult<()> {
        if txn.has_increment_on(rel, key) {
            self.apply_increments(txn).await?;
        }
        self.acquire(txn, rel, key).await?;
        let exists = match txn.own_write(rel, key)? {
            Some(w) => w.is_some(),
            None => txn
                .read_newest_locked(rel, key)?
                .is_some_and(|v| v.row.is_some()),
        };
        if exists {
            return Err(unique_violation());
        }
        self.put(txn, rel, key, Some(row))
    }
}
