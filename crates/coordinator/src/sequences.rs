//! Where sequence values come from (decision 0034): each sequence has a counter in the
//! metadata service; this coordinator reserves a range of it at a time and hands its
//! values to all its sessions in increasing order, so values are unique across the
//! cluster without a round trip per value. A range is on disk before any of its values is
//! handed out, so a crash skips at most the rest of the ranges this coordinator held, and
//! never hands a value out twice.
//!
//! Expression evaluation is synchronous (`sql::eval`) and a reservation is not: it runs
//! on a thread of this module's own. Once half a range is handed out, the next one is
//! reserved there in the background, so a session waits for a reservation only at a
//! sequence's first use on this coordinator, after setval, or when values go faster than
//! reservations. Ranges grow (up to `MAX_BATCH` values) while a sequence uses them up
//! within a second.
//!
//! Also the sequence functions (nextval, currval, setval, lastval, pg_get_serial_sequence)
//! and what a session remembers of them.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use meta::{MetaClient, Reserve};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use sql::acl;
use sql::catalog::Catalog;
use sql::functions::ScalarFunc;
use sql::sequence::SequenceDef;
use types::Value;

use crate::catalog::LiveCatalog;
use crate::exec::SessionView;
use crate::privileges::check_sequence;

/// Values reserved at least at a time (PostgreSQL logs 32 values ahead, and skips as
/// many after a crash).
const MIN_BATCH: u64 = 32;
/// At most, for a sequence in heavy use.
const MAX_BATCH: u64 = 4096;
/// A range used up faster than this makes the next one twice as large.
const QUICK: Duration = Duration::from_secs(1);

/// This coordinator's reserved ranges, shared by its sessions.
pub struct SequenceValues {
    sequences: Mutex<HashMap<u32, Arc<Sequence>>>,
    worker: Mutex<mpsc::Sender<Call>>,
}

#[derive(Default)]
struct Sequence {
    /// Held while a session takes a value, and while it waits for a reservation.
    range: Mutex<Range>,
    /// The next range, reserved in the background. Never held while waiting: the worker
    /// fills it in while a session may hold `range` waiting for the worker.
    ahead: Mutex<Ahead>,
}

#[derive(Default)]
struct Ahead {
    /// Raised whenever a reservation in flight must be thrown away (setval, ALTER).
    epoch: u64,
    fetching: bool,
    /// The last reservation ahead found the sequence exhausted: no more are tried
    /// until a session's own reservation succeeds or the counter is restarted.
    dry: bool,
    /// (first, count, step).
    range: Option<(i64, u64, i64)>,
}

#[derive(Default)]
struct Range {
    next: i64,
    /// Values left from `next` on, by `step`.
    left: u64,
    step: i64,
    /// The size of the last reservation, and when it was made.
    batch: u64,
    reserved: Option<Instant>,
}

impl Range {
    /// How many values to reserve next: twice the last range if it went within `QUICK`.
    fn next_batch(&self) -> u64 {
        match self.reserved {
            Some(t) if t.elapsed() < QUICK => (self.batch * 2).clamp(MIN_BATCH, MAX_BATCH),
            _ => MIN_BATCH,
        }
    }
}

/// A metadata-service request run on the worker thread: for a waiting session, or a
/// range reserved ahead (`Prefetch`: kept in `ahead` if its epoch is still current).
enum Call {
    Reserve(Reserve, mpsc::SyncSender<PgResult<(i64, u64)>>),
    /// A counter's next value, None if nothing was reserved yet.
    Peek(Vec<u8>, mpsc::SyncSender<PgResult<Option<i128>>>),
    Restart(Vec<u8>, i128, mpsc::SyncSender<PgResult<()>>),
    Prefetch(Reserve, Arc<Sequence>, u64),
    /// Answered once the calls sent before it are done (the worker runs them in order).
    Flush(mpsc::SyncSender<PgResult<()>>),
}

