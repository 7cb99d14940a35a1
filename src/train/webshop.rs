//! The in-process WebShop environment as the trainer's [`Environment`], and its goals as [`Tasks`].

use std::ops::Range;
use std::path::Path;

use super::env::{Environment, Split, Started, Tasks, Transition};
use super::TrainError;
use crate::webshop::env::WebShopEnv;
use crate::webshop::goals::{self, GoalSource};
use crate::webshop::shop::Shop;

impl Environment for WebShopEnv {
    fn observation(&self) -> &str {
        WebShopEnv::observation(self)
    }

    fn anchor(&self) -> String {
        WebShopEnv::anchor(self)
    }

    fn page(&self) -> &str {
        WebShopEnv::page(self).as_str()
    }

    fn available_actions(&self) -> Vec<String> {
        WebShopEnv::available_actions(self)
    }

    fn step(&mut self, action: &str) -> Transition {
        let out = WebShopEnv::step(self, action);
        Transition { reward: out.reward, done: out.done, valid: out.info.admissible }
    }

    fn reward_info(&self) -> Option<serde_json::Value> {
        self.final_reward().and_then(|r| serde_json::to_value(r).ok())
    }
}

/// WebShop goals over one catalog, split into train and test goals.
pub struct WebShopTasks {
    shop: Shop,
    train: Range<usize>,
    test: Range<usize>,
}

impl WebShopTasks {
    /// The embedded demo catalog, or WebShop's files in `catalog_dir` (see [`Shop::open`]).
    pub fn open(catalog_dir: Option<&Path>, source: Option<GoalSource>) -> Result<WebShopTasks, TrainError> {
        let shop = Shop::open(catalog_dir, source).map_err(|e| TrainError::Env(e.to_string()))?;
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

    fn range(&self, split: Split) -> &Range<usize> {
        match split {
            Split::Train => &self.train,
            Split::Test => &self.test,
        }
    }
}

impl Tasks for WebShopTasks {
    type Env = WebShopEnv;
    const ENV: &'static str = "webshop";

    fn len(&self, split: Split) -> usize {
        self.range(split).len()
    }

    fn start(&self, split: Split, index: usize) -> Result<Started<WebShopEnv>, TrainError> {
        let range = self.range(split);
        let i = range.start + index;
        if i >= range.end {
            return Err(TrainError::NoSuchGoal(index));
        }
        start_goal(&self.shop, i).ok_or(TrainError::NoSuchGoal(index))
    }
}

/// Goal `goal` of `shop` (numbered across the whole goal list, not a split) started, with the task id and
/// instruction the trainer writes.
pub fn start_goal(shop: &Shop, goal: usize) -> Option<Started<WebShopEnv>> {
    let env = shop.start(goal)?;
    let instruction = env.goal().map_or(String::new(), |g| g.instruction_text.clone());
    Some(Started { env, task_id: Shop::task_id(goal), instruction })
}
