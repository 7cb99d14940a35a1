//! The run's token store as the viewer holds it: its index (followed while the trainer writes), the tokens of
//! the episode the view about to be drawn shows (read by `update`, never while drawing), and the run's token
//! summaries per iteration with the steps of largest mismatch and KL, made by a thread of their own that reads
//! each step's record once, in index order, and keeps only sums and the outliers (never the tokens).
//!
//! Nothing here knows the screen: the views draw what this holds; the channel they colour by is named here
//! because the selection state keeps it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::run::tokens::{Channel, StepSummary, StepTokens, TokenStore};

/// What the token strip colours its tokens by (cycled with a key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TokenChannel {
    /// What the update pushed: advantage × mask, 0 where clipped.
    #[default]
    EffectiveWeight,
    Advantage,
    /// The trainer's log-probability before the update (the sampler's where the trainer recorded none).
    Logprob,
    Entropy,
    /// KL to the reference, verl's k3.
    Kl,
    /// Sampler–trainer mismatch, `old_logprob − rollout_logprob`.
    Mismatch,
    Clipped,
}

impl TokenChannel {
    pub const ALL: [TokenChannel; 7] = [
        TokenChannel::EffectiveWeight,
        TokenChannel::Advantage,
        TokenChannel::Logprob,
        TokenChannel::Entropy,
        TokenChannel::Kl,
        TokenChannel::Mismatch,
        TokenChannel::Clipped,
    ];

    pub fn next(self) -> TokenChannel {
        let i = TokenChannel::ALL.iter().position(|&c| c == self).unwrap_or(0);
        TokenChannel::ALL[(i + 1) % TokenChannel::ALL.len()]
    }

    pub fn name(self) -> &'static str {
        match self {
            TokenChannel::EffectiveWeight => "effective weight",
            TokenChannel::Advantage => "advantage",
            TokenChannel::Logprob => "log-probability",
            TokenChannel::Entropy => "entropy",
            TokenChannel::Kl => "KL (k3)",
            TokenChannel::Mismatch => "mismatch",
            TokenChannel::Clipped => "clipped",
        }
    }

    /// Token `i`'s value (null where the channels it comes from were not recorded), from the store's
    /// recorded and derived values.
    pub fn value(self, tokens: &StepTokens, i: usize) -> Option<f32> {
        match self {
            TokenChannel::EffectiveWeight => tokens.derived(i).effective_weight,
            TokenChannel::Advantage => tokens.value(Channel::Advantage, i),
            TokenChannel::Logprob => tokens.value(logprob_channel(tokens), i),
            TokenChannel::Entropy => tokens.value(Channel::Entropy, i),
            TokenChannel::Kl => tokens.derived(i).kl_k3,
            TokenChannel::Mismatch => tokens.derived(i).mismatch,
            TokenChannel::Clipped => tokens.value(Channel::Clipped, i),
        }
    }
}

/// The log-probability the strip shows: the trainer's, or the sampler's when the trainer recorded none.
pub fn logprob_channel(tokens: &StepTokens) -> Channel {
    if tokens.channel(Channel::OldLogprob).is_none() && tokens.channel(Channel::RolloutLogprob).is_some() {
        Channel::RolloutLogprob
    } else {
        Channel::OldLogprob
    }
}

/// The tokens of one episode's steps, read when the episode was shown.
#[derive(Debug)]
pub struct EpisodeTokens {
    pub episode: String,
    /// Per step with tokens: its tokens and their figures, or why its record could not be read.
    pub steps: BTreeMap<u32, Result<(Arc<StepTokens>, StepSummary), String>>,
    /// The figures of every readable step together.
    pub total: StepSummary,
}

/// A step of large mismatch or KL, for the jump list.
#[derive(Clone, Debug, PartialEq)]
pub struct Outlier {
    pub episode: String,
    pub step: u32,
    pub iteration: Option<i64>,
    pub value: f64,
}

/// How many steps of largest mismatch, and of largest mean KL, the summaries keep.
pub const OUTLIERS: usize = 10;

