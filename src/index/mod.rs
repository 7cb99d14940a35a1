//! The trajectory index behind the TUI's search view and `gigscope search`: a tantivy index with one
//! document per step, over the step's text (observation, action, response, thought), its episode's instruction
//! and outcome, and the advantages the engine computed for it.
//!
//! `action` is the step's action as the environment parsed it from the response, by the settings' action rule
//! ([`crate::text::action`]: the content of `<action>…</action>`, or the run's regex): `action:"buy now"` finds
//! the steps whose action is that, not those whose thought mentions it, and two responses with the same action
//! and different thoughts match alike. `response` is the response as recorded, whole, so its thought stays
//! searchable; where the rule takes the whole response (gigscope's own environments), the two are the same text.
//!
//! Queries use tantivy's query language: fielded terms (`page:item`), phrases (`action:"buy now"`), boolean
//! operators (`AND`, `OR`, `NOT`, `-`, parentheses), ranges (`reward:[0 TO 0.5]`, `adv:{* TO -1}`) and
//! comparisons (`adv:<-1`, `reward:>=0.5`, which tantivy 0.27's grammar accepts natively). Unfielded words
//! search instruction, observation, action, response and thought; several words must all match.
//!
//! Where it lives and when it is rebuilt:
//! - Under a cache directory ([`default_cache_dir`]), keyed by a hash of the canonical run path and a hash
//!   of the advantage settings: the advantage fields (`adv`, `adv_e`, `adv_s`, `return`, `step_group_size`)
//!   depend on every setting, so each settings variant gets its own index and switching back to earlier
//!   settings reuses it. The few most recently used variants per run are kept. Nothing is written into the
//!   run directory; a cache directory inside the run is refused.
//! - The commit payload records how many episodes are indexed and a digest of them, atomically with the
//!   documents. [`TrajectoryIndex::update`] indexes only what is new, unless the digest shows the run was
//!   truncated or replaced (then it rebuilds).
//! - Advantages are relative to the episode group, so an episode appended to a group changes the advantages
//!   of that group's earlier episodes. An update therefore re-indexes whole groups: every group that gains
//!   an episode is deleted and written again. In a live run groups fill up one iteration at a time, so this
//!   stays small.
//! - [`TrajectoryIndex::update_in_batches`] commits after every batch of episodes and reports how far it is;
//!   [`IndexSearcher`] handles (from [`TrajectoryIndex::searcher`]) search the latest commit from any thread
//!   meanwhile, and a [`Snapshot`] pairs the documents searched with the number of episodes they cover. A
//!   cancelled update leaves a valid index of the episodes committed so far; the next update goes on from there.
//! - The computed numbers (`return`, `adv`, `adv_e`, `adv_s`) are fast-field columns, not indexed terms (they
//!   are nearly all distinct): ranges and comparisons scan the column, and an exact value is a one-point range.

mod cache;
mod directory;
mod schema;
mod source;

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use tantivy::collector::{Collector, Count, SegmentCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::merge_policy::LogMergePolicy;
use tantivy::query::{Occur, Query, QueryParser, QueryParserError};
use tantivy::query_grammar::{self, UserInputAst, UserInputBound, UserInputLeaf};
use tantivy::schema::{OwnedValue, Schema, Value};
use tantivy::{
    DocAddress, DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, SegmentOrdinal, SegmentReader,
    TantivyDocument, Term,
};

use crate::advantage::{AdvantageSettings, AdvantageTable};
use crate::env::PageAnchor;
use crate::run::text_on_disk::TextError;
use crate::run::Episode;
use crate::text::action::ActionRule;

pub use cache::default_cache_dir;
use cache::{settings_key, PrefixDigest, INDEX_FORMAT};
use directory::{NamingDirectory, WriteFailures};
use schema::{Fields, COLUMN_ONLY_FIELDS, REWARDS_FIELD};
pub use schema::{NUMERIC_FIELDS, STRING_FIELDS, TEXT_FIELDS};
pub use source::{Fetched, IndexSource};

/// Settings variants kept per run; older ones are deleted when a new one is created.
const KEEP_SETTINGS_VARIANTS: usize = 3;
/// Indexing threads: tantivy's writer threads each build their own segment; the calling thread builds the
/// documents. More than 4 does not pay on a run's size.
const MAX_WRITER_THREADS: usize = 4;
/// Memory per indexing thread for a small (incremental) update; tantivy needs at least 15 MB per thread.
const SMALL_BUDGET_PER_THREAD: usize = 32 << 20;
/// Memory per indexing thread for a bulk build: a thread flushes a segment when its arena is full, so a
/// larger arena means fewer, larger segments and no merging afterwards.
const BULK_BUDGET_PER_THREAD: usize = 384 << 20;
/// Updates writing at least this many steps are bulk builds.
const BULK_STEPS: usize = 50_000;
/// Segments with more documents than this are never merged: they come from bulk builds (a writer thread's
/// share of a batch of 10,000 episodes is about 75,000 steps), and merging them would rewrite much of the
/// index, during the build or in a later small update that waits for its merges. The small segments
/// incremental updates add are merged among themselves (8 at a time) until they reach this size.
const MAX_DOCS_BEFORE_MERGE: usize = 50_000;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("no cache directory: set GIGSCOPE_CACHE, XDG_CACHE_HOME or HOME")]
    NoCacheDir,
    #[error("run directory {}: {source}", path.display())]
    RunDir { path: PathBuf, source: io::Error },
    #[error("cache directory {} is inside the run directory {}; the index never writes into a run", cache.display(), run.display())]
    CacheInsideRun { cache: PathBuf, run: PathBuf },
    #[error("cache directory {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("the index at {} is being written by another gigscope process; try again when it is done", path.display())]
    Busy { path: PathBuf },
    #[error("index at {}: {source}", path.display())]
    Tantivy { path: PathBuf, source: tantivy::TantivyError },
    /// A write failed where tantivy's error does not say which (an indexing thread's failure reported as a
    /// killed writer): `failure` is that write's error, naming its file.
    #[error("index at {}: {failure} ({source})", path.display())]
    Written { path: PathBuf, failure: String, source: tantivy::TantivyError },
    #[error("bad query `{query}`: {message}")]
    Query { query: String, message: String },
    #[error("the advantage table covers {table} episodes but {episodes} episodes were given")]
    TableMismatch { table: usize, episodes: usize },
    /// An episode's text could not be read back from the run (for a source that keeps it on disk).
    #[error("reading an episode to index it: {0}")]
    Text(#[from] TextError),
}

