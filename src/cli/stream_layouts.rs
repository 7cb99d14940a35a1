//! `gigscope advantages` on a run of a trainer's own layout (a verl dump, a TRL log, ...) without holding the
//! run: memory grows with the episodes of the groups still open (a group's episodes follow each other within
//! a step file in these layouts, so about a part of the run) and a few bytes per episode, not with the run.
//!
//! Two passes through [`Run::stream_as`], as [`super::stream`] makes over a gigscope run's lines: the first
//! counts each episode group's episodes (and each iteration's), the table's widths, the groups' sizes for the
//! partial-group report and what checking the settings needs ([`EpisodeFacts`]); the second holds the episodes
//! of each unit still open, computes a unit's table as soon as its last episode has come, and writes rows in
//! the order the episodes came. A unit is an episode group, which never influences another, or under TRL's
//! batch statistics (`scale_rewards = batch`, or `normalize_then_sum`) a whole iteration, TRL's batch. The
//! whole read is taken instead (`None`) where a unit could not be computed alone: an estimator of GiGPO's
//! successors, or batch statistics over a run whose groups span iterations.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use super::flags::{EpisodeFacts, SettingsFlags};
use super::rows::{Format, RowWriter, TableWidths};
use super::source::SourceFlags;
use super::stream::{Ordered, Pending, Streamed};
use crate::advantage::{compute, AdvantageSettings, Aggregation, AnchorMode, ScaleRewards};
use crate::run::tokens::{count_lengths, TokenStore};
use crate::run::{Episode, GroupSizes, Run, RunMeta};

/// What the first pass counts.
#[derive(Default)]
struct Census {
    /// Iteration → its number.
    iterations: HashMap<i64, u32>,
    /// Each episode's group number (its number in `sizes`) and iteration number, in the order they came (apart:
    /// the second pass keeps one of them).
    group_of_episode: Vec<u32>,
    iteration_of_episode: Vec<u32>,
    iteration_episodes: Vec<u32>,
    /// Some group has episodes in two iterations.
    spans_iterations: bool,
    widths: TableWidths,
    /// The groups, numbered in order of first appearance, with their episodes.
    sizes: GroupSizes,
    facts: EpisodeFacts,
}

impl Census {
    fn add(&mut self, episodes: &[Episode]) {
        self.facts.add(episodes);
        for episode in episodes {
            self.widths.fit(&episode.id, &episode.group);
            let (g, first_iteration) = self.sizes.add(&episode.group, episode.iteration);
            self.spans_iterations |= first_iteration != episode.iteration;
            let next = self.iterations.len() as u32;
            let it = *self.iterations.entry(episode.iteration).or_insert(next);
            if it as usize == self.iteration_episodes.len() {
                self.iteration_episodes.push(0);
            }
            self.iteration_episodes[it as usize] += 1;
            self.group_of_episode.push(g as u32);
            self.iteration_of_episode.push(it);
        }
    }
}

/// Whether `settings` compute an episode group's advantages from its iteration's (TRL's batch statistics).
fn batch_coupled(settings: &AdvantageSettings) -> bool {
    settings.scale_rewards.is_some()
        && (settings.scale_rewards == Some(ScaleRewards::Batch)
            || settings.aggregation == Aggregation::NormalizeThenSum)
}

/// Write the advantages of the run in `dir` (read as `source` says) under `flags` to `out` in `format`,
/// streamed; the run's problems on stderr as the whole read reports them. `None` before anything is written
/// where the run must be read whole (see the module's comment).
pub fn advantages(
    dir: &Path,
    source: &SourceFlags,
    flags: &SettingsFlags,
    family: &super::flags::FamilyFlags,
    out: impl Write,
    format: Format,
) -> anyhow::Result<Option<(AdvantageSettings, Streamed)>> {
    let options = source.options();
    let mut census = Census::default();
    let mut run = Run::stream_as(dir, source.from, &options, |_, episodes| census.add(&episodes))?;
    // The ids the first pass met (a map of every episode) are the second pass's to meet again: holding both
    // doubled what a large dump needed.
    drop(std::mem::take(&mut run.episode_ids));
    if super::estimate::chosen_family(&run, flags, family)?.is_some() {
        return Ok(None);
    }
    let settings = flags.resolve_with(&run, &census.facts)?;
    let by_iteration = batch_coupled(&settings);
    if by_iteration && census.spans_iterations {
        return Ok(None);
    }
    let recorded = run.meta.as_ref().map(RunMeta::group_sizes).unwrap_or_default();
    super::source::report(dir, &run, &census.sizes.partial(&recorded));

    let Census { group_of_episode, iteration_of_episode, iteration_episodes, widths, sizes, .. } = census;
    let (unit_of_episode, mut left) = if by_iteration {
        (iteration_of_episode, iteration_episodes)
    } else {
        (group_of_episode, sizes.episodes().map(|episodes| episodes as u32).collect())
    };
    drop(sizes);
    let tokens = match TokenStore::open(dir) {
        Ok(store) => Some(store),
        Err(err) => {
            eprintln!("warning: response lengths not counted: {err}");
            None
        }
    };
    // Each episode's unit is kept in `ordered` alone, until its rows are written.
    let pending = Pending::numbered(unit_of_episode);
    let mut ordered = Ordered::new(RowWriter::new(out, format, widths)?, pending, tokens);
    let mut open: HashMap<u32, Vec<(u64, Episode)>> = HashMap::new();
    let mut position = 0usize;
    let mut failure: Option<anyhow::Error> = None;
    let pages = settings.anchor == AnchorMode::Page;
    let complete = |ordered: &mut Ordered<_>, unit: u32, members: Vec<(u64, Episode)>| -> anyhow::Result<()> {
        let (lines, mut episodes): (Vec<u64>, Vec<Episode>) = members.into_iter().unzip();
        if let Some(tokens) = ordered.tokens() {
            let counted = count_lengths(tokens, episodes.as_mut_slice(), 0);
            ordered.lengths.add(counted);
        }
        let table = compute(&episodes, &settings);
        ordered.take_table(unit, &lines, episodes.as_slice(), &table)?;
        Ok(ordered.flush()?)
    };
    Run::stream_as(dir, source.from, &options, |run, mut episodes| {
        if failure.is_some() {
            return;
        }
        if pages {
            crate::env::fill_page_anchors(&mut episodes, crate::env_registry::page_anchor(run));
        }
        for episode in episodes {
            // The run changed between the passes: what the first did not see is left out.
            let Some(unit) = ordered.group_of(position as u64) else { return };
            open.entry(unit).or_default().push((position as u64, episode));
            position += 1;
            left[unit as usize] -= 1;
            if left[unit as usize] == 0 {
                let members = open.remove(&unit).unwrap_or_default();
                if let Err(err) = complete(&mut ordered, unit, members) {
                    failure = Some(err);
                    return;
                }
            }
        }
    })?;
    if let Some(err) = failure {
        return Err(err);
    }
    // Units with episodes the second pass did not find (the run changed meanwhile), without them.
    let mut rest: Vec<(u32, Vec<(u64, Episode)>)> = open.drain().collect();
    rest.sort_by_key(|(unit, _)| *unit);
    for (unit, members) in rest {
        complete(&mut ordered, unit, members)?;
    }
    ordered.finish()?;
    let streamed = Streamed {
        broken_lines: run.errors.len(),
        lengths: std::mem::take(&mut ordered.lengths),
        steps: ordered.steps,
        unrecorded_states: ordered.unrecorded_states,
    };
    Ok(Some((settings, streamed)))
}
