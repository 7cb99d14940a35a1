//! `gigscope advantages` on a gigscope-run/1 directory without holding the run: memory grows with the
//! largest episode group (plus at most [`KEPT_BYTES`] of episodes kept from the first pass), not with the run.
//!
//! Episode groups never influence each other (the engine's property `tests/advantage/parallel.rs` checks), so
//! each group's table is computed alone once its last episode has been read. Two passes over
//! `episodes.jsonl`: the first finds each line's `group` (what decides the groups, and when each is complete);
//! the second reads the episodes in lean form (numbers and anchor hashes, parsed from the line without copying
//! its text: [`LeanReading::parse`]), keeps those of groups still open, computes a group's table as soon as its
//! last line has gone by, and writes rows in file order (rows of an episode whose group is still open wait, as
//! numbers, for it). The first pass reads its first lines' episodes in lean form already, and keeps them until
//! [`KEPT_BYTES`] are kept: a run that small (about 2,000 episodes of a dozen steps) is read and parsed once,
//! its second pass taking them from memory; past that, the first pass reads only `group`. A similarity grouping
//! reads its group's anchors back from the file. Anchor groups are numbered as the whole-run table numbers
//! them: group by group in order of first appearance. Lines the first pass saw are the only ones read by the
//! second (a trainer appending meanwhile does not change the output). Broken lines and duplicate ids are skipped
//! as every reader skips them, and counted on stderr.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::io::Write;
use std::path::Path;

use serde::Deserialize;

use super::rows::{episode_rows, Format, OutRow, RowWriter, TableWidths};
use crate::advantage::{
    compute_grouped, group_lean, unrecorded_states, AdvantageSettings, AdvantageTable, EngineInput,
};
use crate::run::text_on_disk::{LeanEpisode, LeanStep};
use crate::run::tokens::{count_lengths, Lengths, TokenStore};
use crate::run::{parse_json, Episode, JsonlTail, EPISODES_FILE};
use crate::run::{IdRef, LeanReading};

/// What the first pass reads of a line.
#[derive(Deserialize)]
struct Head {
    group: String,
    /// Only for the table's width: a missing or non-string id is the second pass's broken line.
    #[serde(default)]
    id: Option<serde_json::Value>,
}

/// The rows of one episode, computed and waiting for their turn in file order: its id and group once (not a
/// copy a row: most of the time a row would otherwise spend allocating), and each row's numbers.
struct Done {
    episode: String,
    group: String,
    iteration: i64,
    rows: Vec<OwnedRow>,
}

/// The numbers of an output row, which outlive its group's table.
struct OwnedRow {
    reward: Option<f64>,
    ret: Option<f64>,
    numbers: [f64; 3],
    stored_advantage: Option<f64>,
    step: usize,
    step_group: u32,
    step_group_size: usize,
}

impl Done {
    fn of<'a>(mut rows: impl Iterator<Item = OutRow<'a>>) -> Option<Self> {
        let first = rows.next()?;
        let mut done = Done {
            episode: first.episode.to_string(),
            group: first.group.to_owned(),
            iteration: first.iteration,
            rows: Vec::new(),
        };
        for r in std::iter::once(first).chain(rows) {
            done.rows.push(OwnedRow {
                reward: r.reward,
                ret: r.ret,
                numbers: [r.episode_advantage, r.step_advantage, r.advantage],
                stored_advantage: r.stored_advantage,
                step: r.step,
                step_group: r.step_group,
                step_group_size: r.step_group_size,
            });
        }
        Some(done)
    }

    fn out<'a>(&'a self, row: &OwnedRow) -> OutRow<'a> {
        let [episode_advantage, step_advantage, advantage] = row.numbers;
        OutRow {
            episode: IdRef::whole(&self.episode),
            group: &self.group,
            iteration: self.iteration,
            step: row.step,
            reward: row.reward,
            ret: row.ret,
            episode_advantage,
            step_advantage,
            advantage,
            step_group: row.step_group,
            step_group_size: row.step_group_size,
            stored_advantage: row.stored_advantage,
            delta: row.stored_advantage.map(|s| s - advantage),
        }
    }
}

/// What streaming found wrong, for the warning, and whose response lengths it counted from the token store.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Streamed {
    pub broken_lines: usize,
    pub lengths: Lengths,
    /// Steps written, and how many of them record no state ([`crate::advantage::unrecorded_states`]).
    pub steps: usize,
    pub unrecorded_states: usize,
}

