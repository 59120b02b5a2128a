//! The spill crate through its public API, on real temporary files.

use pgerror::PgResult;
use proptest::prelude::*;
use spill::{
    abbreviated_key, Abbreviate, ExternalSorter, Partition, Partitioner, SpillDir, SpillStats,
    MAX_PARTITION_DEPTH,
};
use std::cmp::Ordering;
use std::hash::{DefaultHasher, Hasher};
use types::codec::encode_row;
use types::ops::sort_cmp;
use types::Value;

fn spill_dir() -> (tempfile::TempDir, SpillDir) {
    let parent = tempfile::tempdir().unwrap();
    let dir = SpillDir::open(parent.path().join("pgsql_tmp")).unwrap();
    (parent, dir)
}

/// Files this process has open in `dir` (unlinked ones show as "<dir>/#123 (deleted)").
fn open_files(dir: &SpillDir) -> usize {
    let prefix = dir.path().to_string_lossy().into_owned() + "/";
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with(&prefix))
        .count()
}

fn names_in(dir: &SpillDir) -> usize {
    std::fs::read_dir(dir.path()).unwrap().count()
}

/// The sort key is the first three columns, ORDER BY semantics (NULLS LAST, NaN highest).
fn by_key(a: &[Value], b: &[Value]) -> Ordering {
    a.iter()
        .zip(b)
        .take(3)
        .map(|(x, y)| sort_cmp(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// ORDER BY the text column DESC (NULLS FIRST, PostgreSQL's default), then `by_key`.
fn by_text_desc(a: &[Value], b: &[Value]) -> Ordering {
    let text = match (a[1].is_null(), b[1].is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => sort_cmp(&b[1], &a[1]),
    };
    text.then_with(|| by_key(a, b))
}

type RowCmp = fn(&[Value], &[Value]) -> Ordering;

/// The orders the sorter is tested with, without and with abbreviated keys of their first
/// column: (comparator, (column, descending)).
const ORDERS: [(RowCmp, Option<(usize, bool)>); 4] = [
    (by_key, None),
    (by_key, Some((0, false))),
    (by_text_desc, None),
    (by_text_desc, Some((1, true))),
];

/// Abbreviates `column`, NULLs placed as PostgreSQL's defaults do (last ASC, first DESC).
fn abbreviation(column: usize, descending: bool) -> Abbreviate {
    Box::new(move |row: &[Value]| abbreviated_key(&row[column], descending, descending))
}

/// Rows compared by encoding: the same variants and bits (so NaN equals NaN).
fn encoded(rows: &[Vec<Value>]) -> Vec<Vec<u8>> {
    rows.iter()
        .map(|row| {
            let mut out = Vec::new();
            encode_row(row, &mut out);
            out
        })
        .collect()
}

fn hash_key(row: &[Value]) -> u64 {
    let mut h = DefaultHasher::new();
    row[0].hash_into(&mut h);
    h.finish()
}

/// (int of any width or NULL, short text or NULL, float8 with NaN/±0/±∞ or NULL, payload
/// of 0–300 bytes); few distinct keys, so equal keys are common. A sequence number is
/// appended by the tests.
fn row() -> impl Strategy<Value = Vec<Value>> {
    let int = prop_oneof![
        1 => Just(Value::Null),
        3 => (-20i16..20).prop_map(Value::Int2),
        3 => (-20i32..20).prop_map(Value::Int4),
        3 => (-20i64..20).prop_map(Value::Int8),
    ];
    let text = prop_oneof![1 => Just(Value::Null), 4 => "[ab]{0,3}".prop_map(Value::Text)];
    let float = prop_oneof![
        Just(Value::Null),
        Just(Value::Float8(f64::NAN)),
        Just(Value::Float8(f64::INFINITY)),
        Just(Value::Float8(f64::NEG_INFINITY)),
        Just(Value::Float8(-0.0)),
        Just(Value::Float8(0.0)),
        (-3i8..3).prop_map(|v| Value::Float8(f64::from(v) / 2.0)),
    ];
    let payload = prop_oneof![
        Just(Value::Null),
        (0usize..300).prop_map(|n| Value::Text("p".repeat(n)))
    ];
    (int, text, float, payload).prop_map(|(a, b, c, d)| vec![a, b, c, d])
}

fn numbered(rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.into_iter()
        .enumerate()
        .map(|(i, mut row)| {
            row.push(Value::Int8(i as i64));
            row
        })
        .collect()
}

fn sort_all(rows: &[Vec<Value>], budget: usize, dir: &SpillDir) -> (Vec<Vec<Value>>, SpillStats) {
    sort_by(rows, budget, dir, by_key, None)
}

fn sort_by(
    rows: &[Vec<Value>],
    budget: usize,
    dir: &SpillDir,
    cmp: RowCmp,
    abbreviate: Option<Abbreviate>,
) -> (Vec<Vec<Value>>, SpillStats) {
    let mut sorter = match abbreviate {
        Some(abbreviate) => ExternalSorter::with_abbreviation(budget, dir, cmp, abbreviate),
        None => ExternalSorter::new(budget, dir, cmp),
    };
    for row in rows {
        sorter.push(row.clone()).unwrap();
    }
    let sorted = sorter.finish().unwrap();
    let stats = sorted.stats();
    (sorted.collect::<PgResult<_>>().unwrap(), stats)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Equal to a stable in-memory sort for every budget: none (every row a run), small
    /// ones (fan-in 2, many merge levels), fan-in 3, and one the input fits; ASC and DESC,
    /// with and without abbreviated keys.
    #[test]
    fn sorter_equals_a_stable_in_memory_sort(rows in proptest::collection::vec(row(), 0..1500)) {
        let rows = numbered(rows);
        // rows as the sorter accounts them: row_size and the abbreviated key
        let total: usize = rows.iter().map(|r| spill::row_size(r) + 8).sum();
        for (cmp, abbreviate) in ORDERS {
            let mut expected = rows.clone();
            expected.sort_by(|a, b| cmp(a, b));
            for budget in [0, 700, 6_000, 100_000, usize::MAX] {
                let (_parent, dir) = spill_dir();
                let (sorted, stats) = sort_by(&rows, budget, &dir, cmp, abbreviate.map(|(c, d)| abbreviation(c, d)));
                prop_assert_eq!(encoded(&sorted), encoded(&expected), "budget {}", budget);
                prop_assert_eq!(stats.files == 0, total <= budget, "budget {}, {} bytes of rows", budget, total);
                prop_assert_eq!(dir.stats(), stats);
            }
        }
    }

    /// Every row comes back from exactly one partition, rows of equal keys (int4 5 and
    /// int8 5 too) from the same one, at every depth of splitting.
    #[test]
    fn partitions_hold_every_row_once(rows in proptest::collection::vec(row(), 0..800), fanout in 1usize..9) {
        let rows = numbered(rows);
        let (_parent, dir) = spill_dir();
        let mut partitioner = Partitioner::new(&dir, fanout, 0);
        for row in &rows {
            partitioner.push(hash_key(row), row).unwrap();
        }
        let mut pending = partitioner.finish().unwrap();
        prop_assert_eq!(pending.len(), fanout);
        let mut seen = vec![0u32; rows.len()];
        // the final partition each key's hash was read from (equal keys hash alike)
        let mut home = std::collections::HashMap::new();
        let mut finals = 0;
        while let Some(partition) = pending.pop() {
            // split what is big while the depth allows, read back the rest
            if partition.rows() > 50 && partition.can_split() {
                let depth = partition.depth();
                let parts = partition.split(fanout.max(2), hash_key).unwrap();
                prop_assert!(parts.iter().all(|p| p.depth() == depth + 1));
                pending.extend(parts);
                continue;
            }
            finals += 1;
            let expected_rows = partition.rows();
            let mut count = 0;
            for row in partition.read().unwrap().into_iter().flatten() {
                let row = row.unwrap();
                let Value::Int8(seq) = row[4] else { panic!("sequence column") };
                seen[seq as usize] += 1;
                count += 1;
                prop_assert_eq!(encoded(std::slice::from_ref(&row)), encoded(std::slice::from_ref(&rows[seq as usize])));
                prop_assert_eq!(*home.entry(hash_key(&row)).or_insert(finals), finals, "key {:?} in two partitions", row[0]);
            }
            prop_assert_eq!(count, expected_rows);
        }
        prop_assert!(seen.iter().all(|n| *n == 1), "rows seen other than once: {:?}", seen);
    }
}

#[test]
fn equal_keys_of_two_sides_meet_in_the_same_partition() {
    let (_parent, dir) = spill_dir();
    let (mut build, mut probe) = (Partitioner::new(&dir, 16, 2), Partitioner::new(&dir, 16, 2));
    for k in 0..500 {
        build
            .push(
                hash_key(&[Value::Int4(k)]),
                &[Value::Int4(k), Value::Text("build".into())],
            )
            .unwrap();
        probe
            .push(
                hash_key(&[Value::Int8(k.into())]),
                &[Value::Int8(k.into()), Value::Text("probe".into())],
            )
            .unwrap();
    }
    let keys = |parts: Vec<Partition>| -> Vec<Vec<i64>> {
        parts
            .into_iter()
            .map(|p| {
                p.read()
                    .unwrap()
                    .into_iter()
                    .flatten()
                    .map(|r| r.unwrap()[0].as_i64().unwrap())
                    .collect()
            })
            .collect()
    };
    let (b, p) = (keys(build.finish().unwrap()), keys(probe.finish().unwrap()));
    assert_eq!(b, p);
    assert!(
        b.iter().filter(|keys| !keys.is_empty()).count() > 8,
        "500 keys spread over most of 16 partitions"
    );
}

#[test]
fn one_repeated_key_cannot_be_split_and_the_depth_is_limited() {
    let (_parent, dir) = spill_dir();
    let mut partitioner = Partitioner::new(&dir, 8, 0);
    for i in 0..100 {
        partitioner
            .push(
                hash_key(&[Value::Int4(7)]),
                &[Value::Int4(7), Value::Int8(i)],
            )
            .unwrap();
    }
    let mut partition = partitioner
        .finish()
        .unwrap()
        .into_iter()
        .find(|p| p.rows() > 0)
        .unwrap();
    assert_eq!(partition.rows(), 100);
    while partition.can_split() {
        let parts = partition.split(8, hash_key).unwrap();
        assert_eq!(
            parts.iter().filter(|p| p.rows() > 0).count(),
            1,
            "one hash, one partition"
        );
        partition = parts.into_iter().find(|p| p.rows() > 0).unwrap();
    }
    assert_eq!(partition.depth(), MAX_PARTITION_DEPTH);
    assert_eq!(partition.split(8, hash_key).err().unwrap().code, "XX000");
}

/// A sort much larger than its budget: merges cascade (rows are written several times),
/// yet few files are open at any time, and the output is sorted and complete.
#[test]
fn merge_levels_keep_open_files_few() {
    let (_parent, dir) = spill_dir();
    let mut sorter = ExternalSorter::new(2048, &dir, by_key);
    let mut most_open = 0;
    let mut one_copy = 0;
    let n = 20_000i64;
    for i in 0..n {
        let key = (i * 7919) % n; // a permutation of 0..n
        let row = vec![
            Value::Int8(key),
            Value::Null,
            Value::Null,
            Value::Text(format!("row {i}")),
        ];
        one_copy += encoded(std::slice::from_ref(&row))[0].len() + 1;
        sorter.push(row).unwrap();
        if i % 97 == 0 {
            most_open = most_open.max(open_files(&dir));
        }
    }
    let sorted = sorter.finish().unwrap();
    let written = sorted.stats();
    let keys: Vec<i64> = sorted.map(|r| r.unwrap()[0].as_i64().unwrap()).collect();
    assert_eq!(keys, (0..n).collect::<Vec<_>>());
    // fan-in 2: one waiting run per merge level (log2 of ~1,000 runs), plus one being written
    assert!(most_open <= 13, "{most_open} files open");
    // ~1,000 runs merged two at a time: each row is written once per level
    let copies = written.bytes as f64 / one_copy as f64;
    assert!(
        (8.0..=14.0).contains(&copies),
        "{written:?}, {one_copy} bytes of rows"
    );
}

/// Temporary files have no names (a kill -9 leaves nothing) and are closed when the
/// operators are dropped, finished or not.
#[test]
fn nothing_is_left_in_the_directory() {
    let (_parent, dir) = spill_dir();
    let mut sorter = ExternalSorter::new(0, &dir, by_key);
    let mut partitioner = Partitioner::new(&dir, 4, 0);
    for i in 0..300 {
        let row = vec![
            Value::Int8(i % 10),
            Value::Null,
            Value::Null,
            Value::Int8(i),
        ];
        partitioner.push(hash_key(&row), &row).unwrap();
        sorter.push(row).unwrap();
    }
    let mut sorted = sorter.finish().unwrap();
    sorted.next().unwrap().unwrap();
    let partitions = partitioner.finish().unwrap();
    let reader = partitions
        .into_iter()
        .find_map(|p| p.read().unwrap())
        .unwrap();
    assert!(open_files(&dir) > 2);
    assert_eq!(names_in(&dir), 0, "files are unlinked while in use");
    drop((sorted, reader));
    assert_eq!(open_files(&dir), 0);
    assert_eq!(names_in(&dir), 0);
    assert!(dir.stats().files > 300);
}

/// More rows than one in-memory chunk (16,384), in memory and in runs of ~27,000 rows:
/// the chunks merge stably.
#[test]
fn sorts_of_several_chunks_are_stable() {
    let rows = numbered(
        (0..40_000i64)
            .map(|i| vec![Value::Int8((i * 7919) % 13), Value::Null, Value::Null])
            .collect(),
    );
    let mut expected = rows.clone();
    expected.sort_by(|a, b| by_key(a, b));
    for (budget, runs) in [(usize::MAX, 0), (4 << 20, 1)] {
        for abbreviate in [None, Some(abbreviation(0, false))] {
            let (_parent, dir) = spill_dir();
            let (sorted, stats) = sort_by(&rows, budget, &dir, by_key, abbreviate);
            assert_eq!(stats.files, runs);
            assert_eq!(encoded(&sorted), encoded(&expected));
        }
    }
}

#[test]
fn a_sort_within_budget_writes_no_file() {
    let (_parent, dir) = spill_dir();
    let rows = numbered(
        (0..100)
            .map(|i| vec![Value::Int4(100 - i), Value::Null, Value::Null, Value::Null])
            .collect(),
    );
    let (sorted, stats) = sort_all(&rows, 1 << 20, &dir);
    assert_eq!(stats, SpillStats::default());
    assert_eq!(dir.stats(), SpillStats::default());
    assert_eq!(
        sorted
            .iter()
            .map(|r| r[0].as_i64().unwrap())
            .collect::<Vec<_>>(),
        (1..=100).collect::<Vec<_>>()
    );
}

/// One directory serves sorts on many threads; its counters add up theirs.
#[test]
fn sessions_on_several_threads_share_one_directory() {
    fn send_and_sync<T: Send + Sync + Clone>(_: &T) {}
    let (_parent, dir) = spill_dir();
    send_and_sync(&dir);
    let per_thread: Vec<SpillStats> = std::thread::scope(|s| {
        let sorts: Vec<_> = (0..4i64)
            .map(|t| {
                let dir = dir.clone();
                s.spawn(move || {
                    let rows: Vec<Vec<Value>> = (0..2000)
                        .map(|i| {
                            vec![
                                Value::Int8((i * 31 + t) % 2000),
                                Value::Null,
                                Value::Null,
                                Value::Int8(t),
                            ]
                        })
                        .collect();
                    let (sorted, stats) = sort_all(&rows, 4096, &dir);
                    assert!(sorted.windows(2).all(|w| by_key(&w[0], &w[1]).is_le()));
                    assert_eq!(sorted.len(), 2000);
                    stats
                })
            })
            .collect();
        sorts.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total = per_thread
        .iter()
        .fold(SpillStats::default(), |a, s| SpillStats {
            files: a.files + s.files,
            bytes: a.bytes + s.bytes,
        });
    assert!(per_thread.iter().all(|s| s.files > 10));
    assert_eq!(dir.stats(), total);
}
