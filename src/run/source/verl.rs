//! verl's rollout dumps: the directory of `trainer.rollout_data_dir` (or `validation_data_dir`), read
//! directly.
//!
//! # What verl writes (verl 0.9.1)
//!
//! Both trainers write `{global_step}.jsonl` (no zero padding, the first step is 1) with
//! `_write_generations`: `open(filename, "w")`, then one `json.dumps(row) + "\n"` per sample, from a
//! background thread, so a file is written whole, in one go, but the reader can see it half-written. Python's
//! `json.dumps` writes NaN and infinite floats as bare `NaN`, `Infinity` and `-Infinity`, and the legacy
//! trainer's `default=str` writes numpy scalars it cannot encode as strings (`"acc": "1.0"`).
//!
//! - The v1 trainer (`trainer.use_v1=true`, verl's default; `verl/trainer/ppo/v1/trainer_base.py`,
//!   `_log_rollout_data`) writes `input`, `output`, `gts`, `score`, `step` and
//!   `uid = {prompt_uid}_{session}_{output_index}`, the rows sorted by (prompt uid, session, output index).
//!   A session with several outputs is one multi-turn rollout whose later rows' `input` holds the earlier turns.
//!   Every output of a session carries the session's final score (`agent_loop_tq.py` copies it onto the
//!   earlier outputs), and verl's GRPO takes each session's final output only, grouped by prompt uid, and
//!   gives the session's other outputs the same advantage (`v1/utils.py`,
//!   `compute_advantage_for_multi_trajectories`). Its validation dumps add the reward extra infos.
//! - The legacy trainer (`use_v1=false`; `verl/trainer/ppo/ray_trainer.py`, `_log_rollout_data`) writes
//!   `input`, `output`, `gts`, `score`, `step`, every reward extra info with one value per row and
//!   `request_id` when present, but no group id, and its rows are in the order of the batch balancer
//!   (`_balance_batch`): a prompt's samples are not contiguous.
//!
//! verl dumps no advantages. [`RunMeta::advantage`] gives the settings that reproduce verl's default GRPO
//! (`compute_grpo_outcome_advantage`: (score − group mean) / (sample std + 1e-6), a group of one
//! scored as is): estimator `grpo`, `mean_std_norm`, pooling `trajectories` (one sample per session, its
//! score), γ 1 (every output's return is the session's score) and no invalid-action penalty. The engine's
//! group of one gives the raw score where verl divides it by 1 + 1e-6.
//!
//! # How a dump reads
//!
//! - Episodes: one per v1 session, its outputs as steps in output-index order; one per row without a v1
//!   `uid`. Episode id `s{step}-{prompt_uid}_{session}`, else `s{step}-r{line}` (`{step}` as the file name
//!   writes it, so that ids stay unique in the directory).
//! - Groups: `s{step}-{prompt_uid}` from the uid; a `uid` that is not verl's three-part key is itself the
//!   group (`s{step}-{uid}`); without a uid (legacy), rows with equal `input` in the same step file, named
//!   after the first such row's line (`s{step}-r{line}`), which a notice says once per run. Prompts with the
//!   same text in one batch then share a group, which verl's own uid kept apart.
//! - Steps: `observation` = the row's whole `input` (for later outputs it repeats the earlier turns: that
//!   is what the policy saw; verl decodes prompt and response separately, so the earlier text is not always
//!   an exact prefix), `action` = `output`, `valid` true. The session's score is the last step's reward
//!   and the earlier steps get 0, so that the episode's total is the session's score once (as verl scores
//!   the final output), not once per output.
//! - `score` (and `step`) may be numbers or strings of numbers. A score that is not a finite number (NaN,
//!   ±Infinity, missing, text) reads as reward 0; the step keeps the raw value in `extra.unread_score` and a
//!   notice names the file and lines (verl's own GRPO would make that group's advantages NaN).
//! - `iteration` = the file's step number; `task` = {id: prompt uid or group, instruction: the first row's
//!   input}; `outcome` = {score, success: `acc` when the row has it, else score > 0}.
//! - Nothing is dropped: the episode's `extra` holds `source` = {file, line (of the first row), lines (every
//!   row, for sessions of several)} and every column of the session's final row but `input` and `output`
//!   (`gts`, `score`, `uid`, reward extras, unknown columns; `step` only when it differs from the file's
//!   number); an earlier step's `extra` holds its row's columns whose value differs from the final row's
//!   (its `uid`, usually). Bare `NaN`/`Infinity`/`-Infinity` outside strings read as the strings `"NaN"`,
//!   `"Infinity"`, `"-Infinity"`.
//!
//! # Following a dump
//!
//! Each poll lists the directory and stats the step files; a file is read when it is complete, and not again
//! unless a reset voids it. Complete means: on the first poll, ending with a newline (a file still torn gets
//! a "still being written" notice); later, ending with a newline with the size, time and inode of the
//! previous poll; or, in either case, not modified for [`SETTLE`] (a writer killed mid-line: its complete
//! rows are read and the torn line is reported, or read with a notice if it is a whole row without its
//! newline). Until then the poll is `pending`, so the watcher looks again soon. Episodes go out in step
//! order. A file read before that is removed, or whose new content is complete after it shrank, grew, was
//! rewritten or replaced, and a complete file numbered below one already read, void the episodes: a notice
//! names the file, a [`LiveEvent::Reset`] follows and every complete file is read again in step order (a
//! file is read only once its replacement is complete, so what was shown stays until then). Broken rows
//! (bad JSON, a row that is not an object, invalid UTF-8) are reported with file and line and skipped. A
//! rewrite in place to the same size within the filesystem's time resolution is not noticed (no stamp
//! changes). verl writes no metrics file: none are read.
//!
//! A step file is read in parts of about [`RunSource::read_in_parts_of`] bytes (whole rows), so that a reader
//! holds a part of a file's episodes, not the file's: a first pass reads each row's `uid` alone to find where
//! each v1 session's rows end (a file that fits in one part needs none), then the rows are read and a session's
//! episode goes out once its last row is read, in the order of the sessions' first rows (a session whose rows
//! are apart holds the ones after it back until it is complete). The file counts as delivered from its first
//! part on; the next poll goes on with it while its stamp is the one it was begun with, and a change is a reset
//! as for a file read whole. Its notices and broken lines go out with its last part.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Take};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::events::{Listing, RegisteredLayout, RunSource, SourceOptions, SourcePoll};
use super::events::{LiveEvent, LiveFile};
use super::step_files::{StepFiles, PART_BYTES};
use crate::run::error::{LineError, RunError};
use crate::run::format::{Episode, Outcome, RunMeta, Step, Task, SOURCE_KEY};
use crate::run::group_sizes::GroupSizes;
use crate::run::layout::Layout;
use crate::run::settings::{AdvantageOverrides, Estimator, Norm, Pooling};
use crate::run::span::{read_at, Stamp};

