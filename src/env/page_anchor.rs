//! The environment-specific anchor of a state (WebShop's page type) for recorded steps that lack it. An
//! environment records it as the step's `page` when it plays ([`super::Environment::page`]); runs recorded
//! elsewhere (another trainer's WebShop rollouts) carry only the observation, and the environment derives the
//! anchor from that. The advantage engine reads page anchors only from `page`, as data: whoever computes page
//! anchors on such a run fills `page` first ([`fill_page_anchors`]).

use crate::run::Episode;

/// How an environment anchors an observation beyond its exact text (WebShop: its page type). Copied, compared
/// and shown by the environment's name, so requests that carry it stay plain data.
#[derive(Clone, Copy)]
pub struct PageAnchor {
    env: &'static str,
    anchor: fn(&str) -> &'static str,
}

impl PageAnchor {
    /// `anchor` is environment `env`'s page anchor of an observation.
    pub const fn new(env: &'static str, anchor: fn(&str) -> &'static str) -> PageAnchor {
        PageAnchor { env, anchor }
    }

    /// The page anchor of `observation`.
    pub fn of(&self, observation: &str) -> &'static str {
        (self.anchor)(observation)
    }

    /// The anchor as the closure the estimators and the lean reader take.
    pub fn as_fn(&self) -> &(dyn Fn(&str) -> &'static str + Sync) {
        &self.anchor
    }
}

impl PartialEq for PageAnchor {
    fn eq(&self, other: &PageAnchor) -> bool {
        self.env == other.env
    }
}

impl std::fmt::Debug for PageAnchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageAnchor({})", self.env)
    }
}

/// Give every step of `episodes` that records no `page` the one `page_anchor` derives from its observation;
/// without a page anchor (an environment that has none, such as Sokoban) nothing changes, and the engine keys
/// every step without a page alike (one page-anchor group per episode group).
pub fn fill_page_anchors(episodes: &mut [Episode], page_anchor: Option<PageAnchor>) {
    let Some(page_anchor) = page_anchor else { return };
    for step in episodes.iter_mut().flat_map(|e| e.steps.iter_mut()).filter(|s| s.page.is_none()) {
        step.page = Some(page_anchor.of(&step.observation).to_owned());
    }
}
