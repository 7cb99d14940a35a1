//! What an index is built from: the run's episodes in file order, fetched with their text only when they are
//! written, and identified (for the digest that tells whether the index still matches the run) by what is
//! kept of them without their text. Episodes held in memory are a source ([`Episode`] slices: the CLI, the
//! tests), and so are lean episodes (a viewer's [`LeanEpisodes`]), whose text is read back from the run's file as the index
//! writes them: a background build of a large run never holds the run's text.

use std::ops::Deref;
use std::sync::Arc;

use crate::advantage::EngineInput;
use crate::run::text_on_disk::{LeanEpisode, TextError};
use crate::run::{Episode, LeanEpisodes};

/// An episode fetched from a source: borrowed from memory, or read back from disk.
pub enum Fetched<'a> {
    Borrowed(&'a Episode),
    Shared(Arc<Episode>),
}

impl Deref for Fetched<'_> {
    type Target = Episode;

    fn deref(&self) -> &Episode {
        match self {
            Fetched::Borrowed(episode) => episode,
            Fetched::Shared(episode) => episode,
        }
    }
}

/// The episodes an index is built from: the engine's input (what identifies each episode to the index's
/// digest: ids, iteration, outcome, per step the reward and the hash of its exact anchor) and each episode with
/// its text.
pub trait IndexSource: EngineInput {
    /// Episode `e` with its text.
    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError>;
}

impl IndexSource for [Episode] {
    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError> {
        Ok(Fetched::Borrowed(&self[e]))
    }
}

impl IndexSource for [LeanEpisode] {
    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError> {
        self[e].text.read().map(Fetched::Shared)
    }
}

impl IndexSource for LeanEpisodes {
    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError> {
        self.at(e).read().map(Fetched::Shared)
    }
}

impl<T: Sync> IndexSource for Vec<T>
where
    [T]: IndexSource,
{
    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError> {
        self.as_slice().episode(e)
    }
}
