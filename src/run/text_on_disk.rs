//! Episodes without their text: what the numbers and the groupings need, and where the text is on disk.
//!
//! A viewer of a large run cannot hold every observation, prompt and action in memory (read as [`Episode`]s, a
//! run takes more than twice its size on disk). It keeps a [`LeanEpisode`] per episode instead: ids, group, iteration, outcome,
//! per step the reward, validity, copies, a 64-bit hash of the anchor and the environment's anchor (page) as a
//! small interned id (and, apart, the hash of the state each step records, where any does), and the byte span of
//! the episode's line in `episodes.jsonl`. [`TextStore`] reads an
//! episode back from that span when a view shows it, and checks that the line is still the one that was read
//! (a checksum of its bytes): a file truncated, replaced or rewritten since is an error, never other text. A
//! reader makes a lean episode straight from its line (`lean_line`, through `lean_reading`), never holding the
//! text.
//!
//! Exact anchor groups are formed by equality of the 64-bit hashes ([`anchor_hash`], XXH3-64), compared only
//! within an episode group. Two different anchors of one episode group collide with probability about k²/2⁶⁵
//! for k distinct anchors in the group: about 3·10⁻¹⁶ for a WebShop group's hundred, 3·10⁻⁸ for a million. The
//! hash is 8 bytes of every step a viewer keeps (a 128-bit one made a step 32 bytes instead of 24).
//!
//! Episodes read from other layouts (verl dumps, TRL logs: converted from other files, with no line of their
//! own) have their text written as gigscope-run/1 lines to a spill file when a viewer reads them
//! (`super::spill`), and are read back from there by a store kept on that file ([`TextStore::kept_open`])
//! exactly as a gigscope run's lines are; episodes handed over in memory, and those a one-shot reader takes
//! whole, keep their text in memory ([`EpisodeText::InMemory`]).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::format::{Episode, SOURCE_KEY};
use super::span::{line_checksum, read_at, FileIdentity, LineSpan, ReadFrom};

/// The 64-bit hash anchors are grouped by (XXH3-64 of the UTF-8 text).
pub fn anchor_hash(text: &str) -> u64 {
    twox_hash::XxHash3_64::oneshot(text.as_bytes())
}

/// A state fingerprint as a step records it ([`super::Step::state`]): its [`anchor_hash`] in 16 hex digits.
/// Truth rows keep the fingerprint itself, so a step and its truth row agree when this of the row's equals the
/// step's.
pub fn state_hash(fingerprint: &str) -> String {
    format!("{:016x}", anchor_hash(fingerprint))
}

/// An environment anchor (WebShop's page type) as a small id; [`PageIds`] interns the names.
pub type PageId = u16;

/// Interned page names: each distinct name gets the next id. Environments have a handful of page types; past
/// `PageId::MAX` names, the rest share the last id (and so one page anchor group).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageIds {
    names: Vec<Box<str>>,
    ids: HashMap<Box<str>, PageId>,
}

impl PageIds {
    pub fn id(&mut self, name: &str) -> PageId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = PageId::try_from(self.names.len()).unwrap_or(PageId::MAX);
        if id < PageId::MAX {
            self.names.push(name.into());
            self.ids.insert(name.into(), id);
        }
        id
    }

    pub fn name(&self, id: PageId) -> Option<&str> {
        self.names.get(usize::from(id)).map(|n| &**n)
    }

    /// The names in id order (id 0 first).
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// The table that gave `names` their ids in this order ([`PageIds::names`] of a table kept elsewhere).
    pub fn from_names(names: impl IntoIterator<Item = String>) -> PageIds {
        let mut pages = PageIds::default();
        for name in names {
            pages.id(&name);
        }
        pages
    }
}

/// What the engine needs of one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeanStep {
    /// [`anchor_hash`] of the step's anchor (the observation when it has none).
    pub anchor: u64,
    pub reward: f64,
    /// [`super::Step::copies`].
    pub copies: u32,
    /// The environment's anchor: the recorded `page`, else the classification the reader was given.
    pub page: PageId,
    pub valid: bool,
}

/// Where an episode's full record is.
#[derive(Clone, Debug, PartialEq)]
pub enum EpisodeText {
    /// On line `span` of the file `store` reads.
    OnDisk {
        span: LineSpan,
        store: TextStore,
    },
    InMemory(Arc<Episode>),
}

impl EpisodeText {
    /// The full record, read back from disk when it is there.
    pub fn read(&self) -> Result<Arc<Episode>, TextError> {
        match self {
            EpisodeText::InMemory(episode) => Ok(Arc::clone(episode)),
            EpisodeText::OnDisk { span, store } => store.read(span),
        }
    }
}

