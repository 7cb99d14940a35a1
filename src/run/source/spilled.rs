//! A viewer's reading of a source whose episodes have no line of their own (verl dumps, TRL logs, verifiers'
//! rollouts): [`SpilledText`].
//!
//! Contract: [`read_lean`] gives the source itself when it takes its episodes in lean from its own lines
//! (gigscope-run/1); any other source is wrapped so that the episodes it builds are written to a spill file
//! ([`TextSpill`]) as they arrive and delivered lean ([`LiveEvent::LeanEpisodes`]), their text read back from
//! the spill on demand as a gigscope run's is from `episodes.jsonl`. Every other event passes as it is, in
//! order (a `Meta` also sets the page anchor of what follows, as it does for a viewer that takes episodes
//! whole). Where no spill can be made, or a write to it fails (a full disk), the episodes not written go on
//! whole (their text in memory, as before spills) and a notice says why, once. The layout's reader itself
//! is unchanged: a one-shot read never spills.

use std::path::{Path, PathBuf};

use crate::run::format::Episode;
use crate::run::layout::Layout;
use crate::run::lean_reading::LeanReading;
use crate::run::spill::TextSpill;

use super::events::{LeanRecord, LiveEvent, RunSource, SourcePoll};

/// `source`, delivering its episodes lean to `reading`: itself when it reads them lean from its own lines,
/// else wrapped in a [`SpilledText`] whose spill is made in the first of `spill_dirs` where one can be.
pub fn read_lean(mut source: Box<dyn RunSource>, reading: LeanReading, spill_dirs: &[PathBuf]) -> Box<dyn RunSource> {
    if source.read_lean(reading.clone()) {
        return source;
    }
    let (spill, notice) = match TextSpill::create(spill_dirs) {
        Ok(spill) => (Some(spill), None),
        Err(err) => (None, Some(format!("the episodes' text is kept in memory: no spill file could be made ({err})"))),
    };
    let reading = spill.as_ref().map_or_else(|| reading.clone(), |spill| reading.reading_from(spill.store().clone()));
    Box::new(SpilledText { inner: source, reading, spill, notice })
}

/// A source whose episodes' text goes to a spill file as they arrive (see the module docs).
#[derive(Debug)]
pub struct SpilledText {
    inner: Box<dyn RunSource>,
    /// Reads back through the spill's store.
    reading: LeanReading,
    /// `None` once no spill can be written: episodes then go on whole.
    spill: Option<TextSpill>,
    /// Why the text stays in memory, not said yet.
    notice: Option<String>,
}

impl SpilledText {
    /// `events` with their episodes spilled and taken in lean.
    fn lean(&mut self, events: Vec<LiveEvent>) -> Vec<LiveEvent> {
        let mut out = Vec::with_capacity(events.len() + 1);
        for event in events {
            match event {
                LiveEvent::Meta(meta) => {
                    self.reading.described(meta.as_deref());
                    out.push(LiveEvent::Meta(meta));
                }
                LiveEvent::Episodes(records) if self.spill.is_some() => out.extend(self.spilled(records)),
                other => out.push(other),
            }
        }
        out.extend(self.notice.take().map(LiveEvent::Error));
        out
    }

    /// The episodes of `records` written to the spill and taken in lean, in order; those left whole (a failed
    /// write, a number a line cannot carry) go on whole where they were.
    fn spilled(&mut self, records: Vec<(u64, Episode)>) -> Vec<LiveEvent> {
        let (lines, mut episodes): (Vec<u64>, Vec<Episode>) = records.into_iter().unzip();
        if let Some(spill) = self.spill.as_mut() {
            if let Err(err) = spill.append(&mut episodes) {
                self.notice = Some(format!("the episodes' text is kept in memory from here on: {err}"));
                self.spill = None;
            }
        }
        let mut events = Vec::new();
        for (line, episode) in lines.into_iter().zip(episodes) {
            let spilled = episode.read_from.0.is_some();
            let last = events.last_mut();
            match (spilled, last) {
                (true, Some(LiveEvent::LeanEpisodes { episodes, .. })) => {
                    episodes.push(self.lean_record(line, episode))
                }
                (true, _) => events.push(LiveEvent::LeanEpisodes {
                    episodes: vec![self.lean_record(line, episode)],
                    pages: Vec::new(),
                }),
                (false, Some(LiveEvent::Episodes(whole))) => whole.push((line, episode)),
                (false, _) => events.push(LiveEvent::Episodes(vec![(line, episode)])),
            }
        }
        // The page names as of the last episode taken: ids only ever grow.
        let names = self.reading.page_names();
        for event in &mut events {
            if let LiveEvent::LeanEpisodes { pages, .. } = event {
                pages.clone_from(&names);
            }
        }
        events
    }

    fn lean_record(&mut self, line: u64, episode: Episode) -> LeanRecord {
        let file = self.reading.source_file(&episode);
        LeanRecord { line, episode: self.reading.take(episode), file, flight: None }
    }
}

impl RunSource for SpilledText {
    fn layout(&self) -> Layout {
        self.inner.layout()
    }

    fn poll(&mut self) -> SourcePoll {
        let poll = self.inner.poll();
        SourcePoll { events: self.lean(poll.events), ..poll }
    }

    fn watches(&self, path: &Path) -> bool {
        self.inner.watches(path)
    }

    fn watch_dirs(&self) -> Vec<PathBuf> {
        self.inner.watch_dirs()
    }

    fn finish(&mut self) -> Vec<LiveEvent> {
        let events = self.inner.finish();
        self.lean(events)
    }

    fn read_in_parts_of(&mut self, bytes: u64) {
        self.inner.read_in_parts_of(bytes);
    }

    fn ids_unique(&self) -> bool {
        self.inner.ids_unique()
    }

    fn read_lean(&mut self, _reading: LeanReading) -> bool {
        true
    }
}
