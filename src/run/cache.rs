//! The load cache: what reading a gigscope run's `episodes.jsonl` produced, kept so that opening the run again
//! needs no parsing.
//!
//! A viewer reads a run into lean episodes ([`LeanEpisode`]), and parsing the JSON lines is most of the time a
//! large run takes to open. After a full read the viewer saves what it made (the lean episodes with the spans of
//! their lines, the page names, the broken lines, and where the reader stopped) in one file under the cache root
//! beside the trajectory index's: `<cache>/load/<hash of the canonical run path>.bin`, never inside the run. A
//! later open takes the episodes from there and reads on from the offset the read stopped at: an unchanged run
//! opens without parsing, a run that grew since parses only what was appended.
//!
//! The cache is taken only while `episodes.jsonl` still holds what was read: its size and modification time are
//! as recorded, or it only grew; the checksums of its first and last 64 KiB up to the cached offset match, and so
//! does the last line read; and `run.json` is the same (it decides the page anchor of steps that record none).
//! Anything else (a file truncated, replaced or edited; a cache file of another format, of another run, or
//! damaged: its body carries a checksum) is a miss, never an error the viewer stops at: the run is read from its
//! files and the cache written anew.
//!
//! Layout, every number little-endian, a string as a u64 length and its UTF-8 bytes: the header `GIGSLOAD`, the
//! format (u32), the body's length (u64) and its XXH3-64 (u64); the body: the canonical run path; the stamp of
//! `episodes.jsonl` (length, modification time); the reader's position (offset, lines read, the last line's span);
//! the checksums of the first and last [`CHECKED_BYTES`] before the offset; the checksum of `run.json` (if any);
//! the page names in id order; the broken lines; the episodes with their steps.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::error::{LineError, RunError};
use super::format::{EPISODES_FILE, RUN_META_FILE};
use super::jsonl::TailPosition;
use super::lean_episodes::{LeanEpisodeRef, LeanEpisodes};
use super::span::{content_checksum, line_checksum, read_at, LineSpan, Stamp};
use super::text_on_disk::{EpisodeText, LeanEpisode, LeanExtras, LeanStep, PageIds, SharedGroups, TextStore};
use super::writer::{remove_abandoned_temporaries, write_atomic};

/// Bump when the layout or the meaning of a field changes: caches of other formats are then ignored, never misread.
pub const LOAD_CACHE_FORMAT: u32 = 4;

/// Set (to anything but the empty string) to read every run from its files, neither using nor writing the cache.
pub const NO_CACHE_VAR: &str = "GIGSCOPE_NO_CACHE";

const MAGIC: &[u8; 8] = b"GIGSLOAD";

/// The fewest bytes an episode takes: id, group, iteration, success, tokens, token steps, span, step count, extras.
const EPISODE_MIN_BYTES: usize = 8 + 8 + 8 + 1 + 8 + 4 + 32 + 8 + 1;
const HEADER_LEN: usize = MAGIC.len() + 4 + 8 + 8;

/// Bytes checksummed at the start and at the end of what was read, to tell an edited file from the one read.
pub const CHECKED_BYTES: u64 = 64 << 10;

/// What the cache kept of a run: where the read stopped and what it found, and the episodes as the read made
/// them, decoded part by part ([`Cached::next_episodes`]): decoding a large run's episodes takes longer than a
/// frame, and a viewer merges each part while the next is decoded.
#[derive(Debug)]
pub struct Cached {
    pub head: CachedHead,
    episodes: Decoder,
}

/// The part of a run's cache decoded at once.
#[derive(Clone, Debug)]
pub struct CachedHead {
    pub pages: PageIds,
    /// The broken lines of `episodes.jsonl` up to `position`.
    pub errors: Vec<LineError>,
    /// Where the reader of `episodes.jsonl` stopped: a reader resumed there reads only what came after.
    pub position: TailPosition,
    /// How many episodes the cache holds.
    pub episodes: usize,
}

impl CachedHead {
    /// What taking the cache means, for the viewer to say: how many episodes, and the first line of
    /// `episodes.jsonl` read from the file (the one after the last line the cache holds).
    pub fn taken(&self) -> String {
        format!(
            "{} episodes taken from the load cache (lines 1 to {} of {EPISODES_FILE}), reading on from line {} \
             ({NO_CACHE_VAR}=1 reads the files)",
            self.episodes,
            self.position.lines,
            self.position.lines + 1
        )
    }
}

