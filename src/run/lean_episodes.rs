//! A viewer's episodes without their text, by column: [`LeanEpisodes`].
//!
//! A [`LeanEpisode`] is what the readers, the load cache and live events hand over, one allocation for its
//! id, one for its steps and a 120-byte record each; held so for a whole run of short episodes it was most of
//! what a viewer kept (about 200 bytes an episode). The collection keeps the same facts run-wide instead: every
//! episode's steps in one vector, ids in one string (an id that begins with its group's name as the rest
//! alone, given back as an [`IdRef`]), each group's name once (an index per episode), iteration, outcome and
//! token counts as columns (iterations as runs of equal values, token counts only once an episode
//! has some; each number as narrow as its values allow: indices and counts in a [`U32Column`], step and id
//! offsets by difference in an [`OffsetColumn`], per-function rewards by dictionary in an [`F64Column`]), where
//! the text is as a span (a [`SpanColumn`]: about 6 bytes) read back through one shared [`TextStore`]; text
//! kept in memory or in another file is kept apart, by index, and so are the episodes' [`LeanExtras`], packed:
//! their values in shared lists, each distinct source and list of reward names once.
//! Episodes are only ever appended (or all cleared), in file order, so the apart lists stay sorted.
//!
//! [`LeanEpisodes::get`] gives an episode as a [`LeanEpisodeRef`], borrowed from the columns, with the accessors
//! of a [`LeanEpisode`].

use std::collections::HashMap;
use std::sync::Arc;

use super::format::Episode;
use super::packed_column::{shrink_slack, F64Column, OffsetColumn, RepeatColumn, U32Column};
use super::span::{LineSpan, SpanColumn};
use super::step_columns::{StepColumns, StepsRef};
use super::text_on_disk::{EpisodeText, LeanEpisode, LeanExtras, LeanStep, PageId, TextError, TextStore};

/// The columns of a [`LeanEpisodes`].
#[derive(Clone, Debug, Default)]
struct Columns {
    /// Every episode's steps, by column; episode `e`'s are `step_offsets.part(e)` (one more offset than
    /// episodes, from 0; none while there are no episodes). Offsets are u32: 2³² steps would take more than
    /// 64 GiB here.
    steps: StepColumns,
    step_offsets: OffsetColumn,
    /// The ids, one after another; episode `e`'s is `id_offsets.part(e)` (below 4 GiB of ids), the rest after
    /// its group's name alone where `after_group` says so (a run's ids are all kept one way or nearly).
    ids: String,
    id_offsets: OffsetColumn,
    after_group: Runs<bool>,
    /// Each episode's group, an index into `groups` (each name once, `group_index` finds it: indices into
    /// `groups` by the names' hash, 4 bytes a group where a map keyed by the names took 24).
    group_of: U32Column,
    groups: Vec<Arc<str>>,
    group_index: hashbrown::HashTable<u32>,
    iterations: Runs<i64>,
    /// Whether each episode succeeded: a bit an episode and a change's byte (a trainer's rows record none).
    success: RepeatColumn<bool>,
    tokens: TokenCounts,
    token_steps: UntilSet,
    /// Where each episode's line is in the file `store` reads (a placeholder for those kept `apart`).
    spans: SpanColumn,
    /// The file the episodes' lines are in: the first one's store.
    store: Option<TextStore>,
    /// The episodes whose text is elsewhere (in memory, another file, a span too large to pack), by index.
    apart: Vec<(usize, EpisodeText)>,
    /// The episodes with [`LeanExtras`], as runs of consecutive episodes whose extras have one shape, each with
    /// where its values are in the lists below: a trainer's layout gives every row a recorded advantage and
    /// rewards, which as a `LeanExtras` each (120 bytes and two allocations) were most of what a verl dump's
    /// episode kept; its rows all have one shape, so a file's rows take one run.
    extras: Vec<ExtrasRun>,
    /// Each distinct shape of extras once (a run has one or a few), and its index.
    shapes: Vec<ExtrasShape>,
    shape_index: HashMap<ExtrasShape, u32>,
    /// Those episodes' per-function rewards and their recorded advantages, one list after another, by
    /// dictionary (a TRL log's take a few distinct values: a byte each instead of 8).
    extra_rewards: F64Column,
    extra_advantages: F64Column,
    /// Those episodes' steps' recorded states.
    extra_states: Vec<Option<u64>>,
    /// Each distinct `extra.source` once.
    sources: Vec<Box<str>>,
    /// Each distinct list of reward names once (a run has one or a few; a TRL log names them on every row).
    reward_names: Vec<Arc<[String]>>,
    /// Each episode's index by its id, while the ids are indexed ([`LeanEpisodes::index_ids`]), for a viewer that
    /// refuses an id met before against its own columns ([`LeanEpisodes::find_id`]): 4 bytes an episode and the
    /// table's room (about 6 bytes in all), where a map of the ids met beside the columns took 23 (a digest of
    /// each id and its line, [`super::EpisodeIds`]). The ids compared are the columns' own, so no two different
    /// ids are ever taken for one.
    id_index: Option<hashbrown::HashTable<u32>>,
}

/// The hash an id (or a group's name) is indexed by: its bytes in one piece, however the columns keep it
/// ([`IdRef`]).
fn id_hash(id: IdRef<'_>) -> u64 {
    use std::hash::Hasher;
    let mut hasher = twox_hash::XxHash3_64::default();
    id.pieces().into_iter().for_each(|piece| hasher.write(piece.as_bytes()));
    hasher.finish()
}

/// A column of values that change seldom from one episode to the next (a run's episodes come iteration by
/// iteration): each run of equal values once, as (its first episode, the value). Eight bytes an episode as a
/// plain column; a few runs here, and at worst (every episode's value unlike the one before) 16 bytes each.
#[derive(Clone, Debug, Default)]
struct Runs<T> {
    starts: Vec<(u32, T)>,
}

