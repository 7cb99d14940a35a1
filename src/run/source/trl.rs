//! TRL GRPOTrainer's completion logs: with `log_completions=True`, `GRPOTrainer.log` writes
//! `OUTPUT_DIR/completions/completions_{global_step:05d}.parquet` (pandas `DataFrame.to_parquet`: pyarrow,
//! snappy) at every logging step. Read with the Arrow project's `parquet` crate (its record API), text as bytes
//! checked row by row: a row with a text cell that is not UTF-8 (in a string column or inside chat messages) is
//! broken alone, named by its file, row and column, and the rows around it are read. Damage parquet's readers
//! would panic on is refused before reading where a check can see it (a column chunk outside the file, a
//! dictionary page too large or missing), and otherwise their panic is contained (`contained_panic.rs`) and
//! reported as an error of the file: the rows read before it are kept, the rest of the file is named as lost.
//!
//! Columns (TRL 1.16): `step`, `prompt` and `completion` (strings, or for chat datasets lists of
//! `{role, content}` messages), one float column per reward function named after it (NaN where the function
//! returned None), the columns reward functions logged through `log_extra`, and `advantage`. The reward columns
//! are the float columns right after `completion` (TRL puts the extra columns after them; an extra float column
//! logged right after the rewards cannot be told from a reward function). Unknown columns are kept; `step`,
//! `advantage` and the reward columns may be missing.
//!
//! Every row is an episode of one step:
//!
//! - `id` `s{step}-r{row}`, `group` `s{step}-g{k}`, `iteration` the step of the file name (rows and groups
//!   numbered from 1, rows as in `extra.source.line`: pandas' index + 1);
//! - the step's `observation` is the prompt, its `action` the completion; chat messages are rendered as
//!   `role: content` blocks separated by blank lines, and kept as they are in `extra.messages`;
//!   `task.instruction` is the prompt (for chat, its last user message);
//! - the step's `reward` (and `outcome.score`) is TRL's reward under its default weights: the sum of the
//!   rewards that are not NaN (0 when all are, TRL's "unscorable" row); `outcome.success` is false;
//! - `outcome.extra.rewards` is `{function: reward or null}` in column order, which the advantage engine
//!   reads for `--reward-weights` and `--aggregation normalize_then_sum` (see `crate::advantage::trl`);
//! - `advantages` is `[advantage]`, the value TRL logged, so `gigscope stats` compares it with the recomputation;
//! - `extra.columns` holds the other columns, `extra.source` `{file, line}` (file relative to the run directory).
//!
//! The file records neither the groups, nor the trainer's settings. Groups are the runs of consecutive rows
//! with equal prompts, cut into blocks of the shortest run's length (TRL's `RepeatSampler` puts a group's
//! `num_generations` rows together, and the same prompt may be drawn twice in a row); runs of unequal length
//! are kept as they are with a notice. `--group-size N` makes the groups consecutive blocks of N rows instead.
//! The run's [`RunMeta`] records TRL's defaults (estimator `grpo`, `scale_rewards` `group`, weights 1.0,
//! `sum_then_normalize`); a run trained otherwise needs `--scale-rewards`, `--reward-weights` and
//! `--aggregation` to be recomputed as it was trained.
//!
//! Live reading. A parquet file is only readable once its footer is written, which pandas does last: a file
//! that cannot be read is taken for one still being written (the poll says `pending`) until it has not
//! changed for [`STALE_AFTER`] (by its mtime, or since first seen so), and only then reported, once, naming it.
//! Files are delivered in step order; a new file appends its episodes. A file already delivered that changes
//! (size, mtime or inode) is read again once readable: a notice names it (TRL writes evaluation completions
//! over the training file of the same step, with nothing marking them), then `Reset` and the whole run again,
//! in order. So is a file that appears before one already delivered, or a delivered file that is removed.
//! Until a rewritten file can be read, the rows read from it before are kept.
//!
//! Quirk: with `num_iterations > 1` (or `steps_per_generation > 1`) TRL reuses a generation batch for several
//! steps and logs it again at each: consecutive files hold the same prompts and completions under a new
//! `step`. Such files are kept (they are what the log says) and their episodes marked with
//! `extra.repeat_of` (the file they repeat), with a notice.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parquet::basic::{ConvertedType, Encoding, Type as PhysicalType};
use parquet::bloom_filter::Sbbf;
use parquet::column::page::{Page, PageReader};
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};
use parquet::record::reader::RowIter;
use parquet::record::{Field, Row};
use parquet::schema::types::{SchemaDescPtr, SchemaDescriptor, Type as SchemaType, TypePtr};
use serde_json::{json, Map, Value};

use super::contained_panic::contain;
use super::events::{Listing, RegisteredLayout, RunSource, SourceOptions, SourcePoll};
use super::events::{LiveEvent, LiveFile};
use super::step_files::{StepFiles, PART_ROWS};
use crate::run::error::{LineError, RunError};
use crate::run::format::{Episode, Outcome, RunMeta, Step, Task, REWARDS_KEY, SOURCE_KEY};
use crate::run::layout::Layout;
use crate::run::settings::{AdvantageOverrides, Aggregation, Estimator, ScaleRewards};
use crate::run::span::Stamp;

/// The directory TRL writes the files into, under its `output_dir`.
pub const COMPLETIONS_DIR: &str = "completions";
/// `RunMeta::format` of a TRL log.
pub const FORMAT: &str = "trl-completions";
/// An unreadable file that has not changed for this long is not being written: it is reported.
pub const STALE_AFTER: Duration = Duration::from_secs(2);

