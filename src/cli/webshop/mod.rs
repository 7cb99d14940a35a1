//! `gigscope webshop ...`: the in-process WebShop environment from the command line.

use std::process::ExitCode;

mod gen_catalog;
mod goals;
mod play;
mod reward;
mod search;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Play an episode line by line: shows the observation and actions, reads an action.
    Play(play::Args),
    /// Ranked asins and titles for a query.
    Search(search::Args),
    /// Reward of buying a product with chosen options for a goal, with its breakdown, as JSON.
    Reward(reward::Args),
    /// Freeze the goal list to a JSON file.
    Goals(goals::Args),
    /// Write a deterministic synthetic catalog in WebShop's raw schema.
    GenCatalog(gen_catalog::Args),
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Play(args) => play::run(args),
        Command::Search(args) => search::run(args),
        Command::Reward(args) => reward::run(args),
        Command::Goals(args) => goals::run(args),
        Command::GenCatalog(args) => gen_catalog::run(args),
    }
}
