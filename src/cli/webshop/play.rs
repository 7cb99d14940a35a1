//! `gigscope webshop play`: one episode, line by line. Shows the observation and the available
//! actions, reads one action per line from stdin, until the episode ends or input runs out, so it can
//! be driven by a pipe.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use crate::webshop::env::{WebShopEnv, DEFAULT_MAX_STEPS};
use crate::webshop::product_search::ProductIndex;

use super::goals::GoalArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub source: GoalArgs,
    /// Index of the goal in the (shuffled) goal list; 0-499 is the test split.
    #[arg(long, default_value_t = 0)]
    pub goal: usize,
    /// Episode length limit.
    #[arg(long, default_value_t = DEFAULT_MAX_STEPS)]
    pub max_steps: usize,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = args.source.load()?;
    let n = loaded.goals.len();
    let goal =
        loaded.goals.into_iter().nth(args.goal).with_context(|| format!("no goal {} (there are {n})", args.goal))?;
    let index = ProductIndex::open_or_build(&loaded.catalog, None).context("opening the search index")?;
    let mut env = WebShopEnv::new(loaded.catalog.clone(), Arc::new(index), Arc::new(loaded.colors))
        .with_max_steps(args.max_steps);
    env.reset(goal);

    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout().lock();
    writeln!(out, "goal {} of {n}", args.goal)?;
    loop {
        writeln!(out, "\n[{} · step {}]\n{}", env.page(), env.steps(), env.observation())?;
        writeln!(out, "actions:")?;
        for a in env.available_actions() {
            writeln!(out, "  {a}")?;
        }
        write!(out, "> ")?;
        out.flush()?;
        let Some(line) = lines.next() else {
            writeln!(out, "\n(end of input: episode not finished)")?;
            return Ok(ExitCode::SUCCESS);
        };
        let line = line.context("reading an action from stdin")?;
        let step = env.step(&line);
        writeln!(
            out,
            "{}reward {} · done {}",
            if step.info.admissible { "" } else { "(not admissible) " },
            step.reward,
            step.done
        )?;
        if step.done {
            writeln!(out, "\n[{} · step {}]\n{}", step.info.page, step.info.steps, step.observation)?;
            match env.final_reward() {
                Some(r) => writeln!(out, "reward {}", serde_json::to_string(r)?)?,
                None => writeln!(out, "step limit reached without buying: reward 0")?,
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
}