/// How much of the run's episodes, in lean form, the first pass keeps for the second (see the module's comment).
pub(super) const KEPT_BYTES: usize = 1 << 20;

/// Write the advantages of the run in `dir` under `settings` (which must not couple episode groups: no TRL
/// batch scaling) to `out` in `format`; `reading` takes the episodes of the run's `episodes.jsonl` in lean form
/// (steps that record no page anchor get the one of the run's environment it was made with); the first pass
/// keeps about `kept_bytes` of episodes for the second ([`KEPT_BYTES`]: the output is the same whatever it is).
pub fn advantages(
    dir: &Path,
    settings: &AdvantageSettings,
    mut reading: LeanReading,
    kept_bytes: usize,
    out: impl Write,
    format: Format,
) -> anyhow::Result<Streamed> {
    let path = dir.join(EPISODES_FILE);
    // Pass 1: the group of every line that reads as an episode head, in file order; the first lines' episodes.
    let mut group_index: HashMap<String, u32> = HashMap::new();
    let mut line_group = Pending::default();
    let mut lines_of_group: Vec<u32> = Vec::new();
    let mut kept: HashMap<u64, Option<LeanEpisode>> = HashMap::new();
    let mut kept_so_far = 0;
    let mut heads = JsonlTail::<Head>::new(path.clone());
    let mut widths = TableWidths::default();
    let first = heads.poll_lines(|text, span| {
        let group = if kept_so_far < kept_bytes {
            match reading.parse(text, span) {
                Ok((episode, _)) => {
                    kept_so_far += lean_bytes(&episode);
                    widths.fit(&episode.id, &episode.group);
                    let group = episode.group.to_string();
                    kept.insert(span.line, Some(episode));
                    group
                }
                // A head that is no episode: the line belongs to its group, and is broken.
                Err(reason) => {
                    let head = parse_json::<Head>(text).map_err(|_| reason)?;
                    kept.insert(span.line, None);
                    head.group
                }
            }
        } else if let Some(head) = plain_head(text) {
            widths.fit(head.id.unwrap_or_default(), head.group);
            head.group.to_owned()
        } else {
            let head = parse_json::<Head>(text)?;
            widths.fit(head.id.as_ref().and_then(serde_json::Value::as_str).unwrap_or_default(), &head.group);
            head.group
        };
        let next = group_index.len() as u32;
        let g = *group_index.entry(group).or_insert(next);
        if g as usize == lines_of_group.len() {
            lines_of_group.push(0);
        }
        lines_of_group[g as usize] += 1;
        line_group.push(span.line, g);
        Ok(())
    })?;
    drop(group_index);
    let last_line = heads.lines();
    let line_count = line_group.len();

    // Pass 2: episodes, group by group as each completes; rows out in file order.
    let mut streaming = Streaming {
        out: Ordered::new(RowWriter::new(out, format, widths)?, line_group, Some(TokenStore::open(dir)?)),
        settings,
        lines_of_group,
        open: HashMap::new(),
        ids: HashSet::new(),
        hasher: RandomState::new(),
        broken: first.errors.len(),
    };
    if kept.len() == line_count {
        // Every line was read in the first pass (a run of at most `kept_bytes`: its lines are listed again).
        let lines: Vec<(u64, u32)> = streaming.out.pending.iter().collect();
        for (line, g) in lines {
            let episode = kept.remove(&line).flatten();
            streaming.take(line, g, episode)?;
        }
    } else {
        let mut failure = None;
        JsonlTail::<Episode>::new(path).poll_lines(|text, span| {
            let line = span.line;
            if line > last_line || failure.is_some() {
                return Ok(());
            }
            let Some(g) = streaming.out.group_of(line) else { return Ok(()) };
            let episode = match kept.remove(&line) {
                Some(episode) => episode,
                None => reading.parse(text, span).ok().map(|(episode, _)| episode),
            };
            if let Err(err) = streaming.take(line, g, episode) {
                failure = Some(err);
            }
            Ok(())
        })?;
        if let Some(err) = failure {
            return Err(err);
        }
    }
    // Groups with lines the second pass did not find (the file was truncated or replaced meanwhile), without them.
    let mut rest: Vec<(u32, Vec<(u64, LeanEpisode)>)> = streaming.open.drain().collect();
    rest.sort_by_key(|(g, _)| *g);
    for (g, members) in rest {
        streaming.out.complete(g, members, settings)?;
    }
    let Streaming { mut out, broken, .. } = streaming;
    out.finish()?;
    Ok(Streamed {
        broken_lines: broken,
        lengths: out.lengths,
        steps: out.steps,
        unrecorded_states: out.unrecorded_states,
    })
}

