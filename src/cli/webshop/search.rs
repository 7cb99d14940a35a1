use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::webshop::catalog::Catalog;
use crate::webshop::product_search::{ProductIndex, PAGE_SIZE};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The search query, as typed into WebShop's search box.
    pub query: String,
    /// WebShop catalog directory (items_shuffle*.json, items_ins_v2*.json); default: the embedded demo catalog.
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// Results page (10 per page, as WebShop shows them).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub page: u32,
    /// Index cache directory (default: $GIGSCOPE_CACHE, $XDG_CACHE_HOME/gigscope or ~/.cache/gigscope).
    #[arg(long)]
    pub cache: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let catalog = Catalog::load_or_demo(args.catalog.as_deref(), 0).context("loading the catalog")?;
    let index = ProductIndex::open_or_build(&catalog, args.cache.as_deref()).context("opening the search index")?;
    let hits = index.search_scored(&args.query);
    let start = (args.page as usize - 1) * PAGE_SIZE;
    println!("Page {} (Total results: {})", args.page, hits.len());
    for (rank, (i, score)) in hits.iter().enumerate().skip(start).take(PAGE_SIZE) {
        let p = &catalog.products[*i];
        println!("{:>2}. {}  {:>7.3}  {}  [{}]", rank + 1, p.asin, score, p.title, p.price_text);
    }
    Ok(ExitCode::SUCCESS)
}
