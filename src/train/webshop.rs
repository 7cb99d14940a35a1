//! The in-process WebShop environment as the trainer's [`Environment`], and its goals as [`Tasks`].

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::env::{Environment, Split, Started, Tasks, Transition};
use super::TrainError;
use crate::webshop::catalog::{Catalog, DEMO_SEED};
use crate::webshop::env::WebShopEnv;
use crate::webshop::goals::{self, Goal, GoalSource};
use crate::webshop::reward::ColorSet;
use crate::webshop::search::SearchIndex;

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
}

/// Seed of the goals' price caps (the original leaves them unseeded; any fixed value makes runs repeatable).
const CAP_SEED: u64 = 0;

/// WebShop goals over one catalog, split into train and test goals.
pub struct WebShopTasks {
    env: WebShopEnv,
    goals: Vec<Arc<Goal>>,
    train: Range<usize>,
    test: Range<usize>,
}

fn env_err(what: &str, e: impl std::fmt::Display) -> TrainError {
    TrainError::Env(format!("{what}: {e}"))
}

impl WebShopTasks {
    /// The embedded demo catalog, or WebShop's files in `catalog_dir`. `source` defaults to human goals when
    /// the catalog has human instructions, else synthetic ones.
    pub fn open(catalog_dir: Option<&Path>, source: Option<GoalSource>) -> Result<WebShopTasks, TrainError> {
        let (catalog, colors) = match catalog_dir {
            Some(dir) => {
                let catalog = Catalog::load(dir, DEMO_SEED).map_err(|e| env_err("catalog", e))?;
                let colors = ColorSet::from_catalog_dir(dir).map_err(|e| env_err("colours", e))?;
                (catalog, colors.unwrap_or_else(ColorSet::empty))
            }
            None => (Catalog::embedded_demo().map_err(|e| env_err("demo catalog", e))?, ColorSet::empty()),
        };
        let search = SearchIndex::open_or_build(&catalog, None).map_err(|e| env_err("search index", e))?;
        let goals = match source {
            Some(source) => goals::build_goals(&catalog, source, CAP_SEED),
            None => {
                let human = goals::build_goals(&catalog, GoalSource::Human, CAP_SEED);
                if human.is_empty() {
                    goals::build_goals(&catalog, GoalSource::Synthetic, CAP_SEED)
                } else {
                    human
                }
            }
        };
        let env = WebShopEnv::new(Arc::new(catalog), Arc::new(search), Arc::new(colors));
        Ok(WebShopTasks::new(env, goals))
    }

    /// Goals split as the original (test 0–499, train from 1500) when there are enough of them; a small
    /// catalog has fewer, and then the first fifth is the test split and the rest trains.
    pub fn new(env: WebShopEnv, goals: Vec<Goal>) -> WebShopTasks {
        let n = goals.len();
        let (test, train) = if goals::Split::Train.range(n).is_empty() {
            let cut = n / 5;
            (0..cut, cut..n)
        } else {
            (goals::Split::Test.range(n), goals::Split::Train.range(n))
        };
        WebShopTasks { env, goals: goals.into_iter().map(Arc::new).collect(), train, test }
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
        let goal = Arc::clone(&self.goals[i]);
        let instruction = goal.instruction_text.clone();
        let mut env = self.env.clone();
        env.reset(goal);
        Ok(Started { env, task_id: format!("goal-{i}"), instruction })
    }
}