/// A line's `group` and `id` (when it is a string) found without parsing the line, where that is simple: the line
/// is an object whose top-level keys and `group` (and `id`, if present) are strings without escapes, each key
/// once. `None` otherwise, for the line to be parsed as a [`Head`]. The rest of the line is skipped over, not
/// checked: a line that is no episode is found broken by the second pass, which parses it whole (and counted
/// the same: a broken line either way).
fn plain_head(line: &str) -> Option<PlainHead<'_>> {
    let b = line.as_bytes();
    let mut i = skip_space(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let (mut group, mut id) = (None, None);
    i += 1;
    loop {
        let (key, after) = plain_string(line, skip_space(b, i))?;
        i = skip_space(b, after);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_space(b, i + 1);
        let field = match key {
            "group" => Some(&mut group),
            "id" => Some(&mut id),
            _ => None,
        };
        i = match field {
            Some(field) => {
                if field.is_some() {
                    return None;
                }
                let (value, after) = plain_string(line, i)?;
                *field = Some(value);
                after
            }
            None => skip_value(b, i)?,
        };
        i = skip_space(b, i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    (skip_space(b, i + 1) == b.len()).then_some(PlainHead { group: group?, id })
}

/// What [`plain_head`] finds.
struct PlainHead<'a> {
    group: &'a str,
    id: Option<&'a str>,
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The string that starts at `line[i]` (a quote) and where it ends, when nothing in it is escaped.
fn plain_string(line: &str, i: usize) -> Option<(&str, usize)> {
    let b = line.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = i + 1 + memchr::memchr2(b'"', b'\\', &b[i + 1..])?;
    (b[end] == b'"').then(|| (&line[i + 1..end], end + 1))
}

/// Where the string that starts at `b[i]` (a quote) ends, escapes and all.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

/// Where the JSON value that starts at `b[i]` ends, found by its brackets and strings (not checked otherwise).
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match *b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => Some(
            b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .map_or(b.len(), |n| i + n),
        ),
    }
}

/// About what a lean episode holds, bytes.
fn lean_bytes(episode: &LeanEpisode) -> usize {
    std::mem::size_of::<LeanEpisode>()
        + episode.id.len()
        + episode.group.len()
        + std::mem::size_of_val::<[LeanStep]>(&episode.steps)
}

/// The second pass's state: the groups still open, and where output stands.
struct Streaming<'s, W: Write> {
    out: Ordered<W>,
    settings: &'s AdvantageSettings,
    /// Lines of each group not yet taken.
    lines_of_group: Vec<u32>,
    open: HashMap<u32, Vec<(u64, LeanEpisode)>>,
    /// The ids met, by a 64-bit hash keyed at random per process (8 bytes an episode; two distinct ids of a run
    /// of ten million are taken for one with a probability of about 3 in a million).
    ids: HashSet<u64>,
    hasher: RandomState,
    broken: usize,
}

impl<W: Write> Streaming<'_, W> {
    /// Line `line` of group `g`, its episode (`None`: broken as an episode, skipped as every reader skips it):
    /// the group is computed once its last line is taken, and rows whose turn has come are written.
    fn take(&mut self, line: u64, g: u32, episode: Option<LeanEpisode>) -> anyhow::Result<()> {
        match episode {
            // A duplicate id is a broken line too, as for every reader.
            Some(episode) if self.ids.insert(self.hasher.hash_one(&episode.id)) => {
                self.open.entry(g).or_default().push((line, episode));
            }
            _ => {
                self.broken += 1;
                self.out.skipped.insert(line);
            }
        }
        let left = &mut self.lines_of_group[g as usize];
        *left -= 1;
        if *left == 0 {
            self.out.complete(g, self.open.remove(&g).unwrap_or_default(), self.settings)?;
        }
        self.out.flush()?;
        Ok(())
    }
}

/// Lines in increasing order, each with its group, taken from the front: 4 bytes a line (its group) and 16 a
/// run of consecutive line numbers (one run for a file without broken lines, and for a layout whose episodes
/// are numbered 0, 1, 2, ...), instead of 16 bytes a line as pairs.
#[derive(Debug, Default)]
pub(super) struct Pending {
    groups: VecDeque<u32>,
    /// Each run of consecutive lines: its first line and the number of lines pushed before it. The front run
    /// holds the front line.
    runs: VecDeque<(u64, u64)>,
    /// Lines taken from the front, and lines pushed, since the start.
    taken: u64,
    pushed: u64,
}

