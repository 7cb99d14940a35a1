//! Episodes taken in lean as a reader parses them: [`LeanReading`].
//!
//! Contract: a reading turns each line of `episodes.jsonl` into a [`LeanEpisode`] whose text stays on disk
//! (read back through its [`TextStore`]), with the same result as parsing the line whole, and interns the
//! steps' page anchors in its own [`PageIds`]; readings of one run on several threads merge their tables
//! ([`LeanReading::take_pages_of`]). It knows no environment: the page anchor of a step that records none
//! comes from the classifier it is given for the run's description (`run.json`), and again whenever that
//! changes ([`LeanReading::described`]). `LeanReading::new`, which takes the classifier of a whole
//! [`super::Run`], is written beside `Run` (`in_memory.rs`), which is above this file.

use std::collections::HashSet;
use std::sync::Arc;

use super::format::{Episode, RunMeta};
use super::jsonl::parse_json;
use super::span::{LineSpan, ReadFrom};
use super::text_on_disk::{EpisodeText, LeanEpisode, PageClassifier, PageId, PageIds, SharedGroups, TextStore};

/// The environment's page anchor for a run described by `run.json`'s content (`None`: no `run.json`).
pub type ClassifierOf = Arc<dyn Fn(Option<&RunMeta>) -> Option<PageClassifier> + Send + Sync>;

/// A reader that makes lean episodes on its own thread, the viewer getting episodes that only need merging:
/// straight from their lines ([`LeanReading::parse`]: no text is copied), or, for a line it cannot parse so,
/// from the episode parsed whole, whose text is then freed right where it was allocated, while it is still in
/// the allocator's per-thread caches (a viewer that took whole parts and freed them later, or on another
/// thread, spent as long again in the allocator).
#[derive(Clone)]
pub struct LeanReading {
    store: TextStore,
    pages: PageIds,
    /// The episodes' group names, shared by a group's episodes.
    groups: SharedGroups,
    files: SourceFiles,
    classifier_of: ClassifierOf,
    classify: Option<PageClassifier>,
}

impl std::fmt::Debug for LeanReading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeanReading")
            .field("store", &self.store)
            .field("pages", &self.pages)
            .field("classify", &self.classify)
            .finish_non_exhaustive()
    }
}

impl LeanReading {
    /// Episodes whose text is read back through `store`; the page anchor of steps without a recorded page from
    /// `classify` now, and from `classifier_of` the run's description once it changes.
    pub fn with_classifier(
        store: TextStore,
        classifier_of: ClassifierOf,
        classify: Option<PageClassifier>,
    ) -> LeanReading {
        LeanReading {
            store,
            pages: PageIds::default(),
            groups: SharedGroups::default(),
            files: SourceFiles::default(),
            classifier_of,
            classify,
        }
    }

    /// The run's description changed: the page anchor may be another environment's.
    pub fn described(&mut self, meta: Option<&RunMeta>) {
        self.classify = (self.classifier_of)(meta);
    }

    /// This reading (its page table and classifier) for episodes whose text is read back through `store`.
    pub fn reading_from(&self, store: TextStore) -> LeanReading {
        LeanReading { store, ..self.clone() }
    }

    /// The lean form of `episode`, its text freed now: on disk when the episode says where its line is (in the
    /// file this reading's store reads), else kept in memory.
    pub(super) fn take(&mut self, episode: Episode) -> LeanEpisode {
        let classify = self.classify.as_ref().map(|c| c as &dyn Fn(&str) -> &'static str);
        let mut lean = LeanEpisode::new(episode, &self.store, &mut self.pages, classify);
        lean.group = self.groups.share(&lean.group);
        lean
    }

    /// The lean form of the episode on line `span`, whose text (newline cut) is `line`, parsed straight from the
    /// line without copying its text ([`super::lean_line`]), and the file its `extra.source.file` names. A line
    /// that does not parse so is read as an [`Episode`], for the reader's own error, word for word.
    pub fn parse(&mut self, line: &str, span: LineSpan) -> Result<(LeanEpisode, Option<Arc<str>>), String> {
        let text = EpisodeText::OnDisk { span, store: self.store.clone() };
        match super::lean_line::parse(line, text, &mut self.pages, &mut self.groups, self.classify) {
            Ok((lean, file)) => Ok((lean, file.map(|file| self.files.share(&file)))),
            Err(_) => {
                let mut episode: Episode = parse_json(line)?;
                episode.read_from = ReadFrom(Some(span));
                let file = self.source_file(&episode);
                Ok((self.take(episode), file))
            }
        }
    }

    /// The file `episode` names ([`Episode::source_file`]), one copy shared by every episode that names it
    /// ([`SourceFiles`]).
    pub(super) fn source_file(&mut self, episode: &Episode) -> Option<Arc<str>> {
        episode.source_file().map(|file| self.files.share(file))
    }

    /// The page names the episodes' page ids stand for, in id order.
    pub fn page_names(&self) -> Vec<String> {
        self.pages.names().map(str::to_owned).collect()
    }

    /// Take the page ids `other` gave (a reading of the same run on another thread) into this reading's table:
    /// what each of `other`'s ids is here ([`LeanEpisode::renumber_pages`]). `other` then starts from this
    /// table, so that the next ids it gives mostly agree.
    pub fn take_pages_of(&mut self, other: &mut LeanReading) -> Vec<PageId> {
        let ids = other.pages.names().map(|name| self.pages.id(name)).collect();
        other.pages = self.pages.clone();
        ids
    }
}

/// The files records name ([`Episode::source_file`]: a verl dump's step file, an exporter's source), each name
/// one copy, kept here for as long as the reading is: the records that name it hold that copy, and are dropped
/// where they are merged, on the viewer's thread. Were one of them the last to hold a name made here, on the
/// reader's thread, the viewer's thread would free it into its own cache of free blocks, and then take that
/// block and the reader's blocks it grows into for what the viewer keeps, among the reader's freed heap pages,
/// which stay taken. A dump has one name a step file.
#[derive(Clone, Debug, Default)]
struct SourceFiles(HashSet<Arc<str>>);

impl SourceFiles {
    fn share(&mut self, name: &str) -> Arc<str> {
        if let Some(kept) = self.0.get(name) {
            return Arc::clone(kept);
        }
        let name = Arc::<str>::from(name);
        self.0.insert(Arc::clone(&name));
        name
    }
}