/// The episodes of a cache file not decoded yet: the file's bytes, where the next starts in its body, and how
/// many are left.
#[derive(Debug)]
struct Decoder {
    path: PathBuf,
    bytes: Vec<u8>,
    pos: usize,
    left: usize,
    store: TextStore,
    /// The episodes' group names, shared by a group's episodes.
    groups: SharedGroups,
    /// The first episode of the next part, decoded to see where the last group ended.
    held: Option<LeanEpisode>,
}

impl Cached {
    /// The next `max` episodes, more only to end where an episode group ends (a viewer takes in whole groups),
    /// fewer at the end; none once all were given. An error when the cache file turns out damaged after all
    /// (the checksum of its body was right, but not its layout): everything taken from it is then void.
    pub fn next_episodes(&mut self, max: usize) -> Result<Vec<LeanEpisode>, CacheError> {
        let d = &mut self.episodes;
        // The body's checksum was checked when the cache was loaded.
        let body = &d.bytes[HEADER_LEN..];
        let mut input = Input { bytes: body, pos: d.pos };
        let mut part: Vec<LeanEpisode> = d.held.take().into_iter().collect();
        while d.left > 0 {
            let episode = input.episode(&d.store, &mut d.groups).map_err(|_| CacheError::Damaged(d.path.clone()))?;
            d.left -= 1;
            if part.len() >= max.max(1) && part.last().is_some_and(|last| last.group != episode.group) {
                d.held = Some(episode);
                break;
            }
            part.push(episode);
        }
        d.pos = input.pos;
        if d.left == 0 && d.pos != body.len() {
            return Err(CacheError::Damaged(d.path.clone()));
        }
        Ok(part)
    }

    /// Every episode left, at once.
    pub fn all_episodes(&mut self) -> Result<Vec<LeanEpisode>, CacheError> {
        self.next_episodes(usize::MAX)
    }
}

/// What a viewer read of a run, to be saved: its episodes (text on disk), page names and broken lines, and the
/// offset in `episodes.jsonl` up to which it read.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub episodes: LeanEpisodes,
    pub pages: PageIds,
    pub errors: Vec<LineError>,
    pub offset: u64,
}

