//! Anchor-state groupings on their own, apart from the numbers computed over them.
//!
//! Grouping is the costly part of the engine (hashing every anchor string, or comparing them with difflib in
//! similarity mode) and depends only on the anchor mode, so a viewer keeps the groupings it has made and
//! switches between anchor modes with [`super::regroup`]. Similarity clustering can also run as a [`SimilarityJob`]
//! that owns its inputs, on another thread: it needs only each episode group's distinct anchors in order of
//! first appearance. Identical strings always land in the same cluster: clustering is deterministic and clusters
//! are only ever appended, so a repeated string fails the clusters before the one it joined as it did then, and
//! that one (or the one it opened, whose first member is the string itself, ratio 1) still matches.
//!
//! Every mode but similarity groups by equal 64-bit keys ([`EngineInput::anchor_key`]): the anchor's hash
//! (exact), the page's (page), the anchor's hash and the step index hashed together (observation + step), the
//! recorded state's hash, else the observation + step key (state). [`unrecorded_states`] counts the rows that
//! fell back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use foldhash::{HashMap, HashMapExt};

use super::input::{EngineInput, KeyedAnchor, LeanInput};
use super::settings::AnchorMode;
use super::table::{group_episodes, in_parallel, AdvantageTable};
use crate::run::text_on_disk::{TextError, TextStore};
use crate::run::{Episode, Step};
use crate::run::{LineSpan, TextAt};
use crate::text::difflib::{Candidate, Matcher, Reference};

/// Which anchor-state group every row belongs to under one anchor mode.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorGrouping {
    pub mode: AnchorMode,
    /// Table-wide anchor-group number of each row, rows in table order (episode by episode, step by step).
    pub row_group: Vec<u32>,
    /// The episode group of each anchor group; anchor groups are numbered episode group by episode group,
    /// each group's in order of first appearance.
    pub episode_group: Vec<u32>,
}

impl AdvantageTable {
    /// The grouping this table was computed with; `mode` is the anchor mode of the settings it was computed
    /// under (the table does not record it).
    pub fn grouping(&self, mode: AnchorMode) -> AnchorGrouping {
        AnchorGrouping {
            mode,
            row_group: self.step_groups().collect(),
            episode_group: self.anchor_episode_groups().collect(),
        }
    }
}

/// The anchor grouping of `episodes` (in file order) under `mode`, the one [`super::compute`] computes over.
pub fn group_anchors(episodes: &[Episode], mode: AnchorMode) -> AnchorGrouping {
    match keyed(mode) {
        Ok(anchor) => group_keyed(episodes, anchor),
        Err(theta) => SimilarityJob::new(episodes, group_keyed(episodes, KeyedAnchor::Exact), theta).run(),
    }
}

/// The keyed anchor of `mode`, or the θ of a similarity mode.
fn keyed(mode: AnchorMode) -> Result<KeyedAnchor, f64> {
    match mode {
        AnchorMode::Exact => Ok(KeyedAnchor::Exact),
        AnchorMode::Page => Ok(KeyedAnchor::Page),
        AnchorMode::ObservationStep => Ok(KeyedAnchor::ObservationStep),
        AnchorMode::State => Ok(KeyedAnchor::State),
        AnchorMode::Similarity(theta) => Err(theta),
    }
}

/// How many of `input`'s rows record no state: under [`AnchorMode::State`] they are keyed by their anchor and
/// step ([`KeyedAnchor::State`]).
pub fn unrecorded_states<I: EngineInput + ?Sized>(input: &I) -> usize {
    (0..input.episode_count()).map(|e| (0..input.step_count(e)).filter(|&t| input.state(e, t).is_none()).count()).sum()
}