/// The registry's entry for TRL logs: a `completions/` directory, or `completions_{step}.parquet` files.
pub const REGISTERED: RegisteredLayout = RegisteredLayout {
    layout: Layout::Trl,
    looks_for: "completions/completions_{step}.parquet (TRL GRPOTrainer log)",
    found_in: is_trl_log,
    open: |dir, options| Box::new(TrlSource::new(dir, options)),
};

fn is_trl_log(listing: &mut Listing) -> Result<bool, RunError> {
    let is_completions = |name: &str| name.starts_with("completions_") && name.ends_with(".parquet");
    Ok(listing.dir().join(COMPLETIONS_DIR).is_dir() || listing.names()?.iter().any(|n| is_completions(n)))
}

/// A file read whole.
#[derive(Debug)]
struct Parsed {
    episodes: Vec<(u64, Episode)>,
    broken: Vec<LineError>,
    /// Quirks of this file worth a notice (unequal groups, columns missing).
    notices: Vec<String>,
    reward_names: Vec<String>,
    /// Row count and a hash of every row's prompt and completion, to notice a file repeating the previous one.
    fingerprint: (usize, u64),
}

/// A file that could not be read as it is now.
#[derive(Debug)]
struct Unreadable {
    stamp: Stamp,
    since: Instant,
    /// Why, as the reader said it.
    error: String,
    reported: bool,
}

#[derive(Debug)]
struct StepFile {
    name: String,
    /// The last good content and the stamp it was read at.
    content: Option<(Stamp, Parsed)>,
    /// The file as it is now cannot be read.
    unreadable: Option<Unreadable>,
    present: bool,
}

/// Where the reader of a TRL completions log stands.
#[derive(Debug)]
pub struct TrlSource {
    /// The run directory as given: TRL's `output_dir`, or its `completions/` directory itself.
    dir: PathBuf,
    group_size: Option<usize>,
    /// Step files by step.
    files: BTreeMap<u64, StepFile>,
    /// Notices, the listing's errors and the steps delivered.
    book: StepFiles<u64>,
    /// The description last sent.
    meta: Option<RunMeta>,
}

impl TrlSource {
    /// A reader at the start: the first poll delivers the whole log.
    pub fn new(dir: &Path, options: &SourceOptions) -> Self {
        TrlSource {
            dir: dir.to_path_buf(),
            group_size: options.group_size,
            files: BTreeMap::new(),
            book: StepFiles::default(),
            meta: None,
        }
    }

    /// `dir/completions` when it exists, else `dir` (the `completions/` directory given itself), and the prefix
    /// of the files' names relative to the run directory.
    fn completions_dir(&self) -> (PathBuf, &'static str) {
        let sub = self.dir.join(COMPLETIONS_DIR);
        if sub.is_dir() {
            (sub, "completions/")
        } else {
            (self.dir.clone(), "")
        }
    }

    /// The run's description: TRL's defaults as its advantage settings, and the reward functions seen.
    fn run_meta(&self) -> RunMeta {
        let name = match self.dir.file_name().and_then(|n| n.to_str()) {
            Some(COMPLETIONS_DIR) => self.dir.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()),
            other => other,
        };
        let mut extra = Map::new();
        let names = self.files.values().find_map(|f| f.content.as_ref().map(|(_, p)| &p.reward_names));
        if let Some(names) = names {
            extra.insert("reward_functions".into(), json!(names));
        }
        RunMeta {
            format: Some(FORMAT.into()),
            name: name.map(str::to_owned),
            advantage: Some(AdvantageOverrides {
                estimator: Some(Estimator::Grpo),
                scale_rewards: Some(ScaleRewards::Group),
                aggregation: Some(Aggregation::SumThenNormalize),
                ..AdvantageOverrides::default()
            }),
            notes: Some(
                "TRL GRPOTrainer completions log. Not recorded in it, so TRL's defaults are assumed: reward_weights \
                 (1.0 each; give --reward-weights W1,W2,...), scale_rewards (group; --scale-rewards batch|none), \
                 multi_objective_aggregation (sum_then_normalize; --aggregation normalize_then_sum) and \
                 num_generations (groups are runs of equal prompts; --group-size N)."
                    .into(),
            ),
            extra,
            ..RunMeta::default()
        }
    }

    /// Look at one step file: read it if it is new or changed. Whether it is still pending. A file that stays
    /// unreadable is skipped ([`LiveEvent::Skipped`]), and said readable again when it is.
    fn refresh(&mut self, step: u64, path: &Path, rel: &str, events: &mut Vec<LiveEvent>) -> bool {
        let group_size = self.group_size;
        let Some(file) = self.files.get_mut(&step) else { return false };
        let was_skipped = file.unreadable.as_ref().is_some_and(|u| u.reported);
        let (pending, report) = refresh_file(file, path, rel, step, group_size);
        if let Some(reason) = report {
            events.push(LiveEvent::Skipped { file: rel.to_string(), reason: Some(reason) });
        } else if was_skipped && file.unreadable.is_none() {
            events.push(LiveEvent::Skipped { file: rel.to_string(), reason: None });
        }
        pending
    }

    /// The events delivering step file `step`, which follows step file `previous` in step order.
    fn deliver(&mut self, step: u64, previous: Option<u64>, prefix: &str, events: &mut Vec<LiveEvent>) {
        let repeat_of = previous.and_then(|p| self.files.get(&p)).and_then(|prev| {
            let (_, before) = prev.content.as_ref()?;
            let (_, parsed) = self.files.get(&step)?.content.as_ref()?;
            let same = before.fingerprint == parsed.fingerprint && parsed.fingerprint.0 > 0;
            same.then(|| format!("{prefix}{}", prev.name))
        });
        let Some(file) = self.files.get_mut(&step) else { return };
        let Some((stamp, parsed)) = file.content.as_mut() else { return };
        let rel = format!("{prefix}{}", file.name);
        // Taken, not copied: the source keeps what it needs to compare the file later (stamp, fingerprint), not
        // its rows; a reset reads the file again ([`TrlSource::poll`]).
        let mut episodes = std::mem::take(&mut parsed.episodes);
        if let Some(of) = &repeat_of {
            for (_, episode) in &mut episodes {
                episode.extra.insert("repeat_of".into(), Value::String(of.clone()));
            }
        }
        let broken = std::mem::take(&mut parsed.broken);
        let mut notices = std::mem::take(&mut parsed.notices);
        if let Some(of) = repeat_of {
            notices.push(format!(
                "{rel} repeats the {} rows of {of} (same prompts and completions, new step): TRL logs a generation \
                 batch again at every step that reuses it (num_iterations > 1 or steps_per_generation > 1); kept, \
                 marked with extra.repeat_of",
                parsed.fingerprint.0
            ));
        }
        self.book.record(step, *stamp);
        if !episodes.is_empty() {
            events.push(LiveEvent::Episodes(episodes));
        }
        if !broken.is_empty() {
            events.push(LiveEvent::BrokenLines(LiveFile::Episodes, broken));
        }
        for notice in notices {
            self.book.say(notice, events);
        }
    }
}

