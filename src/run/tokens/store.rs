//! Reading and writing the token store: `tokens/index.jsonl` (one line per step record) and the chunk files
//! the lines point into.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::record::{record_len, Channel, StepTokens};
use super::verifiers::{indexed_steps, tokens_at};
use crate::run::span::read_at;
use crate::run::verifiers_traces::{NodeAt, TracesLine, TRACES_FILE};
use crate::run::{JsonlTail, LineError};

/// The token store's directory inside a run directory.
pub const TOKENS_DIR: &str = "tokens";
/// The index of the token store, inside [`TOKENS_DIR`].
pub const TOKEN_INDEX_FILE: &str = "index.jsonl";

/// Errors reading or writing a token store. Every message names the file, and for a record its index line,
/// episode and step.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{chunk} (record of episode {episode:?} step {step}, {index} line {line}): {message}")]
    Record { chunk: PathBuf, index: PathBuf, line: u64, episode: String, step: u32, message: String },
    #[error("{path}: cannot write episode {episode:?} step {step}: {message}")]
    Refused { path: PathBuf, episode: String, step: u32, message: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TokenError + '_ {
    move |source| TokenError::Io { path: path.to_path_buf(), source }
}

/// One line of `tokens/index.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexLine {
    /// The episode's id (as in `episodes.jsonl`).
    pub episode: String,
    /// The step's index in the episode, from 0.
    pub step: u32,
    /// The training iteration the step was trained in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<i64>,
    /// The chunk file in `tokens/` holding the record.
    pub chunk: String,
    /// The record's first byte in the chunk, and its length.
    pub offset: u64,
    pub length: u64,
    /// Number of tokens, and of bytes of their text.
    pub tokens: u32,
    pub text_bytes: u64,
    /// Number of tokens the loss trained (mask 1): the response's length as DEPO's efficiency term counts it
    /// ([`super::count_lengths`]). Absent on lines of writers that predate it: the step's length is then not
    /// counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained: Option<u32>,
    /// The channels the record holds, in its byte order.
    pub channels: Vec<String>,
}

/// Where a step's record is (a few dozen bytes a step: the tokens stay on disk).
#[derive(Clone, Debug)]
struct Entry {
    chunk: u32,
    offset: u64,
    length: u64,
    tokens: u32,
    text_bytes: u64,
    trained: Option<u32>,
    channels: Box<[Option<Channel>]>,
    iteration: Option<i64>,
    line: u64,
    /// A step of verifiers' `traces.jsonl` (`offset` and `length` are its line's): where its node is.
    node: Option<NodeAt>,
}

/// A step's place in the store, as listed by [`TokenStore::steps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepEntry {
    pub step: u32,
    pub tokens: u32,
    /// The index line's `trained` (tokens of mask 1), when it has one.
    pub trained: Option<u32>,
    pub iteration: Option<i64>,
}

/// The token store of a run, followed while it is written: the index is held (per step: where its record
/// is), the records are read when asked for, with one positioned read each.
#[derive(Debug)]
pub struct TokenStore {
    dir: PathBuf,
    index: JsonlTail<IndexLine>,
    chunks: Vec<Box<str>>,
    chunk_ids: HashMap<Box<str>, u32>,
    episodes: HashMap<Box<str>, BTreeMap<u32, Entry>>,
    errors: Vec<LineError>,
    /// How many times the index was found replaced or rewritten and read again from the start.
    resets: u64,
    /// verifiers' saved rollouts beside the store, when the run has them (missing: read as empty).
    traces: JsonlTail<TracesLine>,
}

impl TokenStore {
    /// The store of the run in `run_dir`, its index read as far as it is written (a store not written yet
    /// reads as empty). Reads only the index: the chunks are read step by step.
    pub fn open(run_dir: &Path) -> Result<TokenStore, TokenError> {
        let dir = run_dir.join(TOKENS_DIR);
        let mut store = TokenStore {
            index: JsonlTail::new(dir.join(TOKEN_INDEX_FILE)),
            dir,
            chunks: Vec::new(),
            chunk_ids: HashMap::new(),
            episodes: HashMap::new(),
            errors: Vec::new(),
            resets: 0,
            traces: JsonlTail::new(run_dir.join(TRACES_FILE)),
        };
        store.refresh()?;
        Ok(store)
    }