/// [`group_anchors`] of lean episodes: a similarity grouping reads the anchors' text back from disk where it
/// is there, and fails when that text can no longer be read (the file changed).
pub fn group_lean<I: LeanInput + ?Sized>(episodes: &I, mode: AnchorMode) -> Result<AnchorGrouping, TextError> {
    match keyed(mode) {
        Ok(anchor) => Ok(group_keyed(episodes, anchor)),
        Err(theta) => SimilarityJob::lean(episodes, group_keyed(episodes, KeyedAnchor::Exact), theta).try_run(),
    }
}

/// The grouping of `input` by equal anchor keys ([`EngineInput::anchor_key`]): every mode but
/// [`AnchorMode::Similarity`]. Each episode group's anchor groups are numbered in order of first appearance.
pub fn group_keyed<I: EngineInput + ?Sized>(input: &I, anchor: KeyedAnchor) -> AnchorGrouping {
    let (groups, group_of, members) = group_episodes(input);
    // Each episode group's rows (its episodes in file order), numbered from 0 in that group.
    let number = |by_key: &mut HashMap<u64, u32>, g: usize| {
        by_key.clear();
        let mut rows = Vec::new();
        for e in members.get(g).iter() {
            for t in 0..input.step_count(e as usize) {
                let next = by_key.len() as u32;
                rows.push(*by_key.entry(input.anchor_key(e as usize, t, anchor)).or_insert(next));
            }
        }
        rows
    };
    let rows = (0..input.episode_count()).map(|e| input.step_count(e)).sum();
    let local: Vec<Vec<u32>> = if in_parallel(rows) {
        (0..groups.len()).into_par_iter().map_init(HashMap::new, number).collect()
    } else {
        let mut by_key = HashMap::new();
        (0..groups.len()).map(|g| number(&mut by_key, g)).collect()
    };
    let counts: Vec<u32> = local.iter().map(|l| l.iter().max().map_or(0, |&m| m + 1)).collect();
    let bases = prefix_sums(&counts);
    let mut cursor = vec![0usize; groups.len()];
    let mut row_group = Vec::with_capacity(local.iter().map(Vec::len).sum());
    for (e, g) in group_of.iter().enumerate() {
        let g = g as usize;
        let steps = input.step_count(e);
        row_group.extend(local[g][cursor[g]..cursor[g] + steps].iter().map(|&c| bases[g] + c));
        cursor[g] += steps;
    }
    let mode = match anchor {
        KeyedAnchor::Exact => AnchorMode::Exact,
        KeyedAnchor::Page => AnchorMode::Page,
        KeyedAnchor::ObservationStep => AnchorMode::ObservationStep,
        KeyedAnchor::State => AnchorMode::State,
    };
    AnchorGrouping { mode, row_group, episode_group: numbered_groups(&counts) }
}

/// Similarity clustering at θ with everything it needs owned, to run on another thread: each episode group's
/// distinct anchors (the first member of each exact anchor group) and the exact grouping they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct SimilarityJob {
    theta: f64,
    exact: AnchorGrouping,
    /// The distinct anchors, in the exact grouping's numbering; episode group `g`'s are
    /// `anchors[starts[g]..starts[g + 1]]`.
    anchors: Vec<JobAnchor>,
    starts: Vec<usize>,
}

/// One distinct anchor of a [`SimilarityJob`].
#[derive(Clone, Debug, PartialEq)]
enum JobAnchor {
    /// Its text, shared with the episodes (a large run's are hundreds of MB).
    Text(Arc<str>),
    /// Step `step` of the episode on line `span` of the file `store` reads, read back while the job runs.
    OnDisk { span: LineSpan, store: TextStore, step: u32 },
}

impl SimilarityJob {
    /// `exact` must be the [`AnchorMode::Exact`] grouping of `episodes`.
    pub fn new(episodes: &[Episode], exact: AnchorGrouping, theta: f64) -> SimilarityJob {
        // Each exact anchor group's first step (rows are in file order); anchor groups are numbered episode
        // group by episode group.
        let mut first = vec![None; exact.episode_group.len()];
        for (step, &a) in episodes.iter().flat_map(|e| &e.steps).zip(&exact.row_group) {
            first[a as usize].get_or_insert(step);
        }
        let anchors = first.into_iter().flatten().map(|step| JobAnchor::Text(step.anchor_arc())).collect();
        SimilarityJob::assemble(exact, theta, anchors)
    }