impl<T: Copy + PartialEq> Runs<T> {
    /// Episode `e`'s value, `e` being the next episode.
    fn push(&mut self, e: usize, value: T) {
        if self.starts.last().is_none_or(|&(_, last)| last != value) {
            self.starts.push((end_u32(e, "episodes"), value));
        }
    }

    /// Episode `e`'s value (`e` below the episodes pushed).
    fn get(&self, e: usize) -> T {
        let run = self.starts.partition_point(|&(first, _)| first as usize <= e);
        self.starts[run - 1].1
    }
}

/// A column that holds nothing while every value is 0 (token counts: a run without a token store has none),
/// then one value an episode up to the last one set, as narrow as the values allow ([`U32Column`]).
#[derive(Clone, Debug, Default)]
struct UntilSet {
    values: U32Column,
}

impl UntilSet {
    fn get(&self, e: usize) -> u32 {
        if e < self.values.len() {
            self.values.get(e)
        } else {
            0
        }
    }

    fn set(&mut self, e: usize, value: u32) {
        if e >= self.values.len() {
            if value == 0 {
                return;
            }
            self.values.extend_to(e + 1, 0);
        }
        self.values.set(e, value);
    }
}

/// Each episode's token count ([`LeanEpisode::tokens`]) in 4 bytes: a count of 2³² − 1 or more (no real
/// episode's, but input may say so) stands in the column as [`TokenCounts::LARGE`] and is kept apart, by episode.
#[derive(Clone, Debug, Default)]
struct TokenCounts {
    counts: UntilSet,
    large: Vec<(u32, u64)>,
}

impl TokenCounts {
    const LARGE: u32 = u32::MAX;

    fn get(&self, e: usize) -> u64 {
        match self.counts.get(e) {
            TokenCounts::LARGE => self.large[self.large_at(e).expect("TokenCounts: a large count kept apart")].1,
            count => u64::from(count),
        }
    }

    fn set(&mut self, e: usize, tokens: u64) {
        let at = self.large_at(e);
        match (u32::try_from(tokens).ok().filter(|&t| t != TokenCounts::LARGE), at) {
            (Some(count), Ok(i)) => {
                self.large.remove(i);
                self.counts.set(e, count);
            }
            (Some(count), Err(_)) => self.counts.set(e, count),
            (None, Ok(i)) => self.large[i].1 = tokens,
            (None, Err(i)) => {
                self.large.insert(i, (end_u32(e, "episodes"), tokens));
                self.counts.set(e, TokenCounts::LARGE);
            }
        }
    }

    /// Where episode `e` is among the large counts, or where it would go.
    fn large_at(&self, e: usize) -> Result<usize, usize> {
        self.large.binary_search_by_key(&e, |&(episode, _)| episode as usize)
    }

    fn shrink_slack(&mut self) {
        self.counts.values.shrink_slack();
        shrink_slack(&mut self.large);
    }
}

/// An index or a length that stands for a part an episode's extras do not have.
const ABSENT: u32 = u32::MAX;

/// What an episode's [`LeanExtras`] are made of: indices into the distinct sources and lists of reward names,
/// and the length of each list of values ([`ABSENT`]: the episode has no such part).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct ExtrasShape {
    source: u32,
    reward_names: u32,
    rewards: u32,
    advantages: u32,
    states: u32,
}

impl ExtrasShape {
    /// How many rewards, advantages and states an episode of this shape has.
    fn widths(self) -> [usize; 3] {
        let len = |part: u32| if part == ABSENT { 0 } else { part as usize };
        [len(self.rewards), len(self.advantages), len(self.states)]
    }
}

/// The [`LeanExtras`] of `count` consecutive episodes from `first`, in the columns: their shape (an index into
/// the distinct shapes), and where the first one's rewards, advantages and states start in `extra_rewards`,
/// `extra_advantages` and `extra_states`; each next episode's follow.
#[derive(Clone, Copy, Debug)]
struct ExtrasRun {
    first: u32,
    count: u32,
    shape: u32,
    starts: [u32; 3],
}

/// The length of a part of extras, [`ABSENT`] where there is none.
fn part_len<T>(part: Option<&[T]>) -> u32 {
    part.map_or(ABSENT, |part| end_u32(part.len(), "values of extras"))
}

/// The `len` values at `start` of `list`, where the part is not [`ABSENT`].
fn part_at<T>(list: &[T], start: usize, len: u32) -> Option<&[T]> {
    (len != ABSENT).then(|| &list[start..][..len as usize])
}

/// An episode's per-function rewards or recorded advantages, borrowed: from its own [`LeanExtras`], or from the
/// columns, which keep them by dictionary ([`F64Column`]). Equal when their values are (`f64` equality, as
/// slices compare).
#[derive(Clone, Copy, Debug)]
pub struct ValuesRef<'a> {
    values: Values<'a>,
}