    /// Read the index lines written since the last refresh (a torn last line waits for its newline; an
    /// index replaced or rewritten is read again from the start). Returns whether anything changed.
    pub fn refresh(&mut self) -> Result<bool, TokenError> {
        let index_path = self.index.path().to_path_buf();
        let mut changed = false;
        loop {
            let batch = self.index.poll().map_err(|err| match err {
                crate::run::RunError::Io { path, source } => TokenError::Io { path, source },
                other => TokenError::Io { path: index_path.clone(), source: std::io::Error::other(other.to_string()) },
            })?;
            if batch.reset {
                self.resets += 1;
                self.episodes.clear();
                self.errors.clear();
                changed = true;
            }
            changed |= !batch.records.is_empty() || !batch.errors.is_empty();
            let known = self.errors.len();
            self.errors.extend(batch.errors.into_iter().map(named));
            for (line, record) in batch.records {
                if let Err(reason) = self.add(line, record) {
                    self.errors.push(named(LineError::new(line, reason)));
                }
            }
            // Lines that are not records and records refused, in line order.
            self.errors[known..].sort_by_key(|e| e.line);
            if !batch.more {
                return Ok(changed || self.refresh_traces()?);
            }
        }
    }

    /// Take in the lines verifiers appended to `traces.jsonl` since the last refresh: each sampled node a step.
    fn refresh_traces(&mut self) -> Result<bool, TokenError> {
        let path = self.traces.path().to_path_buf();
        let batch = self
            .traces
            .poll_map(|line, span| (line, span))
            .map_err(|err| TokenError::Io { path: path.clone(), source: std::io::Error::other(err.to_string()) })?;
        if batch.reset {
            self.resets += 1;
            self.episodes.values_mut().for_each(|steps| steps.retain(|_, e| e.node.is_none()));
            self.episodes.retain(|_, steps| !steps.is_empty());
            self.errors.retain(|e| e.file.as_deref() != Some(TRACES_FILE));
        }
        let changed = batch.reset || !batch.records.is_empty() || !batch.errors.is_empty();
        let traces_error = |mut error: LineError| {
            error.file = Some(TRACES_FILE.to_string());
            error
        };
        self.errors.extend(batch.errors.into_iter().map(traces_error));
        for (line, (record, span)) in batch.records {
            let iteration = record.iteration();
            for (step, indexed) in indexed_steps(&record).into_iter().enumerate() {
                let (tokens, trained, recorded) = match indexed.read {
                    Ok(read) => read,
                    Err(reason) => {
                        let reason = format!("episode {:?} step {step}: {reason}", record.id);
                        self.errors.push(traces_error(LineError::new(line, reason)));
                        continue;
                    }
                };
                let entry = Entry {
                    chunk: 0,
                    offset: span.offset,
                    length: span.len,
                    tokens,
                    text_bytes: 0,
                    trained: Some(trained),
                    channels: recorded.into_iter().map(Some).collect(),
                    iteration,
                    line,
                    node: Some(indexed.at),
                };
                let steps = self.episodes.entry(record.id.as_str().into()).or_default();
                if let Some(first) = steps.get(&(step as u32)) {
                    let reason = format!(
                        "episode {:?} was recorded before, on line {} (that one is kept)",
                        record.id, first.line
                    );
                    self.errors.push(traces_error(LineError::new(line, reason)));
                    break;
                }
                steps.insert(step as u32, entry);
            }
        }
        Ok(changed)
    }

