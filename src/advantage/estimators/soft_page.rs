//! `soft-page`: ProxMO's soft proximity baseline (see [`super::proxmo`]: same episode level, same softmax at
//! temperature 0.1, same settings) with the WebShop page-similarity table of REMEMBERER (Zhang et al. 2023,
//! `PagePatMatcher` in its `history.py`) as the kernel instead of TF-IDF cosine: soft anchors by page type.
//!
//! The table's four page patterns and gigscope's page types:
//!
//! | REMEMBERER  | gigscope `page`      | REMEMBERER's recognition (available actions)        |
//! |-------------|----------------------|-----------------------------------------------------|
//! | search      | `search`             | exactly `search`                                    |
//! | itemlisting | `results`            | 3 or more, from the third on product ids (`b0…`)    |
//! | item        | `item`               | 3 or more, including `buy now`                      |
//! | others      | `item_sub`, `done`   | exactly `back to search`, `< prev`                  |
//!
//! Similarity is 1 within a pattern, 0.3 between item and others, 0 elsewhere. REMEMBERER's code gives the
//! done page (no available actions) no pattern, and a page without a pattern similarity 0 even to itself; the
//! paper's table names the fourth pattern "others", which gigscope follows: `done` is "others" (a done page is
//! seldom a step's observation: the episode ends there). REMEMBERER stores 0.3 as float32 (0.30000001); here it
//! is 0.3.
//!
//! The page type of a step is its recorded `page`, else the environment's classification of its observation
//! ([`super::EnvInputs::page_of`], given for WebShop runs only).

use std::borrow::Cow;

use super::context::Ctx;
use super::family::{EstimatorError, EstimatorKind, EstimatorOutput, Need};
use super::proxmo::{finish, soft_baseline, TERMS};

/// REMEMBERER's page patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PageCategory {
    Search = 0,
    ItemListing = 1,
    Item = 2,
    Others = 3,
}

/// REMEMBERER's page similarity, indexed by [`PageCategory`].
pub const PAGE_SIMILARITY: [[f64; 4]; 4] =
    [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.3], [0.0, 0.0, 0.3, 1.0]];

/// The pattern of one of gigscope's WebShop page types (`search`, `results`, `item`, `item_sub`, `done`).
pub fn page_category(page: &str) -> Option<PageCategory> {
    match page {
        "search" => Some(PageCategory::Search),
        "results" => Some(PageCategory::ItemListing),
        "item" => Some(PageCategory::Item),
        "item_sub" | "done" => Some(PageCategory::Others),
        _ => None,
    }
}

pub(super) fn compute(ctx: &Ctx<'_>) -> Result<EstimatorOutput, EstimatorError> {
    let missing =
        |detail: String| EstimatorError::Missing { estimator: EstimatorKind::SoftPage, need: Need::PageTypes, detail };
    // Every row's pattern, in table order.
    let mut category = Vec::with_capacity(ctx.table.row_count());
    for episode in ctx.episodes {
        for (t, step) in episode.steps.iter().enumerate() {
            let page = match (step.page.as_deref(), ctx.env.page_of) {
                (Some(page), _) => page,
                (None, Some(page_of)) => page_of(&step.observation),
                (None, None) => {
                    return Err(missing(format!(
                        "step {t} of episode {} records no `page`, and page types cannot be read from the \
                         observations of a run that is not a WebShop run",
                        episode.id
                    )))
                }
            };
            let c = page_category(page).ok_or_else(|| {
                missing(format!(
                    "step {t} of episode {} has page type {page:?}, not one of search, results, item, item_sub, done",
                    episode.id
                ))
            })?;
            category.push(c as usize);
        }
    }
    let mut names: Vec<Cow<'static, str>> = TERMS.iter().map(|&n| Cow::Borrowed(n)).collect();
    names.push("page_category".into());
    let width = names.len();
    Ok(ctx.per_group(EstimatorKind::SoftPage, names, |_, view, adv, terms| {
        let cats: Vec<usize> = view.rows.iter().map(|&r| category[r]).collect();
        let step = soft_baseline(view, |i, j| PAGE_SIMILARITY[cats[i]][cats[j]]);
        finish(ctx, view, Some(&step), adv, terms, width);
        for (i, &c) in cats.iter().enumerate() {
            terms[i * width + width - 1] = c as f64;
        }
    }))
}
