//! Everything a key can do. The keymap maps key names to these, and the help popup and hint bar are generated
//! from the same keymap, so what the help says is exactly what the keys do.

use serde::{Deserialize, Serialize};

/// A user command, bindable to keys in `keymap.toml` by its snake_case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    Help,
    Back,
    Open,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Top,
    Bottom,
    PrevItem,
    NextItem,
    ScrollUp,
    ScrollDown,
    Fold,
    Overview,
    Groups,
    Episode,
    Anchor,
    Compare,
    Estimators,
    Credit,
    Timeline,
    Truth,
    Settings,
    ResetSettings,
    Follow,
    Search,
    SearchNext,
    SearchPrev,
    Play,
    Autoplay,
    WatchPolicy,
    Abandon,
    Train,
    CancelBurst,
    TokenChannel,
    TokenJump,
    TokenScrollUp,
    TokenScrollDown,
    TokenZoom,
    ApplyReconciled,
}

impl Action {
    /// Every action, in the order the help popup lists them.
    pub const ALL: &'static [Action] = &[
        Action::Up,
        Action::Down,
        Action::PageUp,
        Action::PageDown,
        Action::Top,
        Action::Bottom,
        Action::Open,
        Action::Back,
        Action::Left,
        Action::Right,
        Action::PrevItem,
        Action::NextItem,
        Action::ScrollUp,
        Action::ScrollDown,
        Action::Fold,
        Action::TokenChannel,
        Action::TokenJump,
        Action::TokenScrollUp,
        Action::TokenScrollDown,
        Action::TokenZoom,
        Action::Overview,
        Action::Groups,
        Action::Episode,
        Action::Anchor,
        Action::Compare,
        Action::Estimators,
        Action::Credit,
        Action::Timeline,
        Action::Truth,
        Action::Settings,
        Action::ResetSettings,
        Action::ApplyReconciled,
        Action::Follow,
        Action::Search,
        Action::SearchNext,
        Action::SearchPrev,
        Action::Play,
        Action::Autoplay,
        Action::WatchPolicy,
        Action::Abandon,
        Action::Train,
        Action::CancelBurst,
        Action::Help,
        Action::Quit,
    ];

    /// One line for the help popup.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Help => "this help",
            Action::Back => "back to the previous view / close popup",
            Action::Open => "open the selection (iteration → groups → episode → anchor group → step)",
            Action::Up => "move up",
            Action::Down => "move down",
            Action::Left => "back; in settings and the goal picker: decrease / previous value",
            Action::Right => "open; in settings and the goal picker: increase / next value",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Top => "first row",
            Action::Bottom => "last row",
            Action::PrevItem => "previous group / trajectory / compared trajectory",
            Action::NextItem => "next group / trajectory / compared trajectory",
            Action::ScrollUp => "scroll the observation up",
            Action::ScrollDown => "scroll the observation down",
            Action::Fold => "fold / unfold the middle of long plain-text observations (prompts with history)",
            Action::Overview => "run overview",
            Action::Groups => "group view",
            Action::Episode => "episode view",
            Action::Anchor => "anchor-state group of the selected step",
            Action::Compare => "compare two trajectories of the group",
            Action::Estimators => "every estimator side by side on the group's steps, beside the Monte-Carlo truth A*",
            Action::Credit => {
                "credit audit of the selected iteration: behaviours from the most pushed up to the most pushed down \
                 (Enter: their rows; again in the view: grouped by the last search's query, or back by verb)"
            }
            Action::Timeline => {
                "the selected step's anchor state across the iterations: visits, actions taken there, their A, A_S \
                 and A*"
            }
            Action::Truth => {
                "in the estimators and anchor views: measure the open group's Monte-Carlo truth in the background \
                 (again: cancel)"
            }
            Action::Settings => "advantage settings panel",
            Action::ResetSettings => "reset settings to the run's recorded ones",
            Action::ApplyReconciled => {
                "apply the TRL settings offered because they reproduce the trainer's stored advantages"
            }
            Action::Follow => "follow mode: jump to the newest episodes as they arrive",
            Action::Search => "search the run",
            Action::SearchNext => "next search result",
            Action::SearchPrev => "previous search result",
            Action::Play => "live play: pick a goal, play a group by hand (written to the run)",
            Action::Autoplay => {
                "in play: the run's policy plays the rest of the group (while watching: the rest at once)"
            }
            Action::WatchPolicy => {
                "in play: the run's policy plays the rest of the group step by step (Enter: its next step)"
            }
            Action::Abandon => "in play: abandon the group being played (press twice; nothing is written)",
            Action::Train => "training burst dialog: train into this run, watch its progress",
            Action::CancelBurst => "cancel the burst (after its iteration) or a job",
            Action::TokenChannel => {
                "token strip: colour the tokens by the next channel (effective weight, advantage, log-probability, \
                 entropy, KL, mismatch, clipped)"
            }
            Action::TokenJump => "jump to the next step of largest token mismatch or KL (the run's token summaries)",
            Action::TokenScrollUp => "token strip: scroll back through a long response",
            Action::TokenScrollDown => "token strip: scroll on through a long response",
            Action::TokenZoom => "token pane: take the episode view's observation and actions' room (again: back)",
        }
    }

    /// A word or two for the bottom hint bar.
    pub fn hint(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Help => "help",
            Action::Back => "back",
            Action::Open => "open",
            Action::Up | Action::Down => "move",
            Action::Left => "less",
            Action::Right => "more",
            Action::PageUp | Action::PageDown => "page",
            Action::Top => "top",
            Action::Bottom => "bottom",
            Action::PrevItem | Action::NextItem => "prev/next",
            Action::ScrollUp | Action::ScrollDown => "scroll obs",
            Action::Fold => "fold",
            Action::Overview => "overview",
            Action::Groups => "groups",
            Action::Episode => "episode",
            Action::Anchor => "anchor",
            Action::Compare => "compare",
            Action::Estimators => "estimators",
            Action::Credit => "credit",
            Action::Timeline => "state timeline",
            Action::Truth => "truth",
            Action::Settings => "settings",
            Action::ResetSettings => "reset",
            Action::ApplyReconciled => "apply offered settings",
            Action::Follow => "follow",
            Action::Search => "search",
            Action::SearchNext | Action::SearchPrev => "next/prev hit",
            Action::Play => "play",
            Action::Autoplay => "policy plays",
            Action::WatchPolicy => "watch policy",
            Action::Abandon => "abandon",
            Action::Train => "train",
            Action::CancelBurst => "cancel",
            Action::TokenChannel => "token channel",
            Action::TokenJump => "token outliers",
            Action::TokenScrollUp | Action::TokenScrollDown => "scroll tokens",
            Action::TokenZoom => "zoom tokens",
        }
    }
}
