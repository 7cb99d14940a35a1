use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::webshop::synthetic_catalog as gen;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Number of products (WebShop's full catalog has 1,181,436).
    #[arg(long, default_value_t = gen::DEMO_PRODUCTS)]
    pub products: usize,
    /// Generator seed; the same (products, seed) always writes the same bytes.
    #[arg(long, default_value_t = gen::DEMO_SEED)]
    pub seed: u64,
    /// Output directory (items_shuffle.json, items_ins_v2.json, items_human_ins.json).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let summary = gen::generate(&args.out, args.products, args.seed)
        .with_context(|| format!("generating a catalog in {}", args.out.display()))?;
    println!(
        "wrote {} products ({} with a synthetic instruction, {} with human instructions) to {}",
        summary.products,
        summary.with_instruction,
        summary.with_human_instructions,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