#[derive(Clone, Copy, Debug)]
enum Values<'a> {
    Slice(&'a [f64]),
    Column { column: &'a F64Column, start: usize, len: usize },
}

impl<'a> ValuesRef<'a> {
    pub fn len(self) -> usize {
        match self.values {
            Values::Slice(values) => values.len(),
            Values::Column { len, .. } => len,
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The values in order.
    pub fn iter(self) -> impl ExactSizeIterator<Item = f64> + 'a {
        (0..self.len()).map(move |k| self.at(k))
    }

    /// Value `k`, if there is one.
    pub fn get(self, k: usize) -> Option<f64> {
        (k < self.len()).then(|| self.at(k))
    }

    /// Value `k` (below [`Self::len`]).
    fn at(self, k: usize) -> f64 {
        match self.values {
            Values::Slice(values) => values[k],
            Values::Column { column, start, .. } => column.get(start + k),
        }
    }

    pub fn to_vec(self) -> Vec<f64> {
        self.iter().collect()
    }
}

impl<'a> From<&'a [f64]> for ValuesRef<'a> {
    fn from(values: &'a [f64]) -> ValuesRef<'a> {
        ValuesRef { values: Values::Slice(values) }
    }
}

impl PartialEq for ValuesRef<'_> {
    fn eq(&self, other: &ValuesRef<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// An episode's [`LeanExtras`], borrowed: each part where the episode has it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExtrasRef<'a> {
    pub source: Option<&'a str>,
    pub reward_names: Option<&'a Arc<[String]>>,
    pub rewards: Option<ValuesRef<'a>>,
    pub advantages: Option<ValuesRef<'a>>,
    pub states: Option<&'a [Option<u64>]>,
}

impl<'a> From<&'a LeanExtras> for ExtrasRef<'a> {
    fn from(extras: &'a LeanExtras) -> ExtrasRef<'a> {
        ExtrasRef {
            source: extras.source.as_deref(),
            reward_names: extras.reward_names.as_ref(),
            rewards: extras.rewards.as_deref().map(ValuesRef::from),
            advantages: extras.advantages.as_deref().map(ValuesRef::from),
            states: extras.states.as_deref(),
        }
    }
}

/// Episodes without their text, by column (see the module docs). A clone is a snapshot: it shares the columns
/// until either side appends to them (copy on write), so that a job reads the run's episodes without a copy of
/// them while the viewer, done reading the run, changes nothing.
#[derive(Clone, Debug, Default)]
pub struct LeanEpisodes {
    cols: Arc<Columns>,
}

/// Where an episode's full record is, borrowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TextAt<'a> {
    OnDisk { span: LineSpan, store: &'a TextStore },
    InMemory(&'a Arc<Episode>),
}

impl<'a> TextAt<'a> {
    /// Where the episode's line is, when its text is on disk.
    pub fn span(&self) -> Option<LineSpan> {
        match self {
            TextAt::OnDisk { span, .. } => Some(*span),
            TextAt::InMemory(_) => None,
        }
    }

    fn of(text: &'a EpisodeText) -> TextAt<'a> {
        match text {
            EpisodeText::OnDisk { span, store } => TextAt::OnDisk { span: *span, store },
            EpisodeText::InMemory(episode) => TextAt::InMemory(episode),
        }
    }

    /// The full record, read back from disk when it is there.
    pub fn read(&self) -> Result<Arc<Episode>, TextError> {
        match self {
            TextAt::InMemory(episode) => Ok(Arc::clone(episode)),
            TextAt::OnDisk { span, store } => store.read(span),
        }
    }

    /// Owned, for a job on another thread.
    pub fn to_owned(&self) -> EpisodeText {
        match self {
            TextAt::OnDisk { span, store } => EpisodeText::OnDisk { span: *span, store: (*store).clone() },
            TextAt::InMemory(episode) => EpisodeText::InMemory(Arc::clone(episode)),
        }
    }
}

/// An episode's id, borrowed: `head` then `tail`. The columns keep an id that begins with its group's name as
/// the rest alone (a trainer's ids are mostly the group's name and a number: 42 bytes a verl row, most of them
/// the group's name again), and give the group's name as its head; an id kept whole is all tail.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdRef<'a> {
    head: &'a str,
    tail: &'a str,
}

impl<'a> IdRef<'a> {
    /// `id`, kept whole.
    pub fn whole(id: &'a str) -> IdRef<'a> {
        IdRef { head: "", tail: id }
    }

    /// The id in one piece: borrowed when it is kept whole, else a copy.
    pub fn joined(&self) -> std::borrow::Cow<'a, str> {
        if self.head.is_empty() {
            std::borrow::Cow::Borrowed(self.tail)
        } else {
            std::borrow::Cow::Owned([self.head, self.tail].concat())
        }
    }

    /// What follows `prefix` in the id, when the id begins with it.
    fn after(&self, prefix: &str) -> Option<&'a str> {
        if self.head.is_empty() {
            self.tail.strip_prefix(prefix)
        } else {
            (self.head == prefix).then_some(self.tail)
        }
    }

    /// The id's pieces, in order.
    fn pieces(&self) -> [&'a str; 2] {
        [self.head, self.tail]
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes, in order.
    fn bytes(&self) -> impl Iterator<Item = u8> + 'a {
        self.head.bytes().chain(self.tail.bytes())
    }
}

impl PartialEq for IdRef<'_> {
    fn eq(&self, other: &IdRef<'_>) -> bool {
        self.len() == other.len() && self.bytes().eq(other.bytes())
    }
}

impl Eq for IdRef<'_> {}

impl PartialEq<str> for IdRef<'_> {
    fn eq(&self, other: &str) -> bool {
        other.len() == self.len() && other.starts_with(self.head) && other[self.head.len()..] == *self.tail
    }
}

impl PartialEq<String> for IdRef<'_> {
    fn eq(&self, other: &String) -> bool {
        *self == **other
    }
}

impl PartialEq<&str> for IdRef<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl PartialOrd for IdRef<'_> {
    fn partial_cmp(&self, other: &IdRef<'_>) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IdRef<'_> {
    /// As the ids' strings compare.
    fn cmp(&self, other: &IdRef<'_>) -> std::cmp::Ordering {
        self.bytes().cmp(other.bytes())
    }
}

impl serde::Serialize for IdRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.joined())
    }
}

impl std::fmt::Display for IdRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.joined())
    }
}

/// One episode of a [`LeanEpisodes`] (or a [`LeanEpisode`]), borrowed: the fields and accessors of a
/// [`LeanEpisode`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeanEpisodeRef<'a> {
    pub id: IdRef<'a>,
    pub group: &'a str,
    pub iteration: i64,
    pub success: bool,
    pub tokens: u64,
    pub token_steps: u32,
    pub steps: StepsRef<'a>,
    pub extras: ExtrasRef<'a>,
    pub text: TextAt<'a>,
}

impl<'a> LeanEpisodeRef<'a> {
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Where the episode's line is, when its text is on disk.
    pub fn span(&self) -> Option<LineSpan> {
        self.text.span()
    }

    /// The full record, read back from disk when it is there.
    pub fn read(&self) -> Result<Arc<Episode>, TextError> {
        self.text.read()
    }