/// Why the cache was not used, or not written.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("no load cache at {0}")]
    Absent(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}: not a load cache of format {LOAD_CACHE_FORMAT}")]
    Foreign(PathBuf),
    #[error("{0}: damaged")]
    Damaged(PathBuf),
    #[error("{0}: kept for another run")]
    OtherRun(PathBuf),
    #[error("{path} {how} since the cache was written")]
    Changed { path: PathBuf, how: &'static str },
    #[error("{path} changed while it was being cached; not cached")]
    Stale { path: PathBuf },
    #[error("episode {id:?} has its text in memory; only runs read from episodes.jsonl are cached")]
    NotOnDisk { id: String },
    #[error("the cache directory {cache} is inside the run directory {run}; not caching there")]
    InsideRun { cache: PathBuf, run: PathBuf },
    #[error(transparent)]
    Write(#[from] RunError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CacheError + '_ {
    move |source| CacheError::Io { path: path.to_path_buf(), source }
}

/// The cache root a viewer uses: `cache_dir` (the trajectory index's, which the viewer passes in: this layer
/// knows no index), unless [`NO_CACHE_VAR`] is set.
pub fn default_root(cache_dir: Option<PathBuf>) -> Option<PathBuf> {
    if std::env::var_os(NO_CACHE_VAR).is_some_and(|v| !v.is_empty()) {
        return None;
    }
    cache_dir
}

/// The cache file of the run in `dir` under `root`, and the canonical run path it is keyed by.
pub fn cache_file(root: &Path, dir: &Path) -> Result<(PathBuf, PathBuf), CacheError> {
    let run = dir.canonicalize().map_err(io(dir))?;
    let cache = root.canonicalize().or_else(|_| std::path::absolute(root)).map_err(io(root))?;
    if cache.starts_with(&run) {
        return Err(CacheError::InsideRun { cache, run });
    }
    let key = format!("{:016x}.bin", content_checksum(run.as_os_str().as_encoded_bytes()));
    Ok((cache.join("load").join(key), run))
}

/// What the cache under `root` holds of the run in `dir`, when it is still what the run's files hold (see the
/// module's description); the episodes read their text back through `store`.
pub fn load(root: &Path, dir: &Path, store: &TextStore) -> Result<Cached, CacheError> {
    let (path, run) = cache_file(root, dir)?;
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(CacheError::Absent(path)),
        Err(err) => return Err(io(&path)(err)),
    };
    let body = body(&bytes).map_err(|damage| damage.error(&path))?;
    let mut input = Input { bytes: body, pos: 0 };
    let damaged = |_: Damage| CacheError::Damaged(path.clone());
    if input.bytes_field().map_err(damaged)? != run.as_os_str().as_encoded_bytes() {
        return Err(CacheError::OtherRun(path));
    }
    let recorded = input.stamp().map_err(damaged)?;
    let offset = input.u64().map_err(damaged)?;
    let lines = input.u64().map_err(damaged)?;
    let last_line = input.span().map_err(damaged)?;
    let checks = [input.u64().map_err(damaged)?, input.u64().map_err(damaged)?];
    let meta = input.opt_u64().map_err(damaged)?;

    let episodes_path = dir.join(EPISODES_FILE);
    let changed = |how| CacheError::Changed { path: episodes_path.clone(), how };
    let file = File::open(&episodes_path).map_err(|_| changed("is gone"))?;
    let now = file.metadata().map_err(io(&episodes_path))?;
    let (len, modified) = (now.len(), Stamp::of(&now).modified.and_then(since_epoch));
    if len < recorded.0.max(offset) {
        return Err(changed("shrank"));
    }
    if len == recorded.0 && modified != recorded.1 {
        return Err(changed("was rewritten"));
    }
    if content_checks(&file, offset).map_err(io(&episodes_path))? != checks {
        return Err(changed("was rewritten"));
    }
    let mut last = vec![0u8; usize::try_from(last_line.len).map_err(|_| changed("was rewritten"))?];
    if read_at(&file, &mut last, last_line.offset).is_err() || line_checksum(&last) != last_line.checksum {
        return Err(changed("was rewritten"));
    }
    if meta_checksum(dir) != meta {
        return Err(CacheError::Changed { path: dir.join(RUN_META_FILE), how: "changed" });
    }

    let pages = input.strings().map_err(damaged)?;
    let page_count = pages.len();
    let pages = PageIds::from_names(pages);
    let errors = input.errors().map_err(damaged)?;
    let count = input.count(EPISODE_MIN_BYTES).map_err(damaged)?;
    if pages.names().len() != page_count {
        return Err(CacheError::Damaged(path));
    }
    let position = TailPosition { offset, lines, last_line: last };
    let head = CachedHead { pages, errors, position, episodes: count };
    // Where the episodes start in the body.
    let pos = input.pos;
    Ok(Cached {
        head,
        episodes: Decoder {
            path,
            bytes,
            pos,
            left: count,
            store: store.clone(),
            groups: SharedGroups::default(),
            held: None,
        },
    })
}

