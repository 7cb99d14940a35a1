//! What the viewer holds per step once it has opened a run (issue 28 item 8): runs of many short episodes (one
//! or two steps of about 600 bytes each, as `scripts/shape-runs gigscope` makes them) of two sizes, each opened
//! the app's way in a fresh process (this test binary run again for [`open_in_this_process`] alone, so that
//! nothing this process did before counts), its resident memory read once the viewer has given the heap it
//! freed while reading back; the growth per step between the two sizes is what the viewer keeps per step.
//!
//! The goal is 64 bytes a step; the viewer keeps 128–150 in this test today (its episodes by column, each
//! group's name once, where each line is in about 12 bytes; the advantage table's rows and its anchor groups,
//! stored by column; the reader's id map: see docs/performance.md), so the bound below is today's figure with a
//! margin, and the test fails a viewer whose memory per step grows beyond it (150–250 with a span of 24 bytes an
//! episode; a record and a box of steps per episode kept 234–296 bytes a step; a
//! name of its own per episode and 48 bytes an anchor group 320–420; the lean episodes left where the reader's threads made them, among
//! the text they parsed, 370–800; text kept in memory, as for a verl dump's rows, is several kilobytes a step).
//! It is lowered as the representation is made compact.
//!
//! The same holds for the layouts whose rows have no line of their own to read their text back from (a verl
//! dump, a TRL log): the viewer writes their text to a spill file as it reads them and keeps only where it is;
//! before, it kept every row's text in memory (several kilobytes a row).

use crate::support;

use std::io::Write;
use std::path::Path;

use gigscope::tui::Config;

/// The most resident bytes the viewer may keep per step of a run of short episodes, after open: today's figure,
/// 128–150 in five runs of this test (2026-11-27 22:44–22:47 UTC, two of them beside two busy loops, load 1.6–2.4;
/// 150–250 before the spans were made compact, bounded at 320), with a margin for what the allocator keeps. Each
/// size is opened twice and the smaller figure taken.
const BYTES_PER_STEP: f64 = 256.0;

const WORDS: [&str; 17] = [
    "red", "blue", "green", "shoes", "shirt", "hat", "cotton", "size", "small", "large", "price", "lower", "than",
    "dollars", "buy", "search", "click",
];

