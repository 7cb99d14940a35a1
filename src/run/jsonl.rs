//! Streaming, incremental reading of JSON Lines files: [`JsonlTail`], generic over the record type.
//!
//! Contract: a line is only read once its newline has arrived: a torn last line (a writer mid-append) is held
//! back and picked up by a later poll. A broken line (invalid UTF-8, bad JSON, missing field, wrong type) is
//! reported with its 1-based line number and reason ([`LineError`]), and every good line is still returned. A
//! file truncated, replaced or rewritten in place is noticed ([`TailBatch::reset`]) and read again from its
//! start. Every line comes with its [`LineSpan`], so a reader may drop a record's text and read it back later.
//! Knows no record format: the gigscope-run/1 source (`source/gigscope.rs`) gives it its record types.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::error::{LineError, RunError};
use super::span::{line_checksum, read_at, FileIdentity, LineSpan};

/// What one poll of a [`JsonlTail`] found.
#[derive(Debug)]
pub struct TailBatch<T> {
    /// The file was truncated or replaced since the last poll: everything read before is void, and
    /// `records`/`errors` start again from line 1.
    pub reset: bool,
    /// Good records with their 1-based line numbers.
    pub records: Vec<(u64, T)>,
    pub errors: Vec<LineError>,
    /// The poll stopped at its byte budget ([`JsonlTail::set_budget`]) with complete lines still unread: poll
    /// again at once.
    pub more: bool,
    /// The file's size when polled, and the offset reached: how far reading is (0 and 0 for a missing file).
    pub file_len: u64,
    pub offset: u64,
}

/// Where a [`JsonlTail`] stands, for a later reader to go on from there ([`JsonlTail::resume`]): the byte offset
/// just past the last complete line read, the number of lines read, and that last line's bytes (to notice a
/// rewrite in place).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TailPosition {
    pub offset: u64,
    pub lines: u64,
    pub last_line: Vec<u8>,
}