/// The registry's entry for verl dumps: a directory with `{step}.jsonl` files.
pub const REGISTERED: RegisteredLayout = RegisteredLayout {
    layout: Layout::Verl,
    looks_for: "{step}.jsonl files (verl rollout dump)",
    found_in: is_verl_dump,
    open: |dir, options| Box::new(VerlSource::new(dir, options)),
};

fn is_verl_dump(listing: &mut Listing) -> Result<bool, RunError> {
    Ok(listing.names()?.iter().any(|n| step_file_number(n).is_some()))
}

/// The step number of a verl step file name (`{global_step}.jsonl`, no zero padding).
fn step_file_number(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".jsonl")?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// The `format` of the [`RunMeta`] a verl dump reads with.
pub const VERL_FORMAT: &str = "verl-rollout-dump";

/// A step file not modified for this long is read as it is, even without a newline at its end (a writer
/// stopped mid-line, or a file written by hand).
pub const SETTLE: Duration = Duration::from_secs(2);

/// The step extra holding a score that could not be read as a finite number.
pub const UNREAD_SCORE_KEY: &str = "unread_score";

/// What became of a part of a step file to be read.
enum Delivery {
    /// The file is read to its end.
    Done,
    /// A part is read; the rest comes with the next poll.
    More,
    /// It changed since it was stat-ed: what this part read is not delivered; looked at again soon.
    Changed,
    /// It could not be read (said in a notice): not read, tried again at the next re-scan.
    Failed,
}

/// Step files by (step number, file name): step order.
type Key = (u64, String);

/// Reader of a verl rollout dump directory.
#[derive(Debug)]
pub struct VerlSource {
    dir: PathBuf,
    /// The first poll is done (it sends the meta and reads complete files without waiting for a second look).
    polled: bool,
    /// Each step file's stamp at the previous poll.
    seen: BTreeMap<Key, Stamp>,
    /// Notices, the listing's errors and the step files delivered.
    book: StepFiles<Key>,
    legacy_noticed: bool,
    /// About how many bytes of step files a poll delivers ([`PART_BYTES`], or what
    /// [`RunSource::read_in_parts_of`] asks).
    part_bytes: u64,
    /// The step file a poll began and did not finish (recorded as delivered with its content then): the next
    /// poll goes on with it while that content is still there.
    reading: Option<FileReading>,
}

impl VerlSource {
    pub fn new(dir: &Path, _options: &SourceOptions) -> Self {
        VerlSource {
            dir: dir.to_path_buf(),
            polled: false,
            seen: BTreeMap::new(),
            book: StepFiles::default(),
            legacy_noticed: false,
            part_bytes: PART_BYTES,
            reading: None,
        }
    }

    fn meta(&self) -> RunMeta {
        RunMeta {
            format: Some(VERL_FORMAT.to_string()),
            name: self.dir.file_name().map(|n| n.to_string_lossy().into_owned()),
            advantage: Some(AdvantageOverrides {
                estimator: Some(Estimator::Grpo),
                gamma: Some(1.0),
                norm: Some(Norm::MeanStdNorm),
                pooling: Some(Pooling::Trajectories),
                invalid_penalty: Some(0.0),
                success_reward: Some(false),
                ..AdvantageOverrides::default()
            }),
            notes: Some(
                "verl rollout dump (trainer.rollout_data_dir): verl writes no advantages; these are recomputed \
                 with verl's default GRPO (std normalisation, epsilon 1e-6, one sample per session)"
                    .to_string(),
            ),
            ..RunMeta::default()
        }
    }

