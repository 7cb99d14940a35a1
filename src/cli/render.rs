//! `gigscope render RUN (--episode ID [--step N] | --overview) --out FILE.svg|FILE.html`: what the TUI shows,
//! as a picture to share ([`crate::tui::picture`]): an episode's view with a step selected and that step's
//! anchor-state group (its members and the formula filled in), or the run's overview with its charts. The file
//! is written whole or not at all (atomic replace).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};

use crate::run::write_atomic;
use crate::tui::picture::{self, Page, PictureFormat};
use crate::tui::{open_as, Config};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (any layout gigscope reads).
    pub run: PathBuf,
    /// The episode to show, by its id.
    #[arg(long, conflicts_with = "overview", required_unless_present = "overview")]
    pub episode: Option<String>,
    /// The step to select in the episode (from 0).
    #[arg(long, default_value_t = 0, requires = "episode")]
    pub step: usize,
    /// The run's overview (per-iteration table and charts) instead of an episode.
    #[arg(long)]
    pub overview: bool,
    /// The file to write; `.svg` or `.html`.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The terminal the views are drawn for, in cells: WIDTHxHEIGHT.
    #[arg(long, default_value = "120x40", value_parser = parse_size)]
    pub size: (u16, u16),
    /// Colour theme: dark (the default), light or high-contrast.
    #[arg(long, value_name = "NAME", value_parser = ["dark", "light", "high-contrast"])]
    pub theme: Option<String>,
    #[command(flatten)]
    pub source: super::source::SourceFlags,
    /// The advantage settings to draw the run with, over those it records (as `gigscope RUN` takes them).
    #[command(flatten)]
    pub settings: super::flags::SettingsFlags,
}

fn parse_size(text: &str) -> Result<(u16, u16), String> {
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(|| format!("{text:?} is not WIDTHxHEIGHT"))?;
    let number = |s: &str| s.trim().parse::<u16>().map_err(|e| format!("{s:?} in {text:?}: {e}"));
    let size = (number(w)?, number(h)?);
    if size.0 < 80 || size.1 < 24 {
        return Err(format!("{text:?} is smaller than the TUI's smallest terminal, 80x24"));
    }
    Ok(size)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(format) = PictureFormat::of_path(&args.out) else {
        bail!("{}: the picture is written as .svg or .html; name the file so", args.out.display());
    };
    let config = Config::defaults(true)?.with_display(args.theme.as_deref(), false)?;
    let (mut state, _) = open_as(&args.run, args.source.from, &args.source.options(), config, args.size)
        .with_context(|| format!("reading {}", args.run.display()))?;
    state.domain.open_with(args.settings.overrides()?)?;
    let frames = match &args.episode {
        Some(id) => {
            let Some(e) = state.domain.episodes.iter().position(|ep| ep.id == **id) else {
                bail!("{}: no episode {id:?} in the run", args.run.display());
            };
            let steps = state.domain.episodes.at(e).steps.len();
            if args.step >= steps {
                bail!("{}: episode {id:?} has {steps} step(s); --step {} is not one", args.run.display(), args.step);
            }
            picture::episode_frames(&mut state, e, args.step)
        }
        None => picture::overview_frames(&mut state),
    };
    let page = if args.theme.as_deref() == Some("light") { Page::LIGHT } else { Page::DARK };
    let title = format!("gigscope: {}", args.run.display());
    let text = picture::write(&frames, &title, page, format);
    write_atomic(&args.out, text.as_bytes()).with_context(|| format!("writing {}", args.out.display()))?;
    Ok(ExitCode::SUCCESS)
}