/// Look at one step file: read it if it is new or changed. Whether it is still pending, and the report of a
/// file that stays unreadable.
fn refresh_file(
    file: &mut StepFile,
    path: &Path,
    rel: &str,
    step: u64,
    group_size: Option<usize>,
) -> (bool, Option<String>) {
    let now = Instant::now();
    let stamp = match std::fs::metadata(path) {
        Ok(meta) => Stamp::of(&meta),
        // Removed between listing and now: the next listing sees it gone.
        Err(_) => return (false, None),
    };
    if file.content.as_ref().is_some_and(|(read, _)| *read == stamp) {
        file.unreadable = None;
        return (false, None);
    }
    let error = match file.unreadable.as_ref() {
        // Unchanged since it failed: look at it again only to decide whether it is stale.
        Some(u) if u.stamp == stamp => {
            if u.reported {
                return (false, None);
            }
            None
        }
        _ => match read_file(path, rel, step, group_size) {
            Ok((read, parsed)) => {
                file.content = Some((read, parsed));
                file.unreadable = None;
                return (false, None);
            }
            Err(error) => {
                file.unreadable = Some(Unreadable { stamp, since: now, error: error.to_string(), reported: false });
                Some(error)
            }
        },
    };
    let Some(unreadable) = file.unreadable.as_mut() else { return (false, None) };
    let age = stamp.modified.and_then(|m| SystemTime::now().duration_since(m).ok());
    let settled = now.duration_since(unreadable.since) >= STALE_AFTER || age.is_some_and(|age| age >= STALE_AFTER);
    if !settled {
        return (true, None);
    }
    unreadable.reported = true;
    let kept = if file.content.is_some() { "; the rows read from it before are kept" } else { "" };
    let error = match error {
        Some(error) => error,
        None => match read_file(path, rel, step, group_size) {
            Err(error) => error,
            // Readable after all (it changed while looked at): the next poll reads it.
            Ok(_) => {
                file.unreadable = None;
                return (true, None);
            }
        },
    };
    let message = format!(
        "cannot be read ({error}); it has not changed for {}s, so it is not being written: skipped until it \
         changes{kept}",
        STALE_AFTER.as_secs()
    );
    (false, Some(message))
}