impl Pending {
    /// The lines `0, 1, 2, ...` of `groups`, without copying them.
    pub(super) fn numbered(groups: Vec<u32>) -> Self {
        let pushed = groups.len() as u64;
        Pending { groups: groups.into(), runs: VecDeque::from([(0, 0)]), taken: 0, pushed }
    }

    /// `line`, of group `g`, after every line pushed before (it must be greater than them).
    pub(super) fn push(&mut self, line: u64, g: u32) {
        let follows = self.runs.back().is_some_and(|&(first, before)| first + (self.pushed - before) == line);
        if !follows {
            self.runs.push_back((line, self.pushed));
            self.drop_passed_runs();
        }
        self.groups.push_back(g);
        self.pushed += 1;
    }

    /// Keep the front run the one that holds the front line: a run whose lines were all taken goes once the next
    /// run starts.
    fn drop_passed_runs(&mut self) {
        while self.runs.get(1).is_some_and(|&(_, before)| before <= self.taken) {
            self.runs.pop_front();
        }
    }

    /// How many lines are still to be taken.
    pub(super) fn len(&self) -> usize {
        self.groups.len()
    }

    /// The front line and its group.
    pub(super) fn front(&self) -> Option<(u64, u32)> {
        let (&g, &(first, before)) = (self.groups.front()?, self.runs.front()?);
        Some((first + (self.taken - before), g))
    }

    pub(super) fn pop_front(&mut self) -> Option<(u64, u32)> {
        let front = self.front()?;
        self.groups.pop_front();
        self.taken += 1;
        self.drop_passed_runs();
        Some(front)
    }

    /// The group of `line`, while it is still to be taken.
    pub(super) fn group_of(&self, line: u64) -> Option<u32> {
        // The run that starts last at or before `line`.
        let run = self.runs.partition_point(|&(first, _)| first <= line).checked_sub(1)?;
        let (first, before) = self.runs[run];
        let end = self.runs.get(run + 1).map_or(self.pushed, |&(_, next)| next);
        let at = before + (line - first);
        if at >= end || at < self.taken {
            return None;
        }
        self.groups.get(usize::try_from(at - self.taken).ok()?).copied()
    }

    /// Every line still to be taken, in order, with its group.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let lines = self.runs.iter().enumerate().flat_map(move |(r, &(first, before))| {
            let end = self.runs.get(r + 1).map_or(self.pushed, |&(_, next)| next);
            (before.max(self.taken)..end).map(move |at| first + (at - before))
        });
        lines.zip(self.groups.iter().copied())
    }
}

/// Rows computed group by group, written in file order.
pub(super) struct Ordered<W: Write> {
    writer: RowWriter<W>,
    /// Lines whose rows are still to be written, in file order, each with its group.
    pending: Pending,
    /// Rows of episodes whose group is complete, by line.
    done: HashMap<u64, Done>,
    /// Lines with nothing to write: broken lines, duplicate ids, episodes without steps.
    skipped: HashSet<u64>,
    /// Anchor groups of each complete episode group, and the first output number of each group written.
    anchor_count: HashMap<u32, u32>,
    base_of: HashMap<u32, u32>,
    next_base: u32,
    /// The run's token store, whose counts replace the recorded response lengths of each group's episodes
    /// ([`count_lengths`]), and how many it counted.
    tokens: Option<TokenStore>,
    pub(super) lengths: Lengths,
    /// Steps computed, and those of them that record no state.
    pub(super) steps: usize,
    pub(super) unrecorded_states: usize,
}

impl<W: Write> Ordered<W> {
    /// Rows to be written by `writer` for the episodes `pending` names, in its order.
    pub(super) fn new(writer: RowWriter<W>, pending: Pending, tokens: Option<TokenStore>) -> Self {
        Ordered {
            writer,
            pending,
            done: HashMap::new(),
            skipped: HashSet::new(),
            anchor_count: HashMap::new(),
            base_of: HashMap::new(),
            next_base: 0,
            tokens,
            lengths: Lengths::default(),
            steps: 0,
            unrecorded_states: 0,
        }
    }

    /// The group of `line`, whose rows are still to be written (`None`: no such line).
    pub(super) fn group_of(&self, line: u64) -> Option<u32> {
        self.pending.group_of(line)
    }

