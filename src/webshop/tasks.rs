//! WebShop as an environment of the port ([`crate::env`]): a shop's goals as the port's task list
//! ([`WebShopTasks`]), the in-process env as an [`Environment`], and its registry entry ([`REGISTERED`]).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::env::WebShopEnv;
use super::goals::{self, GoalOptions, GoalSource};
use super::policy_features::WebShopFeatures;
use super::shop::Shop;
use crate::env::{
    Capabilities, EnvError, EnvOptions, Environment, Registered, Split, Started, TaskInfo, Tasks, Transition,
};
use crate::run::{Outcome, REWARD_INFO_KEY};

/// The registry's line for WebShop.
pub const REGISTERED: Registered = Registered {
    name: NAME,
    about: "WebShop (Yao et al. 2022) in-process: catalog, search, pages and reward of the original's text mode",
    options: &[
        ("catalog", "WebShop catalog directory (default: the embedded demo catalog)"),
        ("goal_source", "human | synthetic (default: human goals where the catalog has them)"),
    ],
    open,
    capabilities: Capabilities {
        page_anchor: Some(super::page::page_anchor),
        paged_observations: true,
        typed_action: Some("type a WebShop search query · Enter searches"),
        opening: Some("WebShop: catalog, search index, built once then cached, and goals"),
    },
    stand_in: false,
};

/// Its registry name.
pub const NAME: &str = "webshop";

impl Environment for WebShopEnv {
    fn observation(&self) -> &str {
        WebShopEnv::observation(self)
    }

    fn anchor(&self) -> String {
        WebShopEnv::anchor(self)
    }

    fn page(&self) -> Option<&str> {
        Some(WebShopEnv::page(self).as_str())
    }

    fn available_actions(&self) -> Vec<String> {
        WebShopEnv::available_actions(self)
    }

    /// A product click's product title; a selected option's mark (the original's item page checks its radio
    /// button).
    fn action_label(&self, action: &str) -> Option<String> {
        let catalog = self.catalog();
        let arg = action.strip_prefix("click[")?.strip_suffix(']')?;
        if let Some((name, _)) = self.selected_options().iter().find(|(_, v)| v == arg) {
            return Some(format!("◉ selected {name}"));
        }
        catalog.by_asin.get(&arg.to_uppercase()).map(|&i| catalog.products[i].title.clone())
    }

    fn step(&mut self, action: &str) -> Transition {
        let out = WebShopEnv::step(self, action);
        Transition { reward: out.reward, done: out.done, valid: out.info.admissible }
    }

    /// The options selected on the item page shown (none on other pages).
    fn choices(&self) -> Vec<(String, String)> {
        self.selected_options().to_vec()
    }

    /// The purchase's reward breakdown and formula ([`crate::webshop::reward::RewardBreakdown::explain`]).
    fn reward_explained(&self) -> Vec<String> {
        match (self.final_reward(), self.goal()) {
            (Some(r), Some(goal)) => r.explain(goal.attributes.len(), goal.goal_options.len(), goal.price_upper),
            _ => Vec::new(),
        }
    }

    /// The purchase's reward and its breakdown; score 0 and no breakdown when the episode bought nothing.
    fn outcome(&self) -> Outcome {
        let mut outcome = Outcome::default();
        if let Some(r) = self.final_reward() {
            outcome.success = r.success();
            outcome.score = r.reward;
            if let Ok(value) = serde_json::to_value(r) {
                outcome.extra.insert(REWARD_INFO_KEY.to_owned(), value);
            }
        }
        outcome
    }

    fn state_fingerprint(&self) -> Option<String> {
        Some(WebShopEnv::state_fingerprint(self))
    }

    fn box_clone(&self) -> Box<dyn Environment> {
        Box::new(self.clone())
    }
}

/// WebShop goals over one catalog, split into train and test goals.
pub struct WebShopTasks {
    shop: Shop,
    train: Range<usize>,
    test: Range<usize>,
}