/// Incremental reader of a JSON Lines file: each `poll` resumes at the byte offset after the last complete
/// line it read, and detects truncation or replacement of the file.
#[derive(Debug)]
pub struct JsonlTail<T> {
    path: PathBuf,
    /// Byte offset just past the last complete line read.
    offset: u64,
    /// Number of complete lines read so far.
    lines: u64,
    identity: Option<FileIdentity>,
    /// The last complete line read, to notice a replacement that keeps the inode but rewrites the content.
    last_line: Vec<u8>,
    /// At most this many bytes are read per poll (whole lines; at least one line).
    budget: u64,
    _record: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> JsonlTail<T> {
    pub fn new(path: PathBuf) -> Self {
        JsonlTail {
            path,
            offset: 0,
            lines: 0,
            identity: None,
            last_line: Vec::new(),
            budget: u64::MAX,
            _record: PhantomData,
        }
    }

    /// A reader that goes on from `position` (as a reader of the same content left it): the file is checked at
    /// the first poll like at any other, and read from the start again when it no longer holds that content.
    pub fn resume(path: PathBuf, position: TailPosition) -> Self {
        JsonlTail { offset: position.offset, lines: position.lines, last_line: position.last_line, ..Self::new(path) }
    }

    /// Read at most about `bytes` per poll (whole lines, at least one), so a large file arrives in parts that
    /// a viewer can show as they come; the batch says when there is [`TailBatch::more`].
    pub fn set_budget(&mut self, bytes: u64) {
        self.budget = bytes.max(1);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset just past the last complete line read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Number of complete lines read so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Read every complete line that arrived since the last poll. A missing file reads as empty (a run
    /// directory may exist before its first episode is written).
    pub fn poll(&mut self) -> Result<TailBatch<T>, RunError> {
        self.poll_map(|record, _| record)
    }

    /// [`poll`](Self::poll), each record turned into what `map` makes of it, given where its line is (its byte
    /// span and checksum, so that a reader may drop the record's text and read it back later:
    /// [`super::text_on_disk`]), as soon as it is parsed: a reader keeps only what it needs of a record and frees the
    /// rest while it is fresh, instead of holding a whole part's records.
    pub fn poll_map<R>(&mut self, mut map: impl FnMut(T, LineSpan) -> R) -> Result<TailBatch<R>, RunError> {
        let mut records = Vec::new();
        let batch = self.poll_lines(|text, span| {
            parse_json::<T>(text).map(|record| records.push((span.line, map(record, span))))
        })?;
        let TailBatch { reset, errors, more, file_len, offset, .. } = batch;
        Ok(TailBatch { reset, records, errors, more, file_len, offset })
    }

    /// Hand the text of every complete line that arrived since the last poll (newline cut; blank lines are
    /// skipped) with its span to `parse`, for a reader that parses lines its own way; the lines it refuses, and
    /// those that are not UTF-8, are the batch's errors (its records are empty).
    pub fn poll_lines(
        &mut self,
        mut parse: impl FnMut(&str, LineSpan) -> Result<(), String>,
    ) -> Result<TailBatch<T>, RunError> {
        let mut errors = Vec::new();
        // One line in memory at a time: a file of any size streams through.
        let (mut batch, _) = self.read_lines(Lines::OneAtATime, |span, line| {
            if let Err(reason) = line_text(line).and_then(|text| text.map_or(Ok(()), |text| parse(text, span))) {
                errors.push(LineError::new(span.line, reason));
            }
        })?;
        batch.errors = errors;
        Ok(batch)
    }

    /// [`poll_lines`](Self::poll_lines) with the part's lines parsed on as many threads as there are `parsers`,
    /// each taking a run of consecutive lines (a part of less than a megabyte is parsed by the first alone).
    /// Each record comes with the index of the parser that made it; records and errors are in line order.
    pub fn poll_lines_parallel<R, P>(&mut self, parsers: &mut [P]) -> Result<TailBatch<(usize, R)>, RunError>
    where
        R: Send,
        P: FnMut(&str, LineSpan) -> Result<R, String> + Send,
    {
        let mut spans = Vec::new();
        let (batch, bytes) = self.read_lines(Lines::Kept, |span, _| spans.push(span))?;
        // Each line's place in `bytes`, where they are kept one after another.
        let lines: Vec<(LineSpan, std::ops::Range<usize>)> = spans
            .into_iter()
            .scan(0, |at, span| {
                let start = *at;
                *at += span.len as usize;
                Some((span, start..*at))
            })
            .collect();
        let threads = if bytes.len() < 1 << 20 { 1 } else { parsers.len().max(1) };
        // Runs of lines of about equal bytes.
        let mut runs: Vec<&[(LineSpan, std::ops::Range<usize>)]> = Vec::with_capacity(threads);
        let mut rest = lines.as_slice();
        for k in 1..threads {
            let boundary = bytes.len() * k / threads;
            let cut = rest.partition_point(|(_, range)| range.end <= boundary);
            let (run, after) = rest.split_at(cut);
            runs.push(run);
            rest = after;
        }
        runs.push(rest);
        let bytes = &bytes;
        let parse_run = |k: usize, run: &[(LineSpan, std::ops::Range<usize>)], parse: &mut P| {
            let (mut records, mut errors) = (Vec::new(), Vec::new());
            for (span, range) in run {
                match line_text(&bytes[range.clone()]).and_then(|text| text.map(|t| parse(t, *span)).transpose()) {
                    Ok(Some(record)) => records.push((span.line, (k, record))),
                    Ok(None) => {}
                    Err(reason) => errors.push(LineError::new(span.line, reason)),
                }
            }
            (records, errors)
        };
        let parsed: Vec<_> = std::thread::scope(|scope| {
            let mut parsers = parsers.iter_mut();
            let mut runs = runs.into_iter().enumerate();
            let first = runs.next().zip(parsers.next());
            let others: Vec<_> =
                runs.zip(parsers).map(|((k, run), parse)| scope.spawn(move || parse_run(k, run, parse))).collect();
            let mut parsed: Vec<_> = first.map(|((k, run), parse)| parse_run(k, run, parse)).into_iter().collect();
            parsed
                .extend(others.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))));
            parsed
        });
        let TailBatch { reset, more, file_len, offset, .. } = batch;
        let mut out = TailBatch { reset, records: Vec::new(), errors: Vec::new(), more, file_len, offset };
        for (records, errors) in parsed {
            out.records.extend(records);
            out.errors.extend(errors);
        }
        Ok(out)
    }

