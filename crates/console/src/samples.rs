//! The coordinator's throughput and latency over the last minutes, from its metrics
//! (`coordinator::metrics`): one sample a second of transactions per second (commits and
//! rollbacks), statements per second and the mean statement latency over that second.

use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Samples kept: five minutes.
const KEPT: usize = 300;

#[derive(Default)]
pub(crate) struct Samples(Mutex<State>);

#[derive(Default)]
struct State {
    last: Option<Counters>,
    kept: VecDeque<Value>,
}

struct Counters {
    at: Instant,
    transactions: u64,
    statements: u64,
    statement_seconds: f64,
}

impl Counters {
    fn now() -> Counters {
        let m = coordinator::metrics::metrics();
        Counters {
            at: Instant::now(),
            transactions: m.transactions_committed.get() + m.transactions_rolled_back.get(),
            statements: m.statement_duration.get_sample_count(),
            statement_seconds: m.statement_duration.get_sample_sum(),
        }
    }
}

impl Samples {
    /// Takes a sample (the rates since the last one).
    pub(crate) fn take(&self) {
        let now = Counters::now();
        let mut state = self.0.lock();
        if let Some(last) = &state.last {
            let seconds = now.at.duration_since(last.at).as_secs_f64().max(1e-3);
            let statements = now.statements.saturating_sub(last.statements);
            let latency_ms = if statements == 0 {
                0.0
            } else {
                (now.statement_seconds - last.statement_seconds) * 1000.0 / statements as f64
            };
            let unix_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let sample = json!({
                "t": unix_ms,
                "tps": now.transactions.saturating_sub(last.transactions) as f64 / seconds,
                "sps": statements as f64 / seconds,
                "latency_ms": latency_ms,
                "connections": coordinator::metrics::metrics().connections_open.get(),
            });
            if state.kept.len() == KEPT {
                state.kept.pop_front();
            }
            state.kept.push_back(sample);
        }
        state.last = Some(now);
    }

    pub(crate) fn json(&self) -> Value {
        Value::Array(self.0.lock().kept.iter().cloned().collect())
    }
}