/// The run's token figures, per training iteration (`None`: steps the index gives no iteration).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TokenSummaries {
    pub by_iteration: BTreeMap<Option<i64>, StepSummary>,
    /// Steps summarized, steps indexed but not summarized yet, and steps whose record could not be read.
    pub steps: usize,
    pub pending: usize,
    pub unreadable: usize,
    /// The steps of largest |mismatch| (largest first), and of largest mean KL.
    pub largest_mismatch: Vec<Outlier>,
    pub largest_kl: Vec<Outlier>,
}

impl TokenSummaries {
    fn add(&mut self, episode: &str, step: u32, iteration: Option<i64>, summary: &StepSummary) {
        self.steps += 1;
        self.by_iteration.entry(iteration).or_default().absorb(summary);
        let outlier = |value: f64| Outlier { episode: episode.to_string(), step, iteration, value };
        if let Some((m, _)) = summary.largest_mismatch {
            keep_largest(&mut self.largest_mismatch, outlier(f64::from(m)));
        }
        if let Some(kl) = summary.mean_kl().filter(|k| !k.is_nan()) {
            keep_largest(&mut self.largest_kl, outlier(kl));
        }
    }

    /// The steps to jump to, in turn: largest mismatch, largest KL, second largest mismatch, ….
    pub fn jump_list(&self) -> Vec<(&'static str, &Outlier)> {
        let (m, k) = (&self.largest_mismatch, &self.largest_kl);
        (0..m.len().max(k.len()))
            .flat_map(|i| [m.get(i).map(|o| ("mismatch", o)), k.get(i).map(|o| ("KL", o))])
            .flatten()
            .collect()
    }
}

fn keep_largest(list: &mut Vec<Outlier>, outlier: Outlier) {
    let at = list.partition_point(|o| o.value >= outlier.value);
    if at < OUTLIERS {
        list.insert(at, outlier);
        list.truncate(OUTLIERS);
    }
}

/// The token store of the run the viewer shows.
#[derive(Debug)]
pub struct RunTokens {
    dir: PathBuf,
    store: Option<TokenStore>,
    /// Why the store could not be read (its index: a chunk's error stays with its step).
    pub error: Option<String>,
    shown: Option<EpisodeTokens>,
    /// The store's [`TokenStore::resets`] when `shown` was read.
    shown_resets: u64,
    summaries: Option<TokenSummaries>,
    worker: Option<Worker>,
}