/// One episode without its text.
#[derive(Clone, Debug, PartialEq)]
pub struct LeanEpisode {
    pub id: Box<str>,
    /// Shared by the group's episodes where they were taken one after another ([`SharedGroups`]).
    pub group: Arc<str>,
    pub iteration: i64,
    pub success: bool,
    /// Σ tokens over the steps (0 for a step without a count), and how many steps record a count.
    pub tokens: u64,
    pub token_steps: u32,
    pub steps: Box<[LeanStep]>,
    /// What few episodes have, apart (most episodes have none of it).
    pub extras: Option<Box<LeanExtras>>,
    pub text: EpisodeText,
}

/// Episode group names shared by the episodes that follow one another in a group: a run's episodes come group
/// by group, so each takes the previous one's name when it is the same, and a group's episodes hold one copy of
/// it (on a run of short episodes, a name of its own per episode was a fifth of what the viewer held).
#[derive(Clone, Debug, Default)]
pub struct SharedGroups {
    last: Option<Arc<str>>,
}

impl SharedGroups {
    /// Names that follow `last`'s (the last episode taken before).
    pub fn after(last: Option<&Arc<str>>) -> SharedGroups {
        SharedGroups { last: last.cloned() }
    }

    /// The name `name`, the previous one's copy when it is the same.
    pub fn share(&mut self, name: &str) -> Arc<str> {
        match &self.last {
            Some(last) if **last == *name => Arc::clone(last),
            _ => Arc::clone(self.last.insert(name.into())),
        }
    }
}

/// The parts of a [`LeanEpisode`] that most episodes lack.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeanExtras {
    /// `extra.source` when it is a string (`"play"` for groups played in the TUI).
    pub source: Option<String>,
    /// Per-reward-function rewards ([`Episode::reward_functions`]): names and values. The names are the same
    /// list for most of a run's episodes, shared: a [`super::LeanEpisodes`] keeps each distinct list once.
    pub reward_names: Option<Arc<[String]>>,
    pub rewards: Option<Vec<f64>>,
    /// What the trainer computed, one per step.
    pub advantages: Option<Vec<f64>>,
    /// [`anchor_hash`] of each step's recorded state ([`super::Step::state`]), when any step records one.
    pub states: Option<Vec<Option<u64>>>,
}

impl LeanExtras {
    /// Boxed apart when the episode has any of it.
    pub(super) fn boxed(self) -> Option<Box<LeanExtras>> {
        (self != LeanExtras::default()).then(|| Box::new(self))
    }
}

/// The steps' hashed states, kept only when some step records one.
pub(super) fn recorded_states(states: impl Iterator<Item = Option<u64>>) -> Option<Vec<Option<u64>>> {
    let states: Vec<Option<u64>> = states.collect();
    states.iter().any(Option::is_some).then_some(states)
}

/// A page anchor of an observation, as an environment gives it (`env_registry::page_anchor`).
pub type PageClassifier = fn(&str) -> &'static str;

impl LeanEpisode {
    /// The lean form of `episode`. Its text stays on disk, read back through `store`, when the reader recorded
    /// where its line is; else it is kept in memory. The page anchor of a step is its recorded `page`, else
    /// `classify(observation)` (the environment's classification, from the layer that knows the environment),
    /// else none (an empty name).
    pub fn new(
        episode: Episode,
        store: &TextStore,
        pages: &mut PageIds,
        classify: Option<&dyn Fn(&str) -> &'static str>,
    ) -> LeanEpisode {
        LeanEpisode::split(episode, store, pages, classify).0
    }