    /// The step files present now, with their stamps.
    fn scan(&mut self, names: Vec<String>, events: &mut Vec<LiveEvent>) -> BTreeMap<Key, Stamp> {
        let mut current = BTreeMap::new();
        for name in names {
            let Some(number) = step_file_number(&name) else { continue };
            match std::fs::metadata(self.dir.join(&name)) {
                Ok(meta) if meta.is_file() => {
                    current.insert((number, name), Stamp::of(&meta));
                }
                Ok(_) => {}
                // Removed between the listing and now.
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => self.book.say(format!("{name}: {err}"), events),
            }
        }
        current
    }

    /// Begin reading the complete step file `key` ([`FileReading::open`]); [`Reads::StillWritten`], a file a
    /// writer is still at (a one-shot read's last look): its complete lines only, an unfinished last line
    /// skipped and said so.
    fn begin(&mut self, key: &Key, stamp: Stamp, reads: Reads, events: &mut Vec<LiveEvent>) -> Option<FileReading> {
        match FileReading::open(&self.dir, key, stamp, reads) {
            Ok(reading) => reading,
            Err(err) => {
                self.book.say(format!("{}: {err}", key.1), events);
                None
            }
        }
    }

    /// Read on in `reading` about `budget` bytes (whole rows), delivering the episodes complete by then; at the
    /// file's end, its notices and broken lines too.
    fn read_part(&mut self, reading: &mut FileReading, budget: u64, events: &mut Vec<LiveEvent>) -> Delivery {
        let name = reading.key.1.clone();
        let Part { mut episodes, end, failed } = reading.read(budget);
        if let Some(err) = failed {
            // What was read stays; the rest of the file is not read.
            self.book.say(format!("{name}: {err}; the rest of the file is not read"), events);
        }
        let Some(end) = end else {
            if !episodes.is_empty() {
                events.push(LiveEvent::Episodes(episodes));
            }
            return Delivery::More;
        };
        if end != reading.stamp.len {
            return Delivery::Changed;
        }
        let finished = reading.build.finish(&mut episodes);
        if let Some((line, bytes)) = reading.unfinished {
            let reason = format!(
                "line {line} is unfinished ({bytes} bytes, no newline yet) and the file changed less than {}s ago: \
                 verl is probably still writing it; its complete rows are read, that line is not",
                SETTLE.as_secs()
            );
            events.push(LiveEvent::Skipped { file: name.clone(), reason: Some(reason) });
        }
        if let Some(line) = finished.unterminated {
            self.book.say(format!("{name}: line {line} has no newline at its end; read as it is"), events);
        }
        if finished.rows_without_uid > 0 {
            if finished.rows_with_uid == 0 {
                if !self.legacy_noticed {
                    self.legacy_noticed = true;
                    let message = format!(
                        "{name}: no uid column (verl's legacy trainer): groups are rows with equal input in their \
                         step file"
                    );
                    self.book.say(message, events);
                }
            } else {
                let message = format!(
                    "{name}: {} rows without uid: grouped with the rows of equal input",
                    finished.rows_without_uid
                );
                self.book.say(message, events);
            }
        }
        for message in finished.notices {
            self.book.say(message, events);
        }
        if !episodes.is_empty() {
            events.push(LiveEvent::Episodes(episodes));
        }
        if !finished.errors.is_empty() {
            events.push(LiveEvent::BrokenLines(LiveFile::Episodes, finished.errors));
        }
        Delivery::Done
    }

    /// Deliver about `budget` bytes of the step file `key` (complete, with content `stamp`) from its beginning,
    /// recording it as delivered once a part of it is; the rest is [`VerlSource::reading`].
    fn deliver(&mut self, key: Key, stamp: Stamp, budget: u64, events: &mut Vec<LiveEvent>) -> Delivery {
        let reads = if budget >= stamp.len { Reads::Whole } else { Reads::InParts };
        let Some(mut reading) = self.begin(&key, stamp, reads, events) else { return Delivery::Failed };
        let delivery = self.read_part(&mut reading, budget, events);
        match delivery {
            Delivery::Done => self.book.record(key, stamp),
            Delivery::More => {
                self.book.record(key, stamp);
                self.reading = Some(reading);
            }
            Delivery::Changed | Delivery::Failed => {}
        }
        delivery
    }
}

/// A step file being read, in parts: the rows of a v1 session go out as one episode once its last row is read
/// (the first pass found which row that is), in the order of the sessions' first rows.
#[derive(Debug)]
struct FileReading {
    key: Key,
    stamp: Stamp,
    /// The file's bytes from where reading is, up to the length stat-ed.
    rows: BufReader<Take<File>>,
    /// Lines and bytes read so far.
    line: u64,
    offset: u64,
    still_written: bool,
    /// The unfinished last line skipped (a file still being written): its line and bytes.
    unfinished: Option<(u64, usize)>,
    build: FileBuild,
}

/// How much a step file's reader buffers.
const READ_BUFFER: usize = 64 << 10;

/// How a step file is to be read.
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    /// In parts: where each session's rows end is found first.
    InParts,
    /// In one part: every episode goes out at the end, so where sessions end is not needed.
    Whole,
    /// In one part, a writer still at it: an unfinished last line is skipped.
    StillWritten,
}

