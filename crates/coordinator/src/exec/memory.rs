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

/// One statement's share of the pool; what it still holds is returned when it drops.
#[derive(Default)]
pub struct MemoryAccount {
    used: AtomicUsize,
}

impl MemoryAccount {
    pub fn charge(&self, bytes: usize) -> PgResult<()> {
        let before = POOL_USED.fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > pool_limit() {
            POOL_USED.fetch_sub(bytes, Ordering::Relaxed);
            return Err(PgError::new(codes::OUT_OF_MEMORY, "out of memory").with_detail(format!(
                "Failed on request of size {bytes} in query memory (the server's --query-memory is {} bytes, {} in use).",
                pool_limit(),
                before
            )));
        }
        self.used.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    pub fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        POOL_USED.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for MemoryAccount {
    fn drop(&mut self) {
        POOL_USED.fetch_sub(*self.used.get_mut(), Ordering::Relaxed);
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