    /// `extra.source` when it is a string.
    pub fn source(&self) -> Option<&'a str> {
        self.extras.source
    }

    /// What the trainer computed, one per step.
    pub fn advantages(&self) -> Option<ValuesRef<'a>> {
        self.extras.advantages
    }

    /// [`super::anchor_hash`] of step `t`'s recorded state, where it records one.
    pub fn state(&self, t: usize) -> Option<u64> {
        *self.extras.states?.get(t)?
    }

    /// Per-reward-function rewards, in the trainer's order.
    pub fn rewards(&self) -> Option<ValuesRef<'a>> {
        self.extras.rewards
    }

    /// The names of [`Self::rewards`].
    pub fn reward_names(&self) -> Option<&'a [String]> {
        self.extras.reward_names.map(|names| &names[..])
    }

    /// Undiscounted sum of the step rewards ([`Episode::total_reward`]).
    pub fn total_reward(&self) -> f64 {
        self.steps.iter().map(|s| s.reward).sum()
    }
}

impl LeanEpisode {
    /// Borrowed as one of a [`LeanEpisodes`].
    pub fn view(&self) -> LeanEpisodeRef<'_> {
        LeanEpisodeRef {
            id: IdRef::whole(&self.id),
            group: &self.group,
            iteration: self.iteration,
            success: self.success,
            tokens: self.tokens,
            token_steps: self.token_steps,
            steps: StepsRef::from(&self.steps[..]),
            extras: self.extras.as_deref().map(ExtrasRef::from).unwrap_or_default(),
            text: TextAt::of(&self.text),
        }
    }
}

/// `end` as a column's u32 end; a viewer cannot hold 2³² steps or 4 GiB of ids (more than 64 GiB), so more is
/// a bug, not input to report.
fn end_u32(end: usize, what: &str) -> u32 {
    u32::try_from(end).unwrap_or_else(|_| panic!("LeanEpisodes: more than 2³² {what}"))
}

/// The index in `kept` of a value equal to `value`, kept once for every episode that has the same (looked for
/// among the last few kept, so that a run whose every episode has its own costs no more than a few comparisons
/// each).
fn shared<K: std::borrow::Borrow<Q>, Q: PartialEq + ?Sized>(
    kept: &mut Vec<K>,
    value: &Q,
    keep: impl FnOnce(&Q) -> K,
) -> u32 {
    let last_few = kept.len().saturating_sub(8);
    if let Some(i) = kept[last_few..].iter().rposition(|k| k.borrow() == value) {
        return (last_few + i) as u32;
    }
    kept.push(keep(value));
    end_u32(kept.len() - 1, "distinct extras")
}

/// The value at index `e` of a list sorted by index.
fn apart_at<T>(list: &[(usize, T)], e: usize) -> Option<&T> {
    list.binary_search_by_key(&e, |(i, _)| *i).ok().map(|i| &list[i].1)
}

impl LeanEpisodes {
    pub fn len(&self) -> usize {
        self.cols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Episode `e`'s steps (`e` below [`Self::len`]).
    pub fn steps(&self, e: usize) -> StepsRef<'_> {
        self.cols.steps.slice(self.cols.step_offsets.part(e))
    }

