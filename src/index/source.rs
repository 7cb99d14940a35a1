//! What an index is built from: the run's episodes in file order, fetched with their text only when they are
//! written, and identified (for the digest that tells whether the index still matches the run) by what is
//! kept of them without their text. Episodes held in memory are a source ([`Episode`] slices: the CLI, the
//! tests), and so are a viewer's [`LeanEpisode`]s, whose text is read back from the run's file as the index
//! writes them: a background build of a large run never holds the run's text.

use std::ops::Deref;
use std::sync::Arc;

use crate::run::lean::{anchor_hash, LeanEpisode, TextError};
use crate::run::Episode;

/// What identifies an episode to the index's digest: ids, iteration, outcome, and per step the reward and
/// the 128-bit hash of its anchor. A run rewritten with other ids, rewards or states is told apart from the
/// run that was indexed; text that changes nothing of these (an action's or thought's wording alone) is not.
pub struct EpisodeIdentity<'a> {
    pub id: &'a str,
    pub group: &'a str,
    pub iteration: i64,
    pub success: bool,
    pub steps: Vec<(f64, u128)>,
}

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

/// The episodes an index is built from.
pub trait IndexSource: Sync {
    /// Number of episodes.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// What identifies episode `e`.
    fn identity(&self, e: usize) -> EpisodeIdentity<'_>;
    /// Episode `e` with its text.
    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError>;
}

impl IndexSource for [Episode] {
    fn len(&self) -> usize {
        <[Episode]>::len(self)
    }

    fn identity(&self, e: usize) -> EpisodeIdentity<'_> {
        let episode = &self[e];
        EpisodeIdentity {
            id: &episode.id,
            group: &episode.group,
            iteration: episode.iteration,
            success: episode.success(),
            steps: episode.steps.iter().map(|s| (s.reward, anchor_hash(s.anchor_key()))).collect(),
        }
    }

    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError> {
        Ok(Fetched::Borrowed(&self[e]))
    }
}

impl IndexSource for [LeanEpisode] {
    fn len(&self) -> usize {
        <[LeanEpisode]>::len(self)
    }

    fn identity(&self, e: usize) -> EpisodeIdentity<'_> {
        let episode = &self[e];
        EpisodeIdentity {
            id: &episode.id,
            group: &episode.group,
            iteration: episode.iteration,
            success: episode.success,
            steps: episode.steps.iter().map(|s| (s.reward, s.anchor)).collect(),
        }
    }

    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError> {
        self[e].text.read().map(Fetched::Shared)
    }
}

impl<T: Sync> IndexSource for Vec<T>
where
    [T]: IndexSource,
{
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn identity(&self, e: usize) -> EpisodeIdentity<'_> {
        self.as_slice().identity(e)
    }

    fn episode(&self, e: usize) -> Result<Fetched<'_>, TextError> {
        self.as_slice().episode(e)
    }
}