impl SequenceValues {
    pub fn start(meta: MetaClient) -> PgResult<SequenceValues> {
        let (tx, rx) = mpsc::channel::<Call>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PgError::io("could not start the sequence thread", e))?;
        std::thread::Builder::new()
            .name("sequences".into())
            .spawn(move || {
                while let Ok(call) = rx.recv() {
                    runtime.block_on(async {
                        // A session that stopped waiting (none does) drops its receiver.
                        match call {
                            Call::Reserve(r, reply) => {
                                let _ = reply.send(meta.reserve(r).await);
                            }
                            Call::Restart(key, next, reply) => {
                                let _ = reply.send(meta.restart(&key, next).await);
                            }
                            Call::Peek(key, reply) => {
                                let counter = meta.get(vec![key]).await.and_then(|mut v| {
                                    v.pop()
                                        .flatten()
                                        .map(|c| meta::sequence_counter(&c))
                                        .transpose()
                                });
                                let _ = reply.send(counter);
                            }
                            Call::Flush(reply) => {
                                let _ = reply.send(Ok(()));
                            }
                            Call::Prefetch(r, sequence, epoch) => {
                                let step = r.step;
                                // An error is met again by the session that needs a range.
                                let reserved = meta.reserve(r).await;
                                let mut ahead = sequence.ahead.lock();
                                if ahead.epoch == epoch {
                                    ahead.fetching = false;
                                    match reserved {
                                        Ok((first, count @ 1..)) => {
                                            ahead.range = Some((first, count, step))
                                        }
                                        Ok(_) => ahead.dry = true,
                                        Err(_) => {}
                                    }
                                }
                            }
                        }
                    });
                }
            })
            .map_err(|e| PgError::io("could not start the sequence thread", e))?;
        Ok(SequenceValues {
            sequences: Mutex::new(HashMap::new()),
            worker: Mutex::new(tx),
        })
    }

    fn sequence(&self, oid: u32) -> Arc<Sequence> {
        self.sequences.lock().entry(oid).or_default().clone()
    }

    fn send(&self, call: Call) -> PgResult<()> {
        self.worker
            .lock()
            .send(call)
            .map_err(|_| PgError::internal("the sequence thread is gone"))
    }

    /// Runs `call` on the worker and waits for its answer.
    fn wait<T>(&self, call: impl FnOnce(mpsc::SyncSender<PgResult<T>>) -> Call) -> PgResult<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(call(tx))?;
        rx.recv()
            .map_err(|_| PgError::internal("the sequence thread is gone"))?
    }

    fn reservation(def: &SequenceDef, n: u64) -> Reserve {
        Reserve {
            key: LiveCatalog::sequence_counter_key(def.oid),
            n: n.max(def.cache as u64),
            start: def.start,
            step: def.increment,
            bound: def.bound(),
            wrap: def.wrap(),
        }
    }

    /// The sequence's next value: from this coordinator's range, reserving one first if
    /// it is used up, or no longer fits the definition (ALTER SEQUENCE changed the
    /// increment or the bounds).
    pub fn nextval(&self, def: &SequenceDef) -> PgResult<i64> {
        let sequence = self.sequence(def.oid);
        // Held while a range is reserved: the sessions after this one use it.
        let mut r = sequence.range.lock();
        let fits = |r: &Range| r.step == def.increment && (def.min..=def.max).contains(&r.next);
        if r.left == 0 || !fits(&r) {
            let (mut ready, in_flight) = {
                let mut ahead = sequence.ahead.lock();
                (ahead.range.take(), ahead.fetching)
            };
            if ready.is_none() && in_flight {
                // Values went faster than the reservation ahead: wait for it rather than
                // reserve past it (its values would be skipped).
                self.wait(Call::Flush)?;
                ready = sequence.ahead.lock().range.take();
            }
            match ready {
                Some((first, count, step)) => {
                    (r.next, r.left, r.step, r.batch) = (first, count, step, count)
                }
                None => r.left = 0,
            }
            if r.left == 0 || !fits(&r) {
                let batch = r.next_batch();
                let reserve = Self::reservation(def, batch);
                let (first, count) = self.wait(|reply| Call::Reserve(reserve, reply))?;
                if count == 0 {
                    r.left = 0;
                    return Err(def.exhausted());
                }
                (r.next, r.left, r.step, r.batch) = (first, count, def.increment, batch);
                sequence.ahead.lock().dry = false;
            }
            r.reserved = Some(Instant::now());
        }
        let value = r.next;
        r.left -= 1;
        if r.left > 0 {
            r.next += r.step;
        }
        if r.left <= r.batch / 2 {
            let mut ahead = sequence.ahead.lock();
            if !ahead.fetching && !ahead.dry && ahead.range.is_none() {
                ahead.fetching = true;
                let reserve = Self::reservation(def, r.next_batch());
                self.send(Call::Prefetch(reserve, sequence.clone(), ahead.epoch))?;
            }
        }
        Ok(value)
    }

    /// (the last value any coordinator reserved, true), or (start, false) before any
    /// was: what a sequence relation shows as (last_value, is_called). A value reserved is
    /// not always handed out, so a setval to it (pg_dump's) never repeats a value.
    pub fn last_reserved(&self, def: &SequenceDef) -> PgResult<(i64, bool)> {
        let key = LiveCatalog::sequence_counter_key(def.oid);
        let next = self.wait(|reply| Call::Peek(key, reply))?;
        Ok(match next {
            Some(next) if next != i128::from(def.start) => {
                let last = next - i128::from(def.increment);
                (i64::try_from(last).unwrap_or(def.start), true)
            }
            _ => (def.start, false),
        })
    }

    /// setval: later reservations, by any coordinator, continue after `value` (`called`)
    /// or at it; this coordinator's range is dropped.
    pub fn setval(&self, def: &SequenceDef, value: i64, called: bool) -> PgResult<()> {
        def.check_setval(value)?;
        let next = i128::from(value) + if called { i128::from(def.increment) } else { 0 };
        let sequence = self.sequence(def.oid);
        let mut r = sequence.range.lock();
        let key = LiveCatalog::sequence_counter_key(def.oid);
        self.wait(|reply| Call::Restart(key, next, reply))?;
        r.left = 0;
        Self::drop_ahead(&sequence);
        Ok(())
    }

    /// Drops the range reserved ahead, which may follow the definition ALTER SEQUENCE
    /// changed (a wrap of a sequence no longer cycling); the range in use stays.
    pub fn forget_ahead(&self, oid: u32) {
        if let Some(sequence) = self.sequences.lock().get(&oid) {
            Self::drop_ahead(sequence);
        }
    }

    /// Drops this coordinator's ranges (ALTER SEQUENCE … RESTART, DROP SEQUENCE).
    pub fn forget(&self, oid: u32) {
        if let Some(sequence) = self.sequences.lock().remove(&oid) {
            sequence.range.lock().left = 0;
            Self::drop_ahead(&sequence);
        }
    }

    fn drop_ahead(sequence: &Sequence) {
        let mut ahead = sequence.ahead.lock();
        ahead.epoch += 1;
        ahead.fetching = false;
        ahead.dry = false;
        ahead.range = None;
    }
}