    /// Episode `e`'s id (`e` below [`Self::len`]).
    pub fn id(&self, e: usize) -> IdRef<'_> {
        self.cols.id_at(e)
    }

    /// Episode `e`'s group name (`e` below [`Self::len`]).
    pub fn group(&self, e: usize) -> &str {
        self.group_name(e)
    }

    /// Where episode `e`'s group is among the run's groups, numbered in the order their first episodes come: an
    /// episode whose number is at least the number of groups among the episodes before it starts a new group.
    pub fn group_ordinal(&self, e: usize) -> usize {
        self.cols.group_of.get(e) as usize
    }

    /// Episode `e`'s group name as the columns keep it, to share (`e` below [`Self::len`]).
    pub fn group_name(&self, e: usize) -> &Arc<str> {
        &self.cols.groups[self.cols.group_of.get(e) as usize]
    }

    pub fn iteration(&self, e: usize) -> i64 {
        self.cols.iterations.get(e)
    }

    /// Episode `e`'s extras, where it has any.
    pub fn extras(&self, e: usize) -> ExtrasRef<'_> {
        let cols = &*self.cols;
        let run = match cols.extras.partition_point(|run| run.first as usize <= e).checked_sub(1) {
            Some(i) if e < (cols.extras[i].first + cols.extras[i].count) as usize => cols.extras[i],
            _ => return ExtrasRef::default(),
        };
        let shape = cols.shapes[run.shape as usize];
        let nth = e - run.first as usize;
        let [rewards, advantages, states] = std::array::from_fn(|k| run.starts[k] as usize + nth * shape.widths()[k]);
        let at = |index: u32| (index != ABSENT).then_some(index as usize);
        let column = |column, start, len: u32| {
            (len != ABSENT).then_some(ValuesRef { values: Values::Column { column, start, len: len as usize } })
        };
        ExtrasRef {
            source: at(shape.source).map(|s| &*cols.sources[s]),
            reward_names: at(shape.reward_names).map(|n| &cols.reward_names[n]),
            rewards: column(&cols.extra_rewards, rewards, shape.rewards),
            advantages: column(&cols.extra_advantages, advantages, shape.advantages),
            states: part_at(&cols.extra_states, states, shape.states),
        }
    }

    /// Where episode `e`'s text is.
    pub fn text(&self, e: usize) -> TextAt<'_> {
        match (apart_at(&self.cols.apart, e), &self.cols.store) {
            (Some(text), _) => TextAt::of(text),
            (None, Some(store)) => TextAt::OnDisk { span: self.cols.spans.get(e), store },
            // Every episode without a store is kept apart.
            (None, None) => unreachable!("an episode on disk without a store"),
        }
    }

    /// Episode `e`, borrowed; panics when `e` is not below [`Self::len`], as indexing does.
    pub fn at(&self, e: usize) -> LeanEpisodeRef<'_> {
        LeanEpisodeRef {
            id: self.id(e),
            group: self.group(e),
            iteration: self.cols.iterations.get(e),
            success: self.cols.success.get(e),
            tokens: self.cols.tokens.get(e),
            token_steps: self.cols.token_steps.get(e),
            steps: self.steps(e),
            extras: self.extras(e),
            text: self.text(e),
        }
    }

    /// Episode `e`, when there is one.
    pub fn get(&self, e: usize) -> Option<LeanEpisodeRef<'_>> {
        (e < self.len()).then(|| self.at(e))
    }

    pub fn last(&self) -> Option<LeanEpisodeRef<'_>> {
        self.len().checked_sub(1).map(|e| self.at(e))
    }

    /// The episodes in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = LeanEpisodeRef<'_>> + ExactSizeIterator + Clone + '_ {
        (0..self.len()).map(|e| self.at(e))
    }

    /// Room for `episodes` more episodes (their steps grow as they come).
    pub fn reserve(&mut self, episodes: usize) {
        Arc::make_mut(&mut self.cols).reserve(episodes);
    }

    /// Give back the room the columns grew beyond what they hold, where that is more than a quarter: grown by
    /// doubling, a run's columns end up to twice their size.
    pub fn shrink_slack(&mut self) {
        Arc::make_mut(&mut self.cols).shrink_slack();
    }

    /// Forget every episode (the ids are still indexed if they were).
    pub fn clear(&mut self) {
        let indexed = self.cols.id_index.is_some();
        *self = LeanEpisodes::default();
        if indexed {
            self.index_ids();
        }
    }

    /// Index the episodes by their ids, those here and those to come, so that [`Self::find_id`] finds them.
    pub fn index_ids(&mut self) {
        if self.cols.id_index.is_some() {
            return;
        }
        let cols = Arc::make_mut(&mut self.cols);
        cols.id_index = Some(hashbrown::HashTable::new());
        for e in 0..cols.len() {
            cols.index_id(e);
        }
    }

    /// The first episode whose id is `id`, where the ids are indexed ([`Self::index_ids`]).
    pub fn find_id(&self, id: &str) -> Option<usize> {
        let index = self.cols.id_index.as_ref()?;
        let found = index.find(id_hash(IdRef::whole(id)), |&e| self.id(e as usize) == id)?;
        Some(*found as usize)
    }

    /// Append `episode`, its steps' page ids renumbered by `pages` (step page `p` becomes `pages[p]`, kept where
    /// `pages` has no entry: an empty `pages` keeps every id).
    pub fn push(&mut self, episode: LeanEpisodeRef<'_>, pages: &[PageId]) {
        Arc::make_mut(&mut self.cols).push(episode, pages);
    }

    /// Append `episodes`, as [`Self::push`].
    pub fn extend<'a>(&mut self, episodes: impl IntoIterator<Item = LeanEpisodeRef<'a>>, pages: &[PageId]) {
        let cols = Arc::make_mut(&mut self.cols);
        for episode in episodes {
            cols.push(episode, pages);
        }
    }

    /// Take `tokens` (their sum) as episode `e`'s response lengths, one per step.
    pub fn set_lengths(&mut self, e: usize, trained: &[u32]) {
        Arc::make_mut(&mut self.cols).set_lengths(e, trained);
    }

    /// Episodes `range` as a collection of their own.
    pub fn part(&self, range: std::ops::Range<usize>) -> LeanEpisodes {
        let mut part = LeanEpisodes::default();
        part.reserve(range.len());
        part.extend(range.map(|e| self.at(e)), &[]);
        part
    }

    /// Episodes `range`, borrowed, numbered from 0.
    pub fn slice(&self, range: std::ops::Range<usize>) -> LeanSlice<'_> {
        assert!(range.start <= range.end && range.end <= self.len(), "LeanEpisodes::slice: out of range");
        LeanSlice { all: self, start: range.start, len: range.len() }
    }
}

impl Columns {
    /// The number of episodes.
    fn len(&self) -> usize {
        self.step_offsets.len().saturating_sub(1)
    }

    /// Room for `episodes` more episodes (their steps grow as they come).
    fn reserve(&mut self, episodes: usize) {
        self.step_offsets.reserve_exact(episodes);
        self.id_offsets.reserve_exact(episodes);
        self.group_of.reserve_exact(episodes);
        self.spans.reserve(episodes);
        if let Some(mut index) = self.id_index.take() {
            index.reserve(episodes, |&e| id_hash(self.id_at(e as usize)));
            self.id_index = Some(index);
        }
    }