impl FileReading {
    /// The step file `key` opened, if it is still the one `stamp` describes; to be read in parts, after a first
    /// pass over its rows that finds where each session's rows end.
    fn open(dir: &Path, key: &Key, stamp: Stamp, reads: Reads) -> std::io::Result<Option<FileReading>> {
        let mut file = match File::open(dir.join(&key.1)) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        if Stamp::of(&file.metadata()?) != stamp {
            return Ok(None);
        }
        let session_ends = if reads == Reads::InParts {
            let first_pass = BufReader::with_capacity(READ_BUFFER, (&file).take(stamp.len));
            let Some(ends) = session_ends(first_pass, stamp.len)? else { return Ok(None) };
            file.seek(SeekFrom::Start(0))?;
            ends
        } else {
            HashMap::new()
        };
        Ok(Some(FileReading {
            key: key.clone(),
            stamp,
            rows: BufReader::with_capacity(READ_BUFFER, file.take(stamp.len)),
            line: 0,
            offset: 0,
            still_written: reads == Reads::StillWritten,
            unfinished: None,
            build: FileBuild::new(&key.1, key.0, session_ends),
        }))
    }

    /// Read whole rows until `budget` bytes are passed, the file ends, or it cannot be read on.
    fn read(&mut self, budget: u64) -> Part {
        let mut episodes = Vec::new();
        let mut chunk = Vec::new();
        let start = self.offset;
        while self.offset - start < budget {
            chunk.clear();
            let read = match self.rows.read_until(b'\n', &mut chunk) {
                Ok(read) => read,
                Err(err) => return Part { episodes, end: Some(self.stamp.len), failed: Some(err) },
            };
            if read == 0 {
                return Part { episodes, end: Some(self.offset), failed: None };
            }
            self.offset += read as u64;
            self.line += 1;
            let complete = chunk.last() == Some(&b'\n');
            if !complete && self.still_written {
                self.unfinished = Some((self.line, read));
                continue;
            }
            self.build.add_line(self.line, &chunk, complete);
            self.build.take_complete(&mut episodes);
        }
        Part { episodes, end: None, failed: None }
    }
}

/// What a part of a step file read: the episodes complete by then, and where the file ended (its length as
/// read) if it did; a file that could not be read on ends there, with its error.
struct Part {
    episodes: Vec<(u64, Episode)>,
    end: Option<u64>,
    failed: Option<std::io::Error>,
}

/// Whether a step file not delivered yet can be read now (an error: it cannot be read at all).
fn is_ready(path: &Path, stamp: Stamp, previous: Option<Stamp>, first: bool, now: SystemTime) -> std::io::Result<bool> {
    let settled = stamp.modified.and_then(|m| now.duration_since(m).ok()).is_some_and(|age| age >= SETTLE);
    if settled {
        return Ok(true);
    }
    let stable = first || previous == Some(stamp);
    if !stable || stamp.len == 0 {
        return Ok(false);
    }
    match last_byte(path, stamp.len) {
        Ok(byte) => Ok(byte == b'\n'),
        // Removed or shortened since it was stat-ed: the next poll sees what it is now.
        Err(err) if matches!(err.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::UnexpectedEof) => Ok(false),
        Err(err) => Err(err),
    }
}

fn last_byte(path: &Path, len: u64) -> std::io::Result<u8> {
    let mut byte = [0u8];
    read_at(&File::open(path)?, &mut byte, len - 1)?;
    Ok(byte[0])
}

impl RunSource for VerlSource {
    fn layout(&self) -> Layout {
        Layout::Verl
    }

