//! One live episode of an environment, as the port sees it ([`Environment`]): what the player and the policy
//! see, what they may do, and how a step went.

use crate::run::Outcome;

/// What one step did.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub reward: f64,
    pub done: bool,
    /// The action was admissible in the state it was taken in (otherwise the environment's documented
    /// no-op).
    pub valid: bool,
}

/// One live episode. [`Environment::box_clone`] gives an independent copy in the same state: the N episodes
/// of a group start from clones of one reset environment.
pub trait Environment: Send {
    /// The current observation, as the run records it.
    fn observation(&self) -> &str;
    /// The exact anchor of the current state: steps with equal anchors form a step (anchor-state) group.
    fn anchor(&self) -> String;
    /// The environment-specific anchor of the current state, recorded as the step's `page` (WebShop's page
    /// type: `search`, `results`, `item`, `item_sub`, `done`); `None` where the environment has none.
    fn page(&self) -> Option<&str> {
        None
    }
    /// Actions offered in the current state; empty once the episode is over. An entry `name[<what>]` is a
    /// template ([`template_name`]): the player types the argument (WebShop's `search[<your query>]`).
    fn available_actions(&self) -> Vec<String>;
    /// A few words shown beside an offered action on the screen (WebShop: a product click's title, a selected
    /// option's mark).
    fn action_label(&self, _action: &str) -> Option<String> {
        None
    }
    fn step(&mut self, action: &str) -> Transition;
    /// Choices made in the current state that the observation does not show (WebShop: the options selected on
    /// an item page, as name and value), for the player's screen; never part of what the policy sees.
    fn choices(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The final reward explained for the player's screen, line by line (WebShop: r_type, r_att, r_option,
    /// r_price and the formula filled in); empty where the environment explains none or nothing was earned.
    fn reward_explained(&self) -> Vec<String> {
        Vec::new()
    }
    /// How the episode was scored so far (final once it is over): success, score, and the environment's
    /// breakdown in `extra["reward_info"]` where it has one.
    fn outcome(&self) -> Outcome;
    /// The full state of the episode as a fingerprint, where the environment declares one: two episodes of one
    /// task with equal fingerprints behave alike from here on (the same observations, rewards and end for the
    /// same actions), whatever their observations hide (WebShop's selected options) and however they got
    /// there. It counts the steps taken, since the step limit ends an episode. Ground truth shares
    /// continuations between rows of equal fingerprints and counts the true states an anchor merges; `None`:
    /// every row is a state of its own.
    fn state_fingerprint(&self) -> Option<String> {
        None
    }
    fn box_clone(&self) -> Box<dyn Environment>;
}

/// `name` of an action template `name[<what>]`, whose argument the player types.
pub fn template_name(action: &str) -> Option<&str> {
    let (name, rest) = action.split_once("[<")?;
    rest.ends_with(">]").then_some(name)
}

impl Clone for Box<dyn Environment> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}