    /// [`Self::new`] for lean episodes: the anchors whose text is on disk are read back while the job runs,
    /// one episode group at a time (memory holds the group being clustered, not the run's text).
    pub fn lean<I: LeanInput + ?Sized>(episodes: &I, exact: AnchorGrouping, theta: f64) -> SimilarityJob {
        let mut first = vec![None; exact.episode_group.len()];
        let rows = (0..episodes.episode_count()).flat_map(|e| (0..episodes.step_count(e)).map(move |t| (e, t)));
        for ((e, t), &a) in rows.zip(&exact.row_group) {
            first[a as usize].get_or_insert((e, t));
        }
        let anchors = first
            .into_iter()
            .flatten()
            .map(|(e, t)| match episodes.lean(e).text {
                TextAt::InMemory(episode) => JobAnchor::Text(episode.steps[t].anchor_arc()),
                TextAt::OnDisk { span, store } => JobAnchor::OnDisk { span, store: store.clone(), step: t as u32 },
            })
            .collect();
        SimilarityJob::assemble(exact, theta, anchors)
    }

    fn assemble(exact: AnchorGrouping, theta: f64, anchors: Vec<JobAnchor>) -> Self {
        assert_eq!(
            anchors.len(),
            exact.episode_group.len(),
            "SimilarityJob: the grouping was made from other episodes"
        );
        let groups = exact.episode_group.last().map_or(0, |&g| g as usize + 1);
        let mut counts = vec![0; groups];
        for &g in &exact.episode_group {
            counts[g as usize] += 1;
        }
        let starts = prefix_sums(&counts).into_iter().chain([anchors.len() as u32]).map(|s| s as usize).collect();
        SimilarityJob { theta, exact, anchors, starts }
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// The [`AnchorMode::Similarity`] grouping: equal to `group_anchors(episodes, Similarity(θ))`.
    ///
    /// # Panics
    /// When anchors kept on disk can no longer be read back (the file changed): see [`Self::try_run`].
    pub fn run(self) -> AnchorGrouping {
        self.try_run().expect("the anchors' text is readable")
    }

    /// [`Self::run`], or why the anchors kept on disk could not be read back.
    pub fn try_run(self) -> Result<AnchorGrouping, TextError> {
        let grouping = self.try_run_unless(&AtomicBool::new(false))?;
        Ok(grouping.expect("a job that cannot be cancelled finishes"))
    }

    /// [`Self::run`], given up (`None`) soon after `cancelled` is set: a viewer whose user has moved on to
    /// another θ does not wait for groupings nobody wants. Also `None` when anchors kept on disk can no longer
    /// be read back: the file changed, and the viewer reads the run again.
    pub fn run_unless(self, cancelled: &AtomicBool) -> Option<AnchorGrouping> {
        self.try_run_unless(cancelled).ok().flatten()
    }

    /// [`Self::run_unless`], saying why the anchors' text could not be read back.
    pub fn try_run_unless(self, cancelled: &AtomicBool) -> Result<Option<AnchorGrouping>, TextError> {
        let theta = self.theta;
        let clusters: Vec<Vec<u32>> = self
            .starts
            .par_windows(2)
            .map_init(SimilarClusters::default, |similar, range| {
                if cancelled.load(Ordering::Relaxed) {
                    return Ok(Vec::new());
                }
                similar.reset();
                // A group's anchors come episode by episode: the last episode's anchors read back serve the next.
                let mut last = None;
                self.anchors[range[0]..range[1]]
                    .iter()
                    .map(|a| Ok(similar.assign(&Self::text(a, &mut last)?, theta)))
                    .collect::<Result<Vec<u32>, TextError>>()
            })
            .collect::<Result<_, _>>()?;
        if cancelled.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let counts: Vec<u32> = clusters.iter().map(|c| c.iter().max().map_or(0, |&m| m + 1)).collect();
        let bases = prefix_sums(&counts);
        // Exact anchor group → similarity anchor group; exact groups are numbered group by group too.
        let to_similar: Vec<u32> = self
            .exact
            .episode_group
            .iter()
            .enumerate()
            .map(|(a, &g)| {
                let g = g as usize;
                bases[g] + clusters[g][a - self.starts[g]]
            })
            .collect();
        Ok(Some(AnchorGrouping {
            mode: AnchorMode::Similarity(theta),
            row_group: self.exact.row_group.iter().map(|&a| to_similar[a as usize]).collect(),
            episode_group: numbered_groups(&counts),
        }))
    }

    /// The text of `anchor`; `last` holds the anchors of the last episode read back.
    fn text(anchor: &JobAnchor, last: &mut Option<(LineSpan, Vec<Arc<str>>)>) -> Result<Arc<str>, TextError> {
        match anchor {
            JobAnchor::Text(text) => Ok(Arc::clone(text)),
            JobAnchor::OnDisk { span, store, step } => {
                if last.as_ref().is_none_or(|(s, _)| s != span) {
                    *last = Some((*span, store.anchors(span)?));
                }
                let anchors = last.as_ref().map_or(&[][..], |(_, a)| a.as_slice());
                anchors.get(*step as usize).cloned().ok_or_else(|| store.changed(span))
            }
        }
    }
}

/// `counts[..g].sum()` for every `g`.
fn prefix_sums(counts: &[u32]) -> Vec<u32> {
    counts
        .iter()
        .scan(0, |total, &n| {
            *total += n;
            Some(*total - n)
        })
        .collect()
}

/// The episode group of each anchor group, given how many each episode group has.
fn numbered_groups(counts: &[u32]) -> Vec<u32> {
    counts.iter().enumerate().flat_map(|(g, &n)| std::iter::repeat_n(g as u32, n as usize)).collect()
}

/// Numbers one episode group's exact anchors from 0 in order of first appearance (the estimators' exact groups;
/// the engine's own groupings are made by the functions above).
pub(super) struct Clusterer<'a> {
    by_key: HashMap<&'a str, u32>,
}

