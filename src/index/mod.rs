//! The trajectory index behind the TUI's search view and `gigscope search`: a tantivy index with one
//! document per step, over the step's text (observation, action, thought), its episode's instruction and
//! outcome, and the advantages the engine computed for it.
//!
//! Queries use tantivy's query language: fielded terms (`page:item`), phrases (`action:"buy now"`), boolean
//! operators (`AND`, `OR`, `NOT`, `-`, parentheses), ranges (`reward:[0 TO 0.5]`, `adv:{* TO -1}`) and
//! comparisons (`adv:<-1`, `reward:>=0.5`, which tantivy 0.27's grammar accepts natively). Unfielded words
//! search instruction, observation, action and thought; several words must all match.
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

mod cache;
mod schema;

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::collector::{Count, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::query::{Occur, Query, QueryParser, QueryParserError};
use tantivy::query_grammar::{self, UserInputAst, UserInputLeaf};
use tantivy::schema::{Schema, Value};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, SegmentReader, TantivyDocument, Term};

use crate::advantage::{AdvantageSettings, AdvantageTable};
use crate::run::Episode;

pub use cache::default_cache_dir;
use cache::{settings_key, PrefixDigest, INDEX_FORMAT};
use schema::Fields;
pub use schema::{NUMERIC_FIELDS, STRING_FIELDS, TEXT_FIELDS};

/// Settings variants kept per run; older ones are deleted when a new one is created.
const KEEP_SETTINGS_VARIANTS: usize = 3;
/// Memory for the indexing threads; tantivy needs at least 15 MB per thread.
const WRITER_BUDGET_PER_THREAD: usize = 64 << 20;

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
    #[error("bad query `{query}`: {message}")]
    Query { query: String, message: String },
    #[error("the advantage table covers {table} episodes but {episodes} episodes were given")]
    TableMismatch { table: usize, episodes: usize },
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
    reader: IndexReader,
    fields: Fields,
    parser: QueryParser,
    manifest: Manifest,
    settings_key: String,
}