/// One matching step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hit {
    /// Index of the episode among the run's episodes (file order).
    pub episode: usize,
    pub episode_id: String,
    /// 0-based step index.
    pub step: usize,
    /// tantivy's BM25 score; constant for pure filters (ranges, exact terms).
    pub score: f32,
}

/// The best hits (by score, then file order) and how many steps matched in all.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SearchResults {
    pub total: usize,
    pub hits: Vec<Hit>,
}

/// What an [`TrajectoryIndex::update`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// The index was emptied first (run truncated or replaced).
    pub rebuilt: bool,
    /// Episodes written (new ones plus the earlier members of their groups).
    pub episodes_written: usize,
    /// Steps written.
    pub steps_written: usize,
    /// Episodes in the index after the update.
    pub episodes_indexed: usize,
    /// The progress callback of [`TrajectoryIndex::update_in_batches`] stopped the update early: the index
    /// holds the first `episodes_indexed` episodes, and a later update goes on from there.
    pub cancelled: bool,
}

/// How far an [`TrajectoryIndex::update_in_batches`] is, reported after every commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Episodes searchable now: the first `episodes_indexed` episodes of the run.
    pub episodes_indexed: usize,
    /// Episodes the index holds when the update is done.
    pub episodes_total: usize,
    /// Episodes written so far by this update (new ones plus earlier members of their groups).
    pub episodes_written: usize,
    /// Steps written so far by this update.
    pub steps_written: usize,
    /// The update started from an empty index (first build, or the run was truncated or replaced).
    pub rebuilt: bool,
}

/// What the commit payload records about the indexed episodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    settings: String,
    episodes: usize,
    /// [`PrefixDigest`] of the indexed episodes, hex.
    digest: String,
}

pub struct TrajectoryIndex {
    dir: PathBuf,
    index: Index,
    /// The first write through the index's directory that failed, for errors tantivy reports without it.
    failures: WriteFailures,
    fields: Fields,
    manifest: Manifest,
    settings_key: String,
    searcher: IndexSearcher,
    /// The run's environment's page anchor, for steps that record no `page` (runs recorded elsewhere).
    page_anchor: Option<PageAnchor>,
    /// How `action` is read from a step's response (the settings' rule, part of the index's key).
    action_rule: ActionRule,
}

/// A handle that searches the committed part of a [`TrajectoryIndex`], shareable with other threads
/// (`Clone + Send + Sync`): while one thread runs [`TrajectoryIndex::update_in_batches`], another searches
/// through this handle and sees each batch as soon as it is committed.
#[derive(Clone)]
pub struct IndexSearcher {
    shared: Arc<SearchShared>,
}

struct SearchShared {
    dir: PathBuf,
    fields: Fields,
    parser: QueryParser,
    reader: IndexReader,
    current: RwLock<Committed>,
}

#[derive(Clone)]
struct Committed {
    searcher: Searcher,
    episodes: usize,
}

/// One committed state of the index: the searches of a snapshot all see the same documents, which are
/// those of the first [`Snapshot::episodes_indexed`] episodes.
#[derive(Clone)]
pub struct Snapshot {
    committed: Committed,
    shared: Arc<SearchShared>,
}