/// What a session remembers of the sequences it used.
#[derive(Default)]
pub struct SessionSequences {
    /// currval of each sequence nextval (or setval) gave a value in this session.
    current: HashMap<u32, i64>,
    /// The sequence of the session's latest nextval (lastval).
    last: Option<u32>,
}

fn not_yet_defined(what: String) -> PgError {
    PgError::new(
        codes::OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("{what} is not yet defined in this session"),
    )
}

/// The sequence a regclass argument names.
fn sequence(session: &SessionView, oid: u32) -> PgResult<Arc<SequenceDef>> {
    if let Some(s) = session.catalog.sequence_by_oid(oid) {
        return Ok(s);
    }
    Err(match session.catalog.table_by_oid(oid) {
        Some(t) => PgError::new(
            codes::WRONG_OBJECT_TYPE,
            format!("\"{}\" is not a sequence", t.name),
        ),
        None => PgError::new(
            codes::UNDEFINED_TABLE,
            format!("could not open relation with OID {oid}"),
        ),
    })
}

/// Evaluates a sequence function (`ScalarFunc::Nextval` … `PgGetSerialSequence`).
pub fn call(session: &SessionView, func: ScalarFunc, args: &[Value]) -> PgResult<Value> {
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let oid = || args.first().and_then(Value::as_i64).unwrap_or(0) as u32;
    let mut state = session.sequence_state.lock();
    Ok(match func {
        ScalarFunc::Nextval => {
            let def = sequence(session, oid())?;
            check_sequence(session, &def, acl::USAGE | acl::UPDATE)?;
            let v = session.sequences.nextval(&def)?;
            state.current.insert(def.oid, v);
            state.last = Some(def.oid);
            Value::Int8(v)
        }
        ScalarFunc::Currval => {
            let def = sequence(session, oid())?;
            check_sequence(session, &def, acl::SELECT | acl::USAGE)?;
            match state.current.get(&def.oid) {
                Some(v) => Value::Int8(*v),
                None => {
                    return Err(not_yet_defined(format!(
                        "currval of sequence \"{}\"",
                        def.name
                    )))
                }
            }
        }
        ScalarFunc::Setval => {
            let def = sequence(session, oid())?;
            check_sequence(session, &def, acl::UPDATE)?;
            let value = args.get(1).and_then(Value::as_i64).unwrap_or(0);
            let called = args.get(2).and_then(Value::as_bool).unwrap_or(true);
            session.sequences.setval(&def, value, called)?;
            // As PostgreSQL: currval follows only a setval that counts as called.
            if called {
                state.current.insert(def.oid, value);
            }
            Value::Int8(value)
        }
        ScalarFunc::Lastval => {
            let last = (state.last)
                .and_then(|oid| session.catalog.sequence_by_oid(oid))
                .and_then(|def| state.current.get(&def.oid).map(|v| (def, *v)));
            match last {
                Some((def, v)) => {
                    check_sequence(session, &def, acl::SELECT | acl::USAGE)?;
                    Value::Int8(v)
                }
                None => return Err(not_yet_defined("lastval".into())),
            }
        }
        ScalarFunc::PgGetSerialSequence => serial_sequence(session, args)?,
        ScalarFunc::SequenceLastValue | ScalarFunc::SequenceIsCalled => {
            let def = sequence(session, oid())?;
            let (last, called) = session.sequences.last_reserved(&def)?;
            match func {
                ScalarFunc::SequenceLastValue => Value::Int8(last),
                _ => Value::Bool(called),
            }
        }
        other => {
            return Err(PgError::internal(format!(
                "{other:?} is not a sequence function"
            )))
        }
    })
}