/// A gigscope run of `episodes` short episodes in groups of 8 (a deterministic stand-in for `scripts/shape-runs
/// gigscope`); its step count.
pub(crate) fn short_episodes(dir: &Path, episodes: usize) -> usize {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut words = |n: usize| (0..n).map(|_| WORDS[(next() % 17) as usize]).collect::<Vec<_>>().join(" ");
    std::fs::write(dir.join("run.json"), r#"{"format": "gigscope-run/1", "env": "webshop"}"#).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("episodes.jsonl")).unwrap());
    let mut steps = 0;
    for e in 0..episodes {
        let (it, g) = (e / 12_000, e / 8);
        let n = 1 + e % 2;
        let list: Vec<serde_json::Value> = (0..n)
            .map(|s| {
                serde_json::json!({
                    "observation": format!("WebShop [SEP] Instruction: [SEP] {}", words(110)),
                    "action": if s == 0 { format!("search[{}]", words(3)) } else { "click[buy now]".to_string() },
                    "reward": if s + 1 == n { (e % 3 == 0) as u8 as f64 } else { 0.0 },
                    "valid": true, "page": if s == 0 { "search" } else { "item" },
                    "available_actions": ["search[<query>]"], "tokens": 6, "logprob": -0.5,
                })
            })
            .collect();
        steps += n;
        let episode = serde_json::json!({
            "id": format!("it{it}-g{g}-t{}", e % 8), "group": format!("g{g}-it{it}"), "iteration": it,
            "task": {"id": format!("task{g}"), "instruction": words(12)}, "steps": list,
        });
        writeln!(out, "{episode}").unwrap();
    }
    out.flush().unwrap();
    steps
}

/// Run again as a fresh process with `GIGSCOPE_TEST_OPEN=DIR`: open the run in `DIR` the app's way, wait for
/// the freed heap to be given back, and print the resident memory (KiB). Does nothing otherwise.
#[test]
fn open_in_this_process() {
    let Some(dir) = std::env::var_os("GIGSCOPE_TEST_OPEN") else { return };
    let (state, _loading) = support::opening::open_the_apps_way(Path::new(&dir), Config::defaults(false).unwrap());
    gigscope::tui::domain::settle_freed_memory();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let rss = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches(" kB");
    println!("episodes {} rss {rss} end", state.domain.episodes.len());
}

/// The least resident memory (bytes) of two fresh processes that have opened the run in `dir`, and the
/// episodes they read.
fn resident_after_open(dir: &Path) -> (f64, usize) {
    let (a, b) = (resident_after_one_open(dir), resident_after_one_open(dir));
    assert_eq!(a.1, b.1, "both read the whole run");
    (a.0.min(b.0), a.1)
}

fn resident_after_one_open(dir: &Path) -> (f64, usize) {
    let field = open_in_a_fresh_process("memory::open_in_this_process", dir, &[]);
    (field("rss") as f64 * 1024.0, field("episodes"))
}

/// Run `test` of this binary alone in a fresh process, with `GIGSCOPE_TEST_OPEN=dir` and `env` set: the number
/// it printed after each name (`name value`), by name.
pub(crate) fn open_in_a_fresh_process(test: &str, dir: &Path, env: &[(&str, &str)]) -> impl Fn(&str) -> usize {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("GIGSCOPE_TEST_OPEN", dir)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    move |name: &str| -> usize {
        let value = text.split_whitespace().skip_while(|w| *w != name).nth(1);
        value.and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no {name} in {text}"))
    }
}

#[test]
fn the_viewer_keeps_a_bounded_number_of_bytes_per_step_of_short_episodes() {
    let (small, large) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let small_steps = short_episodes(small.path(), 16_000);
    let large_steps = short_episodes(large.path(), 48_000);
    let (small_rss, small_read) = resident_after_open(small.path());
    let (large_rss, large_read) = resident_after_open(large.path());
    assert_eq!((small_read, large_read), (16_000, 48_000), "every episode read");
    let per_step = (large_rss - small_rss) / (large_steps - small_steps) as f64;
    let file = std::fs::metadata(large.path().join("episodes.jsonl")).unwrap().len() as f64;
    eprintln!(
        "{per_step:.0} bytes a step ({:.1} MB after opening {large_steps} steps, a {:.1} MB file; {:.1} MB for {small_steps})",
        large_rss / 1e6,
        file / 1e6,
        small_rss / 1e6
    );
    assert!(per_step <= BYTES_PER_STEP, "the viewer keeps {per_step:.0} bytes a step (at most {BYTES_PER_STEP})");
}

/// A verl (v1) rollout dump of `rows` rows in step files of 1,000 (as `scripts/shape-runs verl` makes them: a
/// prompt of 80 words shared by 8 outputs of 60, a score, a uid naming the prompt and the output); its rows.
pub(crate) fn verl_rows(dir: &Path, rows: usize) -> usize {
    let mut words = words_from(0x2545_f491_4f6c_dd1d);
    for step in 1..=rows / 1_000 {
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(format!("{step}.jsonl"))).unwrap());
        for prompt in 0..125 {
            let input = format!("system: You are a careful assistant . user: {} assistant:", words(80));
            for output in 0..8 {
                let row = serde_json::json!({
                    "input": input, "output": words(60), "gts": "45", "score": (output % 2) as f64, "step": step,
                    "uid": format!("{step:08}-{prompt:04}-0000-0000-000000000000_{output}_0"),
                });
                writeln!(out, "{row}").unwrap();
            }
        }
        out.flush().unwrap();
    }
    rows / 1_000 * 1_000
}