impl TrajectoryIndex {
    /// Open (or create) the index of `run_dir` for `settings` under `cache_root` (see
    /// [`default_cache_dir`]). The run directory is only resolved to its canonical path, never written.
    pub fn open(run_dir: &Path, cache_root: &Path, settings: &AdvantageSettings) -> Result<Self, IndexError> {
        let run =
            run_dir.canonicalize().map_err(|source| IndexError::RunDir { path: run_dir.to_path_buf(), source })?;
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| IndexError::Io { path, source }
        };
        fs::create_dir_all(cache_root).map_err(io_err(cache_root))?;
        let cache = cache_root.canonicalize().map_err(io_err(cache_root))?;
        if cache.starts_with(&run) {
            return Err(IndexError::CacheInsideRun { cache, run });
        }
        let dir = cache::index_dir(&cache, &run, settings);
        let fresh = !dir.exists();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let (schema, fields) = schema::build();
        let failures = WriteFailures::default();
        let index = match open_or_create(&dir, schema.clone(), &failures) {
            Ok(index) if is_intact(&index) => index,
            // The cache can always be rebuilt from the run: a damaged or foreign index is replaced.
            Ok(_) | Err(_) => {
                fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
                fs::create_dir_all(&dir).map_err(io_err(&dir))?;
                open_or_create(&dir, schema, &failures)
                    .map_err(|source| IndexError::Tantivy { path: dir.clone(), source })?
            }
        };
        let tantivy_err = |source| IndexError::Tantivy { path: dir.clone(), source };
        let settings_key = settings_key(settings);
        let manifest = index
            .load_metas()
            .map_err(tantivy_err)?
            .payload
            .and_then(|p| serde_json::from_str::<Manifest>(&p).ok())
            .filter(|m| m.format == INDEX_FORMAT && m.settings == settings_key)
            .unwrap_or_default();
        let reader: IndexReader =
            index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(tantivy_err)?;
        let mut parser = QueryParser::for_index(
            &index,
            vec![fields.instruction, fields.observation, fields.action, fields.response, fields.thought],
        );
        // Typing more words narrows the results, as in every search box.
        parser.set_conjunction_by_default();
        if fresh {
            if let Some(run_root) = dir.parent() {
                evict_old_variants(run_root, &dir);
            }
        }
        let current = RwLock::new(Committed { searcher: reader.searcher(), episodes: manifest.episodes });
        let searcher =
            IndexSearcher { shared: Arc::new(SearchShared { dir: dir.clone(), fields, parser, reader, current }) };
        Ok(TrajectoryIndex {
            dir,
            index,
            failures,
            fields,
            manifest,
            settings_key,
            searcher,
            page_anchor: None,
            action_rule: settings.action,
        })
    }

    /// Index each step that records no `page` under the one `page_anchor` derives from its observation (the
    /// run's environment's, [`crate::env_registry::page_anchor`]), as the engine's page anchors see it: `page:item` then
    /// finds the same steps in a run recorded elsewhere as in one gigscope recorded.
    pub fn with_page_anchor(self, page_anchor: Option<PageAnchor>) -> Self {
        TrajectoryIndex { page_anchor, ..self }
    }

    /// Open under [`default_cache_dir`].
    pub fn open_default(run_dir: &Path, settings: &AdvantageSettings) -> Result<Self, IndexError> {
        let cache = default_cache_dir().ok_or(IndexError::NoCacheDir)?;
        Self::open(run_dir, &cache, settings)
    }

    /// Where the index files are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Episodes the index holds.
    pub fn episodes_indexed(&self) -> usize {
        self.manifest.episodes
    }

    /// Bring the index up to date with `episodes` (the run's episodes in file order) and `table` (the
    /// engine's output for exactly these episodes under the settings the index was opened with), in one
    /// commit.
    pub fn update(
        &mut self,
        episodes: &(impl IndexSource + ?Sized),
        table: &AdvantageTable,
    ) -> Result<UpdateStats, IndexError> {
        self.update_in_batches(episodes, table, usize::MAX, |_| ControlFlow::Continue(()))
    }

    /// [`update`](Self::update) in batches of `batch` episodes (file order), each committed before the next
    /// is written: after every commit the batch is searchable through [`searcher`](Self::searcher) handles
    /// (from any thread), and `progress` is told how far the update is. When `progress` returns
    /// [`ControlFlow::Break`], the update stops there: the index is valid and holds the first
    /// `episodes_indexed` episodes, and a later update goes on from there.
    ///
    /// A batch writes its episodes and the earlier members of their groups (whose advantages the table
    /// gives relative to the whole group), so a committed prefix is always consistent with `table`.
    pub fn update_in_batches(
        &mut self,
        episodes: &(impl IndexSource + ?Sized),
        table: &AdvantageTable,
        batch: usize,
        mut progress: impl FnMut(Progress) -> ControlFlow<()>,
    ) -> Result<UpdateStats, IndexError> {
        let n = episodes.episode_count();
        let table_episodes = table.episode_count();
        if table_episodes != n {
            return Err(IndexError::TableMismatch { table: table_episodes, episodes: n });
        }
        let known = self.manifest.episodes;
        // One pass over the episodes: hash the prefix the index claims to hold, compare, and later extend the
        // same hash over the rest for the new manifests.
        let prefix = known.min(n);
        let mut digest = PrefixDigest::of(episodes, 0..prefix);
        let rebuilt = !(known <= n && digest.hex() == self.manifest.digest);
        let start = if rebuilt { 0 } else { known };
        if !rebuilt && start == n {
            return Ok(UpdateStats { episodes_indexed: known, ..UpdateStats::default() });
        }
        let mut digested = prefix;
        if rebuilt {
            digest = PrefixDigest::default();
            digested = 0;
        }

        let (dir, failures) = (self.dir.clone(), self.failures.clone());
        let tantivy_err = |source| write_error(&dir, &failures, source);
        let new_steps = (start..n).map(|e| table.rows_of(e).len()).sum::<usize>();
        let mut writer = self.writer(new_steps >= BULK_STEPS)?;
        if rebuilt {
            writer.delete_all_documents().map_err(tantivy_err)?;
        }
        let batch = batch.max(1);
        let mut stats = UpdateStats { rebuilt, episodes_indexed: start, ..UpdateStats::default() };
        let mut a = start;
        while a < n {
            let b = a.saturating_add(batch).min(n);
            // Groups gaining an episode: all their members up to `b` are written (again): their advantages
            // are relative to the group. Members before `a` are already in the index and deleted first.
            let groups: BTreeSet<u32> = (a..b).filter_map(|e| table.episode_group_index(e)).collect();
            let mut to_write = Vec::with_capacity(b - a);
            for &g in &groups {
                let (group, members) = (&table.episode_groups[g as usize], table.group_episodes(g as usize));
                // Members are in file order.
                if members.first().is_some_and(|e| (e as usize) < a) {
                    writer.delete_term(Term::from_field_text(self.fields.group, &group.name));
                }
                to_write.extend(members.iter().map(|e| e as usize).take_while(|&e| e < b));
            }
            to_write.sort_unstable();
            for &e in &to_write {
                let episode = episodes.episode(e)?;
                stats.steps_written += self.add_episode(&writer, e, &episode, table)?;
            }
            stats.episodes_written += to_write.len();

            (digested.max(a).min(b)..b).for_each(|e| digest.episode(episodes, e));
            digested = digested.max(b);
            let manifest = Manifest {
                format: INDEX_FORMAT,
                settings: self.settings_key.clone(),
                episodes: b,
                digest: digest.hex(),
            };
            let payload = serde_json::to_string(&manifest).unwrap_or_default();
            let mut commit = writer.prepare_commit().map_err(tantivy_err)?;
            commit.set_payload(&payload);
            commit.commit().map_err(tantivy_err)?;
            self.manifest = manifest;
            self.searcher.publish(b).map_err(tantivy_err)?;
            stats.episodes_indexed = b;
            a = b;
            let report = Progress {
                episodes_indexed: b,
                episodes_total: n,
                episodes_written: stats.episodes_written,
                steps_written: stats.steps_written,
                rebuilt,
            };
            if progress(report).is_break() && a < n {
                stats.cancelled = true;
                break;
            }
        }
        // Let merges finish so the next search sees few segments and the writer lock is released.
        writer.wait_merging_threads().map_err(tantivy_err)?;
        self.searcher.publish(stats.episodes_indexed).map_err(tantivy_err)?;
        Ok(stats)
    }

    /// A writer for an update: a bulk build gets large arenas (few segments); merging is limited to the
    /// small segments of incremental updates.
    fn writer(&self, bulk: bool) -> Result<IndexWriter, IndexError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_WRITER_THREADS);
        let per_thread = if bulk { BULK_BUDGET_PER_THREAD } else { SMALL_BUDGET_PER_THREAD };
        // A write an earlier update saw fail is not this one's.
        self.failures.take();
        let writer =
            self.index.writer_with_num_threads(threads, threads * per_thread).map_err(|source| match source {
                tantivy::TantivyError::LockFailure(..) => IndexError::Busy { path: self.dir.clone() },
                source => write_error(&self.dir, &self.failures, source),
            })?;
        let mut policy = LogMergePolicy::default();
        policy.set_max_docs_before_merge(MAX_DOCS_BEFORE_MERGE);
        writer.set_merge_policy(Box::new(policy));
        self.remove_leftovers_of_killed_writers(&writer)?;
        Ok(writer)
    }

    /// Remove what a writer killed before it finished left in the directory, before `writer` writes: the files
    /// of its unfinished commit, which the committed `meta.json` does not use, and the temporaries of tantivy's
    /// atomic writes of `meta.json` and `.managed.json` (`.tmpXXXXXX`). The files matter beyond their space: a
    /// killed writer's delete file (`<segment>.<opstamp>.del`) has the very name this writer's commit gives its
    /// own when it does what the killed one did from the same commit, and tantivy never overwrites a file, so the
    /// commit, and every later update and search, failed with `FileAlreadyExists`. tantivy's garbage collection
    /// removes the files it created that the last commit does not use (it runs after each commit, which the killed
    /// writer never reached); the temporaries are not tantivy's managed files, and only a writer writes them: this
    /// one holds the writer lock, so every one there is a dead writer's.
    fn remove_leftovers_of_killed_writers(&self, writer: &IndexWriter) -> Result<(), IndexError> {
        writer.garbage_collect_files().wait().map_err(|source| write_error(&self.dir, &self.failures, source))?;
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| IndexError::Io { path, source }
        };
        for entry in fs::read_dir(&self.dir).map_err(io_err(&self.dir))? {
            let entry = entry.map_err(io_err(&self.dir))?;
            if entry.file_name().as_encoded_bytes().starts_with(b".tmp") {
                fs::remove_file(entry.path()).map_err(io_err(&entry.path()))?;
            }
        }
        Ok(())
    }

    fn add_episode(
        &self,
        writer: &IndexWriter,
        e: usize,
        episode: &Episode,
        table: &AdvantageTable,
    ) -> Result<usize, IndexError> {
        let f = &self.fields;
        let rows = table.episode_rows(e);
        let success = episode.success();
        let (names, values) = episode.reward_functions().unwrap_or_default();
        let unscored = crate::advantage::trl::is_unscored(&values);
        let rewards: std::collections::BTreeMap<String, OwnedValue> = names
            .into_iter()
            .zip(values)
            .filter(|(_, v)| !v.is_nan())
            .map(|(name, v)| (name, OwnedValue::F64(v)))
            .collect();
        for (t, (step, row)) in episode.steps.iter().zip(&rows).enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(f.instruction, episode.instruction());
            doc.add_text(f.observation, &step.observation);
            doc.add_text(f.action, self.action_rule.extract(&step.action));
            doc.add_text(f.response, &step.action);
            if let Some(thought) = &step.thought {
                doc.add_text(f.thought, thought);
            }
            doc.add_text(f.id, &episode.id);
            doc.add_text(f.group, &episode.group);
            if let Some(page) = step.page.as_deref().or_else(|| self.page_anchor.map(|p| p.of(&step.observation))) {
                doc.add_text(f.page, page);
            }
            doc.add_bool(f.success, success);
            doc.add_bool(f.valid, step.valid);
            // An unscored TRL completion has no reward: `reward:0` does not find it.
            if !unscored {
                doc.add_f64(f.reward, step.reward);
                doc.add_f64(f.ret, row.ret);
            }
            if let Some(&stored) = episode.advantages.as_ref().and_then(|a| a.get(t)) {
                doc.add_f64(f.stored_adv, stored);
                doc.add_f64(f.delta, stored - row.advantage);
            }
            if !rewards.is_empty() {
                doc.add_object(f.rewards, rewards.clone());
            }
            doc.add_f64(f.adv, row.advantage);
            doc.add_f64(f.adv_e, row.episode_advantage);
            doc.add_f64(f.adv_s, row.step_advantage);
            doc.add_i64(f.iteration, episode.iteration);
            doc.add_u64(f.step, t as u64);
            let group_size = table.anchor_groups.get_size(row.step_group as usize).unwrap_or(1);
            doc.add_u64(f.step_group_size, group_size as u64);
            doc.add_u64(f.episode, e as u64);
            writer.add_document(doc).map_err(|source| write_error(&self.dir, &self.failures, source))?;
        }
        Ok(rows.len().min(episode.steps.len()))
    }

    /// A handle that searches what is committed, usable from other threads while this index is updated.
    pub fn searcher(&self) -> IndexSearcher {
        self.searcher.clone()
    }

    /// Parse `query` without running it: the TUI checks a query as it is typed.
    pub fn parse(&self, query: &str) -> Result<Box<dyn Query>, IndexError> {
        self.searcher.parse(query)
    }

    /// The best `limit` matching steps, by score and then file order, and the number of matches.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchResults, IndexError> {
        self.searcher.search(query, limit)
    }

    /// Every matching step (see [`Snapshot::positions`]).
    pub fn positions(&self, query: &str) -> Result<Vec<(usize, usize)>, IndexError> {
        self.searcher.snapshot().positions(query)
    }
}

