//! The WebShop text environment: pages, actions and the reward of the original's `text` mode, in-process.
//!
//! An env holds its catalog, search index and colour list behind `Arc`s and its page state by value,
//! so cloning one is cheap and gives an independent copy: GiGPO's rollout groups clone an env after
//! `reset` so that every member starts from the same state.
//!
//! Quirks of the original kept here: `search[q]` works from every page, not only the one with a search
//! bar; `click[search]` is listed on the search page but does nothing; `Next >` is always offered on a
//! results page, and past the last page it shows an empty page; an action that is not admissible leaves
//! the page as it is, gives reward 0 and still counts towards the step limit. Where a clickable text
//! belongs to both a button and an option value, the button wins.

use std::sync::Arc;

use serde::Serialize;

use crate::env::features::stable_hash;
use crate::webshop::actions::{available_actions, dedup_clickables, parse_action};
use crate::webshop::catalog::{Catalog, Product};
use crate::webshop::goals::Goal;
use crate::webshop::page::{PageType, BACK_TO_SEARCH, BUY_NOW, DESCRIPTION, FEATURES, NEXT, PREV, REVIEWS, SEARCH};
use crate::webshop::product_search::ProductIndex;
use crate::webshop::render::{self, SubPage, RESULTS_PER_PAGE};
use crate::webshop::reward::{compute_reward, ColorSet, RewardBreakdown};

/// The original's default episode length.
pub const DEFAULT_MAX_STEPS: usize = 15;

/// What the environment needs from a search engine: product indices, best first (at most 50).
pub trait ProductSearch: Send + Sync {
    fn search(&self, query: &str) -> Vec<usize>;
}

impl ProductSearch for ProductIndex {
    fn search(&self, query: &str) -> Vec<usize> {
        ProductIndex::search(self, query)
    }
}

/// Why a step is not admissible never matters to the original, only that it is not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepInfo {
    /// Whether the action did something (a valid search or a click on a current clickable).
    pub admissible: bool,
    /// The page shown after the step.
    pub page: PageType,
    /// The reward breakdown, on the step that bought.
    pub reward: Option<RewardBreakdown>,
    /// Whether the step limit ended the episode.
    pub truncated: bool,
    /// Steps taken so far, this one included.
    pub steps: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepOutcome {
    pub observation: String,
    /// The observation as GiGPO formats it: the step's anchor state.
    pub anchor: String,
    pub reward: f64,
    pub done: bool,
    pub info: StepInfo,
}

/// The search a results or item page came from.
#[derive(Clone, Debug, PartialEq)]
struct Results {
    hits: Arc<[usize]>,
    /// 1-based; may be past the last page.
    page: usize,
}

#[derive(Clone, Debug, PartialEq)]
enum View {
    Search,
    Results(Results),
    Item { results: Results, product: usize, options: Vec<(String, String)> },
    Sub { results: Results, product: usize, options: Vec<(String, String)>, sub: SubPage },
    Done,
}

/// What a click resolves to on the current page.
enum Click {
    BackToSearch,
    Prev,
    Next,
    Product(usize),
    Sub(SubPage),
    BuyNow,
    Option { name: String, value: String },
}

#[derive(Clone)]
pub struct WebShopEnv {
    catalog: Arc<Catalog>,
    search: Arc<dyn ProductSearch>,
    colors: Arc<ColorSet>,
    max_steps: usize,
    goal: Option<Arc<Goal>>,
    view: View,
    steps: usize,
    done: bool,
    observation: String,
    reward: Option<RewardBreakdown>,
}

impl WebShopEnv {
    /// An env over `catalog`; call [`WebShopEnv::reset`] before stepping (until then every step is a
    /// no-op on a finished episode).
    pub fn new(catalog: Arc<Catalog>, search: Arc<dyn ProductSearch>, colors: Arc<ColorSet>) -> WebShopEnv {
        WebShopEnv {
            catalog,
            search,
            colors,
            max_steps: DEFAULT_MAX_STEPS,
            goal: None,
            view: View::Search,
            steps: 0,
            done: true,
            observation: render::search_page(""),
            reward: None,
        }
    }

    /// Episode length limit (default [`DEFAULT_MAX_STEPS`]).
    pub fn with_max_steps(mut self, max_steps: usize) -> WebShopEnv {
        self.max_steps = max_steps;
        self
    }

    /// Starts an episode for `goal` on the search page and returns its observation.
    pub fn reset(&mut self, goal: impl Into<Arc<Goal>>) -> String {
        self.goal = Some(goal.into());
        self.view = View::Search;
        self.steps = 0;
        self.done = false;
        self.reward = None;
        self.render();
        self.observation.clone()
    }