/// The step of a TRL completions file name (`completions_{step:05d}.parquet`).
fn file_step(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("completions_")?.strip_suffix(".parquet")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl RunSource for TrlSource {
    fn layout(&self) -> Layout {
        Layout::Trl
    }

    fn poll(&mut self) -> SourcePoll {
        let mut events = Vec::new();
        let mut pending = false;
        let (dir, prefix) = self.completions_dir();
        let names = if dir.is_dir() {
            let Some(names) = self.book.list(&dir, &mut events) else {
                return SourcePoll { events, pending: false, more: false };
            };
            names
        } else {
            Vec::new()
        };
        for file in self.files.values_mut() {
            file.present = false;
        }
        // New files are read in step order, about a part of the run a poll ([`PART_ROWS`]); the files after it
        // are read by the next polls.
        let mut names: Vec<(u64, String)> =
            names.into_iter().filter_map(|name| Some((file_step(&name)?, name))).collect();
        names.sort();
        let (mut rows_read, mut more) = (0, false);
        for (step, name) in names {
            let rel = format!("{prefix}{name}");
            let file = self.files.entry(step).or_insert_with(|| StepFile {
                name: name.clone(),
                content: None,
                unreadable: None,
                present: false,
            });
            if file.name != name {
                // Two names for one step (`completions_3.parquet` beside `completions_00003.parquet`): the first
                // in name order is read.
                continue;
            }
            file.present = true;
            let before = file.content.as_ref().map(|(stamp, _)| *stamp);
            if before.is_none() && rows_read >= PART_ROWS {
                more = true;
                continue;
            }
            pending |= self.refresh(step, &dir.join(&name), &rel, &mut events);
            if let Some((stamp, parsed)) = self.files.get(&step).and_then(|f| f.content.as_ref()) {
                if before != Some(*stamp) {
                    rows_read += parsed.fingerprint.0;
                }
            }
        }
        let removed: Vec<u64> = self.files.iter().filter(|(_, f)| !f.present).map(|(&s, _)| s).collect();
        for step in removed {
            if let Some(file) = self.files.remove(&step) {
                if self.book.delivered(&step).is_some() {
                    let message = format!("{prefix}{} was removed: the run is read again without it", file.name);
                    self.book.say(message, &mut events);
                }
            }
        }

        // Deliver in step order: new files after the ones delivered, or everything again after a change.
        let desired: Vec<(u64, Stamp)> =
            self.files.iter().filter_map(|(&s, f)| f.content.as_ref().map(|(stamp, _)| (s, *stamp))).collect();
        if !self.book.appends(&desired) {
            let changed: Vec<(String, usize)> = self
                .book
                .delivered_files()
                .filter_map(|(step, stamp)| {
                    let file = self.files.get(step)?;
                    let (now, parsed) = file.content.as_ref()?;
                    (now != stamp).then(|| (format!("{prefix}{}", file.name), parsed.fingerprint.0))
                })
                .collect();
            for (rel, rows) in changed {
                let message = format!(
                    "{rel} was rewritten after it was read (now {rows} rows): TRL writes evaluation completions over \
                     the training file of the same step, with nothing marking them; the run is read again"
                );
                self.book.say(message, &mut events);
            }
            self.book.reset(&mut events);
            // Delivered rows are not kept: every file is read again, and delivered from the next poll on.
            for file in self.files.values_mut() {
                file.content = None;
            }
            return SourcePoll { events, pending, more: true };
        }
        for i in self.book.delivered_count()..desired.len() {
            let previous = i.checked_sub(1).map(|p| desired[p].0);
            self.deliver(desired[i].0, previous, prefix, &mut events);
        }

        let meta = self.run_meta();
        if self.meta.as_ref() != Some(&meta) {
            events.insert(0, LiveEvent::Meta(Some(Box::new(meta.clone()))));
            self.meta = Some(meta);
        }
        SourcePoll { events, pending, more }
    }

    fn finish(&mut self) -> Vec<LiveEvent> {
        // A file that cannot be read yet and changed lately is being written: no later poll reads it, so it is
        // skipped, and said so now rather than after it settles.
        let (_, prefix) = self.completions_dir();
        let mut events = Vec::new();
        for file in self.files.values().filter(|f| f.content.is_none()) {
            let Some(unreadable) = file.unreadable.as_ref().filter(|u| !u.reported) else { continue };
            let reason = format!(
                "cannot be read yet ({}): it changed less than {}s ago, so it is probably still being written (a \
                 parquet file's footer comes last); skipped",
                unreadable.error,
                STALE_AFTER.as_secs()
            );
            events.push(LiveEvent::Skipped { file: format!("{prefix}{}", file.name), reason: Some(reason) });
        }
        events
    }

    fn watches(&self, path: &Path) -> bool {
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n == COMPLETIONS_DIR || file_step(n).is_some())
    }

    fn watch_dirs(&self) -> Vec<PathBuf> {
        vec![self.dir.join(COMPLETIONS_DIR)]
    }

    /// An id is `s{step}-r{row}`: one file is read per step (the first name of a step written twice), and a
    /// row's number is its place in that file.
    fn ids_unique(&self) -> bool {
        true
    }
}

/// One row's values, before grouping.
struct RowData {
    row: u64,
    prompt: Rendered,
    completion: Rendered,
    rewards: Vec<f64>,
    advantage: Option<f64>,
    step: Option<i64>,
    columns: Map<String, Value>,
}

/// A prompt or completion as text, with the messages it was rendered from (chat) kept.
struct Rendered {
    text: String,
    /// The instruction: the prompt itself, or a chat's last user message.
    instruction: String,
    messages: Option<Value>,
}

/// What the columns of a file are.
struct Columns {
    prompt: Option<usize>,
    completion: Option<usize>,
    step: Option<usize>,
    advantage: Option<usize>,
    /// Reward columns: index and name, in order.
    rewards: Vec<(usize, String)>,
}

fn classify_columns(fields: &[parquet::schema::types::TypePtr]) -> Columns {
    let find = |name: &str| fields.iter().position(|f| f.name() == name);
    let is_float = |f: &parquet::schema::types::TypePtr| {
        f.is_primitive() && matches!(f.get_physical_type(), PhysicalType::DOUBLE | PhysicalType::FLOAT)
    };
    let (prompt, completion, step) = (find("prompt"), find("completion"), find("step"));
    let advantage = find("advantage").filter(|&i| is_float(&fields[i]));
    let start = completion.or(prompt).or(step).map_or(0, |i| i + 1);
    let rewards = fields
        .iter()
        .enumerate()
        .skip(start)
        .take_while(|(i, f)| Some(*i) != advantage && is_float(f))
        .map(|(i, f)| (i, f.name().to_string()))
        .collect();
    Columns { prompt, completion, step, advantage, rewards }
}

/// Why a step file cannot be read as it is now (still being written, most often: its footer is missing).
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// parquet's readers assert that a column chunk's offset and size are not negative (a panic otherwise), so a
/// damaged footer is refused here: every chunk must lie inside the file's `len` bytes.
fn check_column_chunks(metadata: &ParquetMetaData, len: u64) -> Result<(), ParquetError> {
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for (c, column) in group.columns().iter().enumerate() {
            let start = column.dictionary_page_offset().unwrap_or_else(|| column.data_page_offset());
            let size = column.compressed_size();
            let end = u64::try_from(start).ok().zip(u64::try_from(size).ok()).and_then(|(s, n)| s.checked_add(n));
            if end.is_none_or(|end| end > len) {
                return Err(ParquetError::General(format!(
                    "row group {g}, column {c}: its footer places it at byte {start}, {size} bytes long, in a file of \
                     {len} bytes"
                )));
            }
        }
    }
    Ok(())
}

