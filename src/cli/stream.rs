//! `gigscope advantages` on a gigscope-run/1 directory without holding the run: memory grows with the
//! largest episode group, not with the run.
//!
//! Episode groups never influence each other (the engine's property `tests/advantage_parallel.rs` checks), so
//! each group's table is computed alone once its last episode has been read. Two passes over
//! `episodes.jsonl`: the first reads only each line's `group` (what decides the groups, and when each is
//! complete), the second reads the episodes in lean form (numbers and anchor hashes, parsed from the line
//! without copying its text: [`LeanReading::parse`]), keeps those of groups still open, computes a group's
//! table as soon as its last line has gone by, and writes rows in file order (rows of an episode whose group
//! is still open wait, as numbers, for it). A similarity grouping reads its group's anchors back from the
//! file. Anchor groups are numbered as the whole-run table numbers them:
//! group by group in order of first appearance. Lines the first pass saw are the only ones read by the second
//! (a trainer appending meanwhile does not change the output). Broken lines and duplicate ids are skipped as
//! every reader skips them, and counted on stderr.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::Path;

use serde::Deserialize;

use super::advantages::{episode_rows, Format, OutRow, RowWriter};
use crate::advantage::{compute_grouped, group_lean, AdvantageSettings};
use crate::run::lean::{LeanEpisode, LeanReading};
use crate::run::{Episode, JsonlTail, EPISODES_FILE};

/// What the first pass reads of a line.
#[derive(Deserialize)]
struct Head {
    group: String,
}

/// The rows of one episode, computed and waiting for their turn in file order.
struct Done {
    rows: Vec<OwnedRow>,
}

/// An output row that outlives its group's table.
struct OwnedRow {
    episode: String,
    group: String,
    iteration: i64,
    numbers: [f64; 5],
    step: usize,
    step_group: u32,
    step_group_size: usize,
}

impl OwnedRow {
    fn of(r: &OutRow<'_>) -> Self {
        OwnedRow {
            episode: r.episode.to_owned(),
            group: r.group.to_owned(),
            iteration: r.iteration,
            numbers: [r.reward, r.ret, r.episode_advantage, r.step_advantage, r.advantage],
            step: r.step,
            step_group: r.step_group,
            step_group_size: r.step_group_size,
        }
    }

    fn out(&self) -> OutRow<'_> {
        let [reward, ret, episode_advantage, step_advantage, advantage] = self.numbers;
        OutRow {
            episode: &self.episode,
            group: &self.group,
            iteration: self.iteration,
            step: self.step,
            reward,
            ret,
            episode_advantage,
            step_advantage,
            advantage,
            step_group: self.step_group,
            step_group_size: self.step_group_size,
        }
    }
}

/// What streaming found wrong, for the warning.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub broken_lines: usize,
}