impl IndexSearcher {
    /// The latest committed state; its searches all see the same documents.
    pub fn snapshot(&self) -> Snapshot {
        let committed = self.shared.current.read().unwrap_or_else(|e| e.into_inner()).clone();
        Snapshot { committed, shared: self.shared.clone() }
    }

    /// Episodes searchable now (the first ones of the run, in file order).
    pub fn episodes_indexed(&self) -> usize {
        self.shared.current.read().unwrap_or_else(|e| e.into_inner()).episodes
    }

    /// Parse `query` without running it.
    pub fn parse(&self, query: &str) -> Result<Box<dyn Query>, IndexError> {
        self.shared.parse(query)
    }

    /// Search the latest committed state (see [`Snapshot::search`]).
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchResults, IndexError> {
        self.snapshot().search(query, limit)
    }

    /// Make the latest commit, which holds the first `episodes` episodes, the one searches see.
    fn publish(&self, episodes: usize) -> tantivy::Result<()> {
        self.shared.reader.reload()?;
        let searcher = self.shared.reader.searcher();
        *self.shared.current.write().unwrap_or_else(|e| e.into_inner()) = Committed { searcher, episodes };
        Ok(())
    }
}

impl Snapshot {
    /// Episodes this snapshot holds: the first `episodes_indexed` of the run, in file order.
    pub fn episodes_indexed(&self) -> usize {
        self.committed.episodes
    }