    /// [`LeanEpisode::new`], giving back the parsed episode when its text stays on disk, for the caller to free
    /// where it suits (a part's parsed text is hundreds of thousands of strings: freeing them takes a viewer's
    /// thread milliseconds).
    pub fn split(
        episode: Episode,
        store: &TextStore,
        pages: &mut PageIds,
        classify: Option<&dyn Fn(&str) -> &'static str>,
    ) -> (LeanEpisode, Option<Episode>) {
        let steps: Box<[LeanStep]> = episode
            .steps
            .iter()
            .map(|s| {
                let page = match (&s.page, classify) {
                    (Some(page), _) => pages.id(page),
                    (None, Some(classify)) => pages.id(classify(&s.observation)),
                    (None, None) => pages.id(""),
                };
                LeanStep {
                    anchor: anchor_hash(s.anchor_key()),
                    reward: s.reward,
                    copies: s.copies(),
                    page,
                    valid: s.valid,
                }
            })
            .collect();
        let tokens = episode.steps.iter().map(|s| s.tokens.unwrap_or(0)).sum();
        let token_steps = episode.steps.iter().filter(|s| s.tokens.is_some()).count() as u32;
        let (reward_names, rewards) = episode.reward_functions().unzip();
        let extras = LeanExtras {
            source: episode.extra.get(SOURCE_KEY).and_then(Value::as_str).map(Into::into),
            reward_names: reward_names.map(Arc::from),
            rewards,
            advantages: episode.advantages.clone(),
            states: recorded_states(episode.steps.iter().map(|s| s.state.as_deref().map(anchor_hash))),
        };
        let (id, group, iteration, success) =
            (episode.id.as_str().into(), episode.group.as_str().into(), episode.iteration, episode.success());
        let (text, parsed) = match episode.read_from.0 {
            Some(span) => (EpisodeText::OnDisk { span, store: store.clone() }, Some(episode)),
            None => (EpisodeText::InMemory(Arc::new(episode)), None),
        };
        let extras = extras.boxed();
        (LeanEpisode { id, group, iteration, success, tokens, token_steps, steps, extras, text }, parsed)
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Give the steps' page ids from another table: step page `p` becomes `ids[p]`.
    pub fn renumber_pages(&mut self, ids: &[PageId]) {
        for step in self.steps.iter_mut() {
            step.page = ids.get(usize::from(step.page)).copied().unwrap_or(step.page);
        }
    }

    /// Where the episode's line is, when its text is on disk.
    pub fn span(&self) -> Option<&LineSpan> {
        match &self.text {
            EpisodeText::OnDisk { span, .. } => Some(span),
            EpisodeText::InMemory(_) => None,
        }
    }

    /// `extra.source` when it is a string.
    pub fn source(&self) -> Option<&str> {
        self.extras.as_ref()?.source.as_deref()
    }

    /// What the trainer computed, one per step.
    pub fn advantages(&self) -> Option<&[f64]> {
        self.extras.as_ref()?.advantages.as_deref()
    }

    /// [`anchor_hash`] of step `t`'s recorded state, where it records one.
    pub fn state(&self, t: usize) -> Option<u64> {
        *self.extras.as_ref()?.states.as_ref()?.get(t)?
    }

    /// Per-reward-function rewards, in the trainer's order.
    pub fn rewards(&self) -> Option<&[f64]> {
        self.extras.as_ref()?.rewards.as_deref()
    }

    /// The names of [`Self::rewards`].
    pub fn reward_names(&self) -> Option<&[String]> {
        self.extras.as_ref()?.reward_names.as_deref()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Undiscounted sum of the step rewards ([`Episode::total_reward`]).
    pub fn total_reward(&self) -> f64 {
        self.steps.iter().map(|s| s.reward).sum()
    }
}

/// Reading an episode's text back failed.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: line {line} is no longer the line that was read (the file was truncated, replaced or rewritten)")]
    Changed { path: PathBuf, line: u64 },
    #[error("{path}: line {line}: {message}")]
    Parse { path: PathBuf, line: u64, message: String },
    /// Asked of a viewer for an episode it did not read back for the frame being drawn.
    #[error("not read back yet")]
    NotReadBack,
}

/// Episodes kept in the cache of a [`TextStore`]: the views show a few episodes at a time.
const CACHED_EPISODES: usize = 64;

/// Reads episodes back from their lines in `episodes.jsonl`, with a small cache of the latest ones. Cheap to
/// clone (shared): a background job takes one along.
///
/// Lines are read with positioned reads rather than a memory map: a map of a file that another process
/// truncates faults (SIGBUS) on access, a read just comes back short.
#[derive(Clone, Debug)]
pub struct TextStore {
    inner: Arc<StoreInner>,
}

/// Stores are the same when they read the same file (the name a kept-open file was made at is unique).
impl PartialEq for TextStore {
    fn eq(&self, other: &TextStore) -> bool {
        self.inner.path == other.inner.path
    }
}

#[derive(Debug)]
struct StoreInner {
    path: PathBuf,
    cache: Mutex<VecDeque<(LineSpan, Arc<Episode>)>>,
    /// The file, kept open while the path names it: reading a large run's text back line by line (a grouping,
    /// the search index) opened it once per line, and each open woke every watcher of the run's directory.
    file: Mutex<Option<(Arc<std::fs::File>, FileIdentity)>>,
    /// The store reads this file whatever the path names now (a spill file, removed from its directory once
    /// open: [`TextStore::kept_open`]).
    kept: Option<Arc<std::fs::File>>,
}

impl TextStore {
    /// A store for the lines of the file at `path`.
    pub fn new(path: &Path) -> TextStore {
        let inner =
            StoreInner { path: path.to_path_buf(), cache: Mutex::default(), file: Mutex::default(), kept: None };
        TextStore { inner: Arc::new(inner) }
    }

    /// A store for the lines of `file`, opened at `path` (the name its errors give; no longer in its directory,
    /// maybe): the path is never looked at again.
    pub fn kept_open(file: Arc<std::fs::File>, path: &Path) -> TextStore {
        let inner =
            StoreInner { path: path.to_path_buf(), cache: Mutex::default(), file: Mutex::default(), kept: Some(file) };
        TextStore { inner: Arc::new(inner) }
    }