/// Write the advantages of the run in `dir` under `settings` (which must not couple episode groups: no TRL
/// batch scaling) to `out` in `format`; `reading` takes the episodes of the run's `episodes.jsonl` in lean form
/// (steps that record no page anchor get the one of the run's environment it was made with).
pub fn advantages(
    dir: &Path,
    settings: &AdvantageSettings,
    mut reading: LeanReading,
    out: impl Write,
    format: Format,
) -> anyhow::Result<Skipped> {
    let path = dir.join(EPISODES_FILE);
    // Pass 1: the group of every line that reads as an episode head, in file order.
    let mut group_index: HashMap<String, u32> = HashMap::new();
    let mut line_group: Vec<(u64, u32)> = Vec::new();
    let mut lines_of_group: Vec<u32> = Vec::new();
    let mut heads = JsonlTail::<Head>::new(path.clone());
    let first = heads.poll_with(|line, head| {
        let next = group_index.len() as u32;
        let g = *group_index.entry(head.group).or_insert(next);
        if g as usize == lines_of_group.len() {
            lines_of_group.push(0);
        }
        lines_of_group[g as usize] += 1;
        line_group.push((line, g));
    })?;
    drop(group_index);
    let last_line = heads.lines();

    // Pass 2: episodes, group by group as each completes; rows out in file order.
    let mut out = Ordered {
        writer: RowWriter::new(out, format)?,
        pending: line_group.iter().map(|&(line, _)| line).collect(),
        group_of: line_group.into_iter().collect(),
        done: HashMap::new(),
        skipped: HashSet::new(),
        anchor_count: HashMap::new(),
        base_of: HashMap::new(),
        next_base: 0,
    };
    let mut open: HashMap<u32, Vec<(u64, LeanEpisode)>> = HashMap::new();
    let mut ids: HashSet<String> = HashSet::new();
    let mut broken = first.errors.len();
    let mut failure: Option<anyhow::Error> = None;

    let mut episodes = JsonlTail::<Episode>::new(path);
    let second = episodes.poll_lines(|text, span| {
        let line = span.line;
        if line > last_line || failure.is_some() {
            return Ok(());
        }
        let Some(&g) = out.group_of.get(&line) else { return Ok(()) };
        let (episode, _) = reading.parse(text, span)?;
        if !ids.insert(episode.id.clone()) {
            // A duplicate id: a broken line, as for every reader.
            broken += 1;
            out.skipped.insert(line);
        } else {
            open.entry(g).or_default().push((line, episode));
        }
        let left = &mut lines_of_group[g as usize];
        *left -= 1;
        if *left == 0 {
            if let Err(err) = out.complete(g, open.remove(&g).unwrap_or_default(), settings) {
                failure = Some(err);
            }
        }
        if let Err(err) = out.flush() {
            failure = Some(err.into());
        }
        Ok(())
    })?;
    if let Some(err) = failure {
        return Err(err);
    }
    // Lines the first pass read but the second could not (broken as episodes, not only as heads) never
    // complete their group: those groups are computed now, without them. (Lines broken as heads too were
    // counted by the first pass.)
    let second_broken: Vec<u64> =
        second.errors.iter().map(|e| e.line).filter(|l| out.group_of.contains_key(l)).collect();
    broken += second_broken.len();
    out.skipped.extend(second_broken);
    let mut rest: Vec<(u32, Vec<(u64, LeanEpisode)>)> = open.into_iter().collect();
    rest.sort_by_key(|(g, _)| *g);
    for (g, members) in rest {
        out.complete(g, members, settings)?;
    }
    out.flush()?;
    out.writer.finish()?;
    Ok(Skipped { broken_lines: broken })
}

/// Rows computed group by group, written in file order.
struct Ordered<W: Write> {
    writer: RowWriter<W>,
    /// Lines whose rows are still to be written, in file order.
    pending: VecDeque<u64>,
    group_of: HashMap<u64, u32>,
    /// Rows of episodes whose group is complete, by line.
    done: HashMap<u64, Done>,
    /// Lines that turned out broken (or duplicate ids): nothing to write.
    skipped: HashSet<u64>,
    /// Anchor groups of each complete episode group, and the first output number of each group written.
    anchor_count: HashMap<u32, u32>,
    base_of: HashMap<u32, u32>,
    next_base: u32,
}

impl<W: Write> Ordered<W> {
    /// Episode group `g` is complete: compute its table alone and keep its rows until their turn. Fails only
    /// when a similarity grouping cannot read the anchors back (the file changed meanwhile).
    fn complete(
        &mut self,
        g: u32,
        members: Vec<(u64, LeanEpisode)>,
        settings: &AdvantageSettings,
    ) -> anyhow::Result<()> {
        let (lines, group): (Vec<u64>, Vec<LeanEpisode>) = members.into_iter().unzip();
        let table = compute_grouped(&group, &group_lean(&group, settings.anchor)?, settings);
        self.anchor_count.insert(g, table.anchor_groups.len() as u32);
        for (e, line) in lines.into_iter().enumerate() {
            let rows = episode_rows(&group, &table, e).map(|r| OwnedRow::of(&r)).collect();
            self.done.insert(line, Done { rows });
        }
        Ok(())
    }

    /// Write every episode at the front of `pending` whose rows are done (or which was skipped), in file order.
    fn flush(&mut self) -> std::io::Result<()> {
        while let Some(&line) = self.pending.front() {
            if self.skipped.contains(&line) {
                self.pending.pop_front();
                continue;
            }
            let Some(episode) = self.done.remove(&line) else { return Ok(()) };
            self.pending.pop_front();
            let g = self.group_of[&line];
            // Every group that appeared before this one has had its first episode written already, so its
            // count is known: the numbering is the whole-run table's.
            let base = match self.base_of.get(&g) {
                Some(&base) => base,
                None => {
                    let base = self.next_base;
                    self.next_base += self.anchor_count[&g];
                    self.base_of.insert(g, base);
                    base
                }
            };
            for row in &episode.rows {
                let mut out = row.out();
                out.step_group += base;
                self.writer.row(&out)?;
            }
        }
        Ok(())
    }
}
