//! Sorts 2 million rows of (int8, text of ~20 bytes) in memory and within a 4 MiB budget,
//! by the int8 column and by the text column, with and without abbreviated keys, and
//! prints wall and CPU times (crate README). Runs on mimalloc, as the server does.
//!
//! cargo run --release -p spill --example sort_throughput [rows]

use rand::{rngs::StdRng, Rng, SeedableRng};
use spill::{abbreviated_key, Abbreviate, ExternalSorter, SpillDir};
use std::time::Instant;
use types::ops::sort_cmp;
use types::Value;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .map_or(2_000_000, |n| n.parse().expect("row count"));
    let parent = std::env::temp_dir().join(format!("spill-bench-{}", std::process::id()));
    let dir = SpillDir::open(parent.join("pgsql_tmp")).expect("spill directory");
    let mut rng = StdRng::seed_from_u64(42);
    let input: Vec<Vec<Value>> = (0..rows)
        .map(|_| {
            let text: String = (0..rng.gen_range(16..24))
                .map(|_| rng.gen_range(b'a'..=b'z') as char)
                .collect();
            vec![Value::Int8(rng.gen()), Value::Text(text)]
        })
        .collect();
    for (key, column) in [("int8", 0), ("text", 1)] {
        for abbreviated in [false, true] {
            for (label, budget) in [("in memory", usize::MAX), ("4 MiB budget", 4 << 20)] {
                let rows = input.clone();
                let (start, start_cpu) = (Instant::now(), cpu_seconds());
                let cmp = move |a: &[Value], b: &[Value]| sort_cmp(&a[column], &b[column]);
                let mut sorter = if abbreviated {
                    let abbreviate: Abbreviate =
                        Box::new(move |row: &[Value]| abbreviated_key(&row[column], false, false));
                    ExternalSorter::with_abbreviation(budget, &dir, cmp, abbreviate)
                } else {
                    ExternalSorter::new(budget, &dir, cmp)
                };
                for row in rows {
                    sorter.push(row).expect("push");
                }
                let sorted = sorter.finish().expect("finish");
                let stats = sorted.stats();
                let mut count = 0;
                for row in sorted {
                    row.expect("row");
                    count += 1;
                }
                let (secs, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - start_cpu);
                assert_eq!(count, input.len());
                println!(
                    "by {key}{}, {label}: {secs:.2} s, {cpu:.2} s on the CPU, {} files, {:.0} MiB written",
                    if abbreviated { " (abbreviated)" } else { "" },
                    stats.files,
                    stats.bytes as f64 / (1 << 20) as f64
                );
            }
        }
    }
    std::fs::remove_dir_all(parent).expect("remove the spill directory");
}

/// Time this thread has run on a CPU (Linux: `/proc/thread-self/schedstat`), a steadier
/// measure than wall time on a machine shared with other work.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace()
        .next()
        .and_then(|ns| ns.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1e9
}