/// Pages parquet's readers would abort or panic on, refused here with their row group and column:
/// - a dictionary page declaring more values than it has bytes: parquet's dictionary decoder makes room for as
///   many values as the header declares before decoding one (an allocation of tens of GB, and an abort, for a
///   damaged header), and a dictionary's values take at least a byte each;
/// - a dictionary-encoded data page before any dictionary page: parquet's column reader expects the dictionary's
///   decoder to be there (a panic otherwise).
///
/// Each column chunk's pages are read once more for this (decompressed, page by page). A page that cannot be read
/// at all ends the check of its chunk and is left to the row reader, which names the rows it loses.
fn check_pages(reader: &SerializedFileReader<File>) -> Result<(), ParquetError> {
    for g in 0..reader.num_row_groups() {
        let group = reader.get_row_group(g)?;
        for c in 0..group.num_columns() {
            let Ok(mut pages) = group.get_column_page_reader(c) else { continue };
            let mut dictionary = false;
            while let Ok(Some(page)) = pages.get_next_page() {
                let refused = match &page {
                    Page::DictionaryPage { buf, num_values, .. } => {
                        dictionary = true;
                        (*num_values as usize > buf.len())
                            .then(|| format!("its dictionary page declares {num_values} values in {} bytes", buf.len()))
                    }
                    Page::DataPage { encoding, .. } | Page::DataPageV2 { encoding, .. } => {
                        let by_dictionary = matches!(encoding, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY);
                        (by_dictionary && !dictionary)
                            .then(|| format!("a data page is {encoding}-encoded before any dictionary page"))
                    }
                };
                if let Some(why) = refused {
                    return Err(ParquetError::General(format!("row group {g}, column {c}: {why}")));
                }
            }
        }
    }
    Ok(())
}

/// Read a whole step file: its episodes, broken rows and quirks, and the stamp of what was read. An error
/// means the file is not (yet) a readable parquet file.
fn read_file(path: &Path, rel: &str, step: u64, group_size: Option<usize>) -> Result<(Stamp, Parsed), ReadError> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    let stamp = Stamp::of(&meta);
    let reader = contained(|| SerializedFileReader::new(file))?;
    check_column_chunks(reader.metadata(), meta.len())?;
    // Its walk over the pages is parquet's reading (the chunks known to lie inside the file).
    contained(|| check_pages(&reader))?;
    let total = reader.metadata().file_metadata().num_rows().max(0) as u64;
    let fields = reader.metadata().file_metadata().schema_descr().root_schema().get_fields().to_vec();
    let columns = classify_columns(&fields);
    let mut notices = Vec::new();
    for (name, at) in [("prompt", columns.prompt), ("completion", columns.completion)] {
        if at.is_none() {
            notices.push(format!("{rel}: no `{name}` column; its rows have an empty {name}"));
        }
    }
    if columns.advantage.is_none() {
        notices.push(format!("{rel}: no numeric `advantage` column; its rows have no trainer advantage to compare"));
    }
    let mut rows = Vec::new();
    let known: Vec<usize> = [columns.prompt, columns.completion, columns.step, columns.advantage]
        .into_iter()
        .flatten()
        .chain(columns.rewards.iter().map(|(i, _)| *i))
        .collect();
    let broken = read_rows(&reader, total, rel, |number, row| {
        let values: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
        let at = |i: Option<usize>| i.and_then(|i| values.get(i).copied());
        let mut data = RowData {
            row: number,
            prompt: render(at(columns.prompt), true),
            completion: render(at(columns.completion), false),
            rewards: columns.rewards.iter().map(|(i, _)| number_of(values.get(*i).copied())).collect(),
            advantage: Some(number_of(at(columns.advantage))).filter(|a| !a.is_nan()),
            step: at(columns.step).and_then(integer_of),
            columns: Map::new(),
        };
        for (i, (name, field)) in row.get_column_iter().enumerate() {
            if !known.contains(&i) {
                data.columns.insert(name.clone(), to_json(field));
            }
        }
        rows.push(data);
    });
    if let Some(other) = rows.iter().find_map(|r| r.step.filter(|&s| s != step as i64)) {
        notices.push(format!("{rel}: its step column says {other}, its name {step}; the name is used"));
    }
    let keys: Vec<&str> = rows.iter().map(|r| r.prompt.text.as_str()).collect();
    let (group_of, group_notices) = assign_groups(&keys, group_size, rel);
    notices.extend(group_notices);

    let mut hasher = DefaultHasher::new();
    for r in &rows {
        (&r.prompt.text, &r.completion.text).hash(&mut hasher);
    }
    let fingerprint = (rows.len(), hasher.finish());
    let reward_names: Vec<String> = columns.rewards.iter().map(|(_, n)| n.clone()).collect();
    let episodes =
        rows.into_iter().zip(group_of).map(|(r, g)| (r.row, episode(r, g, step, rel, &reward_names))).collect();
    Ok((stamp, Parsed { episodes, broken, notices, reward_names, fingerprint }))
}

