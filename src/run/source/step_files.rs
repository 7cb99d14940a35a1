//! The bookkeeping of a layout written as one file per training step (verl's `{step}.jsonl`, TRL's
//! `completions_{step}.parquet`), shared by their readers.
//!
//! Contract: [`StepFiles`] lists the directory (a listing error is said once while it lasts), says each notice
//! once per run, and remembers which step files' content ([`Stamp`]) was delivered since the last reset, in
//! step order. A reader decides from it whether what it can deliver now only appends to what was delivered
//! ([`StepFiles::appends`]), or voids it ([`StepFiles::reset`]: a [`LiveEvent::Reset`], then every file again
//! in step order). What counts as readable, and the words of its notices, stay the reader's own: a step file's
//! format is parsed by its reader alone.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use super::events::{ErrorOnce, LiveEvent, LiveFile};
use crate::run::dir::list_dir;
use crate::run::span::Stamp;

/// About how much a poll delivers of a run in step files: the files in step order until their bytes (verl) or
/// rows (TRL, whose parquet bytes are compressed: [`PART_ROWS`]) reach this, at least one file; the rest comes
/// with the next polls (`more`). A one-shot reader that does not keep the episodes (`validate`, `convert`) then
/// holds a part of the run at a time, not the run. A megabyte is one step file of a typical verl dump (2,000 rows
/// of about 1 KB): a viewer's reader then holds one file's episodes whole between parsing and spilling them, not
/// two (4 MB took the viewer's peak on a verl dump of 97 MB from 46-48 to 57-58 MB).
pub const PART_BYTES: u64 = 1 << 20;

/// [`PART_BYTES`] for step files counted in rows.
pub const PART_ROWS: usize = 4096;

/// What a reader of step files keyed by `K` (in step order) has said and delivered.
#[derive(Debug)]
pub struct StepFiles<K> {
    listing: ErrorOnce,
    /// Notices sent (each is sent once: the run keeps them).
    said: HashSet<String>,
    /// The content of each step file delivered since the last reset.
    delivered: BTreeMap<K, Stamp>,
}

impl<K> Default for StepFiles<K> {
    fn default() -> Self {
        StepFiles { listing: ErrorOnce::default(), said: HashSet::new(), delivered: BTreeMap::new() }
    }
}

impl<K: Ord + Clone> StepFiles<K> {
    /// The file names in `dir`, sorted; `None` when it cannot be listed (said once while that lasts).
    pub fn list(&mut self, dir: &Path, events: &mut Vec<LiveEvent>) -> Option<Vec<String>> {
        match list_dir(dir) {
            Ok(names) => {
                events.extend(self.listing.report(None));
                Some(names)
            }
            Err(err) => {
                events.extend(self.listing.report(Some(err.to_string())));
                None
            }
        }
    }

    /// Send `message` as a notice, unless it was sent before.
    pub fn say(&mut self, message: String, events: &mut Vec<LiveEvent>) {
        if self.said.insert(message.clone()) {
            events.push(LiveEvent::Error(message));
        }
    }

    /// The content of step file `key` delivered since the last reset.
    pub fn delivered(&self, key: &K) -> Option<Stamp> {
        self.delivered.get(key).copied()
    }

    /// The step files delivered since the last reset, in step order, with the content delivered.
    pub fn delivered_files(&self) -> impl DoubleEndedIterator<Item = (&K, &Stamp)> {
        self.delivered.iter()
    }

    /// How many step files were delivered since the last reset.
    pub fn delivered_count(&self) -> usize {
        self.delivered.len()
    }

    /// Step file `key` was delivered with the content `stamp`.
    pub fn record(&mut self, key: K, stamp: Stamp) {
        self.delivered.insert(key, stamp);
    }

    /// Whether delivering `available` (every step file that can be delivered now, in step order, with its
    /// content) only appends to what was delivered: what was delivered is its beginning, unchanged.
    pub fn appends(&self, available: &[(K, Stamp)]) -> bool {
        self.delivered.len() <= available.len()
            && self.delivered.iter().zip(available).all(|((key, stamp), (now, content))| key == now && stamp == content)
    }

    /// What was delivered is void: the episodes are reset, and every step file is to be delivered again.
    pub fn reset(&mut self, events: &mut Vec<LiveEvent>) {
        events.push(LiveEvent::Reset(LiveFile::Episodes));
        self.delivered.clear();
    }
}
