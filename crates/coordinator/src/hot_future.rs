//! Futures run in heap blocks that the session thread recycles, so that the state one
//! message's processing writes lands in memory that is still in the CPU cache.
//!
//! Why: a session is one task, and a future awaited inline lives inside that task's own
//! memory. With 1,000 sessions a session's memory has left the caches by the time its
//! next message comes, and every line that the message's nested state machines write
//! there is a cache miss (callgrind at 500 clients: ~25 write misses per select-only
//! transaction in `dispatch`, `execute`, `run_statement`...). A block that the last
//! message of any session on this thread used is still in cache.
//!
//! Two details carry the gain. The future is built in place: `Box::pin(make())` builds it
//! on the stack and copies all of it (kilobytes, nearly all unused state) into the box,
//! while writing `make()` straight into the block lets the compiler store just its
//! arguments there. And blocks come from a small per-thread free list, not the global
//! allocator: with one block in use at a time, mimalloc took its slow path (collecting
//! the page's freed list, retiring the page) on every allocation, ~1,250 instructions per
//! select-only transaction.
//!
//! Invariant: a block is only ever used for a value of the `Layout` it was allocated
//! with, and is returned to the free list (or the allocator) only after that value was
//! dropped in place.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// Free blocks kept per thread; more than the few messages a thread has in flight at once
/// (the rest wait for locks or the journal and hold their blocks meanwhile).
const MAX_FREE_BLOCKS: usize = 16;

/// This thread's free blocks, each with the layout it was allocated with.
struct FreeBlocks(Vec<(Layout, NonNull<u8>)>);

impl Drop for FreeBlocks {
    fn drop(&mut self) {
        for (layout, block) in self.0.drain(..) {
            // SAFETY: allocated by `take_block` with this layout and not in use.
            unsafe { dealloc(block.as_ptr(), layout) };
        }
    }
}

thread_local! {
    static FREE_BLOCKS: RefCell<FreeBlocks> = const { RefCell::new(FreeBlocks(Vec::new())) };
}

fn take_block(layout: Layout) -> NonNull<u8> {
    if layout.size() == 0 {
        return NonNull::<u8>::dangling();
    }
    let recycled = FREE_BLOCKS.try_with(|free| {
        let mut free = free.borrow_mut();
        let i = free.0.iter().rposition(|(l, _)| *l == layout)?;
        Some(free.0.swap_remove(i).1)
    });
    match recycled {
        Ok(Some(block)) => block,
        // SAFETY: the layout's size is not zero.
        _ => NonNull::new(unsafe { alloc(layout) }).unwrap_or_else(|| handle_alloc_error(layout)),
    }
}

fn give_block(layout: Layout, block: NonNull<u8>) {
    if layout.size() == 0 {
        return;
    }
    let kept = FREE_BLOCKS.try_with(|free| {
        let mut free = free.borrow_mut();
        if free.0.len() < MAX_FREE_BLOCKS {
            free.0.push((layout, block));
            true
        } else {
            false
        }
    });
    if kept != Ok(true) {
        // SAFETY: allocated by `take_block` with this layout; its value was dropped.
        unsafe { dealloc(block.as_ptr(), layout) };
    }
}

/// A future living in a recycled heap block (see the module comment).
pub struct HotFuture<F> {
    block: NonNull<F>,
    /// Owns an F, as a `Box<F>` would (for the drop checker and auto traits).
    _owns: PhantomData<F>,
}

/// Builds the future that `make` returns directly in a recycled block.
pub fn in_hot_block<F: Future>(make: impl FnOnce() -> F) -> HotFuture<F> {
    let block = take_block(Layout::new::<F>()).cast::<F>();
    // SAFETY: the block is valid for writes of an F and holds no value.
    unsafe { block.as_ptr().write(make()) };
    HotFuture {
        block,
        _owns: PhantomData,
    }
}

impl<F: Future> Future for HotFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the value stays at this address until it is dropped in place (the block
        // is never moved or reused while the HotFuture owns it): it is pinned.
        unsafe { Pin::new_unchecked(&mut *self.block.as_ptr()) }.poll(cx)
    }
}

impl<F> Drop for HotFuture<F> {
    fn drop(&mut self) {
        // SAFETY: the block holds a live F, owned by this HotFuture alone.
        unsafe { std::ptr::drop_in_place(self.block.as_ptr()) };
        give_block(Layout::new::<F>(), self.block.cast());
    }
}

// SAFETY: a HotFuture owns its F exactly as a Box<F> would; the free lists are per thread
// and hold plain memory, which any thread may reuse or free.
unsafe impl<F: Send> Send for HotFuture<F> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// Free blocks of `layout` on this thread's list.
    fn free_blocks_of(layout: Layout) -> usize {
        FREE_BLOCKS.with(|free| free.borrow().0.iter().filter(|(l, _)| *l == layout).count())
    }

    async fn doubled(n: u64) -> u64 {
        n * 2
    }

    #[test]
    fn runs_to_completion_and_drops_its_captures() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let dropped = Rc::new(());
        let held = dropped.clone();
        let fut = in_hot_block(move || async move {
            tokio::task::yield_now().await;
            drop(held);
            7
        });
        assert_eq!(rt.block_on(fut), 7);
        assert_eq!(Rc::strong_count(&dropped), 1);
    }

    #[test]
    fn a_future_dropped_before_completion_drops_its_state() {
        let dropped = Rc::new(());
        let held = dropped.clone();
        let fut = in_hot_block(move || async move {
            std::future::pending::<()>().await;
            drop(held);
        });
        assert_eq!(Rc::strong_count(&dropped), 2);
        drop(fut);
        assert_eq!(Rc::strong_count(&dropped), 1);
    }

    #[test]
    fn blocks_go_to_the_free_list_and_are_taken_from_it_up_to_the_cap() {
        fn layout_of<F>(_: &HotFuture<F>) -> Layout {
            Layout::new::<F>()
        }
        // Each test runs on a thread of its own: this thread's list starts empty.
        let first = in_hot_block(|| doubled(1));
        let layout = layout_of(&first);
        assert_eq!(free_blocks_of(layout), 0);
        drop(first);
        assert_eq!(
            free_blocks_of(layout),
            1,
            "a dropped future's block is kept"
        );
        let second = in_hot_block(|| doubled(2));
        assert_eq!(free_blocks_of(layout), 0, "the next future takes it");
        drop(second);

        let many: Vec<_> = (0..MAX_FREE_BLOCKS as u64 + 4)
            .map(|n| in_hot_block(move || doubled(n)))
            .collect();
        drop(many);
        assert_eq!(
            free_blocks_of(layout),
            MAX_FREE_BLOCKS,
            "the rest went back to the allocator"
        );
    }
}