impl TrajectoryIndex {
    /// Open (or create) the index of `run_dir` for `settings` under `cache_root` (see
    /// [`default_cache_dir`]). The run directory is only resolved to its canonical path, never written.
    pub fn open(run_dir: &Path, cache_root: &Path, settings: &AdvantageSettings) -> Result<Self, IndexError> {
        let run = run_dir.canonicalize().map_err(|source| IndexError::RunDir { path: run_dir.to_path_buf(), source })?;
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
        let index = match open_or_create(&dir, schema.clone()) {
            Ok(index) => index,
            // The cache can always be rebuilt from the run: a damaged or foreign index is replaced.
            Err(_) => {
                fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
                fs::create_dir_all(&dir).map_err(io_err(&dir))?;
                open_or_create(&dir, schema).map_err(|source| IndexError::Tantivy { path: dir.clone(), source })?
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
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(tantivy_err)?;
        let mut parser = QueryParser::for_index(
            &index,
            vec![fields.instruction, fields.observation, fields.action, fields.thought],
        );
        // Typing more words narrows the results, as in every search box.
        parser.set_conjunction_by_default();
        if fresh {
            if let Some(run_root) = dir.parent() {
                evict_old_variants(run_root, &dir);
            }
        }
        Ok(TrajectoryIndex { dir, index, reader, fields, parser, manifest, settings_key })
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
    /// engine's output for exactly these episodes under the settings the index was opened with).
    pub fn update(&mut self, episodes: &[Episode], table: &AdvantageTable) -> Result<UpdateStats, IndexError> {
        let table_episodes = table.row_offsets.len().saturating_sub(1);
        if table_episodes != episodes.len() || table.episode_group_of.len() != episodes.len() {
            return Err(IndexError::TableMismatch { table: table_episodes, episodes: episodes.len() });
        }
        let known = self.manifest.episodes;
        // One pass over the episodes: hash the prefix the index claims to hold, compare, and later extend the
        // same hash over the rest for the new manifest.
        let prefix = known.min(episodes.len());
        let mut digest = PrefixDigest::of(&episodes[..prefix]);
        let same_prefix = known <= episodes.len() && digest.hex() == self.manifest.digest;
        let rebuilt = !same_prefix;
        let start = if rebuilt { 0 } else { known };
        if !rebuilt && start == episodes.len() {
            return Ok(UpdateStats { episodes_indexed: known, ..UpdateStats::default() });
        }

        let tantivy_err = |source| IndexError::Tantivy { path: self.dir.clone(), source };
        let mut writer = self.writer()?;
        // Groups gaining an episode: all their members are written again (their advantages changed).
        let groups: BTreeSet<u32> = table.episode_group_of[start..].iter().copied().collect();
        let to_write: Vec<usize> = if rebuilt {
            writer.delete_all_documents().map_err(tantivy_err)?;
            (0..episodes.len()).collect()
        } else {
            for &g in &groups {
                let name = &table.episode_groups[g as usize].name;
                writer.delete_term(Term::from_field_text(self.fields.group, name));
            }
            let mut list: Vec<usize> = groups
                .iter()
                .flat_map(|&g| table.episode_groups[g as usize].episodes.iter().map(|&e| e as usize))
                .collect();
            list.sort_unstable();
            list
        };
        let mut steps_written = 0;
        for &e in &to_write {
            steps_written += self.add_episode(&writer, e, &episodes[e], table)?;
        }

        let manifest = Manifest {
            format: INDEX_FORMAT,
            settings: self.settings_key.clone(),
            episodes: episodes.len(),
            digest: {
                episodes[prefix..].iter().for_each(|e| digest.episode(e));
                digest.hex()
            },
        };
        let payload = serde_json::to_string(&manifest).unwrap_or_default();
        let mut commit = writer.prepare_commit().map_err(tantivy_err)?;
        commit.set_payload(&payload);
        commit.commit().map_err(tantivy_err)?;
        // Let merges finish so the next search sees few segments and the writer lock is released.
        writer.wait_merging_threads().map_err(tantivy_err)?;
        self.reader.reload().map_err(tantivy_err)?;
        self.manifest = manifest;
        Ok(UpdateStats {
            rebuilt,
            episodes_written: to_write.len(),
            steps_written,
            episodes_indexed: episodes.len(),
        })
    }

    fn writer(&self) -> Result<IndexWriter, IndexError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
        self.index.writer_with_num_threads(threads, threads * WRITER_BUDGET_PER_THREAD).map_err(|source| match source {
            tantivy::TantivyError::LockFailure(..) => IndexError::Busy { path: self.dir.clone() },
            source => IndexError::Tantivy { path: self.dir.clone(), source },
        })
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
        for (t, (step, row)) in episode.steps.iter().zip(rows).enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(f.instruction, episode.instruction());
            doc.add_text(f.observation, &step.observation);
            doc.add_text(f.action, &step.action);
            if let Some(thought) = &step.thought {
                doc.add_text(f.thought, thought);
            }
            doc.add_text(f.id, &episode.id);
            doc.add_text(f.group, &episode.group);
            if let Some(page) = &step.page {
                doc.add_text(f.page, page);
            }
            doc.add_bool(f.success, success);
            doc.add_bool(f.valid, step.valid);
            doc.add_f64(f.reward, step.reward);
            doc.add_f64(f.ret, row.ret);
            doc.add_f64(f.adv, row.advantage);
            doc.add_f64(f.adv_e, row.episode_advantage);
            doc.add_f64(f.adv_s, row.step_advantage);
            doc.add_i64(f.iteration, episode.iteration);
            doc.add_u64(f.step, t as u64);
            let group_size = table.anchor_groups.get(row.step_group as usize).map_or(1, |g| g.members.len());
            doc.add_u64(f.step_group_size, group_size as u64);
            doc.add_u64(f.episode, e as u64);
            writer.add_document(doc).map_err(|source| IndexError::Tantivy { path: self.dir.clone(), source })?;
        }
        Ok(rows.len().min(episode.steps.len()))
    }

    /// Parse `query` without running it: the TUI checks a query as it is typed.
    pub fn parse(&self, query: &str) -> Result<Box<dyn Query>, IndexError> {
        let error = |message: String| IndexError::Query { query: query.to_string(), message };
        let ast = query_grammar::parse_query(query).map_err(|_| {
            let (_, hints) = query_grammar::parse_query_lenient(query);
            let detail = hints
                .first()
                .map_or_else(String::new, |h| format!(" at character {}: {}", h.pos + 1, h.message));
            error(format!("syntax error{detail}; {SYNTAX_HELP}"))
        })?;
        self.parser.build_query_from_user_input_ast(negations_match_all(ast)).map_err(|e| error(explain(&e)))
    }

    /// The best `limit` matching steps, by score and then file order, and the number of matches.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchResults, IndexError> {
        let parsed = self.parse(query)?;
        let searcher = self.reader.searcher();
        let tantivy_err = |source| IndexError::Tantivy { path: self.dir.clone(), source };
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
                episode_id: self.stored_id(&searcher, address)?,
                step: step as usize,
                score,
            });
        }
        Ok(SearchResults { total, hits })
    }

    fn stored_id(&self, searcher: &tantivy::Searcher, address: DocAddress) -> Result<String, IndexError> {
        let doc: TantivyDocument =
            searcher.doc(address).map_err(|source| IndexError::Tantivy { path: self.dir.clone(), source })?;
        Ok(doc.get_first(self.fields.id).and_then(|v| v.as_str()).unwrap_or_default().to_string())
    }
}