    /// Episode `e`'s id ([`LeanEpisodes::id`]).
    fn id_at(&self, e: usize) -> IdRef<'_> {
        let kept = &self.ids[self.id_offsets.part(e)];
        match self.after_group.get(e) {
            false => IdRef::whole(kept),
            true => IdRef { head: &self.groups[self.group_of.get(e) as usize], tail: kept },
        }
    }

    /// Index episode `e` (the one after the last indexed) by its id, where the ids are indexed; an id met
    /// before keeps its first episode.
    fn index_id(&mut self, e: usize) {
        if let Some(mut index) = self.id_index.take() {
            let id = self.id_at(e);
            let same = |&other: &u32| self.id_at(other as usize) == id;
            let entry = index.entry(id_hash(id), same, |&other| id_hash(self.id_at(other as usize)));
            if let hashbrown::hash_table::Entry::Vacant(vacant) = entry {
                vacant.insert(end_u32(e, "episodes"));
            }
            self.id_index = Some(index);
        }
    }

    /// Give back the room the columns grew beyond what they hold, where that is more than a quarter: grown by
    /// doubling, a run's columns end up to twice their size.
    fn shrink_slack(&mut self) {
        self.steps.shrink_slack();
        self.step_offsets.shrink_slack();
        self.id_offsets.shrink_slack();
        shrink_slack(&mut self.after_group.starts);
        self.group_of.shrink_slack();
        shrink_slack(&mut self.iterations.starts);
        self.success.shrink_slack();
        shrink_slack(&mut self.groups);
        self.tokens.shrink_slack();
        self.token_steps.values.shrink_slack();
        self.spans.shrink_slack();
        shrink_slack(&mut self.extras);
        self.extra_rewards.shrink_slack();
        self.extra_advantages.shrink_slack();
        shrink_slack(&mut self.extra_states);
        if self.ids.capacity() - self.ids.len() > self.ids.len() / 4 {
            self.ids.shrink_to_fit();
        }
    }

    /// The index of group name `name`, taken in once.
    fn group_id(&mut self, name: &str) -> u32 {
        let groups = &self.groups;
        let same = |&g: &u32| &*groups[g as usize] == name;
        let hash_of = |&g: &u32| id_hash(IdRef::whole(&groups[g as usize]));
        match self.group_index.entry(id_hash(IdRef::whole(name)), same, hash_of) {
            hashbrown::hash_table::Entry::Occupied(found) => *found.get(),
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                let g = end_u32(self.groups.len(), "groups");
                vacant.insert(g);
                self.groups.push(Arc::from(name));
                g
            }
        }
    }

    /// The extras of episode `e` in the columns: where the episode before had extras of the same shape, its run
    /// takes this one in.
    fn pack(&mut self, e: usize, extras: ExtrasRef<'_>) {
        let shape = ExtrasShape {
            source: extras.source.map_or(ABSENT, |source| shared(&mut self.sources, source, |s| Box::from(s))),
            reward_names: extras.reward_names.map_or(ABSENT, |names| shared(&mut self.reward_names, names, Arc::clone)),
            rewards: extras.rewards.map_or(ABSENT, |rewards| end_u32(rewards.len(), "values of extras")),
            advantages: extras.advantages.map_or(ABSENT, |advantages| end_u32(advantages.len(), "values of extras")),
            states: part_len(extras.states),
        };
        let next = end_u32(self.shapes.len(), "shapes of extras");
        let shape_at = *self.shape_index.entry(shape).or_insert(next);
        if shape_at == next {
            self.shapes.push(shape);
        }
        let lens = [self.extra_rewards.len(), self.extra_advantages.len(), self.extra_states.len()];
        let starts = lens.map(|len| end_u32(len, "values of extras"));
        self.extra_rewards.extend(extras.rewards.iter().flat_map(|rewards| rewards.iter()));
        self.extra_advantages.extend(extras.advantages.iter().flat_map(|advantages| advantages.iter()));
        self.extra_states.extend_from_slice(extras.states.unwrap_or_default());
        for len in [self.extra_rewards.len(), self.extra_advantages.len(), self.extra_states.len()] {
            end_u32(len, "values of extras");
        }
        let e = end_u32(e, "episodes");
        match self.extras.last_mut() {
            Some(run) if run.first + run.count == e && run.shape == shape_at => run.count += 1,
            _ => self.extras.push(ExtrasRun { first: e, count: 1, shape: shape_at, starts }),
        }
    }

    /// Append `episode`, its steps' page ids renumbered by `pages` (step page `p` becomes `pages[p]`, kept where
    /// `pages` has no entry: an empty `pages` keeps every id).
    fn push(&mut self, episode: LeanEpisodeRef<'_>, pages: &[PageId]) {
        let e = self.len();
        for offsets in [&mut self.step_offsets, &mut self.id_offsets] {
            if offsets.is_empty() {
                offsets.push(0);
            }
        }
        let renumber = |s: LeanStep| LeanStep { page: pages.get(usize::from(s.page)).copied().unwrap_or(s.page), ..s };
        episode.steps.iter().map(renumber).for_each(|s| self.steps.push(s));
        self.step_offsets.push(end_u32(self.steps.len(), "steps"));
        let rest = episode.id.after(episode.group);
        match rest {
            Some(rest) => self.ids.push_str(rest),
            None => episode.id.pieces().into_iter().for_each(|piece| self.ids.push_str(piece)),
        }
        self.id_offsets.push(end_u32(self.ids.len(), "bytes of ids"));
        self.after_group.push(e, rest.is_some());
        let group = self.group_id(episode.group);
        self.group_of.push(group);
        self.index_id(e);
        self.iterations.push(e, episode.iteration);
        self.success.push(episode.success);
        self.tokens.set(e, episode.tokens);
        self.token_steps.set(e, episode.token_steps);
        if episode.extras != ExtrasRef::default() {
            self.pack(e, episode.extras);
        }
        let packed = match episode.text {
            TextAt::OnDisk { span, store } => {
                let kept = self.store.get_or_insert_with(|| store.clone());
                Some(span).filter(|span| SpanColumn::fits(span) && kept == store)
            }
            TextAt::InMemory(_) => None,
        };
        match packed {
            Some(span) => self.spans.push(&span),
            None => {
                self.spans.push(&LineSpan { line: 0, offset: 0, len: 0, checksum: 0 });
                self.apart.push((e, episode.text.to_owned()));
            }
        }
    }

    /// Take `tokens` (their sum) as episode `e`'s response lengths, one per step.
    fn set_lengths(&mut self, e: usize, trained: &[u32]) {
        self.tokens.set(e, trained.iter().map(|&n| u64::from(n)).sum());
        self.token_steps.set(e, trained.len() as u32);
    }
}

/// Episodes are the same when every episode is (whatever room the columns have).
impl PartialEq for LeanEpisodes {
    fn eq(&self, other: &LeanEpisodes) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl From<&[LeanEpisode]> for LeanEpisodes {
    fn from(episodes: &[LeanEpisode]) -> LeanEpisodes {
        let mut all = LeanEpisodes::default();
        all.reserve(episodes.len());
        all.extend(episodes.iter().map(LeanEpisode::view), &[]);
        all
    }
}

/// Some consecutive episodes of a [`LeanEpisodes`], numbered from 0 ([`LeanEpisodes::slice`]).
#[derive(Clone, Copy, Debug)]
pub struct LeanSlice<'a> {
    all: &'a LeanEpisodes,
    start: usize,
    len: usize,
}