    fn add(&mut self, line: u64, record: IndexLine) -> Result<(), String> {
        if !is_plain_name(&record.chunk) {
            return Err(format!("chunk {:?} is not a file name inside {TOKENS_DIR}/", record.chunk));
        }
        let mut channels = Vec::with_capacity(record.channels.len());
        for (k, name) in record.channels.iter().enumerate() {
            if record.channels[..k].contains(name) {
                return Err(format!("channel {name:?} listed twice"));
            }
            channels.push(Channel::from_name(name));
        }
        let expected = record_len(record.tokens as usize, record.text_bytes, channels.len());
        if record.length != expected {
            return Err(format!(
                "length {} disagrees with {} tokens, {} bytes of text and {} channel(s) ({expected} bytes)",
                record.length,
                record.tokens,
                record.text_bytes,
                channels.len()
            ));
        }
        if let Some(trained) = record.trained.filter(|&trained| trained > record.tokens) {
            return Err(format!("trained {trained} is more than its {} tokens", record.tokens));
        }
        let steps = self.episodes.entry(record.episode.as_str().into()).or_default();
        if let Some(first) = steps.get(&record.step) {
            return Err(format!(
                "episode {:?} step {} was recorded before, on line {} (that one is kept)",
                record.episode, record.step, first.line
            ));
        }
        let chunk = match self.chunk_ids.get(record.chunk.as_str()) {
            Some(&id) => id,
            None => {
                let id = self.chunks.len() as u32;
                self.chunks.push(record.chunk.as_str().into());
                self.chunk_ids.insert(record.chunk.as_str().into(), id);
                id
            }
        };
        steps.insert(
            record.step,
            Entry {
                chunk,
                offset: record.offset,
                length: record.length,
                tokens: record.tokens,
                text_bytes: record.text_bytes,
                trained: record.trained,
                channels: channels.into(),
                iteration: record.iteration,
                line,
                node: None,
            },
        );
        Ok(())
    }

    /// The index lines that could not be read (file and line named), in order.
    pub fn errors(&self) -> &[LineError] {
        &self.errors
    }

    /// How many times the index was read again from the start (replaced or rewritten): what was listed
    /// before may be gone.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// The steps indexed on lines after `line`, in line order, with their episode and line: what a reader that
    /// has taken in the lines up to `line` has not seen yet.
    pub fn indexed_after(&self, line: u64) -> Vec<(&str, StepEntry, u64)> {
        let mut steps: Vec<(&str, StepEntry, u64)> = self
            .episodes
            .iter()
            .flat_map(|(episode, steps)| {
                steps.iter().filter(|(_, e)| e.line > line).map(move |(&step, e)| {
                    (
                        &**episode,
                        StepEntry { step, tokens: e.tokens, trained: e.trained, iteration: e.iteration },
                        e.line,
                    )
                })
            })
            .collect();
        steps.sort_by_key(|s| s.2);
        steps
    }

    /// Number of episodes with tokens.
    pub fn episode_count(&self) -> usize {
        self.episodes.len()
    }

    /// The steps of `episode` with tokens, in order.
    pub fn steps(&self, episode: &str) -> Vec<StepEntry> {
        self.episodes.get(episode).map_or_else(Vec::new, |steps| {
            steps
                .iter()
                .map(|(&step, e)| StepEntry { step, tokens: e.tokens, trained: e.trained, iteration: e.iteration })
                .collect()
        })
    }

    /// The tokens of `episode`'s step `step` (`None`: not recorded), read from their chunk.
    pub fn read(&self, episode: &str, step: u32) -> Result<Option<StepTokens>, TokenError> {
        let Some(entry) = self.episodes.get(episode).and_then(|steps| steps.get(&step)) else {
            return Ok(None);
        };
        let (chunk, index) = match entry.node {
            Some(_) => (self.traces.path().to_path_buf(), self.traces.path().to_path_buf()),
            None => (self.dir.join(&*self.chunks[entry.chunk as usize]), self.index.path().to_path_buf()),
        };
        let refuse = |message: String| TokenError::Record {
            chunk: chunk.clone(),
            index: index.clone(),
            line: entry.line,
            episode: episode.to_string(),
            step,
            message,
        };
        let file = File::open(&chunk).map_err(|err| refuse(err.to_string()))?;
        let mut bytes = vec![0u8; entry.length as usize];
        read_at(&file, &mut bytes, entry.offset).map_err(|err| {
            let len = file.metadata().map(|m| m.len()).unwrap_or(0);
            if err.kind() == std::io::ErrorKind::UnexpectedEof {
                refuse(format!(
                    "the chunk is cut: it ends at byte {len}, the record at byte {}",
                    entry.offset + entry.length
                ))
            } else {
                refuse(err.to_string())
            }
        })?;
        if let Some(at) = entry.node {
            let line: TracesLine = serde_json::from_slice(&bytes)
                .map_err(|err| refuse(format!("the line no longer reads as it did when indexed: {err}")))?;
            return match tokens_at(&line, at) {
                Some(tokens) => tokens.map(Some).map_err(refuse),
                None => Err(refuse("the line no longer holds the step's node".to_string())),
            };
        }
        StepTokens::decode(&bytes, entry.tokens as usize, entry.text_bytes as usize, &entry.channels)
            .map(Some)
            .map_err(refuse)
    }
}