/// Hand every row of the file to `row` with its 1-based number, in order; the rows that could not be read.
///
/// parquet's row reader stops at a text cell that is not UTF-8, which would lose the rest of the file; so the
/// rows are read with text as bytes ([`TextAsBytes`]) and each row's text is checked here: a row holding such a
/// cell, in a top-level column or inside a nested one (chat messages), is broken alone, named by its row and
/// column, and the rows after it are read. Any other error still loses the rest of the file, said with its rows.
fn read_rows(
    reader: &SerializedFileReader<File>,
    total: u64,
    rel: &str,
    mut row: impl FnMut(u64, Row),
) -> Vec<LineError> {
    let schema = reader.metadata().file_metadata().schema_descr();
    let text_columns: Vec<bool> = schema.root_schema().get_fields().iter().map(|f| holds_text(f)).collect();
    let broken = |line: u64, reason: String| LineError { file: Some(rel.to_string()), line, reason };
    let (mut problems, mut number) = (Vec::new(), 0);
    let read = rows_as_bytes(reader, |read| {
        number += 1;
        let bad: Vec<String> = read
            .get_column_iter()
            .zip(&text_columns)
            .filter(|(_, &text)| text)
            .filter_map(|((name, field), _)| invalid_utf8_at(field).map(|at| format!("`{name}` (at byte {at})")))
            .collect();
        if bad.is_empty() {
            row(number, read);
        } else {
            let reason = format!("text not valid UTF-8 in column {}: row skipped", bad.join(", "));
            problems.push(broken(number, reason));
        }
    });
    if let Err(err) = read {
        let from = number + 1;
        problems.push(broken(from, format!("rows {from} to {} could not be read: {err}", total.max(from))));
    }
    problems
}

/// Every row of the file in order, read with text as bytes ([`TextAsBytes`]); the first error stops it. Only
/// parquet's reading is [`contained`]: a panic of `row` (gigscope's own code) is a bug, and stays one.
fn rows_as_bytes(reader: &SerializedFileReader<File>, mut row: impl FnMut(Row)) -> Result<(), ParquetError> {
    let schema = text_as_bytes(reader.metadata().file_metadata().schema_descr())?;
    for g in 0..reader.num_row_groups() {
        let group = contained(|| TextAsBytes::new(reader.get_row_group(g)?, &schema))?;
        let mut rows = contained(|| RowIter::from_row_group(None, &group))?;
        while let Some(read) = contained(|| rows.next().transpose())? {
            row(read);
        }
    }
    Ok(())
}

/// Work of parquet's readers on a file, [`contain`]ed: a panic of theirs on damaged data is an error of the
/// file, as their own errors are.
fn contained<T>(read: impl FnOnce() -> Result<T, ParquetError>) -> Result<T, ParquetError> {
    contain(read).unwrap_or_else(|panic| {
        Err(ParquetError::General(format!("parquet's reader failed on damaged data ({panic})")))
    })
}

/// Whether a type is text: a byte array annotated UTF8, ENUM or JSON (which parquet's row reader checks).
fn is_text(field: &SchemaType) -> bool {
    field.is_primitive()
        && field.get_physical_type() == PhysicalType::BYTE_ARRAY
        && matches!(
            field.get_basic_info().converted_type(),
            ConvertedType::UTF8 | ConvertedType::ENUM | ConvertedType::JSON
        )
}

/// Whether a column is text or holds text (in a list, struct or map): its byte cells are checked as UTF-8 (all
/// of them, in the rare column that holds plain bytes beside text).
fn holds_text(field: &SchemaType) -> bool {
    is_text(field) || (!field.is_primitive() && field.get_fields().iter().any(|f| holds_text(f)))
}

/// The file's schema with every text leaf a plain byte array: the same columns, levels and names.
fn text_as_bytes(schema: &SchemaDescriptor) -> Result<SchemaDescPtr, ParquetError> {
    fn plain(field: &TypePtr) -> Result<TypePtr, ParquetError> {
        let info = field.get_basic_info();
        let id = info.has_id().then(|| info.id());
        if is_text(field) {
            let leaf = SchemaType::primitive_type_builder(info.name(), PhysicalType::BYTE_ARRAY)
                .with_repetition(info.repetition())
                .with_id(id);
            return Ok(Arc::new(leaf.build()?));
        }
        if field.is_primitive() {
            return Ok(field.clone());
        }
        let fields = field.get_fields().iter().map(plain).collect::<Result<Vec<_>, _>>()?;
        let mut group = SchemaType::group_type_builder(info.name())
            .with_converted_type(info.converted_type())
            .with_logical_type(info.logical_type_ref().cloned())
            .with_id(id)
            .with_fields(fields);
        if info.has_repetition() {
            group = group.with_repetition(info.repetition());
        }
        Ok(Arc::new(group.build()?))
    }
    Ok(Arc::new(SchemaDescriptor::new(plain(&schema.root_schema_ptr())?)))
}

/// A row group whose text leaves parquet's row reader hands over as bytes (`Field::Bytes`) rather than checking
/// them: its pages as they are, described by the schema of [`text_as_bytes`].
struct TextAsBytes<'a> {
    pages: Box<dyn RowGroupReader + 'a>,
    metadata: RowGroupMetaData,
}

impl<'a> TextAsBytes<'a> {
    fn new(pages: Box<dyn RowGroupReader + 'a>, schema: &SchemaDescPtr) -> Result<Self, ParquetError> {
        let columns = (0..schema.num_columns())
            .map(|c| ColumnChunkMetaData::builder(schema.column(c)).build())
            .collect::<Result<Vec<_>, _>>()?;
        let metadata = RowGroupMetaData::builder(schema.clone())
            .set_num_rows(pages.metadata().num_rows())
            .set_column_metadata(columns)
            .build()?;
        Ok(TextAsBytes { pages, metadata })
    }
}