    /// The best `limit` matching steps, by score and then file order, and the number of matches.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchResults, IndexError> {
        let parsed = self.shared.parse(query)?;
        let searcher = &self.committed.searcher;
        let tantivy_err = |source| IndexError::Tantivy { path: self.shared.dir.clone(), source };
        if limit == 0 {
            let total = searcher.search(&parsed, &Count).map_err(tantivy_err)?;
            return Ok(SearchResults { total, hits: Vec::new() });
        }
        // Equal scores (every pure filter) fall back to file order: earlier episode, earlier step first.
        let top = TopDocs::with_limit(limit).tweak_score(|segment: &SegmentReader| {
            let column = |name: &str| segment.fast_fields().u64(name).ok().map(|c| c.first_or_default_col(u64::MAX));
            let (episode, step) = (column("episode"), column("step"));
            move |doc, score| {
                let position = (
                    episode.as_ref().map_or(u64::MAX, |c| c.get_val(doc)),
                    step.as_ref().map_or(u64::MAX, |c| c.get_val(doc)),
                );
                (score, Reverse(position))
            }
        });
        let (top, total) = searcher.search(&parsed, &(top, Count)).map_err(tantivy_err)?;
        let mut hits = Vec::with_capacity(top.len());
        for ((score, Reverse((episode, step))), address) in top {
            hits.push(Hit {
                episode: episode as usize,
                episode_id: self.stored_id(searcher, address)?,
                step: step as usize,
                score,
            });
        }
        Ok(SearchResults { total, hits })
    }

    /// Every matching step as (episode, step), in file order: a set of steps (the credit audit's grouping by a
    /// query), read from the fast columns without scoring or the document store.
    pub fn positions(&self, query: &str) -> Result<Vec<(usize, usize)>, IndexError> {
        let parsed = self.shared.parse(query)?;
        let found = self
            .committed
            .searcher
            .search(&parsed, &Positions)
            .map_err(|source| IndexError::Tantivy { path: self.shared.dir.clone(), source })?;
        Ok(found.into_iter().map(|(episode, step)| (episode as usize, step as usize)).collect())
    }

    fn stored_id(&self, searcher: &Searcher, address: DocAddress) -> Result<String, IndexError> {
        let doc: TantivyDocument =
            searcher.doc(address).map_err(|source| IndexError::Tantivy { path: self.shared.dir.clone(), source })?;
        Ok(doc.get_first(self.shared.fields.id).and_then(|v| v.as_str()).unwrap_or_default().to_string())
    }
}