/// An index line's error, its file named (relative to the run directory).
fn named(mut error: LineError) -> LineError {
    error.file = Some(format!("{TOKENS_DIR}/{TOKEN_INDEX_FILE}"));
    error
}

/// A name with no directory part, not hidden: a chunk the index names is always inside `tokens/`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// Appends step records to a run's token store: a chunk's bytes first, whole, then their index lines with
/// one write, so a reader never meets an index line whose record is not complete.
#[derive(Debug)]
pub struct TokenWriter {
    dir: PathBuf,
}

/// One step's record to append: its episode, step index, iteration and tokens.
#[derive(Clone, Copy, Debug)]
pub struct StepRecord<'a> {
    pub episode: &'a str,
    pub step: u32,
    pub iteration: Option<i64>,
    pub tokens: &'a StepTokens,
}

impl TokenWriter {
    /// The token store of the run in `run_dir` (created if needed); existing records are kept.
    pub fn create(run_dir: &Path) -> Result<TokenWriter, TokenError> {
        let dir = run_dir.join(TOKENS_DIR);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(TokenWriter { dir })
    }

    /// Append `records` to the chunk `chunk` (a file name, e.g. one per training iteration) and index them.
    /// A record whose columns disagree is refused before anything is written.
    pub fn append(&mut self, chunk: &str, records: &[StepRecord<'_>]) -> Result<(), TokenError> {
        let chunk_path = self.dir.join(chunk);
        if !is_plain_name(chunk) {
            return Err(io(&chunk_path)(std::io::Error::other("not a plain file name")));
        }
        for r in records {
            r.tokens.check().map_err(|message| TokenError::Refused {
                path: chunk_path.clone(),
                episode: r.episode.to_string(),
                step: r.step,
                message,
            })?;
        }
        let mut file = OpenOptions::new().create(true).append(true).open(&chunk_path).map_err(io(&chunk_path))?;
        let start = file.metadata().map_err(io(&chunk_path))?.len();
        let mut bytes = Vec::new();
        let mut lines = Vec::new();
        for r in records {
            let offset = start + bytes.len() as u64;
            r.tokens.encode(&mut bytes);
            let line = IndexLine {
                episode: r.episode.to_string(),
                step: r.step,
                iteration: r.iteration,
                chunk: chunk.to_string(),
                offset,
                length: start + bytes.len() as u64 - offset,
                tokens: r.tokens.len() as u32,
                text_bytes: r.tokens.text.len() as u64,
                trained: Some(r.tokens.mask.iter().filter(|&&m| m).count() as u32),
                channels: r.tokens.recorded().into_iter().map(|c| c.name().to_string()).collect(),
            };
            let mut text = serde_json::to_vec(&line).map_err(|err| io(&chunk_path)(std::io::Error::other(err)))?;
            text.push(b'\n');
            lines.extend_from_slice(&text);
        }
        if let Err(err) = file.write_all(&bytes) {
            // Cut back what was written of this append, so the next append starts on a whole record.
            let _ = file.set_len(start);
            return Err(io(&chunk_path)(err));
        }
        let index_path = self.dir.join(TOKEN_INDEX_FILE);
        let mut index = OpenOptions::new().create(true).append(true).open(&index_path).map_err(io(&index_path))?;
        index.write_all(&lines).map_err(io(&index_path))
    }
}