    /// The token store whose counts replace the recorded response lengths, if the run has one.
    pub(super) fn tokens(&self) -> Option<&TokenStore> {
        self.tokens.as_ref()
    }

    /// Episode group `g` is complete: compute its table alone and keep its rows until their turn. Fails only
    /// when a similarity grouping cannot read the anchors back (the file changed meanwhile).
    fn complete(
        &mut self,
        g: u32,
        members: Vec<(u64, LeanEpisode)>,
        settings: &AdvantageSettings,
    ) -> anyhow::Result<()> {
        let (lines, mut group): (Vec<u64>, Vec<LeanEpisode>) = members.into_iter().unzip();
        if let Some(tokens) = &self.tokens {
            self.lengths.add(count_lengths(tokens, group.as_mut_slice(), 0));
        }
        let table = compute_grouped(&group, &group_lean(group.as_slice(), settings.anchor)?, settings);
        self.take_table(g, &lines, group.as_slice(), &table)?;
        Ok(())
    }

    /// Group `g`'s episodes `input`, at `lines`, are complete and `table` is theirs: their rows are written once
    /// their turn has come (at once where it has), kept as numbers until then.
    pub(super) fn take_table<I: EngineInput + ?Sized>(
        &mut self,
        g: u32,
        lines: &[u64],
        input: &I,
        table: &AdvantageTable,
    ) -> std::io::Result<()> {
        self.steps += table.row_count();
        self.unrecorded_states += unrecorded_states(input);
        self.anchor_count.insert(g, table.anchor_groups.len() as u32);
        for (e, &line) in lines.iter().enumerate() {
            let mut rows = episode_rows(input, table, e).peekable();
            if rows.peek().is_none() {
                self.skipped.insert(line);
            } else if self.front() == Some(line) {
                // Its turn has come (a group's episodes mostly follow each other): written without waiting.
                self.pending.pop_front();
                self.write(g, rows)?;
            } else if let Some(done) = Done::of(rows) {
                self.done.insert(line, done);
            }
        }
        Ok(())
    }