/// Save `snapshot` of the run in `dir` as its cache under `root`, atomically (a temporary file renamed over the
/// old one); the cache file's path. Refused when an episode keeps its text in memory, and when
/// `episodes.jsonl` no longer holds the lines the snapshot was read from.
pub fn save(root: &Path, dir: &Path, snapshot: &Snapshot) -> Result<PathBuf, CacheError> {
    // One save at a time: two would write the same temporary file.
    static SAVING: Mutex<()> = Mutex::new(());
    let _saving = SAVING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (path, run) = cache_file(root, dir)?;
    let spans = snapshot
        .episodes
        .iter()
        .map(|e| e.span().ok_or_else(|| CacheError::NotOnDisk { id: e.id.to_string() }))
        .collect::<Result<Vec<LineSpan>, CacheError>>()?;
    let episodes_path = dir.join(EPISODES_FILE);
    let stale = || CacheError::Stale { path: episodes_path.clone() };
    let file = File::open(&episodes_path).map_err(io(&episodes_path))?;
    // The stamp first: a later change other than an append shows at the next open as a stamp that differs.
    let stamp = Stamp::of(&file.metadata().map_err(io(&episodes_path))?);
    // The file still holds the first and last lines read (a rewrite before the stamp shows here).
    for span in [spans.first(), spans.last()].into_iter().flatten() {
        let mut bytes = vec![0u8; usize::try_from(span.len).map_err(|_| stale())?];
        if read_at(&file, &mut bytes, span.offset).is_err() || line_checksum(&bytes) != span.checksum {
            return Err(stale());
        }
    }
    let (lines, last_line) = position(&file, spans.last(), snapshot.offset).map_err(|_| stale())?;
    let checks = content_checks(&file, snapshot.offset).map_err(io(&episodes_path))?;

    let mut out = Output::default();
    out.bytes_field(run.as_os_str().as_encoded_bytes());
    out.u64(stamp.len);
    out.opt_duration(stamp.modified.and_then(since_epoch));
    out.u64(snapshot.offset);
    out.u64(lines);
    out.span(&last_line);
    checks.into_iter().for_each(|c| out.u64(c));
    out.opt_u64(meta_checksum(dir));
    out.u64(snapshot.pages.names().len() as u64);
    snapshot.pages.names().for_each(|name| out.bytes_field(name.as_bytes()));
    out.u64(snapshot.errors.len() as u64);
    for error in &snapshot.errors {
        out.opt_str(error.file.as_deref());
        out.u64(error.line);
        out.bytes_field(error.reason.as_bytes());
    }
    out.u64(snapshot.episodes.len() as u64);
    for (episode, span) in snapshot.episodes.iter().zip(&spans) {
        out.episode(&episode, span);
    }

    let mut bytes = Vec::with_capacity(HEADER_LEN + out.0.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&LOAD_CACHE_FORMAT.to_le_bytes());
    bytes.extend_from_slice(&(out.0.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&content_checksum(&out.0).to_le_bytes());
    bytes.extend_from_slice(&out.0);
    let parent = path.parent().unwrap_or(root);
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    // A viewer killed while saving left its temporary file: nothing else would ever remove it.
    remove_abandoned_temporaries(parent);
    write_atomic(&path, &bytes)?;
    Ok(path)
}

/// The modification time as a duration since the epoch (`None` before it).
fn since_epoch(time: SystemTime) -> Option<Duration> {
    time.duration_since(SystemTime::UNIX_EPOCH).ok()
}

/// The checksum of `run.json`, `None` when there is none.
fn meta_checksum(dir: &Path) -> Option<u64> {
    std::fs::read(dir.join(RUN_META_FILE)).ok().map(|bytes| content_checksum(&bytes))
}

/// Checksums of the first and the last [`CHECKED_BYTES`] of `file` before `offset`.
fn content_checks(file: &File, offset: u64) -> std::io::Result<[u64; 2]> {
    let checked = offset.min(CHECKED_BYTES);
    let mut head = vec![0u8; checked as usize];
    read_at(file, &mut head, 0)?;
    let mut tail = vec![0u8; checked as usize];
    read_at(file, &mut tail, offset - checked)?;
    Ok([content_checksum(&head), content_checksum(&tail)])
}

/// The reader's line count and last line at `offset`, from the last episode's line and the lines after it
/// (broken or blank ones) up to `offset`. An error when `offset` does not end a line after that episode.
fn position(file: &File, last_episode: Option<&LineSpan>, offset: u64) -> Result<(u64, LineSpan), std::io::Error> {
    let (mut lines, start) = last_episode.map_or((0, 0), |s| (s.line, s.offset + s.len));
    let mut last =
        last_episode.copied().unwrap_or(LineSpan { line: 0, offset: 0, len: 0, checksum: line_checksum(&[]) });
    let invalid = || std::io::Error::new(std::io::ErrorKind::InvalidData, "the offset does not end a line");
    let rest = offset.checked_sub(start).ok_or_else(invalid)?;
    let mut bytes = vec![0u8; usize::try_from(rest).map_err(|_| invalid())?];
    read_at(file, &mut bytes, start)?;
    if bytes.last().is_some_and(|&b| b != b'\n') {
        return Err(invalid());
    }
    let mut line_start = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        lines += 1;
        let at = start + line_start as u64;
        last = LineSpan { line: lines, offset: at, len: line.len() as u64, checksum: line_checksum(line) };
        line_start += line.len();
    }
    Ok((lines, last))
}

/// Why a cache file's bytes were not read.
#[derive(Debug)]
enum Damage {
    Foreign,
    Damaged,
}

impl Damage {
    fn error(self, path: &Path) -> CacheError {
        match self {
            Damage::Foreign => CacheError::Foreign(path.to_path_buf()),
            Damage::Damaged => CacheError::Damaged(path.to_path_buf()),
        }
    }
}