fn open_or_create(dir: &Path, schema: Schema) -> tantivy::Result<Index> {
    let directory = MmapDirectory::open(dir)?;
    Index::open_or_create(directory, schema)
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

/// tantivy turns `a AND NOT b` into `+a +(-b)`, and a clause with only excluded parts matches nothing, so the
/// query would find nothing (tantivy issue #2584); a bare `NOT b` is refused outright. Users mean "all
/// except b" in both cases, so every purely negative clause gets an explicit match-all part.
fn negations_match_all(ast: UserInputAst) -> UserInputAst {
    match ast {
        UserInputAst::Clause(children) => {
            let mut children: Vec<_> =
                children.into_iter().map(|(occur, child)| (occur, negations_match_all(child))).collect();
            if !children.is_empty() && children.iter().all(|(occur, _)| *occur == Some(Occur::MustNot)) {
                children.push((Some(Occur::Must), UserInputAst::Leaf(Box::new(UserInputLeaf::All))));
            }
            UserInputAst::Clause(children)
        }
        UserInputAst::Boost(inner, boost) => UserInputAst::Boost(Box::new(negations_match_all(*inner)), boost),
        leaf => leaf,
    }
}

/// A message that says what is wrong with a query and how to write it. Some of tantivy's messages are
/// misleading (a bad float is reported as "only excluding terms given"), so each case is worded here.
fn explain(error: &QueryParserError) -> String {
    match error {
        QueryParserError::SyntaxError(_) => format!("syntax error; {SYNTAX_HELP}"),
        QueryParserError::FieldDoesNotExist(field) => format!(
            "unknown field `{field}`; fields are {}, {}, {}",
            TEXT_FIELDS.join(", "),
            STRING_FIELDS.join(", "),
            NUMERIC_FIELDS.join(", ")
        ),
        QueryParserError::ExpectedFloat(_) => {
            "expected a number (reward, return, adv, adv_e, adv_s), e.g. adv:<-1".to_string()
        }
        QueryParserError::ExpectedInt(_) => {
            "expected a whole number (iteration, step, step_group_size, episode), e.g. step:>=3".to_string()
        }
        QueryParserError::ExpectedBool(_) => "expected true or false (success, valid)".to_string(),
        other => other.to_string(),
    }
}