    /// Every row written: what is still kept, then the writer's buffer.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        self.flush()?;
        self.writer.flush()
    }

    /// The first line whose rows are still to be written, lines with nothing to write passed over.
    fn front(&mut self) -> Option<u64> {
        while let Some((line, _)) = self.pending.front() {
            if !self.skipped.remove(&line) {
                return Some(line);
            }
            self.pending.pop_front();
        }
        None
    }

    /// Write the rows of an episode of group `g`, numbering its anchor groups as the whole-run table does.
    fn write<'a>(&mut self, g: u32, rows: impl Iterator<Item = OutRow<'a>>) -> std::io::Result<()> {
        // Every group that appeared before this one has had its first episode written already, so its count is
        // known: the numbering is the whole-run table's.
        let base = match self.base_of.get(&g) {
            Some(&base) => base,
            None => {
                let base = self.next_base;
                self.next_base += self.anchor_count[&g];
                self.base_of.insert(g, base);
                base
            }
        };
        for mut row in rows {
            row.step_group += base;
            self.writer.row(&row)?;
        }
        Ok(())
    }

    /// Write every episode at the front of `pending` whose rows are done (or which was skipped), in file order.
    pub(super) fn flush(&mut self) -> std::io::Result<()> {
        while let Some(line) = self.front() {
            let Some(episode) = self.done.remove(&line) else { return Ok(()) };
            let Some((_, g)) = self.pending.pop_front() else { return Ok(()) };
            self.write(g, episode.rows.iter().map(|row| episode.out(row)))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::advantage::AnchorMode;
    use crate::run::synth::{episodes, SynthSpec};
    use crate::run::text_on_disk::TextStore;
    use crate::run::{Run, RunWriter};

    /// The output and what was skipped, with the first pass keeping about `kept_bytes` of episodes.
    fn streamed(dir: &Path, settings: &AdvantageSettings, kept_bytes: usize) -> (String, Streamed) {
        let described = Run::empty(dir, crate::run::Layout::Gigscope);
        let reading = LeanReading::new(
            TextStore::new(&dir.join(EPISODES_FILE)),
            crate::env_registry::page_classifier,
            &described,
        );
        let mut out = Vec::new();
        let skipped = advantages(dir, settings, reading, kept_bytes, &mut out, Format::Jsonl).expect("streams");
        (String::from_utf8(out).expect("utf-8"), skipped)
    }

    #[test]
    fn the_output_is_the_same_whatever_the_first_pass_keeps() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        // Groups' lines interleaved, a line that is a head but no episode, a broken line and a repeated id.
        let mut run: Vec<Episode> = episodes(&SynthSpec { groups: 6, ..SynthSpec::reference_batch() }).collect();
        run.sort_by_key(|e| (e.id.split('-').nth(1).map(str::to_owned), e.group.clone()));
        let mut writer = RunWriter::create(dir).expect("run dir");
        for (k, episode) in run.iter().enumerate() {
            writer.append_episode(episode).expect("append");
            if k == 5 {
                let mut file = std::fs::OpenOptions::new().append(true).open(dir.join(EPISODES_FILE)).expect("open");
                writeln!(file, r#"{{"id":"head only","group":"{}"}}"#, episode.group).expect("write");
                writeln!(file, "{{broken").expect("write");
                writeln!(file, "{}", serde_json::to_string(&run[0]).expect("json")).expect("write");
            }
        }
        drop(writer);
        for anchor in [
            AnchorMode::Exact,
            AnchorMode::Page,
            AnchorMode::ObservationStep,
            AnchorMode::State,
            AnchorMode::Similarity(0.9),
        ] {
            let settings = AdvantageSettings { anchor, ..AdvantageSettings::default() };
            let whole = streamed(dir, &settings, usize::MAX);
            assert_eq!(whole.1.broken_lines, 3);
            assert!(whole.0.lines().count() > 300, "{anchor:?}: {} rows", whole.0.lines().count());
            // Nothing kept, the first few episodes kept, and all but the last few.
            for kept in [0, 3000, lean_bytes_of_all(dir) - 3000] {
                assert_eq!(streamed(dir, &settings, kept), whole, "{anchor:?}, {kept} bytes kept");
            }
        }
    }

    fn lean_bytes_of_all(dir: &Path) -> usize {
        let described = Run::empty(dir, crate::run::Layout::Gigscope);
        let mut reading = LeanReading::new(
            TextStore::new(&dir.join(EPISODES_FILE)),
            crate::env_registry::page_classifier,
            &described,
        );
        let mut total = 0;
        JsonlTail::<Episode>::new(dir.join(EPISODES_FILE))
            .poll_lines(|text, span| {
                total += reading.parse(text, span).map(|(e, _)| lean_bytes(&e)).unwrap_or(0);
                Ok(())
            })
            .expect("reads");
        total
    }

    proptest::proptest! {
        /// `Pending` answers as the queue of pairs it replaces: lines with gaps (broken lines left out), taken
        /// from the front at any point, looked up whether still pending, taken or never pushed.
        #[test]
        fn pending_lines_answer_as_a_queue_of_pairs(
            steps in proptest::collection::vec((1u64..4, 0u32..5, proptest::bool::ANY), 0..60),
            lookups in proptest::collection::vec(0u64..200, 0..20),
        ) {
            let (mut pending, mut model) = (Pending::default(), VecDeque::new());
            let mut line = 0;
            for (gap, g, take) in steps {
                line += gap;
                pending.push(line, g);
                model.push_back((line, g));
                if take {
                    proptest::prop_assert_eq!(pending.pop_front(), model.pop_front());
                }
                proptest::prop_assert_eq!(pending.front(), model.front().copied());
                proptest::prop_assert_eq!(pending.len(), model.len());
                for &probe in &lookups {
                    let expected = model.iter().find(|&&(l, _)| l == probe).map(|&(_, g)| g);
                    proptest::prop_assert_eq!(pending.group_of(probe), expected);
                }
                proptest::prop_assert_eq!(pending.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
            }
        }

        #[test]
        fn numbered_lines_are_their_positions(groups in proptest::collection::vec(0u32..9, 0..40), taken in 0usize..45) {
            let mut pending = Pending::numbered(groups.clone());
            for _ in 0..taken {
                pending.pop_front();
            }
            let expected: Vec<(u64, u32)> =
                groups.iter().enumerate().skip(taken).map(|(p, &g)| (p as u64, g)).collect();
            proptest::prop_assert_eq!(pending.iter().collect::<Vec<_>>(), expected.clone());
            for (p, g) in groups.iter().enumerate() {
                let expected = (p >= taken).then_some(*g);
                proptest::prop_assert_eq!(pending.group_of(p as u64), expected);
            }
        }
    }
}