#[derive(Debug)]
struct Worker {
    news: Receiver<TokenSummaries>,
    stop: Arc<AtomicBool>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl RunTokens {
    /// The store of the run in `run_dir`, its index read as far as it is written (a run without tokens has an
    /// empty one).
    pub fn open(run_dir: &Path) -> RunTokens {
        let mut tokens = RunTokens {
            dir: run_dir.to_path_buf(),
            store: None,
            error: None,
            shown: None,
            shown_resets: 0,
            summaries: None,
            worker: None,
        };
        tokens.refresh();
        tokens
    }

    /// Take in what was written since: new index lines (the shown episode is read again when its steps
    /// changed) and the summaries' news. Whether anything the views show changed.
    pub fn refresh(&mut self) -> bool {
        let mut changed = false;
        match self.store.as_mut() {
            Some(store) => match store.refresh() {
                Ok(c) => changed |= c,
                Err(err) => self.error = Some(err.to_string()),
            },
            None => match TokenStore::open(&self.dir) {
                Ok(store) => {
                    changed = store.episode_count() > 0;
                    self.store = Some(store);
                    self.error = None;
                }
                Err(err) => self.error = Some(err.to_string()),
            },
        }
        // The shown episode is read again when its steps changed (appended, or the index rewritten).
        if let (Some(store), Some(shown)) = (self.store.as_ref(), self.shown.as_ref()) {
            if changed
                && (store.resets() != self.shown_resets || store.steps(&shown.episode).len() != shown.steps.len())
            {
                let id = shown.episode.clone();
                self.shown = None;
                self.show(Some(&id));
            }
        }
        if self.worker.is_none() && self.store.as_ref().is_some_and(|s| s.episode_count() > 0) {
            self.worker = Some(spawn_summaries(self.dir.clone()));
        }
        if let Some(latest) = self.worker.as_ref().and_then(|w| w.news.try_iter().last()) {
            changed |= self.summaries.as_ref() != Some(&latest);
            self.summaries = Some(latest);
        }
        changed
    }

    /// Read the tokens of `episode` (the one the view about to be drawn shows), unless they were read for an
    /// earlier frame; forget those of any other episode.
    pub fn show(&mut self, episode: Option<&str>) {
        let Some(id) = episode else {
            self.shown = None;
            return;
        };
        if self.shown.as_ref().is_some_and(|s| s.episode == id) {
            return;
        }
        self.shown = self.store.as_ref().map(|store| read_episode(store, id));
        self.shown_resets = self.store.as_ref().map_or(0, TokenStore::resets);
    }

    /// The store as read so far (`None` when it could not be opened).
    pub fn store(&self) -> Option<&TokenStore> {
        self.store.as_ref()
    }

    /// The tokens of `episode`, as [`RunTokens::show`] read them: no I/O, for drawing.
    pub fn episode(&self, episode: &str) -> Option<&EpisodeTokens> {
        self.shown.as_ref().filter(|s| s.episode == episode && !s.steps.is_empty())
    }

    /// The run's token figures so far (`None` until the first are made, or when the run has no tokens).
    pub fn summaries(&self) -> Option<&TokenSummaries> {
        self.summaries.as_ref()
    }
}

fn read_episode(store: &TokenStore, id: &str) -> EpisodeTokens {
    let mut total = StepSummary::default();
    let steps = store
        .steps(id)
        .into_iter()
        .map(|entry| {
            let read = match store.read(id, entry.step) {
                Ok(Some(tokens)) => {
                    let summary = StepSummary::of(&tokens);
                    total.absorb(&summary);
                    Ok((Arc::new(tokens), summary))
                }
                Ok(None) => Err("not recorded".to_string()),
                Err(err) => Err(err.to_string()),
            };
            (entry.step, read)
        })
        .collect();
    EpisodeTokens { episode: id.to_string(), steps, total }
}

/// How often the summaries' thread looks for new index lines, and how many steps it summarizes between the
/// figures it sends (a large store's first pass shows its progress).
const SUMMARY_POLL: Duration = Duration::from_millis(500);
const SUMMARY_BATCH: usize = 2_000;

fn spawn_summaries(dir: PathBuf) -> Worker {
    let (tx, news) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let run = move || summarize(&dir, &tx, &flag);
    // Without the thread there are no summaries; the rest of the viewer works on.
    let _ = std::thread::Builder::new().name("gigscope-token-summaries".into()).spawn(run);
    Worker { news, stop }
}

/// Summarize the store's steps in index order as they are written, sending the figures after each batch,
/// until `stop` is set or the viewer is gone.
fn summarize(dir: &Path, tx: &Sender<TokenSummaries>, stop: &AtomicBool) {
    let Ok(mut store) = TokenStore::open(dir) else { return };
    let (mut figures, mut seen, mut resets) = (TokenSummaries::default(), 0u64, store.resets());
    while !stop.load(Ordering::Relaxed) {
        if store.resets() != resets {
            (figures, seen, resets) = (TokenSummaries::default(), 0, store.resets());
        }
        let new: Vec<(String, u32, Option<i64>, u64)> = store
            .indexed_after(seen)
            .into_iter()
            .map(|(episode, entry, line)| (episode.to_string(), entry.step, entry.iteration, line))
            .collect();
        for (k, (episode, step, iteration, line)) in new.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match store.read(episode, *step) {
                Ok(Some(tokens)) => figures.add(episode, *step, *iteration, &StepSummary::of(&tokens)),
                Ok(None) | Err(_) => figures.unreadable += 1,
            }
            seen = *line;
            let done = k + 1;
            if done % SUMMARY_BATCH == 0 || done == new.len() {
                figures.pending = new.len() - done;
                if tx.send(figures.clone()).is_err() {
                    return;
                }
            }
        }
        std::thread::sleep(SUMMARY_POLL);
        if store.refresh().is_err() {
            return;
        }
    }
}