    /// Hand each complete line that arrived since the last poll (about the read budget of them) to `line`, with
    /// its span; the batch they make (records and errors empty), and with [`Lines::Kept`] every line one after
    /// another in one buffer (with [`Lines::OneAtATime`] the buffer means nothing).
    fn read_lines(
        &mut self,
        keep: Lines,
        mut line: impl FnMut(LineSpan, &[u8]),
    ) -> Result<(TailBatch<T>, Vec<u8>), RunError> {
        let mut batch =
            TailBatch { reset: false, records: Vec::new(), errors: Vec::new(), more: false, file_len: 0, offset: 0 };
        let mut bytes = Vec::new();
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                if self.offset > 0 {
                    self.restart(&mut batch);
                }
                return Ok((batch, bytes));
            }
            Err(err) => return Err(RunError::io(&self.path)(err)),
        };
        let meta = file.metadata().map_err(RunError::io(&self.path))?;
        let identity = FileIdentity::of(&meta);
        let replaced = self.identity.is_some_and(|known| known != identity);
        if replaced || meta.len() < self.offset || !self.still_same(&file) {
            self.restart(&mut batch);
        }
        self.identity = Some(identity);
        batch.file_len = meta.len();

        let start = self.offset;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        reader.seek(SeekFrom::Start(self.offset)).map_err(RunError::io(&self.path))?;
        // Where the last complete line starts in `bytes`, when they are kept.
        let mut last_at = None;
        loop {
            if self.offset - start >= self.budget {
                batch.more = self.offset < batch.file_len;
                break;
            }
            if keep == Lines::OneAtATime {
                bytes.clear();
            }
            let at = bytes.len();
            let n = reader.read_until(b'\n', &mut bytes).map_err(RunError::io(&self.path))?;
            if n == 0 || bytes.last() != Some(&b'\n') {
                // End of file, or a torn last line: wait for its newline.
                bytes.truncate(at);
                break;
            }
            self.offset += n as u64;
            self.lines += 1;
            let checksum = line_checksum(&bytes[at..]);
            line(LineSpan { line: self.lines, offset: self.offset - n as u64, len: n as u64, checksum }, &bytes[at..]);
            match keep {
                Lines::Kept => last_at = Some(at),
                Lines::OneAtATime => std::mem::swap(&mut self.last_line, &mut bytes),
            }
        }
        if let Some(at) = last_at {
            self.last_line = bytes[at..].to_vec();
        }
        batch.offset = self.offset;
        Ok((batch, bytes))
    }

    /// Whether the bytes of the last line read are still where they were (a file rewritten in place with
    /// the same inode and a size at least as large would otherwise go unnoticed).
    fn still_same(&self, file: &File) -> bool {
        if self.last_line.is_empty() {
            return true;
        }
        let start = self.offset - self.last_line.len() as u64;
        let mut current = vec![0u8; self.last_line.len()];
        read_at(file, &mut current, start).is_ok() && current == self.last_line
    }

    fn restart(&mut self, batch: &mut TailBatch<T>) {
        self.offset = 0;
        self.lines = 0;
        self.last_line.clear();
        batch.reset = true;
    }
}

/// Which lines a read keeps in its buffer ([`JsonlTail::read_lines`]).
#[derive(Clone, Copy, PartialEq)]
enum Lines {
    /// Every line read, for parsing afterwards.
    Kept,
    /// The line being read alone (and the last one read, until the next is whole).
    OneAtATime,
}

/// The text of one complete line (with its trailing newline), newline cut; `None` for a blank line (skipped
/// silently).
fn line_text(bytes: &[u8]) -> Result<Option<&str>, String> {
    let text = std::str::from_utf8(bytes).map_err(|err| format!("invalid UTF-8 at byte {}", err.valid_up_to()))?;
    let text = text.trim_end_matches(['\n', '\r']);
    Ok((!text.trim().is_empty()).then_some(text))
}

/// A line's record, or the reason it is not one.
pub(crate) fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|err| {
        let message = err.to_string();
        // serde_json appends "at line 1 column N"; the column is useful, the line is always 1.
        message.replace(" at line 1 column ", " at column ")
    })
}