/// The registry's opener: the shop of option `catalog` (`goal_source`: `human` or `synthetic`).
fn open(options: &EnvOptions) -> Result<Arc<dyn Tasks>, EnvError> {
    let source = match options.get("goal_source") {
        None => None,
        Some(name) => {
            Some(<GoalSource as clap::ValueEnum>::from_str(name, false).map_err(|why| EnvError::BadOption {
                env: NAME.into(),
                key: "goal_source".into(),
                why,
            })?)
        }
    };
    let shop = shared_shop(options.get("catalog").map(Path::new), source)
        .map_err(|why| EnvError::Setup { env: NAME.into(), why: format!("opening the shop: {why}") })?;
    Ok(Arc::new(WebShopTasks::new(shop)))
}

/// The shop of a catalog, opened once per process and shared (clones share the catalog and search index):
/// bursts, policy play and live play in one TUI session open it once.
pub fn shared_shop(catalog: Option<&Path>, source: Option<GoalSource>) -> Result<Shop, String> {
    type Opened = Vec<((Option<PathBuf>, Option<GoalSource>), Shop)>;
    static OPENED: Mutex<Opened> = Mutex::new(Vec::new());
    let key = (catalog.map(Path::to_path_buf), source);
    let mut opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, shop)) = opened.iter().find(|(k, _)| *k == key) {
        return Ok(shop.clone());
    }
    let shop = Shop::open(catalog, source).map_err(|e| e.to_string())?;
    opened.push((key, shop.clone()));
    Ok(shop)
}

impl WebShopTasks {
    /// The embedded demo catalog, or WebShop's files in `catalog_dir` (see [`Shop::open`]).
    pub fn open(catalog_dir: Option<&Path>, source: Option<GoalSource>) -> Result<WebShopTasks, EnvError> {
        let shop =
            Shop::open(catalog_dir, source).map_err(|e| EnvError::Setup { env: NAME.into(), why: e.to_string() })?;
        Ok(WebShopTasks::new(shop))
    }

    /// Goals split as the original (test 0–499, train from 1500) when there are enough of them; a small
    /// catalog has fewer, and then the first fifth is the test split and the rest trains.
    pub fn new(shop: Shop) -> WebShopTasks {
        let n = shop.goals.len();
        let (test, train) = if goals::Split::Train.range(n).is_empty() {
            let cut = n / 5;
            (0..cut, cut..n)
        } else {
            (goals::Split::Test.range(n), goals::Split::Train.range(n))
        };
        WebShopTasks { shop, train, test }
    }

    pub fn shop(&self) -> &Shop {
        &self.shop
    }
}

impl Tasks for WebShopTasks {
    fn env_name(&self) -> &str {
        NAME
    }

    fn len(&self) -> usize {
        self.shop.goals.len()
    }

    fn task(&self, index: usize) -> Option<TaskInfo> {
        let goal = self.shop.goals.get(index)?;
        let options = match &goal.goal_options {
            GoalOptions::Pairs(p) => p.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", "),
            GoalOptions::Values(v) => v.join(", "),
        };
        let title = if goal.name.chars().count() <= 60 {
            goal.name.clone()
        } else {
            goal.name.chars().take(59).chain(['…']).collect()
        };
        let details = vec![
            ("product".to_owned(), format!("{} ({title})", goal.asin)),
            ("price <".to_owned(), format!("{:.2}", goal.price_upper)),
            ("attributes".to_owned(), goal.attributes.join(", ")),
            ("options".to_owned(), options),
            ("category".to_owned(), goal.product_category.clone()),
        ];
        Some(TaskInfo { id: Shop::task_id(index), instruction: goal.instruction_text.clone(), details })
    }

    fn split(&self, split: Split) -> Range<usize> {
        match split {
            Split::Train => self.train.clone(),
            Split::Test => self.test.clone(),
        }
    }

    fn start(&self, index: usize) -> Result<Started, EnvError> {
        let env = self.shop.start(index).ok_or_else(|| self.no_such_task(&Shop::task_id(index)))?;
        let instruction = env.goal().map_or(String::new(), |g| g.instruction_text.clone());
        let features = Arc::new(WebShopFeatures::new(&instruction));
        Ok(Started { env: Box::new(env), task_id: Shop::task_id(index), instruction, features })
    }

    /// `goal-N` (as [`Shop::task_id`] writes it) → N.
    fn index_of(&self, task_id: &str) -> Option<usize> {
        let index: usize = task_id.strip_prefix("goal-")?.parse().ok()?;
        (index < self.len()).then_some(index)
    }
}