    fn poll(&mut self) -> SourcePoll {
        let mut events = Vec::new();
        let first = !self.polled;
        if first {
            self.polled = true;
            events.push(LiveEvent::Meta(Some(Box::new(self.meta()))));
        }
        let Some(names) = self.book.list(&self.dir, &mut events) else {
            return SourcePoll { events, pending: false, more: false };
        };
        let current = self.scan(names, &mut events);
        let now = SystemTime::now();
        let mut pending = false;

        // Which files can be read now: new ones, and changed ones whose new content is complete.
        let mut ready: HashSet<&Key> = HashSet::new();
        let mut reset: Option<String> = None;
        for (key, stamp) in &current {
            let delivered = self.book.delivered(key);
            if delivered == Some(*stamp) {
                continue;
            }
            let path = self.dir.join(&key.1);
            match is_ready(&path, *stamp, self.seen.get(key).copied(), first, now) {
                Ok(true) => {
                    ready.insert(key);
                    if let Some(delivered) = delivered {
                        let why = delivered.change(*stamp);
                        reset.get_or_insert_with(|| format!("{}: {why} after it was read", key.1));
                    }
                }
                Ok(false) => {
                    pending = true;
                    if first {
                        let message =
                            format!("{}: still being written (no newline at its end yet); read when complete", key.1);
                        self.book.say(message, &mut events);
                    }
                }
                // Unreadable (permissions): said once; the periodic re-scan tries again.
                Err(err) => self.book.say(format!("{}: {err}", key.1), &mut events),
            }
        }
        for (key, _) in self.book.delivered_files() {
            if !current.contains_key(key) {
                reset.get_or_insert_with(|| format!("{}: removed after it was read", key.1));
            }
        }
        let last_delivered = self.book.delivered_files().rev().find(|(k, _)| current.contains_key(*k));
        if let Some((last, _)) = last_delivered {
            if let Some(late) = ready.iter().copied().filter(|k| *k < last).min() {
                let message = format!("{}: appeared after step files numbered above it were read", late.1);
                reset.get_or_insert(message);
            }
        }

        // What to deliver, in step order: after a reset, every complete file again.
        let mut deliver: Vec<(Key, Stamp)> = Vec::new();
        let reset_now = reset.is_some();
        if let Some(why) = reset {
            for (key, stamp) in &current {
                let unchanged = self.book.delivered(key) == Some(*stamp);
                if unchanged || ready.contains(key) {
                    deliver.push((key.clone(), *stamp));
                }
            }
            // Not deduplicated: a file replaced twice resets twice.
            events.push(LiveEvent::Error(format!("{why}: reading the run again")));
            self.book.reset(&mut events);
        } else {
            deliver.extend(current.iter().filter(|(k, _)| ready.contains(k)).map(|(k, s)| (k.clone(), *s)));
        }

        // A step file begun by an earlier poll goes on first while its content is what was begun; after a reset
        // it is read again from its beginning, and changed since, the reset comes once its new content is complete.
        let mut budget = self.part_bytes;
        if let Some(mut reading) = self.reading.take() {
            if reset_now {
                // Delivered again below.
            } else if current.get(&reading.key) == Some(&reading.stamp) {
                let before = reading.offset;
                match self.read_part(&mut reading, budget, &mut events) {
                    Delivery::More => self.reading = Some(reading),
                    Delivery::Changed => pending = true,
                    Delivery::Done | Delivery::Failed => budget = budget.saturating_sub(reading.offset - before),
                }
            } else {
                pending = true;
            }
        }
        // Remember what is there now.
        self.seen = current;
        // A part of the run a poll (`part_bytes`); the files after it are delivered by the next polls.
        let mut more = false;
        for (key, stamp) in deliver {
            if self.reading.is_some() || budget == 0 {
                more = true;
                break;
            }
            match self.deliver(key, stamp, budget, &mut events) {
                Delivery::Done => budget = budget.saturating_sub(stamp.len),
                Delivery::Changed => pending = true,
                Delivery::More | Delivery::Failed => {}
            }
        }
        more |= self.reading.is_some();
        SourcePoll { events, pending, more }
    }

    fn finish(&mut self) -> Vec<LiveEvent> {
        // Step files still being written (changed lately, last line unfinished): no later poll reads them, so
        // their complete rows are read now, in step order, and their unfinished lines said skipped.
        let mut events = Vec::new();
        if let Some(mut reading) = self.reading.take() {
            self.read_part(&mut reading, u64::MAX, &mut events);
        }
        let waiting: Vec<Key> = self.seen.keys().filter(|k| self.book.delivered(k).is_none()).cloned().collect();
        for key in waiting {
            let Ok(meta) = std::fs::metadata(self.dir.join(&key.1)) else { continue };
            let stamp = Stamp::of(&meta);
            let Some(mut reading) = self.begin(&key, stamp, Reads::StillWritten, &mut events) else { continue };
            if let Delivery::Done = self.read_part(&mut reading, u64::MAX, &mut events) {
                self.book.record(key, stamp);
            }
        }
        events
    }

    fn watches(&self, path: &Path) -> bool {
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| step_file_number(n).is_some())
    }

    fn read_in_parts_of(&mut self, bytes: u64) {
        self.part_bytes = bytes;
    }

    /// An id is `s{stem}-…` after its step file's stem (digits, unique in the directory, ended by the first
    /// `-`), then in its file either `r{line}` (a row of its own) or `{prompt}_{session}` (a v1 session, whose
    /// rows are gathered into one episode, with an `_` that no `r{line}` has): no two episodes share one.
    fn ids_unique(&self) -> bool {
        true
    }
}

/// One row of a step file with its 1-based line.
#[derive(Debug)]
struct Row {
    line: u64,
    columns: Map<String, Value>,
}

/// Where each v1 session's rows end in a step file: its last row's line (rows repeating a uid left out, as
/// [`FileBuild`] skips them), from a pass that reads each row's `uid` alone; `None` when the file ends before
/// `len` bytes (it changed since it was stat-ed).
fn session_ends(mut rows: impl BufRead, len: u64) -> std::io::Result<Option<HashMap<String, u64>>> {
    let mut ends = HashMap::new();
    let mut uids = HashSet::new();
    let (mut chunk, mut line, mut read) = (Vec::new(), 0, 0);
    loop {
        chunk.clear();
        let n = rows.read_until(b'\n', &mut chunk)?;
        if n == 0 {
            return Ok((read == len).then_some(ends));
        }
        read += n as u64;
        line += 1;
        let Ok(text) = std::str::from_utf8(&chunk) else { continue };
        let Ok(RowUid(Some(uid))) = serde_json::from_str::<RowUid>(&quote_non_finite(text.trim_end())) else {
            continue;
        };
        if let Some((prompt, session, _)) = split_uid(&uid) {
            let session = format!("{prompt}_{session}");
            if uids.insert(uid) {
                ends.insert(session, line);
            }
        }
    }
}

/// A row's `uid` as [`FileBuild`] reads it (a string, or a number as written), the other columns skipped
/// unbuilt; an error for a row that is not a JSON object.
struct RowUid(Option<String>);

