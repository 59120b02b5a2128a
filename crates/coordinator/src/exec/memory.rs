//! Query memory: every row an operator or a subquery cache holds is charged to its
//! statement's account, and all accounts draw on one process-wide pool, so no statement
//! (nor all of them together) can take the process past `--query-memory`: a charge
//! that would ends its statement with 53200 instead.

use pgerror::{codes, PgError, PgResult};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes charged by all statements now running.
static POOL_USED: AtomicUsize = AtomicUsize::new(0);
/// The pool's size (`--query-memory`); set once at start-up.
static POOL_LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

pub fn set_pool_limit(bytes: usize) {
    POOL_LIMIT.store(bytes, Ordering::Relaxed);
}

pub fn pool_limit() -> usize {
    POOL_LIMIT.load(Ordering::Relaxed)
}

/// What a statement may hold without drawing on the pool, and the steps in which it
/// draws: the pool is one atomic shared by every session thread, and an OLTP statement
/// that touched it even once would pull its cache line from the other CPUs. So the
/// pool's bound is exact to within this much per running statement.
const STEP: usize = 64 << 10;

/// One statement's share of the pool; what it drew is returned when it drops.
pub struct MemoryAccount {
    used: AtomicUsize,
    /// Bytes this statement may use: `STEP` of its own plus what it drew from the pool.
    reserved: AtomicUsize,
}

impl Default for MemoryAccount {
    fn default() -> Self {
        MemoryAccount {
            used: AtomicUsize::new(0),
            reserved: AtomicUsize::new(STEP),
        }
    }
}

impl MemoryAccount {
    pub fn charge(&self, bytes: usize) -> PgResult<()> {
        let used = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let reserved = self.reserved.load(Ordering::Relaxed);
        if used <= reserved {
            return Ok(());
        }
        let draw = (used - reserved).div_ceil(STEP) * STEP;
        let before = POOL_USED.fetch_add(draw, Ordering::Relaxed);
        if before + draw > pool_limit() {
            POOL_USED.fetch_sub(draw, Ordering::Relaxed);
            self.used.fetch_sub(bytes, Ordering::Relaxed);
            return Err(PgError::new(codes::OUT_OF_MEMORY, "out of memory").with_detail(format!(
                "Failed on request of size {bytes} in query memory (the server's --query-memory is {} bytes, {before} in use).",
                pool_limit()
            )));
        }
        self.reserved.fetch_add(draw, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes given back stay reserved for this statement until it ends.
    pub fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for MemoryAccount {
    fn drop(&mut self) {
        let drawn = *self.reserved.get_mut() - STEP;
        if drawn > 0 {
            POOL_USED.fetch_sub(drawn, Ordering::Relaxed);
        }
    }
}

/// What one operator holds of its statement's account, released when the operator is
/// dropped (or `clear`ed).
pub struct Held<'a> {
    account: &'a MemoryAccount,
    bytes: usize,
}

impl<'a> Held<'a> {
    pub fn new(account: &'a MemoryAccount) -> Self {
        Held { account, bytes: 0 }
    }

    pub fn charge(&mut self, bytes: usize) -> PgResult<()> {
        self.account.charge(bytes)?;
        self.bytes += bytes;
        Ok(())
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn clear(&mut self) {
        self.account.release(std::mem::take(&mut self.bytes));
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}