    /// The file at the path, opened again when the path names another file than the one kept (replaced).
    fn file(&self) -> Result<Arc<std::fs::File>, TextError> {
        if let Some(file) = &self.inner.kept {
            return Ok(Arc::clone(file));
        }
        let io = |source| TextError::Io { path: self.inner.path.clone(), source };
        // A stat of the path, not an open: it wakes no watcher.
        let now = FileIdentity::of(&std::fs::metadata(&self.inner.path).map_err(io)?);
        let mut kept = self.inner.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((file, _)) = kept.as_ref().filter(|(_, identity)| *identity == now) {
            return Ok(Arc::clone(file));
        }
        let file = std::fs::File::open(&self.inner.path).map_err(io)?;
        let identity = FileIdentity::of(&file.metadata().map_err(io)?);
        let file = Arc::new(file);
        *kept = Some((Arc::clone(&file), identity));
        Ok(file)
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Forget what was cached (the file was reset: cached records may no longer be in it).
    pub fn clear(&self) {
        self.cache().clear();
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, VecDeque<(LineSpan, Arc<Episode>)>> {
        // A panic elsewhere while holding the lock leaves a cache that is still consistent (entries are whole).
        self.inner.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The error for a line the file no longer holds as it was read.
    pub fn changed(&self, span: &LineSpan) -> TextError {
        TextError::Changed { path: self.inner.path.clone(), line: span.line }
    }

    /// The episode on line `span`.
    pub fn read(&self, span: &LineSpan) -> Result<Arc<Episode>, TextError> {
        if let Some((_, episode)) = self.cache().iter().find(|(s, _)| s == span) {
            return Ok(Arc::clone(episode));
        }
        let episode = self.parse_at(&*self.file()?, span)?;
        let episode = Arc::new(episode);
        let mut cache = self.cache();
        if cache.len() == CACHED_EPISODES {
            cache.pop_front();
        }
        cache.push_back((*span, Arc::clone(&episode)));
        Ok(episode)
    }
}

/// The anchors of an episode's steps, and nothing else of its line.
#[derive(serde::Deserialize)]
struct StepAnchors<'a> {
    #[serde(borrow)]
    steps: Vec<StepAnchor<'a>>,
}

#[derive(serde::Deserialize)]
struct StepAnchor<'a> {
    #[serde(borrow)]
    observation: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    anchor: Option<std::borrow::Cow<'a, str>>,
}

impl TextStore {
    /// The anchor of every step of the episode on line `span` (its observation where it has none), read past
    /// the cache and parsed for nothing else: what a similarity grouping needs of a run kept on disk.
    pub fn anchors(&self, span: &LineSpan) -> Result<Vec<Arc<str>>, TextError> {
        let bytes = self.line_at(&*self.file()?, span)?;
        let parse = |message: String| TextError::Parse { path: self.inner.path.clone(), line: span.line, message };
        let text = std::str::from_utf8(&bytes).map_err(|e| parse(e.to_string()))?;
        let record: StepAnchors<'_> =
            serde_json::from_str(text.trim_end_matches(['\n', '\r'])).map_err(|e| parse(e.to_string()))?;
        Ok(record.steps.into_iter().map(|s| Arc::from(&*s.anchor.unwrap_or(s.observation))).collect())
    }

    /// The episode on line `span` of `file`, checked to be the line that was read.
    fn parse_at(&self, file: &std::fs::File, span: &LineSpan) -> Result<Episode, TextError> {
        let bytes = self.line_at(file, span)?;
        let parse = |message: String| TextError::Parse { path: self.inner.path.clone(), line: span.line, message };
        let text = std::str::from_utf8(&bytes).map_err(|e| parse(e.to_string()))?;
        let mut episode: Episode =
            serde_json::from_str(text.trim_end_matches(['\n', '\r'])).map_err(|e| parse(e.to_string()))?;
        episode.read_from = ReadFrom(Some(*span));
        Ok(episode)
    }

    /// The bytes of line `span` of `file`, checked to be the line that was read.
    fn line_at(&self, file: &std::fs::File, span: &LineSpan) -> Result<Vec<u8>, TextError> {
        let len = usize::try_from(span.len).map_err(|_| self.changed(span))?;
        let mut bytes = vec![0u8; len];
        match read_at(file, &mut bytes, span.offset) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Err(self.changed(span)),
            Err(source) => return Err(TextError::Io { path: self.inner.path.clone(), source }),
        }
        if line_checksum(&bytes) != span.checksum {
            return Err(self.changed(span));
        }
        Ok(bytes)
    }
}