impl<'a> LeanSlice<'a> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Episode `e` of the slice; panics when `e` is not below [`Self::len`].
    pub fn at(&self, e: usize) -> LeanEpisodeRef<'a> {
        assert!(e < self.len, "LeanSlice: episode {e} of {}", self.len);
        self.all.at(self.start + e)
    }

    pub fn iter(&self) -> impl Iterator<Item = LeanEpisodeRef<'a>> + '_ {
        (0..self.len).map(|e| self.at(e))
    }

    /// Episode `e`'s group name as the columns keep it ([`LeanEpisodes::group_name`]).
    pub fn group_name(&self, e: usize) -> &'a Arc<str> {
        assert!(e < self.len, "LeanSlice: episode {e} of {}", self.len);
        self.all.group_name(self.start + e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(id: &str, names: &[&str]) -> LeanEpisode {
        let names: Arc<[String]> = names.iter().map(|n| n.to_string()).collect();
        let extras = LeanExtras { reward_names: Some(names), rewards: Some(vec![1.0]), ..LeanExtras::default() };
        LeanEpisode {
            id: id.into(),
            group: "g".into(),
            iteration: 0,
            success: true,
            tokens: 0,
            token_steps: 0,
            steps: Vec::new().into_boxed_slice(),
            extras: Some(Box::new(extras)),
            text: EpisodeText::InMemory(Arc::new(Episode::new(id, "g", vec![]))),
        }
    }

    #[test]
    fn equal_lists_of_reward_names_are_kept_once() {
        let mut all = LeanEpisodes::default();
        for (id, names) in [("a", ["x", "y"]), ("b", ["x", "y"]), ("c", ["x", "z"]), ("d", ["x", "y"])] {
            all.push(episode(id, &names).view(), &[]);
        }
        let names = |e| Arc::clone(all.at(e).extras.reward_names.unwrap());
        assert!(Arc::ptr_eq(&names(0), &names(1)) && Arc::ptr_eq(&names(0), &names(3)));
        assert!(!Arc::ptr_eq(&names(0), &names(2)));
        assert_eq!(all.at(2).reward_names(), Some(&["x".to_string(), "z".to_string()][..]));
    }

    /// Every part of an episode's extras reads back as it was pushed, absent and empty kept apart, whatever the
    /// episodes around it have.
    #[test]
    fn extras_read_back_part_by_part() {
        let mut all = LeanEpisodes::default();
        let full = LeanExtras {
            source: Some("play".into()),
            reward_names: Some(Arc::from(vec!["x".to_string()])),
            rewards: Some(vec![1.0, 2.0]),
            advantages: Some(vec![0.5]),
            states: Some(vec![Some(7), None]),
        };
        let empty = LeanExtras { rewards: Some(Vec::new()), states: Some(Vec::new()), ..LeanExtras::default() };
        let only_source = LeanExtras { source: Some("play".into()), ..LeanExtras::default() };
        let only_advantages = LeanExtras { advantages: Some(vec![-1.5, 2.5]), ..LeanExtras::default() };
        let like_full = LeanExtras { rewards: Some(vec![3.0, 4.0]), advantages: Some(vec![-0.5]), ..full.clone() };
        let cases = [Some(full), None, Some(empty), Some(only_source), Some(only_advantages), Some(like_full)];
        for (i, extras) in cases.iter().enumerate() {
            let mut lean = episode(&format!("e{i}"), &[]);
            lean.extras = extras.clone().map(Box::new);
            all.push(lean.view(), &[]);
        }
        for (e, extras) in cases.iter().enumerate() {
            let expected = extras.as_ref().map(ExtrasRef::from).unwrap_or_default();
            assert_eq!(all.at(e).extras, expected, "episode {e}");
        }
        assert_eq!((all.at(0).state(0), all.at(0).state(1), all.at(1).state(0)), (Some(7), None, None));
        assert_eq!(all.cols.sources.len(), 1, "one distinct source");
        assert_eq!(all.cols.shapes.len(), 4, "the last episode's extras have the first one's shape, kept once");
    }

    proptest::proptest! {
        /// Extras kept as runs of consecutive episodes of one shape read back as pushed, episode by episode: one
        /// run for each stretch of episodes with extras of one shape, broken by an episode without extras or of
        /// another shape.
        #[test]
        fn extras_of_one_shape_in_a_row_take_one_run_and_read_back_as_pushed(
            pushed in proptest::collection::vec(proptest::option::of(0usize..3), 0..40),
        ) {
            // Three shapes: rewards and an advantage; states alone; a source, rewards and states.
            let extras = |i: usize, kind: usize| {
                let value = i as f64;
                match kind {
                    0 => LeanExtras { rewards: Some(vec![value, -value]), advantages: Some(vec![value / 2.0]), ..LeanExtras::default() },
                    1 => LeanExtras { states: Some(vec![Some(i as u64), None]), ..LeanExtras::default() },
                    _ => LeanExtras {
                        source: Some("play".into()),
                        rewards: Some(vec![value]),
                        states: Some(vec![None, Some(i as u64), Some(1)]),
                        ..LeanExtras::default()
                    },
                }
            };
            let mut all = LeanEpisodes::default();
            for (i, kind) in pushed.iter().enumerate() {
                let mut lean = episode(&format!("e{i}"), &[]);
                lean.extras = kind.map(|kind| Box::new(extras(i, kind)));
                all.push(lean.view(), &[]);
            }
            for (e, kind) in pushed.iter().enumerate() {
                let expected = kind.map(|kind| extras(e, kind));
                proptest::prop_assert_eq!(all.extras(e), expected.as_ref().map(ExtrasRef::from).unwrap_or_default());
            }
            let runs = pushed.iter().enumerate().filter(|&(i, kind)| kind.is_some() && (i == 0 || pushed[i - 1] != *kind));
            proptest::prop_assert_eq!(all.cols.extras.len(), runs.count());
        }
    }

    proptest::proptest! {
        /// Iterations kept as runs and token counts kept only once some are set read back as a plain column of
        /// each would: whatever the order of values, the zeros among them, and lengths set afterwards.
        #[test]
        fn iterations_and_token_counts_read_back_as_pushed(
            pushed in proptest::collection::vec((-2i64..3, proptest::option::of(proptest::prop_oneof![
                1u64..50,
                proptest::strategy::Just(u64::from(u32::MAX) - 1),
                proptest::strategy::Just(u64::from(u32::MAX)),
                (1u64 << 32)..(1u64 << 40),
            ])), 0..40),
            set_later in proptest::collection::vec(
                (0usize..40, proptest::collection::vec(proptest::prop_oneof![0u32..9, proptest::strategy::Just(u32::MAX)], 0..4)),
                0..6,
            ),
        ) {
            let mut all = LeanEpisodes::default();
            let mut expected = Vec::new();
            for (i, &(iteration, tokens)) in pushed.iter().enumerate() {
                let mut lean = episode(&format!("e{i}"), &[]);
                lean.iteration = iteration;
                lean.tokens = tokens.unwrap_or(0);
                lean.token_steps = u32::from(tokens.is_some());
                expected.push((lean.iteration, lean.tokens, lean.token_steps));
                all.push(lean.view(), &[]);
            }
            for (e, trained) in set_later.iter().filter(|(e, _)| *e < pushed.len()) {
                all.set_lengths(*e, trained);
                expected[*e].1 = trained.iter().map(|&n| u64::from(n)).sum();
                expected[*e].2 = trained.len() as u32;
            }
            let read: Vec<_> = all.iter().map(|e| (e.iteration, e.tokens, e.token_steps)).collect();
            proptest::prop_assert_eq!(read, expected);
        }
    }

    proptest::proptest! {
        /// Every id reads back as pushed, whether or not it begins with its group's name (kept then as the rest
        /// alone), also once copied into another collection; ids compare, order and print as their strings do;
        /// an id that begins with its group's name keeps only the rest.
        #[test]
        fn ids_read_back_as_pushed_and_compare_as_their_strings(
            pushed in proptest::collection::vec(("[ab]{0,3}", "[ab_]{0,3}", proptest::bool::ANY), 1..30),
        ) {
            let mut all = LeanEpisodes::default();
            let mut expected = Vec::new();
            for (group, rest, after_group) in &pushed {
                let id = if *after_group { format!("{group}{rest}") } else { rest.clone() };
                let mut lean = episode(&id, &[]);
                lean.group = group.as_str().into();
                all.push(lean.view(), &[]);
                expected.push(id);
            }
            let copied = all.part(0..all.len());
            for e in 0..all.len() {
                let (id, copy) = (all.id(e), copied.id(e));
                proptest::prop_assert_eq!(id.to_string(), expected[e].clone());
                proptest::prop_assert_eq!(copy.joined(), expected[e].as_str());
                proptest::prop_assert!(id == *expected[e] && id == copy && id.len() == expected[e].len());
                for f in 0..all.len() {
                    proptest::prop_assert_eq!(id.cmp(&all.id(f)), expected[e].cmp(&expected[f]));
                    proptest::prop_assert_eq!(id == all.id(f), expected[e] == expected[f]);
                }
            }
            let whole: usize = expected.iter().map(String::len).sum();
            let beginning_with_group = expected.iter().zip(&pushed).filter(|(id, (g, ..))| id.starts_with(g.as_str()));
            let saved: usize = beginning_with_group.map(|(_, (g, ..))| g.len()).sum();
            proptest::prop_assert_eq!(all.cols.ids.len(), whole - saved);
        }
    }

    proptest::proptest! {
        /// Indexed ids find the first episode with each id, as a list searched from the start does, whether the
        /// index was made before the episodes came, after some, or again after a clear; ids that begin with their
        /// group's name (kept as the rest alone) are found by their whole string, and an id never pushed is not.
        #[test]
        fn indexed_ids_find_the_first_episode_with_each(
            pushed in proptest::collection::vec(("[ab]{0,2}", "[ab_]{0,2}"), 0..40),
            indexed_after in 0usize..40,
            cleared in proptest::bool::ANY,
        ) {
            let mut all = LeanEpisodes::default();
            if cleared {
                all.index_ids();
                all.push(episode("gone", &[]).view(), &[]);
                all.clear();
            }
            let mut ids = Vec::new();
            for (i, (group, rest)) in pushed.iter().enumerate() {
                if i == indexed_after {
                    all.index_ids();
                }
                let id = format!("{group}{rest}");
                let mut lean = episode(&id, &[]);
                lean.group = group.as_str().into();
                all.push(lean.view(), &[]);
                ids.push(id);
            }
            all.index_ids();
            for id in ids.iter().map(String::as_str).chain(["gone", "c"]) {
                proptest::prop_assert_eq!(all.find_id(id), ids.iter().position(|other| other == id), "{}", id);
            }
        }
    }

    #[test]
    fn a_run_without_token_counts_keeps_no_column_of_them_and_one_iteration_once() {
        let mut all = LeanEpisodes::default();
        for i in 0..100 {
            all.push(episode(&format!("e{i}"), &[]).view(), &[]);
        }
        assert_eq!((all.cols.tokens.counts.values.len(), all.cols.token_steps.values.len()), (0, 0));
        assert_eq!(all.cols.iterations.starts, vec![(0, 0)]);
    }

    #[test]
    fn a_clone_shares_the_columns_until_one_side_appends() {
        let mut all = LeanEpisodes::default();
        all.push(episode("a", &["x"]).view(), &[]);
        let snapshot = all.clone();
        assert!(Arc::ptr_eq(&all.cols, &snapshot.cols));
        all.push(episode("b", &["x"]).view(), &[]);
        assert!(!Arc::ptr_eq(&all.cols, &snapshot.cols));
        assert_eq!((all.len(), snapshot.len()), (2, 1));
        assert_eq!([snapshot.id(0), all.id(0), all.id(1)].map(|id| id.to_string()), ["a", "a", "b"]);
    }
}