/// Collects every matching document's (episode, step) from the fast columns.
struct Positions;

struct SegmentPositions {
    episode: Column<u64>,
    step: Column<u64>,
    found: Vec<(u64, u64)>,
}

impl Collector for Positions {
    type Fruit = Vec<(u64, u64)>;
    type Child = SegmentPositions;

    fn for_segment(&self, _: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<SegmentPositions> {
        let column = |name: &str| segment.fast_fields().u64(name);
        Ok(SegmentPositions { episode: column("episode")?, step: column("step")?, found: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, segments: Vec<Vec<(u64, u64)>>) -> tantivy::Result<Vec<(u64, u64)>> {
        let mut all: Vec<(u64, u64)> = segments.into_iter().flatten().collect();
        all.sort_unstable();
        Ok(all)
    }
}

impl SegmentCollector for SegmentPositions {
    type Fruit = Vec<(u64, u64)>;

    fn collect(&mut self, doc: DocId, _: Score) {
        // Every document has both (written by `add_episode`).
        if let (Some(episode), Some(step)) = (self.episode.first(doc), self.step.first(doc)) {
            self.found.push((episode, step));
        }
    }

    fn harvest(self) -> Vec<(u64, u64)> {
        self.found
    }
}

impl SearchShared {
    fn parse(&self, query: &str) -> Result<Box<dyn Query>, IndexError> {
        let error = |message: String| IndexError::Query { query: query.to_string(), message };
        let ast = query_grammar::parse_query(query).map_err(|_| {
            let (_, hints) = query_grammar::parse_query_lenient(query);
            let detail =
                hints.first().map_or_else(String::new, |h| format!(" at character {}: {}", h.pos + 1, h.message));
            error(format!("syntax error{detail}; {SYNTAX_HELP}"))
        })?;
        if let Some(field) = field_with_control_character(&ast) {
            return Err(error(format!("the field name {field:?} holds a control character; {SYNTAX_HELP}")));
        }
        self.parser.build_query_from_user_input_ast(rewrite(ast)).map_err(|e| error(explain(&e)))
    }
}

/// The first field name in the query that holds a control character. No field has one, and tantivy's parser
/// must not see one: it ends a JSON field's path (`rewards.NAME`) at a NUL byte and splits it at 0x01, and a
/// range on such a path fails an assertion inside tantivy rather than returning an error.
fn field_with_control_character(ast: &UserInputAst) -> Option<&str> {
    match ast {
        UserInputAst::Clause(children) => children.iter().find_map(|(_, child)| field_with_control_character(child)),
        UserInputAst::Boost(inner, _) => field_with_control_character(inner),
        UserInputAst::Leaf(leaf) => {
            let field = match leaf.as_ref() {
                UserInputLeaf::Literal(literal) => literal.field_name.as_deref(),
                UserInputLeaf::Range { field, .. }
                | UserInputLeaf::Set { field, .. }
                | UserInputLeaf::Regex { field, .. } => field.as_deref(),
                UserInputLeaf::Exists { field } => Some(field.as_str()),
                UserInputLeaf::All => None,
            };
            field.filter(|name| name.chars().any(char::is_control))
        }
    }
}

fn open_or_create(dir: &Path, schema: Schema, failures: &WriteFailures) -> tantivy::Result<Index> {
    let directory = NamingDirectory::open(dir, failures.clone())?;
    Index::open_or_create(directory, schema)
}

/// tantivy's `source` from writing the index in `dir`, with the write that failed ([`WriteFailures`]) where
/// tantivy's message does not carry it.
fn write_error(dir: &Path, failures: &WriteFailures, source: tantivy::TantivyError) -> IndexError {
    match failures.take() {
        Some(failure) if !source.to_string().contains(&failure) => {
            IndexError::Written { path: dir.to_path_buf(), failure, source }
        }
        _ => IndexError::Tantivy { path: dir.to_path_buf(), source },
    }
}

/// Whether every file of the index's segments is there with the checksum its footer records, and a reader opens
/// on them. A cache damaged on disk (a file truncated, deleted, or with flipped bytes) would otherwise fail every
/// search, or answer wrongly, until the user found the cache; checked at each open, it is rebuilt instead.
fn is_intact(index: &Index) -> bool {
    let checksums_match = matches!(index.validate_checksum(), Ok(damaged) if damaged.is_empty());
    // Building a reader opens every segment's files (their footers), which fails on a file deleted or cut short.
    checksums_match && index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().is_ok()
}

/// Delete all but the most recently modified settings variants of a run's index (`keep` is the one just
/// created). Best effort: a variant in use by another process is simply left alone.
fn evict_old_variants(run_root: &Path, keep: &Path) {
    let Ok(entries) = fs::read_dir(run_root) else { return };
    let mut variants: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir() && path != keep)
        .map(|path| {
            let modified = fs::metadata(path.join("meta.json")).and_then(|m| m.modified());
            (modified.unwrap_or(std::time::UNIX_EPOCH), path)
        })
        .collect();
    variants.sort_by_key(|v| std::cmp::Reverse(v.0));
    for (_, path) in variants.into_iter().skip(KEEP_SETTINGS_VARIANTS.saturating_sub(1)) {
        let _ = fs::remove_dir_all(path);
    }
}

const SYNTAX_HELP: &str = "write field:word, field:\"a phrase\", AND / OR / NOT, parentheses, \
                           ranges like reward:[0 TO 0.5] or comparisons like adv:<-1";

/// The query as tantivy should run it: purely negative clauses match all but what they exclude (below), and
/// an exact value of a column-only number (`adv_e:4`, see `schema::COLUMN_ONLY_FIELDS`) is the range
/// `[4 TO 4]`, as tantivy's parser only makes term queries on indexed fields.
fn rewrite(ast: UserInputAst) -> UserInputAst {
    negations_match_all(ast)
}

/// A number kept as a column alone: the computed ones, and a reward function's (`rewards.NAME`).
fn is_column_only(field: &str) -> bool {
    COLUMN_ONLY_FIELDS.contains(&field) || field.strip_prefix(REWARDS_FIELD).is_some_and(|rest| rest.starts_with('.'))
}

fn exact_values_as_ranges(leaf: UserInputLeaf) -> UserInputLeaf {
    match leaf {
        UserInputLeaf::Literal(literal)
            if literal.field_name.as_deref().is_some_and(is_column_only) && !literal.prefix =>
        {
            UserInputLeaf::Range {
                field: literal.field_name,
                lower: UserInputBound::Inclusive(literal.phrase.clone()),
                upper: UserInputBound::Inclusive(literal.phrase),
            }
        }
        leaf => leaf,
    }
}

/// tantivy turns `a AND NOT b` into `+a +(-b)`, and a clause with only excluded parts matches nothing, so the
/// query would find nothing (tantivy issue #2584); a bare `NOT b` is refused outright. Users mean "all
/// except b" in both cases, so every purely negative clause gets an explicit match-all part. That part scores
/// 0 (boosted by 0): a bare match-all scores 1 in a segment where the excluded term has postings and nothing
/// where tantivy drops it as matching everything, which ranked equal hits by the segment they were in.
fn negations_match_all(ast: UserInputAst) -> UserInputAst {
    match ast {
        UserInputAst::Clause(children) => {
            let mut children: Vec<_> =
                children.into_iter().map(|(occur, child)| (occur, negations_match_all(child))).collect();
            if !children.is_empty() && children.iter().all(|(occur, _)| *occur == Some(Occur::MustNot)) {
                let all = UserInputAst::Leaf(Box::new(UserInputLeaf::All));
                children.push((Some(Occur::Must), UserInputAst::Boost(Box::new(all), 0.0.into())));
            }
            UserInputAst::Clause(children)
        }
        UserInputAst::Boost(inner, boost) => UserInputAst::Boost(Box::new(negations_match_all(*inner)), boost),
        UserInputAst::Leaf(leaf) => UserInputAst::Leaf(Box::new(exact_values_as_ranges(*leaf))),
    }
}

/// A message that says what is wrong with a query and how to write it. Some of tantivy's messages are
/// misleading (a bad float is reported as "only excluding terms given"), so each case is worded here.
fn explain(error: &QueryParserError) -> String {
    match error {
        QueryParserError::SyntaxError(_) => format!("syntax error; {SYNTAX_HELP}"),
        QueryParserError::FieldDoesNotExist(field) => format!(
            "unknown field `{field}`; fields are {}, {}, {}, and a TRL run's {REWARDS_FIELD}.NAME of each reward \
             function",
            TEXT_FIELDS.join(", "),
            STRING_FIELDS.join(", "),
            NUMERIC_FIELDS.join(", ")
        ),
        QueryParserError::ExpectedFloat(_) => {
            "expected a number (reward, return, adv, adv_e, adv_s, stored_adv, delta, rewards.NAME), e.g. adv:<-1"
                .to_string()
        }
        QueryParserError::ExpectedInt(_) => {
            "expected a whole number (iteration, step, step_group_size, episode), e.g. step:>=3".to_string()
        }
        QueryParserError::ExpectedBool(_) => "expected true or false (success, valid)".to_string(),
        QueryParserError::FieldNotIndexed(field) => {
            format!("`{field}` takes a number, a range or a comparison, e.g. {field}:<-1 or {field}:[0 TO 1]")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::Directory;

    /// An indexing thread's failure reaches the writer's caller as a killed writer, without the write that
    /// failed: the error then names that write's file, and the first failure is taken only once.
    #[test]
    fn a_write_error_tantivy_loses_is_named_from_the_failed_write() {
        let (dir, root) = (tempfile::tempdir().unwrap(), Path::new("/cache/index/run/v"));
        let failures = WriteFailures::default();
        let directory = NamingDirectory::open(dir.path(), failures.clone()).unwrap();
        // A directory removed under the writer: opening a file in it fails, as a full disk's write does.
        std::fs::remove_dir(dir.path()).unwrap();
        assert!(directory.open_write(Path::new("abc.idx")).is_err());
        let killed = tantivy::TantivyError::ErrorInThread("An index writer was killed.".into());
        let message = write_error(root, &failures, killed).to_string();
        let file = format!("{}: ", dir.path().join("abc.idx").display());
        assert!(message.contains(&file), "{message}");
        assert!(message.ends_with("(An error occurred in a thread: 'An index writer was killed.')"), "{message}");
        let again = tantivy::TantivyError::ErrorInThread("An index writer was killed.".into());
        assert!(matches!(write_error(root, &failures, again), IndexError::Tantivy { .. }));
    }
}
