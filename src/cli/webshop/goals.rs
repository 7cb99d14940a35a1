//! `gigscope webshop goals`: freeze the goal list to JSON. Also the goal-source options that `play`
//! shares.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use crate::webshop::catalog::Catalog;
use crate::webshop::goals::{build_goals, load_goals, save_goals, Goal, GoalSource, Split};
use crate::webshop::reward::ColorSet;

/// Where the catalog and the goals come from.
#[derive(clap::Args, Debug)]
pub struct GoalArgs {
    /// Directory with WebShop's files (items_shuffle*.json, items_ins_v2*.json, optional
    /// items_human_ins.json and color_set.json); default: the embedded demo catalog.
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// Load the goal list frozen by `gigscope webshop goals --out FILE` instead of building it.
    #[arg(long, value_name = "FILE")]
    pub goals: Option<PathBuf>,
    /// Which goals to build: default human when the catalog has human instructions, else synthetic.
    #[arg(long, value_enum)]
    pub goal_source: Option<GoalSource>,
    /// Seeds the reward price of range-priced products (with --catalog) and the goals' price caps.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// A loaded catalog with its colour list.
pub struct Loaded {
    pub catalog: Arc<Catalog>,
    pub colors: ColorSet,
    pub goals: Vec<Goal>,
}

impl GoalArgs {
    pub fn catalog(&self) -> anyhow::Result<Catalog> {
        match &self.catalog {
            Some(dir) => {
                Catalog::load(dir, self.seed).with_context(|| format!("loading the catalog in {}", dir.display()))
            }
            None => Catalog::embedded_demo().context("loading the embedded demo catalog"),
        }
    }

    pub fn load(&self) -> anyhow::Result<Loaded> {
        let catalog = self.catalog()?;
        let colors = colors_for(self.catalog.as_deref())?;
        let goals = match &self.goals {
            Some(path) => load_goals(path)?,
            None => {
                let source = self.goal_source.unwrap_or(if catalog.human_instructions.is_empty() {
                    GoalSource::Synthetic
                } else {
                    GoalSource::Human
                });
                build_goals(&catalog, source, self.seed)
            }
        };
        Ok(Loaded { catalog: Arc::new(catalog), colors, goals })
    }
}

/// The colour list in a catalog directory; with none there, colours are not normalised (said on
/// stderr, since the option reward then differs from WebShop's).
pub fn colors_for(dir: Option<&Path>) -> anyhow::Result<ColorSet> {
    let Some(dir) = dir else { return Ok(ColorSet::empty()) };
    match ColorSet::from_catalog_dir(dir)? {
        Some(colors) => Ok(colors),
        None => {
            eprintln!(
                "note: no {} in {}: option colours are not normalised",
                crate::webshop::reward::COLOR_SET_FILE,
                dir.display()
            );
            Ok(ColorSet::empty())
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub source: GoalArgs,
    /// Output file (a JSON list of goals in WebShop's schema, in the shuffled order; splits by index:
    /// test 0-499, dev 500-1499, train the rest).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = args.source.load()?;
    save_goals(&args.out, &loaded.goals)?;
    let n = loaded.goals.len();
    println!(
        "wrote {n} goals to {} (test {}, dev {}, train {})",
        args.out.display(),
        Split::Test.range(n).len(),
        Split::Dev.range(n).len(),
        Split::Train.range(n).len()
    );
    Ok(ExitCode::SUCCESS)
}