impl RowGroupReader for TextAsBytes<'_> {
    fn metadata(&self) -> &RowGroupMetaData {
        &self.metadata
    }

    fn num_columns(&self) -> usize {
        self.metadata.num_columns()
    }

    fn get_column_page_reader(&self, i: usize) -> Result<Box<dyn PageReader>, ParquetError> {
        self.pages.get_column_page_reader(i)
    }

    fn get_column_bloom_filter(&self, _: usize) -> Option<&Sbbf> {
        None
    }

    fn get_row_iter(&self, projection: Option<SchemaType>) -> Result<RowIter<'_>, ParquetError> {
        RowIter::from_row_group(projection, self)
    }
}

/// Where a cell's first text that is not UTF-8 stops being so (its byte), in the cell or anywhere inside it.
fn invalid_utf8_at(field: &Field) -> Option<usize> {
    match field {
        Field::Bytes(bytes) => std::str::from_utf8(bytes.data()).err().map(|e| e.valid_up_to()),
        Field::Group(row) => row.get_column_iter().find_map(|(_, f)| invalid_utf8_at(f)),
        Field::ListInternal(list) => list.elements().iter().find_map(invalid_utf8_at),
        Field::MapInternal(map) => {
            map.entries().iter().find_map(|(k, v)| invalid_utf8_at(k).or_else(|| invalid_utf8_at(v)))
        }
        _ => None,
    }
}

fn episode(r: RowData, group: usize, step: u64, rel: &str, reward_names: &[String]) -> Episode {
    // TRL's reward under its default weights (1 each): the sum of the rewards that are not NaN (0 for TRL's
    // "unscorable" row, where every one is).
    let reward: f64 = r.rewards.iter().filter(|x| !x.is_nan()).sum();
    let rewards: Map<String, Value> =
        reward_names.iter().zip(&r.rewards).map(|(name, &v)| (name.clone(), json_number(v))).collect();
    let mut outcome_extra = Map::new();
    outcome_extra.insert(REWARDS_KEY.into(), Value::Object(rewards));
    let mut extra = Map::new();
    extra.insert(SOURCE_KEY.into(), json!({"file": rel, "line": r.row}));
    if !r.columns.is_empty() {
        extra.insert("columns".into(), Value::Object(r.columns));
    }
    if r.prompt.messages.is_some() || r.completion.messages.is_some() {
        let mut messages = Map::new();
        for (key, m) in [("prompt", r.prompt.messages), ("completion", r.completion.messages)] {
            if let Some(m) = m {
                messages.insert(key.into(), m);
            }
        }
        extra.insert("messages".into(), Value::Object(messages));
    }
    Episode {
        id: format!("s{step}-r{}", r.row),
        group: format!("s{step}-g{}", group + 1),
        iteration: i64::try_from(step).unwrap_or(i64::MAX),
        task: Some(Task { id: String::new(), instruction: r.prompt.instruction, extra: Map::new() }),
        steps: vec![Step::new(r.prompt.text, r.completion.text, reward)],
        outcome: Some(Outcome { success: false, score: reward, extra: outcome_extra }),
        advantages: r.advantage.map(|a| vec![a]),
        extra,
        read_from: Default::default(),
    }
}

/// Each row's group (numbered from 0), and notices about the grouping.
fn assign_groups(prompts: &[&str], group_size: Option<usize>, rel: &str) -> (Vec<usize>, Vec<String>) {
    let n = prompts.len();
    let mut notices = Vec::new();
    if let Some(size) = group_size {
        let size = size.max(1);
        if !n.is_multiple_of(size) {
            notices.push(format!(
                "{rel}: {n} rows are not a multiple of --group-size {size}: its last group has {} rows",
                n % size
            ));
        }
        let mixed: Vec<usize> = (0..n.div_ceil(size))
            .filter(|&g| prompts[g * size..n.min((g + 1) * size)].windows(2).any(|w| w[0] != w[1]))
            .collect();
        if let Some(&g) = mixed.first() {
            notices.push(format!(
                "{rel}: rows {} to {} form a group of --group-size {size} but hold different prompts ({} such group(s))",
                g * size + 1,
                n.min((g + 1) * size),
                mixed.len()
            ));
        }
        return ((0..n).map(|i| i / size).collect(), notices);
    }
    // Runs of equal consecutive prompts: (start, length).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        match runs.last_mut() {
            Some((start, len)) if prompts[*start] == *p => *len += 1,
            _ => runs.push((i, 1)),
        }
    }
    let Some(shortest) = runs.iter().map(|&(_, len)| len).min() else { return (Vec::new(), notices) };
    let mut group_of = Vec::with_capacity(n);
    if runs.iter().all(|&(_, len)| len.is_multiple_of(shortest)) {
        for i in 0..n {
            group_of.push(i / shortest);
        }
        // Blocks of `shortest` rows, counted across runs: every run is a whole number of blocks.
        return (group_of, notices);
    }
    let sizes: Vec<String> =
        runs.iter().take(6).map(|&(start, len)| format!("rows {} to {}: {len}", start + 1, start + len)).collect();
    notices.push(format!(
        "{rel}: groups of unequal size ({}{}) inferred from consecutive equal prompts; TRL's groups are blocks of \
         num_generations rows: give --group-size N if equal prompts do not mark them",
        sizes.join(", "),
        if runs.len() > 6 { ", …" } else { "" }
    ));
    for (g, &(_, len)) in runs.iter().enumerate() {
        group_of.extend(std::iter::repeat_n(g, len));
    }
    (group_of, notices)
}