    pub fn goal(&self) -> Option<&Goal> {
        self.goal.as_deref()
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    pub fn observation(&self) -> &str {
        &self.observation
    }

    /// The current observation as GiGPO formats it.
    pub fn anchor(&self) -> String {
        render::format_for_gigpo(&self.observation)
    }

    pub fn page(&self) -> PageType {
        match self.view {
            View::Search => PageType::Search,
            View::Results(_) => PageType::Results,
            View::Item { .. } => PageType::Item,
            View::Sub { .. } => PageType::ItemSub,
            View::Done => PageType::Done,
        }
    }

    /// The episode's full state as a fingerprint ([`crate::env::Environment::state_fingerprint`]): the steps
    /// taken, the session (the goal's instruction, hashed), the page with what it hides (the search results
    /// behind it, hashed, and their page number; the product; the options selected, in name order, since the
    /// reward does not depend on the order they were clicked in; the sub-page), and whether the episode is over.
    /// For example `step 3 item B07XYZ1234 [color=red, size=medium] results 5e0a…/1 goal 91c4…`.
    pub fn state_fingerprint(&self) -> String {
        let hash = |text: &str| format!("{:016x}", stable_hash(text));
        let results = |r: &Results| {
            let hits: Vec<String> = r.hits.iter().map(usize::to_string).collect();
            format!("results {}/{}", hash(&hits.join(",")), r.page)
        };
        let item = |product: usize, options: &[(String, String)]| {
            let mut chosen: Vec<String> = options.iter().map(|(n, v)| format!("{n}={v}")).collect();
            chosen.sort();
            format!("{} [{}]", self.product(product).asin, chosen.join(", "))
        };
        let page = match &self.view {
            View::Search => "search".to_owned(),
            View::Results(r) => results(r),
            View::Item { results: r, product, options } => format!("item {} {}", item(*product, options), results(r)),
            View::Sub { results: r, product, options, sub } => {
                format!("{} {} {}", sub.label().to_lowercase(), item(*product, options), results(r))
            }
            View::Done => "done".to_owned(),
        };
        let over = if self.done { " over" } else { "" };
        format!("step {} {page} goal {}{over}", self.steps, hash(self.instruction()))
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The options selected on the item page shown (or one of its sub-pages), in the order first chosen; none on
    /// other pages. The observation does not show them, as the original's text observation does not.
    pub fn selected_options(&self) -> &[(String, String)] {
        match &self.view {
            View::Item { options, .. } | View::Sub { options, .. } => options,
            _ => &[],
        }
    }

    /// The breakdown of the purchase, once bought.
    pub fn final_reward(&self) -> Option<&RewardBreakdown> {
        self.reward.as_ref()
    }

    fn instruction(&self) -> &str {
        self.goal.as_deref().map_or("", |g| g.instruction_text.as_str())
    }

    fn product(&self, index: usize) -> &Product {
        &self.catalog.products[index]
    }

    /// The products shown on a results page.
    fn shown<'a>(&'a self, results: &'a Results) -> impl Iterator<Item = usize> + 'a {
        let start = (results.page - 1).saturating_mul(RESULTS_PER_PAGE);
        results.hits.iter().skip(start).take(RESULTS_PER_PAGE).copied()
    }

    /// The lower-cased clickable texts of the current page, in page order without repeats.
    pub fn clickables(&self) -> Vec<String> {
        let lower = |labels: &[&str]| -> Vec<String> { labels.iter().map(|l| l.to_lowercase()).collect() };
        let names = match &self.view {
            View::Search => lower(&[SEARCH]),
            View::Results(r) => {
                let mut names = lower(if r.page > 1 { &[BACK_TO_SEARCH, PREV, NEXT] } else { &[BACK_TO_SEARCH, NEXT] });
                names.extend(self.shown(r).map(|i| self.product(i).asin.to_lowercase()));
                names
            }
            View::Item { product, .. } => {
                let mut names = lower(&[BACK_TO_SEARCH, PREV, DESCRIPTION, FEATURES, REVIEWS, BUY_NOW]);
                // Option values are offered as they are (the catalog has lower-cased them already).
                for (_, values) in &self.product(*product).options {
                    names.extend(values.iter().cloned());
                }
                names
            }
            View::Sub { .. } => lower(&[BACK_TO_SEARCH, PREV]),
            View::Done => Vec::new(),
        };
        dedup_clickables(names)
    }

    /// The action strings the current page offers (none once the episode is over).
    pub fn available_actions(&self) -> Vec<String> {
        if self.done {
            return Vec::new();
        }
        available_actions(matches!(self.view, View::Search), &self.clickables())
    }

    /// What `click[arg]` does here, if `arg` is a current clickable other than `search`.
    fn resolve_click(&self, arg: &str) -> Option<Click> {
        let is = |label: &str| arg.eq_ignore_ascii_case(label);
        match &self.view {
            View::Search | View::Done => None,
            View::Results(r) => {
                if is(BACK_TO_SEARCH) {
                    Some(Click::BackToSearch)
                } else if is(PREV) && r.page > 1 {
                    Some(Click::Prev)
                } else if is(NEXT) {
                    Some(Click::Next)
                } else {
                    self.shown(r).find(|&i| self.product(i).asin.to_lowercase() == arg).map(Click::Product)
                }
            }
            View::Item { product, .. } => {
                let sub =
                    [SubPage::Description, SubPage::Features, SubPage::Reviews].into_iter().find(|s| is(s.label()));
                if is(BACK_TO_SEARCH) {
                    Some(Click::BackToSearch)
                } else if is(PREV) {
                    Some(Click::Prev)
                } else if let Some(sub) = sub {
                    Some(Click::Sub(sub))
                } else if is(BUY_NOW) {
                    Some(Click::BuyNow)
                } else {
                    // A value shared by two options selects the later one: the original keys its
                    // clickables by text, and the later radio button overwrites the earlier.
                    self.product(*product)
                        .options
                        .iter()
                        .rev()
                        .find(|(_, values)| values.iter().any(|v| v == arg))
                        .map(|(name, _)| Click::Option { name: name.clone(), value: arg.to_owned() })
                }
            }
            View::Sub { .. } => {
                if is(BACK_TO_SEARCH) {
                    Some(Click::BackToSearch)
                } else if is(PREV) {
                    Some(Click::Prev)
                } else {
                    None
                }
            }
        }
    }

    /// Takes one action. See the module documentation for the semantics.
    pub fn step(&mut self, action: &str) -> StepOutcome {
        if self.done {
            return self.outcome(false, 0.0, false);
        }
        self.steps += 1;
        let parsed = parse_action(action);
        let admissible = match (parsed.name.as_str(), parsed.arg) {
            ("search", Some(query)) => {
                let mut hits = self.search.search(&query);
                // An index built for another catalog must not crash an episode.
                hits.retain(|&i| i < self.catalog.products.len());
                let hits: Arc<[usize]> = hits.into();
                self.view = View::Results(Results { hits, page: 1 });
                true
            }
            ("click", Some(arg)) if arg != "search" => match self.resolve_click(&arg) {
                Some(click) => {
                    self.apply(click);
                    true
                }
                None => false,
            },
            _ => false,
        };
        let reward = if matches!(self.view, View::Done) { self.reward.as_ref().map_or(0.0, |r| r.reward) } else { 0.0 };
        let truncated = !self.done && self.steps >= self.max_steps;
        if truncated {
            self.done = true;
        }
        if admissible {
            self.render();
        }
        self.outcome(admissible, reward, truncated)
    }

    fn apply(&mut self, click: Click) {
        let view = std::mem::replace(&mut self.view, View::Search);
        self.view = match (view, click) {
            (_, Click::BackToSearch) => View::Search,
            (View::Results(mut r), Click::Prev) => {
                r.page -= 1;
                View::Results(r)
            }
            (View::Results(mut r), Click::Next) => {
                r.page += 1;
                View::Results(r)
            }
            (View::Results(results), Click::Product(product)) => View::Item { results, product, options: Vec::new() },
            (View::Item { results, .. }, Click::Prev) => View::Results(results),
            (View::Item { results, product, options }, Click::Sub(sub)) => View::Sub { results, product, options, sub },
            (View::Item { results, product, mut options }, Click::Option { name, value }) => {
                // A dict assignment: an already chosen option keeps its place and takes the new value.
                match options.iter_mut().find(|(n, _)| *n == name) {
                    Some(slot) => slot.1 = value,
                    None => options.push((name, value)),
                }
                View::Item { results, product, options }
            }
            (View::Item { product, options, .. }, Click::BuyNow) => {
                self.buy(product, &options);
                View::Done
            }
            (View::Sub { results, product, options, .. }, Click::Prev) => View::Item { results, product, options },
            (view, _) => unreachable!("resolve_click offers no such click on {view:?}"),
        };
    }

    fn buy(&mut self, product: usize, options: &[(String, String)]) {
        let breakdown = self.goal.as_deref().map(|goal| {
            let p = self.product(product);
            compute_reward(p, goal, p.price, options, &self.colors)
        });
        self.reward = breakdown;
        self.done = true;
    }

    fn render(&mut self) {
        let instruction = self.instruction();
        let obs = match &self.view {
            View::Search => render::search_page(instruction),
            View::Results(r) => {
                let shown = self.shown(r).map(|i| self.product(i));
                render::results_page(instruction, r.page, r.hits.len(), shown)
            }
            View::Item { product, .. } => render::item_page(instruction, self.product(*product)),
            View::Sub { product, sub, .. } => render::item_sub_page(instruction, self.product(*product), *sub),
            View::Done => render::done_page(self.reward.as_ref().map_or(0.0, |r| r.reward)),
        };
        self.observation = obs;
    }

    fn outcome(&self, admissible: bool, reward: f64, truncated: bool) -> StepOutcome {
        StepOutcome {
            observation: self.observation.clone(),
            anchor: self.anchor(),
            reward,
            done: self.done,
            info: StepInfo {
                admissible,
                page: self.page(),
                reward: if admissible && matches!(self.view, View::Done) { self.reward.clone() } else { None },
                truncated,
                steps: self.steps,
            },
        }
    }
}
