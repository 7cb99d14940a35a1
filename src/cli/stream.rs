//! `gigscope advantages` on a gigscope-run/1 directory without holding the run: memory grows with the
//! largest episode group, not with the run.
//!
//! Episode groups never influence each other (the engine's property `tests/advantage_parallel.rs` checks), so
//! each group's table is computed alone once its last episode has been read. Two passes over
//! `episodes.jsonl`: the first reads only each line's `id` and `group` (what decides the groups, and when
//! each is complete), the second reads the episodes, keeps those of groups still open, computes a group's
//! table as soon as its last line has gone by, and writes rows in file order (rows of an episode whose group
//! is still open wait, as numbers, for it). Anchor groups are numbered as the whole-run table numbers them:
//! group by group in order of first appearance. Lines the first pass saw are the only ones read by the second
//! (a trainer appending meanwhile does not change the output). Broken lines and duplicate ids are skipped as
//! every reader skips them, and counted on stderr.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::Path;

use serde::Deserialize;

use super::advantages::{episode_rows, Format, OutRow, RowWriter};
use crate::advantage::{compute, AdvantageSettings, AdvantageTable};
use crate::env::{fill_page_anchors, PageAnchor};
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
/// batch scaling) to `out` in `format`; steps that record no page anchor get `page_anchor`'s (the run's
/// environment's).
pub fn advantages(
    dir: &Path,
    settings: &AdvantageSettings,
    page_anchor: Option<PageAnchor>,
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
    let mut open: HashMap<u32, Vec<(u64, Episode)>> = HashMap::new();
    let mut ids: HashSet<String> = HashSet::new();
    let mut broken = first.errors.len();
    let mut failure: Option<std::io::Error> = None;

    let mut episodes = JsonlTail::<Episode>::new(path);
    let second = episodes.poll_with(|line, episode| {
        if line > last_line || failure.is_some() {
            return;
        }
        let Some(&g) = out.group_of.get(&line) else { return };
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
            out.complete(g, open.remove(&g).unwrap_or_default(), settings, page_anchor);
        }
        if let Err(err) = out.flush() {
            failure = Some(err);
        }
    })?;
    if let Some(err) = failure {
        return Err(err.into());
    }
    // Lines the first pass read but the second could not (broken as episodes, not only as heads) never
    // complete their group: those groups are computed now, without them. (Lines broken as heads too were
    // counted by the first pass.)
    let second_broken: Vec<u64> =
        second.errors.iter().map(|e| e.line).filter(|l| out.group_of.contains_key(l)).collect();
    broken += second_broken.len();
    out.skipped.extend(second_broken);
    let mut rest: Vec<(u32, Vec<(u64, Episode)>)> = open.into_iter().collect();
    rest.sort_by_key(|(g, _)| *g);
    for (g, members) in rest {
        out.complete(g, members, settings, page_anchor);
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
    /// Episode group `g` is complete: compute its table alone and keep its rows until their turn.
    fn complete(
        &mut self,
        g: u32,
        members: Vec<(u64, Episode)>,
        settings: &AdvantageSettings,
        page_anchor: Option<PageAnchor>,
    ) {
        let (lines, mut group): (Vec<u64>, Vec<Episode>) = members.into_iter().unzip();
        fill_page_anchors(&mut group, page_anchor);
        let table = compute(&group, settings);
        self.anchor_count.insert(g, table.anchor_groups.len() as u32);
        for (e, (episode, line)) in group.iter().zip(lines).enumerate() {
            self.done.insert(line, Done { rows: rows_of(episode, &table, e) });
        }
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

fn rows_of(episode: &Episode, table: &AdvantageTable, e: usize) -> Vec<OwnedRow> {
    episode_rows(episode, table, e, 0).map(|r| OwnedRow::of(&r)).collect()
}