/// A reward or advantage cell: a number, NaN for null or anything else.
fn number_of(field: Option<&Field>) -> f64 {
    match field {
        Some(Field::Double(x)) => *x,
        Some(Field::Float(x)) => f64::from(*x),
        Some(Field::Float16(x)) => f64::from(x.to_f32()),
        Some(other) => integer_of(other).map_or(f64::NAN, |i| i as f64),
        None => f64::NAN,
    }
}

fn integer_of(field: &Field) -> Option<i64> {
    Some(match *field {
        Field::Byte(x) => x.into(),
        Field::Short(x) => x.into(),
        Field::Int(x) => x.into(),
        Field::Long(x) => x,
        Field::UByte(x) => x.into(),
        Field::UShort(x) => x.into(),
        Field::UInt(x) => x.into(),
        Field::ULong(x) => i64::try_from(x).ok()?,
        _ => return None,
    })
}

/// A finite number, else null (JSON has no NaN).
fn json_number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// A parquet value as JSON: structs as objects, lists as arrays, maps as objects (keys as text).
fn to_json(field: &Field) -> Value {
    match field {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Float16(_) | Field::Float(_) | Field::Double(_) => json_number(number_of(Some(field))),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => Value::String(String::from_utf8_lossy(b.data()).into_owned()),
        Field::Group(row) => Value::Object(row.get_column_iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        Field::ListInternal(list) => Value::Array(list.elements().iter().map(to_json).collect()),
        Field::MapInternal(map) => Value::Object(
            map.entries()
                .iter()
                .map(|(k, v)| {
                    let key = match to_json(k) {
                        Value::String(s) => s,
                        _ => k.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        // Integers; dates, times, decimals and integers past i64 as their text.
        other => integer_of(other).map_or_else(|| Value::String(other.to_string()), Value::from),
    }
}

/// A prompt or completion cell as text: a string as it is; chat messages as `role: content` blocks.
fn render(field: Option<&Field>, prompt: bool) -> Rendered {
    let value = field.map_or(Value::Null, to_json);
    match value {
        Value::String(text) => Rendered { instruction: text.trim().to_string(), text, messages: None },
        Value::Null => Rendered { text: String::new(), instruction: String::new(), messages: None },
        Value::Array(messages) => {
            let blocks: Vec<String> = messages.iter().map(render_message).collect();
            let last_user = messages
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)));
            let text = blocks.join("\n\n");
            let instruction = match (prompt, last_user) {
                (true, Some(user)) => user.trim().to_string(),
                _ => text.trim().to_string(),
            };
            Rendered { text, instruction, messages: Some(Value::Array(messages)) }
        }
        other => {
            let text = other.to_string();
            Rendered { instruction: text.clone(), text, messages: Some(other) }
        }
    }
}

/// `role: content`, then any other non-null key of the message (tool calls, say) as JSON.
fn render_message(message: &Value) -> String {
    let Some(object) = message.as_object() else { return content_text(message) };
    let role = object.get("role").and_then(Value::as_str).unwrap_or("?");
    let mut text = format!("{role}: {}", content_text(object.get("content").unwrap_or(&Value::Null)));
    for (key, value) in object {
        if key != "role" && key != "content" && !value.is_null() {
            text.push_str(&format!("\n[{key}] {value}"));
        }
    }
    text
}

/// A message's content: a string, or the text of its parts (`{type: text, text}`; others as `[type]`).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(parts) => parts
            .iter()
            .map(|part| match (part.get("type").and_then(Value::as_str), part.get("text").and_then(Value::as_str)) {
                (_, Some(text)) => text.to_string(),
                (Some(kind), None) => format!("[{kind}]"),
                (None, None) => part.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_give_steps() {
        assert_eq!(file_step("completions_00003.parquet"), Some(3));
        assert_eq!(file_step("completions_123456.parquet"), Some(123456));
        for bad in ["completions_.parquet", "completions_3a.parquet", "completions_00003.parquet.tmp", "x.parquet"] {
            assert_eq!(file_step(bad), None, "{bad}");
        }
    }

    #[test]
    fn groups_come_from_runs_of_equal_prompts() {
        let (groups, notices) = assign_groups(&["a", "a", "b", "b", "b", "b", "c", "c"], None, "f");
        // The same prompt drawn twice in a row is two groups of the shortest run's size.
        assert_eq!(groups, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert!(notices.is_empty());
        let (groups, notices) = assign_groups(&["a", "a", "a", "b", "b"], None, "f");
        assert_eq!(groups, [0, 0, 0, 1, 1]);
        assert!(notices[0].contains("unequal size") && notices[0].contains("rows 1 to 3: 3"), "{notices:?}");
        let (groups, notices) = assign_groups(&["a", "a", "b", "b", "c"], Some(2), "f");
        assert_eq!(groups, [0, 0, 1, 1, 2]);
        assert!(notices[0].contains("not a multiple of --group-size 2"), "{notices:?}");
        let (_, notices) = assign_groups(&["a", "b", "b", "b"], Some(2), "f");
        assert!(notices[0].contains("rows 1 to 2 form a group"), "{notices:?}");
    }

    #[test]
    fn chat_messages_render_as_role_blocks() {
        let messages = json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]);
        let texts: Vec<String> = messages.as_array().unwrap().iter().map(render_message).collect();
        assert_eq!(texts.join("\n\n"), "system: be brief\n\nuser: hi");
        let parts = json!([{"type": "image"}, {"type": "text", "text": "what is it?"}]);
        assert_eq!(content_text(&parts), "[image]\nwhat is it?");
        let tool = json!({"role": "assistant", "content": null, "tool_calls": [{"name": "f"}]});
        assert_eq!(render_message(&tool), "assistant: \n[tool_calls] [{\"name\":\"f\"}]");
    }
}