/// The body of a cache file, checked against its header.
fn body(bytes: &[u8]) -> Result<&[u8], Damage> {
    let header = bytes.get(..HEADER_LEN).ok_or(Damage::Foreign)?;
    let mut input = Input { bytes: header, pos: MAGIC.len() };
    if &header[..MAGIC.len()] != MAGIC || input.u32()? != LOAD_CACHE_FORMAT {
        return Err(Damage::Foreign);
    }
    let (len, checksum) = (input.u64()?, input.u64()?);
    let body = &bytes[HEADER_LEN..];
    if body.len() as u64 != len || content_checksum(body) != checksum {
        return Err(Damage::Damaged);
    }
    Ok(body)
}

/// The cache file being written.
#[derive(Default)]
struct Output(Vec<u8>);

impl Output {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    fn bytes_field(&mut self, bytes: &[u8]) {
        self.u64(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn opt_u64(&mut self, v: Option<u64>) {
        self.u8(u8::from(v.is_some()));
        self.u64(v.unwrap_or(0));
    }

    fn opt_str(&mut self, v: Option<&str>) {
        self.u8(u8::from(v.is_some()));
        self.bytes_field(v.unwrap_or("").as_bytes());
    }

    fn opt_duration(&mut self, v: Option<Duration>) {
        self.u8(u8::from(v.is_some()));
        self.u64(v.map_or(0, |d| d.as_secs()));
        self.u32(v.map_or(0, |d| d.subsec_nanos()));
    }

    fn span(&mut self, span: &LineSpan) {
        [span.line, span.offset, span.len].into_iter().for_each(|v| self.u64(v));
        self.u32(span.checksum);
    }

    fn f64s(&mut self, values: impl ExactSizeIterator<Item = f64>) {
        self.u64(values.len() as u64);
        values.for_each(|v| self.f64(v));
    }

    fn episode(&mut self, episode: &LeanEpisodeRef<'_>, span: &LineSpan) {
        self.bytes_field(episode.id.joined().as_bytes());
        self.bytes_field(episode.group.as_bytes());
        self.u64(episode.iteration as u64);
        self.u8(u8::from(episode.success));
        self.u64(episode.tokens);
        self.u32(episode.token_steps);
        self.span(span);
        self.u64(episode.steps.len() as u64);
        for step in episode.steps.iter() {
            self.0.extend_from_slice(&step.anchor.to_le_bytes());
            self.f64(step.reward);
            self.u32(step.copies);
            self.u16(step.page);
            self.u8(u8::from(step.valid));
        }
        let extras = episode.extras;
        let (source, names, rewards) = (extras.source, extras.reward_names.map(|n| &n[..]), extras.rewards);
        let (advantages, states) = (extras.advantages, extras.states);
        let present = [source.is_some(), names.is_some(), rewards.is_some(), advantages.is_some(), states.is_some()];
        self.u8(present.iter().enumerate().map(|(bit, &p)| u8::from(p) << bit).sum());
        if let Some(source) = source {
            self.bytes_field(source.as_bytes());
        }
        if let Some(names) = names {
            self.u64(names.len() as u64);
            names.iter().for_each(|n| self.bytes_field(n.as_bytes()));
        }
        if let Some(rewards) = rewards {
            self.f64s(rewards.iter());
        }
        if let Some(advantages) = advantages {
            self.f64s(advantages.iter());
        }
        if let Some(states) = states {
            self.u64(states.len() as u64);
            states.iter().for_each(|&state| self.opt_u64(state));
        }
    }
}

/// Bytes of one step in the file.
const STEP_BYTES: usize = 8 + 8 + 4 + 2 + 1;

/// A cache file being read; every read checks that the bytes are there.
struct Input<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Damage> {
        let end = self.pos.checked_add(n).ok_or(Damage::Damaged)?;
        let taken = self.bytes.get(self.pos..end).ok_or(Damage::Damaged)?;
        self.pos = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Damage> {
        self.take(N)?.try_into().map_err(|_| Damage::Damaged)
    }

    fn u8(&mut self) -> Result<u8, Damage> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, Damage> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32, Damage> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, Damage> {
        self.array().map(u64::from_le_bytes)
    }

    fn f64(&mut self) -> Result<f64, Damage> {
        self.u64().map(f64::from_bits)
    }