impl<'a> Clusterer<'a> {
    pub(super) fn new() -> Self {
        Clusterer { by_key: HashMap::new() }
    }

    pub(super) fn assign(&mut self, step: &'a Step) -> u32 {
        let next = self.by_key.len() as u32;
        *self.by_key.entry(step.anchor_key()).or_insert(next)
    }
}

/// GiGPO's greedy similarity clustering of one episode group's anchors, fed in file order: a string joins the
/// first cluster whose first member `b` has `SequenceMatcher(None, string, b).ratio() >= θ`, else opens one.
#[derive(Default)]
pub(super) struct SimilarClusters {
    /// Each cluster's first member, prepared as difflib's `b`.
    references: Vec<Reference>,
    matcher: Matcher,
    /// The string being placed, prepared as difflib's `a`.
    candidate: Candidate,
}

impl SimilarClusters {
    pub(super) fn reset(&mut self) {
        self.references.clear();
    }

    /// The cluster `key` joins (or opens), numbered from 0 in order of opening.
    pub(super) fn assign(&mut self, key: &str, theta: f64) -> u32 {
        self.candidate.set(key);
        let (matcher, candidate) = (&mut self.matcher, &self.candidate);
        match self.references.iter().position(|r| matcher.similar(candidate, r, theta)) {
            Some(c) => c as u32,
            None => {
                self.references.push(Reference::new(key));
                (self.references.len() - 1) as u32
            }
        }
    }
}
