//! Session executors: one single-threaded tokio runtime per thread, each connection
//! pinned to one of them (round-robin).
//!
//! Why not one work-stealing runtime: a pgbench-style client waits for each answer before
//! sending the next request, so a server's throughput is bounded by how fast it turns a
//! request around, and on a VM the dearest part of that is waking a thread whose CPU has
//! gone idle (an inter-processor interrupt and a halt exit). A pinned session is read,
//! executed and answered on one thread with no hand-off between workers; and while
//! requests keep arriving an executor busy-polls its sockets for a short while instead of
//! sleeping, so a client's request finds it awake (docs/performance.md has the numbers).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::Notify;

thread_local! {
    /// Requests served on this thread (a counter the spinner watches for progress).
    static SERVED: Cell<u64> = const { Cell::new(0) };
    /// Wakes this thread's spinner; set only on executor threads.
    static SPINNER: Cell<Option<&'static Notify>> = const { Cell::new(None) };
    /// Set while the spinner polls: the end of the current pass over runnable sessions.
    static PASS_END: Cell<Option<&'static Notify>> = const { Cell::new(None) };
    /// Sessions waiting in `end_of_pass`.
    static AT_PASS_END: Cell<usize> = const { Cell::new(0) };
}

/// While this thread busy-polls, waits until the sessions runnable now have all run, so
/// that their answers leave together at the end of the pass.
///
/// Why: a client like pgbench sleeps in poll() on all its connections once it has nothing
/// to read; each answer written on its own wakes it again (on a VM an inter-processor
/// interrupt and a halt exit), it finds one socket ready, sends one request and sleeps
/// again, paying for polling every connection each time. Answers written back to back
/// wake it once and are read in one pass.
pub async fn end_of_pass() {
    /// Counts a waiter for as long as it waits, also if its future is dropped.
    struct Waiting;
    impl Drop for Waiting {
        fn drop(&mut self) {
            AT_PASS_END.with(|n| n.set(n.get() - 1));
        }
    }
    if let Some(pass_end) = PASS_END.with(Cell::get) {
        AT_PASS_END.with(|n| n.set(n.get() + 1));
        let _waiting = Waiting;
        pass_end.notified().await;
    }
}

/// Called by a session for every request: keeps its executor polling.
pub fn note_request() {
    SERVED.with(|s| s.set(s.get().wrapping_add(1)));
    SPINNER.with(|s| {
        if let Some(n) = s.get() {
            n.notify_one();
        }
    });
}

pub struct SessionExecutors {
    handles: Vec<Handle>,
    next: AtomicUsize,
}

impl SessionExecutors {
    /// Starts `threads` executors, each polling for `spin` after its last request.
    pub fn start(threads: usize, spin: Duration) -> std::io::Result<SessionExecutors> {
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(runtime.handle().clone());
            std::thread::Builder::new()
                .name(format!("session-{i}"))
                .spawn(move || {
                    if !spin.is_zero() {
                        // Live as long as the thread, which lives as long as the process.
                        let notify: &'static Notify = Box::leak(Box::new(Notify::new()));
                        let pass_end: &'static Notify = Box::leak(Box::new(Notify::new()));
                        SPINNER.with(|s| s.set(Some(notify)));
                        runtime.block_on(spin_while_busy(notify, pass_end, spin))
                    } else {
                        runtime.block_on(std::future::pending::<()>())
                    }
                })?;
        }
        Ok(SessionExecutors {
            handles,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs a task made by `task` on every executor, for as long as it lives.
    pub fn spawn_on_each<F: std::future::Future<Output = ()> + Send + 'static>(
        &self,
        task: impl Fn() -> F,
    ) {
        for h in &self.handles {
            h.spawn(task());
        }
    }

    /// The executor for the next connection.
    pub fn next(&self) -> &Handle {
        &self.handles[self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len()]
    }
}

/// A yield that returns after this long gave the CPU to another thread.
const CONTENDED_YIELD: Duration = Duration::from_micros(20);

/// Busy-polls while this thread serves requests: `yield_now` makes the current-thread
/// runtime poll its sockets with a zero timeout before running this task again, so the
/// thread never sleeps in epoll while requests keep coming. After `spin` with no request,
/// or at a yield that gave the CPU away (`CONTENDED_YIELD`), it sleeps until the next one.
///
/// The spinner runs once per pass (`yield_now` queues it behind the sessions that the
/// socket poll woke), so it also ends each pass: it releases the answers held in
/// `end_of_pass`.
async fn spin_while_busy(notify: &'static Notify, pass_end: &'static Notify, spin: Duration) {
    loop {
        notify.notified().await;
        PASS_END.with(|p| p.set(Some(pass_end)));
        let mut seen = SERVED.with(Cell::get);
        let mut last = Instant::now();
        while last.elapsed() < spin {
            tokio::task::yield_now().await;
            if AT_PASS_END.with(Cell::get) > 0 {
                pass_end.notify_waiters();
            } else {
                // Let a runnable client thread on this CPU go first: spinning must only
                // use time nobody else wants. A yield that took long means somebody did
                // want it: then sleep instead, so that the next request's client gets
                // the CPU outright rather than in turns with this loop.
                let before = Instant::now();
                std::thread::yield_now();
                if before.elapsed() >= CONTENDED_YIELD {
                    break;
                }
            }
            let now = SERVED.with(Cell::get);
            if now != seen {
                seen = now;
                last = Instant::now();
            }
        }
        // Nobody may wait for a pass end once no spinner ends passes.
        PASS_END.with(|p| p.set(None));
        pass_end.notify_waiters();
    }
}