impl<'de> Deserialize<'de> for RowUid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Columns;
        impl<'de> Visitor<'de> for Columns {
            type Value = RowUid;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut columns: A) -> Result<RowUid, A::Error> {
                let mut uid = None;
                while let Some(column) = columns.next_key::<Cow<'de, str>>()? {
                    if column == "uid" {
                        uid = uid_text(&columns.next_value::<Value>()?);
                    } else {
                        columns.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(RowUid(uid))
            }
        }
        deserializer.deserialize_map(Columns)
    }
}

/// One row: a JSON object, Python's bare NaN and infinities allowed.
fn parse_row(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(&quote_non_finite(text)) {
        Ok(Value::Object(columns)) => Ok(columns),
        Ok(other) => Err(format!("a row must be a JSON object, found {}", kind(&other))),
        Err(err) => Err(err.to_string().replace(" at line 1 column ", " at column ")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Python's `json.dumps` writes non-finite floats as the bare tokens `NaN`, `Infinity` and `-Infinity`,
/// which JSON (and serde_json) rejects: outside strings they become the strings `"NaN"`, `"Infinity"` and
/// `"-Infinity"`.
fn quote_non_finite(text: &str) -> Cow<'_, str> {
    if !text.contains("NaN") && !text.contains("Infinity") {
        return Cow::Borrowed(text);
    }
    const TOKENS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let (mut in_string, mut escaped) = (false, false);
    let (mut copied, mut i) = (0, 0);
    'scan: while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else {
            for token in TOKENS {
                // Tokens start with an ASCII byte, so `i` is a character boundary when one matches.
                if bytes[i..].starts_with(token.as_bytes()) {
                    out.push_str(&text[copied..i]);
                    out.push('"');
                    out.push_str(token);
                    out.push('"');
                    i += token.len();
                    copied = i;
                    continue 'scan;
                }
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// A number, or a string holding one (`"0.5"`, `"NaN"`).
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A column's text: strings as they are, other values as JSON, nothing for null or missing.
fn text(value: Option<Value>) -> String {
    match value {
        Some(Value::String(s)) => s,
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A row's `uid`: a string, or a number as written; anything else is no uid.
fn uid_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// verl's uid key `{prompt_uid}_{session}_{output_index}`: (prompt uid, session, output index).
fn split_uid(uid: &str) -> Option<(&str, &str, u64)> {
    let mut parts = uid.rsplitn(3, '_');
    let index = parts.next()?.parse().ok()?;
    let session = parts.next()?;
    let prompt = parts.next()?;
    (session.parse::<u64>().is_ok() && !prompt.is_empty()).then_some((prompt, session, index))
}

/// An episode being put together from its rows.
#[derive(Debug)]
struct Draft {
    id: String,
    group: String,
    task_id: String,
    /// The v1 session (`{prompt}_{session}`) whose rows these are.
    session: Option<String>,
    /// (output index, row).
    rows: Vec<(u64, Row)>,
    /// Every row is here.
    complete: bool,
}

/// What a step file's rows built so far: episodes still waiting for rows, and what is said at its end.
#[derive(Debug)]
struct FileBuild {
    name: String,
    /// Ids and groups are named after the file's stem (the step number as written), unique in the directory.
    stem: String,
    step: u64,
    /// Each v1 session's last line ([`session_ends`]); none for a file read in one part, whose episodes all go
    /// out at its end.
    session_ends: HashMap<String, u64>,
    /// Episodes not delivered yet, in the order of their first rows; an open session's place is its number in
    /// `sessions` less `sent`, the drafts delivered before.
    drafts: VecDeque<Draft>,
    sessions: HashMap<String, u64>,
    sent: u64,
    by_input: HashMap<String, String>,
    /// Each v1 uid's line: verl writes each output of a session once.
    uid_lines: HashMap<String, u64>,
    /// Broken rows, and rows that repeat a v1 row of the file (same uid): skipped, not taken for another step.
    errors: Vec<LineError>,
    /// The line of an unterminated last line that was read as it is (a file not modified for [`SETTLE`]).
    unterminated: Option<u64>,
    rows_with_uid: usize,
    rows_without_uid: usize,
    unread_scores: Vec<(u64, String)>,
    /// The delivered episodes' groups in the order met, with their sizes (each name once).
    group_sizes: GroupSizes,
}

/// What a step file's reading says at its end.
struct Finished {
    errors: Vec<LineError>,
    unterminated: Option<u64>,
    notices: Vec<String>,
    rows_with_uid: usize,
    rows_without_uid: usize,
}

impl FileBuild {
    fn new(name: &str, step: u64, session_ends: HashMap<String, u64>) -> FileBuild {
        FileBuild {
            name: name.to_string(),
            stem: name.strip_suffix(".jsonl").unwrap_or(name).to_string(),
            step,
            session_ends,
            drafts: VecDeque::new(),
            sessions: HashMap::new(),
            sent: 0,
            by_input: HashMap::new(),
            uid_lines: HashMap::new(),
            errors: Vec::new(),
            unterminated: None,
            rows_with_uid: 0,
            rows_without_uid: 0,
            unread_scores: Vec::new(),
            group_sizes: GroupSizes::default(),
        }
    }

    fn error(&mut self, line: u64, reason: String) {
        self.errors.push(LineError { file: Some(self.name.clone()), line, reason });
    }

    /// Line `line` of the file (with its newline when `complete`).
    fn add_line(&mut self, line: u64, chunk: &[u8], complete: bool) {
        let text = match std::str::from_utf8(chunk) {
            Ok(text) => text.trim_end_matches(['\n', '\r']),
            Err(err) => return self.error(line, format!("invalid UTF-8 at byte {}", err.valid_up_to())),
        };
        if text.trim().is_empty() {
            return;
        }
        match parse_row(text) {
            Ok(columns) => {
                if !complete {
                    self.unterminated = Some(line);
                }
                self.add(Row { line, columns });
            }
            Err(_) if !complete => self
                .error(line, "incomplete last line (no newline at its end): the writer stopped mid-write".to_string()),
            Err(reason) => self.error(line, reason),
        }
    }

    fn add(&mut self, row: Row) {
        let stem = &self.stem;
        let Some(uid) = row.columns.get("uid").and_then(uid_text) else {
            self.rows_without_uid += 1;
            let input = match row.columns.get("input") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let group = self.by_input.entry(input).or_insert_with(|| format!("s{stem}-r{}", row.line)).clone();
            let id = format!("s{stem}-r{}", row.line);
            self.drafts.push_back(Draft::whole(id, group.clone(), group, row));
            return;
        };
        self.rows_with_uid += 1;
        let Some((prompt, session, index)) = split_uid(&uid) else {
            let id = format!("s{stem}-r{}", row.line);
            self.drafts.push_back(Draft::whole(id, format!("s{stem}-{uid}"), uid, row));
            return;
        };
        if let Some(first) = self.uid_lines.get(&uid) {
            let reason = format!(
                "duplicate row: uid {uid:?} was already on line {first} (verl writes each output once); skipped, \
                 not read as another step"
            );
            return self.error(row.line, reason);
        }
        let key = format!("{prompt}_{session}");
        // The first pass saw this row (unless the file changed in between): the session ends at its last row.
        let complete = self.session_ends.get(&key).is_some_and(|&end| end <= row.line);
        let (group, task_id) = (format!("s{stem}-{prompt}"), prompt.to_string());
        self.uid_lines.insert(uid, row.line);
        if let Some(&number) = self.sessions.get(&key) {
            let draft = &mut self.drafts[(number - self.sent) as usize];
            draft.rows.push((index, row));
            draft.complete = complete;
        } else {
            self.sessions.insert(key.clone(), self.sent + self.drafts.len() as u64);
            let id = format!("s{stem}-{key}");
            let rows = vec![(index, row)];
            self.drafts.push_back(Draft { id, group, task_id, session: Some(key), rows, complete });
        }
    }

    /// Move the episodes whose rows are all read, and all before them, to `episodes`.
    fn take_complete(&mut self, episodes: &mut Vec<(u64, Episode)>) {
        while self.drafts.front().is_some_and(|d| d.complete) {
            self.send_first(episodes);
        }
    }

    fn send_first(&mut self, episodes: &mut Vec<(u64, Episode)>) {
        let Some(draft) = self.drafts.pop_front() else { return };
        self.sent += 1;
        if let Some(session) = &draft.session {
            self.sessions.remove(session);
        }
        // One step file is one iteration.
        self.group_sizes.add(&draft.group, 0);
        episodes.push(episode(&self.name, self.step, draft, &mut self.unread_scores));
    }

    /// The file is read: every episode left goes to `episodes`; what is said at the end.
    fn finish(&mut self, episodes: &mut Vec<(u64, Episode)>) -> Finished {
        while !self.drafts.is_empty() {
            self.send_first(episodes);
        }
        let name = &self.name;
        let mut notices = Vec::new();
        if !self.unread_scores.is_empty() {
            let shown: Vec<String> =
                self.unread_scores.iter().take(5).map(|(line, raw)| format!("line {line} ({raw})")).collect();
            let more = self.unread_scores.len().saturating_sub(shown.len());
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            notices.push(format!(
                "{name}: score not a finite number on {}{more}: read as reward 0 (verl's own GRPO would give the \
                 group NaN advantages)",
                shown.join(", ")
            ));
        }
        if let Some(sizes) = unequal_groups(&self.group_sizes) {
            notices.push(format!("{name}: groups of unequal size: {sizes}"));
        }
        let mut errors = std::mem::take(&mut self.errors);
        errors.sort_by_key(|e| e.line);
        Finished {
            errors,
            unterminated: self.unterminated,
            notices,
            rows_with_uid: self.rows_with_uid,
            rows_without_uid: self.rows_without_uid,
        }
    }
}

impl Draft {
    /// The episode of one row.
    fn whole(id: String, group: String, task_id: String, row: Row) -> Draft {
        Draft { id, group, task_id, session: None, rows: vec![(0, row)], complete: true }
    }
}

/// "3 groups of 4 episodes, 1 of 2 (s2-…)" when the groups' sizes differ.
fn unequal_groups(sizes: &GroupSizes) -> Option<String> {
    let mut by_size: BTreeMap<std::cmp::Reverse<usize>, Vec<&str>> = BTreeMap::new();
    for (group, _, size) in sizes.counted() {
        by_size.entry(std::cmp::Reverse(size)).or_default().push(group);
    }
    if by_size.len() < 2 {
        return None;
    }
    let parts: Vec<String> = by_size
        .iter()
        .enumerate()
        .map(|(i, (size, groups))| {
            let what = if i == 0 { " episodes" } else { "" };
            let plural = if groups.len() == 1 { "group" } else { "groups" };
            let named = if i == 0 { String::new() } else { format!(" ({})", groups.join(", ")) };
            format!("{} {plural} of {}{what}{named}", groups.len(), size.0)
        })
        .collect();
    Some(parts.join(", "))
}

/// Whether a row counts as a success: its `acc` reward extra when it has one, else a positive score.
fn success(columns: &Map<String, Value>, score: Option<f64>) -> bool {
    match columns.get("acc") {
        Some(Value::Bool(b)) => *b,
        Some(acc) if number(acc).is_some() => number(acc).is_some_and(|a| a > 0.0),
        _ => score.is_some_and(|s| s > 0.0),
    }
}

fn episode(name: &str, step: u64, draft: Draft, unread_scores: &mut Vec<(u64, String)>) -> (u64, Episode) {
    let Draft { id, group, task_id, mut rows, .. } = draft;
    rows.sort_by_key(|(index, _)| *index);
    let lines: Vec<u64> = rows.iter().map(|(_, row)| row.line).collect();
    let first_line = lines.iter().copied().min().unwrap_or(0);
    let Some((_, last)) = rows.pop() else {
        // Drafts are made with a row; an empty one would be a bug, not bad input: an empty episode.
        return (first_line, Episode::new(id, group, Vec::new()));
    };
    let Row { line: last_line, columns: mut last_columns } = last;
    let drop_step = |columns: &mut Map<String, Value>| {
        if columns.get("step").and_then(number) == Some(step as f64) {
            columns.shift_remove("step");
        }
    };

    let mut steps = Vec::with_capacity(rows.len() + 1);
    let mut instruction = None;
    for (_, row) in rows {
        let mut columns = row.columns;
        let observation = text(columns.shift_remove("input"));
        let action = text(columns.shift_remove("output"));
        drop_step(&mut columns);
        instruction.get_or_insert_with(|| observation.clone());
        let mut step = Step::new(observation, action, 0.0);
        // Only what differs from the final row, which the episode keeps whole.
        step.extra = columns.into_iter().filter(|(k, v)| last_columns.get(k) != Some(v)).collect();
        steps.push(step);
    }
    let observation = text(last_columns.shift_remove("input"));
    let action = text(last_columns.shift_remove("output"));
    drop_step(&mut last_columns);
    let instruction = instruction.unwrap_or_else(|| observation.clone());
    let raw_score = last_columns.get("score");
    let score = raw_score.and_then(number).filter(|s| s.is_finite());
    let mut final_step = Step::new(Arc::<str>::from(observation), action, score.unwrap_or(0.0));
    if score.is_none() {
        let raw = raw_score.cloned().unwrap_or(Value::Null);
        unread_scores.push((last_line, if raw.is_null() { "missing".to_string() } else { raw.to_string() }));
        final_step.extra.insert(UNREAD_SCORE_KEY.to_string(), raw);
    }
    steps.push(final_step);

    let mut source = Map::new();
    source.insert("file".to_string(), Value::from(name));
    source.insert("line".to_string(), Value::from(first_line));
    if lines.len() > 1 {
        source.insert("lines".to_string(), Value::from(lines));
    }
    let mut extra = Map::new();
    extra.insert(SOURCE_KEY.to_string(), Value::Object(source));
    let outcome = Outcome { success: success(&last_columns, score), score: score.unwrap_or(0.0), extra: Map::new() };
    extra.extend(last_columns);

    let episode = Episode {
        id,
        group,
        iteration: i64::try_from(step).unwrap_or(i64::MAX),
        task: Some(Task { id: task_id, instruction, extra: Map::new() }),
        steps,
        outcome: Some(outcome),
        advantages: None,
        extra,
        read_from: Default::default(),
    };
    (first_line, episode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_non_finite_tokens_are_quoted_outside_strings_only() {
        let line = r#"{"a": NaN, "b": -Infinity, "c": [Infinity, 1], "s": "NaN \"Infinity\" -Infinity", "é": NaN}"#;
        let value: Value = serde_json::from_str(&quote_non_finite(line)).unwrap();
        assert_eq!(value["a"], "NaN");
        assert_eq!(value["b"], "-Infinity");
        assert_eq!(value["c"][0], "Infinity");
        assert_eq!(value["s"], "NaN \"Infinity\" -Infinity");
        assert_eq!(value["é"], "NaN");
        assert!(matches!(quote_non_finite(r#"{"a": 1}"#), Cow::Borrowed(_)));
        assert!(number(&value["a"]).is_some_and(f64::is_nan));
        assert_eq!(number(&Value::from("0.5")), Some(0.5));
    }

    #[test]
    fn uids_split_like_verl() {
        assert_eq!(split_uid("a_b-c_3_1"), Some(("a_b-c", "3", 1)));
        assert_eq!(split_uid("abc_3"), None);
        assert_eq!(split_uid("abc_x_1"), None);
        assert_eq!(split_uid("_3_1"), None);
    }
}