/// A TRL completions log of `rows` rows in step files of 8,000 (as `scripts/shape-runs trl` makes them: a
/// prompt of 6 words shared by a group of 8, completions of 1 to 6 words, two rewards and TRL's advantage),
/// written with parquet's own writer; its rows.
pub(crate) fn trl_rows(dir: &Path, rows: usize) -> usize {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::file::writer::SerializedFileWriter;
    let completions = dir.join("completions");
    std::fs::create_dir(&completions).unwrap();
    let schema = std::sync::Arc::new(
        parquet::schema::parser::parse_message_type(
            "message schema { REQUIRED INT64 step; REQUIRED BYTE_ARRAY prompt (UTF8); \
             REQUIRED BYTE_ARRAY completion (UTF8); REQUIRED DOUBLE length_reward; REQUIRED DOUBLE keyword_reward; \
             REQUIRED DOUBLE advantage; }",
        )
        .unwrap(),
    );
    let mut words = words_from(0x853c_49e6_748f_ea9b);
    let per_step = 8_000;
    for step in 1..=rows / per_step {
        let mut prompt = String::new();
        let mut text = |r: usize| -> [ByteArray; 2] {
            if r.is_multiple_of(8) {
                prompt = words(6);
            }
            [prompt.clone().into_bytes().into(), words(1 + r % 6).into_bytes().into()]
        };
        let texts: Vec<[ByteArray; 2]> = (0..per_step).map(&mut text).collect();
        let column = |i: usize| texts.iter().map(|t| t[i].clone()).collect::<Vec<_>>();
        let number = |f: fn(usize) -> f64| (0..per_step).map(f).collect::<Vec<f64>>();
        let path = completions.join(format!("completions_{step:05}.parquet"));
        let mut writer =
            SerializedFileWriter::new(std::fs::File::create(&path).unwrap(), schema.clone(), Default::default())
                .unwrap();
        let mut group = writer.next_row_group().unwrap();
        let mut index = 0;
        while let Some(mut writer) = group.next_column().unwrap() {
            match index {
                0 => writer.typed::<Int64Type>().write_batch(&vec![step as i64; per_step], None, None),
                1 | 2 => writer.typed::<ByteArrayType>().write_batch(&column(index - 1), None, None),
                3 => writer.typed::<DoubleType>().write_batch(&number(|r| 0.5 * (r % 3) as f64), None, None),
                4 => writer.typed::<DoubleType>().write_batch(&number(|r| (r % 2) as f64), None, None),
                _ => writer.typed::<DoubleType>().write_batch(&number(|r| (r % 7) as f64 / 3.0 - 1.0), None, None),
            }
            .unwrap();
            writer.close().unwrap();
            index += 1;
        }
        group.close().unwrap();
        writer.close().unwrap();
        // Written a minute ago: not taken for a file still being written.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options().write(true).open(&path).and_then(|f| f.set_modified(old)).unwrap();
    }
    rows / per_step * per_step
}

/// Words drawn from [`WORDS`] by a generator seeded with `seed`: `n` of them joined by spaces.
fn words_from(seed: u64) -> impl FnMut(usize) -> String {
    let mut state = seed;
    move |n| {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                WORDS[(state % 17) as usize]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The most resident bytes the viewer may keep per row of a verl dump or a TRL log, after open: today's figures,
/// verl 141–195 and TRL 173–239 in five runs of this test (2026-11-27 22:44–22:47 UTC, load 1.6–2.4), with a
/// margin for what the allocator keeps. Before: verl 331–393 and TRL 435–440 (2026-11-27 02:28 UTC, bounded at
/// 1,024), TRL 615–825 with a list of reward names per row, 825 to 920 in both once their text was spilled,
/// several kilobytes before. Their lean episodes carry more than a gigscope episode's: a TRL row's rewards and
/// stored advantage.
const BYTES_PER_ROW: f64 = 512.0;

/// The growth per row of what the viewer holds after open, between a run of `small` and one of `large` rows of
/// the layout `write` makes.
fn bytes_per_row(layout: &str, write: fn(&Path, usize) -> usize, small: usize, large: usize) -> f64 {
    let (small_dir, large_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (small_rows, large_rows) = (write(small_dir.path(), small), write(large_dir.path(), large));
    let (small_rss, small_read) = resident_after_open(small_dir.path());
    let (large_rss, large_read) = resident_after_open(large_dir.path());
    assert_eq!((small_read, large_read), (small_rows, large_rows), "{layout}: every row read");
    let per_row = (large_rss - small_rss) / (large_rows - small_rows) as f64;
    eprintln!(
        "{layout}: {per_row:.0} bytes a row ({:.1} MB after opening {large_rows} rows; {:.1} MB for {small_rows})",
        large_rss / 1e6,
        small_rss / 1e6
    );
    per_row
}

#[test]
fn the_viewer_keeps_the_text_of_verl_and_trl_rows_on_disk() {
    let verl = bytes_per_row("verl dump", verl_rows, 8_000, 24_000);
    let trl = bytes_per_row("TRL log", trl_rows, 16_000, 48_000);
    for (layout, per_row) in [("verl dump", verl), ("TRL log", trl)] {
        assert!(
            per_row <= BYTES_PER_ROW,
            "{layout}: the viewer keeps {per_row:.0} bytes a row (at most {BYTES_PER_ROW})"
        );
    }
}
