//! Which training burst wrote which part of a run: the byte ranges of `episodes.jsonl` that `run.json`'s
//! `bursts` entries record, and the burst an episode line at a given offset belongs to.
//!
//! Contract: every writer of a burst records, in its `bursts` entry, `episodes_from` (the size of
//! `episodes.jsonl` when the burst starts) and, when it ends, `episodes_to` (the size then). Byte positions, not
//! iterations: an exporter numbers iterations by its trainer's step, which a new job may start again from 1.
//! The entries are read in their order:
//! - an entry that starts inside the burst before it (at or after its start, before its recorded end; or at its
//!   very start while that one is still open) is part of it: gigscope's own trainer running as a Ray job records
//!   its configuration after the Ray record of the job that runs it;
//! - any other entry with `episodes_from` starts the next burst, numbered from 1;
//! - a burst without a recorded end (still running, or its writer died) ends where the next one starts.
//!
//! An episode line belongs to the burst whose range holds its offset. Lines written by others meanwhile (groups
//! played in the TUI while a burst runs) fall in the range too. Entries without `episodes_from` (written before
//! bursts recorded it) start no burst. Plain data: nothing here reads a file.

use serde_json::Value;

use super::format::RunMeta;

/// Key of `run.json` holding the list of bursts.
pub const BURSTS_KEY: &str = "bursts";
/// Keys of a `bursts` entry: the size of `episodes.jsonl` in bytes when the burst started and when it ended.
pub const EPISODES_FROM_KEY: &str = "episodes_from";
pub const EPISODES_TO_KEY: &str = "episodes_to";

/// One burst's part of `episodes.jsonl`: `from..to` (`to`: `None` up to the end of the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurstSpan {
    /// 1-based, in the order the bursts started.
    pub number: u32,
    pub from: u64,
    pub to: Option<u64>,
}

impl BurstSpan {
    pub fn holds(&self, offset: u64) -> bool {
        offset >= self.from && self.to.is_none_or(|to| offset < to)
    }

    /// `b2`: how a burst is marked beside its groups.
    pub fn mark(number: u32) -> String {
        format!("b{number}")
    }
}

/// The bursts a run records, in order, as spans (see the module's rules); empty when none records its range.
pub fn burst_spans(meta: Option<&RunMeta>) -> Vec<BurstSpan> {
    let entries = meta.and_then(|m| m.extra.get(BURSTS_KEY)).and_then(Value::as_array);
    let ranges = entries.into_iter().flatten().filter_map(|entry| {
        let from = entry.get(EPISODES_FROM_KEY)?.as_u64()?;
        Some((from, entry.get(EPISODES_TO_KEY).and_then(Value::as_u64)))
    });
    spans_of(ranges)
}

/// [`burst_spans`] from the entries' `(episodes_from, episodes_to)`, in order.
pub fn spans_of(ranges: impl IntoIterator<Item = (u64, Option<u64>)>) -> Vec<BurstSpan> {
    let mut spans: Vec<BurstSpan> = Vec::new();
    for (from, to) in ranges {
        if let Some(last) = spans.last_mut() {
            let inside = match last.to {
                Some(end) => from >= last.from && from < end,
                None => from == last.from,
            };
            if inside {
                // The inner entry's end is the burst's when the outer one has none yet.
                if last.to.is_none() {
                    last.to = to;
                }
                continue;
            }
            if last.to.is_none_or(|end| end > from) {
                last.to = Some(from.max(last.from));
            }
        }
        let number = spans.len() as u32 + 1;
        spans.push(BurstSpan { number, from, to });
    }
    spans
}

/// The number of the burst whose range holds `offset`.
pub fn burst_at(spans: &[BurstSpan], offset: u64) -> Option<u32> {
    spans.iter().rev().find(|s| s.holds(offset)).map(|s| s.number)
}

/// Whether marking groups by burst tells anything: more than one burst, or one that started after episodes
/// were already there (a run trained once from its start is all one burst).
pub fn marks_tell(spans: &[BurstSpan]) -> bool {
    spans.len() > 1 || spans.first().is_some_and(|s| s.from > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(number: u32, from: u64, to: Option<u64>) -> BurstSpan {
        BurstSpan { number, from, to }
    }

    #[test]
    fn a_trainer_inside_a_ray_job_is_the_same_burst() {
        // The Ray record (0..900), then the job's own trainer (0..900), then a second Ray burst with its trainer.
        let spans = spans_of([(0, Some(900)), (0, Some(900)), (900, Some(1500)), (900, None)]);
        assert_eq!(spans, vec![span(1, 0, Some(900)), span(2, 900, Some(1500))]);
        assert_eq!(burst_at(&spans, 0), Some(1));
        assert_eq!(burst_at(&spans, 899), Some(1));
        assert_eq!(burst_at(&spans, 900), Some(2));
        assert_eq!(burst_at(&spans, 1500), None);
    }

    #[test]
    fn an_open_burst_ends_where_the_next_starts() {
        // A burst whose writer died (no end), then another; the running one is open to the file's end.
        let spans = spans_of([(100, None), (400, None)]);
        assert_eq!(spans, vec![span(1, 100, Some(400)), span(2, 400, None)]);
        assert_eq!(burst_at(&spans, 50), None, "episodes before the first burst are nobody's");
        assert_eq!(burst_at(&spans, 399), Some(1));
        assert_eq!(burst_at(&spans, 10_000), Some(2));
        // A running Ray job whose trainer recorded its end first.
        assert_eq!(spans_of([(100, None), (100, Some(300))]), vec![span(1, 100, Some(300))]);
    }

    #[test]
    fn a_burst_that_wrote_nothing_takes_no_line() {
        let spans = spans_of([(0, Some(0)), (0, Some(500))]);
        assert_eq!(spans, vec![span(1, 0, Some(0)), span(2, 0, Some(500))]);
        assert_eq!(burst_at(&spans, 0), Some(2));
        assert!(marks_tell(&spans));
        assert!(!marks_tell(&spans_of([(0, Some(500))])), "one burst from the start marks nothing");
        assert!(marks_tell(&spans_of([(10, None)])));
    }

    #[test]
    fn entries_without_a_range_are_skipped() {
        let meta: RunMeta = serde_json::from_str(
            r#"{"bursts": [{"iterations": 3}, {"backend": "ray", "episodes_from": 40},
                           {"iterations": 2, "episodes_from": 40, "episodes_to": 90}]}"#,
        )
        .unwrap();
        assert_eq!(burst_spans(Some(&meta)), vec![span(1, 40, Some(90))]);
        assert_eq!(burst_spans(None), vec![]);
    }
}