/// pg_get_serial_sequence(table, column): the sequence the column owns, schema-qualified.
fn serial_sequence(session: &SessionView, args: &[Value]) -> PgResult<Value> {
    let text = |i: usize| {
        args.get(i)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let table_name = text(0);
    let unquoted = match table_name.strip_prefix('"') {
        Some(quoted) => quoted.trim_end_matches('"').to_string(),
        None => table_name.to_ascii_lowercase(),
    };
    let name = unquoted.strip_prefix("public.").unwrap_or(&unquoted);
    let table = session.catalog.table(None, name).ok_or_else(|| {
        PgError::new(
            codes::UNDEFINED_TABLE,
            format!("relation \"{table_name}\" does not exist"),
        )
    })?;
    let column_name = text(1);
    let column = table.column_index(&column_name).ok_or_else(|| {
        PgError::new(
            codes::UNDEFINED_COLUMN,
            format!(
                "column \"{column_name}\" of relation \"{}\" does not exist",
                table.name
            ),
        )
    })?;
    let owner = Some(sql::sequence::OwnedBy {
        table: table.oid,
        column,
    });
    Ok(session
        .catalog
        .sequences()
        .into_iter()
        .find(|s| s.owned_by == owner)
        .map_or(Value::Null, |s| {
            Value::Text(format!("public.{}", sql::deparse::quote_ident(&s.name)))
        }))
}