    /// A count of items of at least `min_bytes` each, checked against the bytes left (so that a damaged count
    /// never reserves more than the file could hold).
    fn count(&mut self, min_bytes: usize) -> Result<usize, Damage> {
        let count = usize::try_from(self.u64()?).map_err(|_| Damage::Damaged)?;
        if count.saturating_mul(min_bytes.max(1)) > self.bytes.len() - self.pos {
            return Err(Damage::Damaged);
        }
        Ok(count)
    }

    fn bytes_field(&mut self) -> Result<&'a [u8], Damage> {
        let len = self.count(1)?;
        self.take(len)
    }

    fn string(&mut self) -> Result<String, Damage> {
        self.str().map(str::to_owned)
    }

    fn strings(&mut self) -> Result<Vec<String>, Damage> {
        let count = self.count(8)?;
        (0..count).map(|_| self.string()).collect()
    }

    fn flag(&mut self) -> Result<bool, Damage> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Damage::Damaged),
        }
    }

    fn opt_u64(&mut self) -> Result<Option<u64>, Damage> {
        let present = self.flag()?;
        let v = self.u64()?;
        Ok(present.then_some(v))
    }

    fn opt_string(&mut self) -> Result<Option<String>, Damage> {
        let present = self.flag()?;
        let v = self.string()?;
        Ok(present.then_some(v))
    }

    /// The recorded length and modification time of `episodes.jsonl`.
    fn stamp(&mut self) -> Result<(u64, Option<Duration>), Damage> {
        let len = self.u64()?;
        let present = self.flag()?;
        let (secs, nanos) = (self.u64()?, self.u32()?);
        if nanos >= 1_000_000_000 {
            return Err(Damage::Damaged);
        }
        Ok((len, present.then(|| Duration::new(secs, nanos))))
    }

    fn span(&mut self) -> Result<LineSpan, Damage> {
        Ok(LineSpan { line: self.u64()?, offset: self.u64()?, len: self.u64()?, checksum: self.u32()? })
    }

    fn f64s(&mut self) -> Result<Vec<f64>, Damage> {
        let count = self.count(8)?;
        (0..count).map(|_| self.f64()).collect()
    }

    fn states(&mut self) -> Result<Vec<Option<u64>>, Damage> {
        let count = self.count(1 + 8)?;
        (0..count).map(|_| self.opt_u64()).collect()
    }

    fn errors(&mut self) -> Result<Vec<LineError>, Damage> {
        let count = self.count(1 + 8 + 8 + 8)?;
        (0..count)
            .map(|_| Ok(LineError { file: self.opt_string()?, line: self.u64()?, reason: self.string()? }))
            .collect()
    }

    fn str(&mut self) -> Result<&'a str, Damage> {
        std::str::from_utf8(self.bytes_field()?).map_err(|_| Damage::Damaged)
    }

    fn episode(&mut self, store: &TextStore, groups: &mut SharedGroups) -> Result<LeanEpisode, Damage> {
        let (id, group) = (self.str()?.into(), groups.share(self.str()?));
        let iteration = self.u64()? as i64;
        let success = self.flag()?;
        let (tokens, token_steps) = (self.u64()?, self.u32()?);
        let span = self.span()?;
        let count = self.count(STEP_BYTES)?;
        let steps = (0..count)
            .map(|_| {
                let mut step = Input { bytes: self.take(STEP_BYTES)?, pos: 0 };
                let (anchor, reward) = (u64::from_le_bytes(step.array()?), step.f64()?);
                let (copies, page, valid) = (step.u32()?, step.u16()?, step.flag()?);
                Ok(LeanStep { anchor, reward, copies, page, valid })
            })
            .collect::<Result<Box<[LeanStep]>, Damage>>()?;
        let present = self.u8()?;
        if present > 0b1_1111 {
            return Err(Damage::Damaged);
        }
        let has = |bit: u8| present & (1 << bit) != 0;
        let extras = LeanExtras {
            source: if has(0) { Some(self.string()?) } else { None },
            reward_names: if has(1) { Some(Arc::from(self.strings()?)) } else { None },
            rewards: if has(2) { Some(self.f64s()?) } else { None },
            advantages: if has(3) { Some(self.f64s()?) } else { None },
            states: if has(4) { Some(self.states()?) } else { None },
        };
        let extras = (present != 0).then(|| Box::new(extras));
        let text = EpisodeText::OnDisk { span, store: store.clone() };
        Ok(LeanEpisode { id, group, iteration, success, tokens, token_steps, steps, extras, text })
    }
}
