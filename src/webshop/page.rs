//! Page types of the WebShop site and their recognition from an observation string.
//!
//! The page type is reported with every environment step and is the coarse anchor mode of the advantage
//! engine, so it must be recoverable from a recorded observation alone, in either of the two forms runs
//! carry: the raw text-mode observation (`WebShop [SEP] Instruction: [SEP] ... [SEP] Search`) and the
//! GiGPO-formatted one (instruction dropped, segments in single quotes: `'Search'`).

use serde::{Deserialize, Serialize};

/// Separator between the visible strings of a page in the original's text mode.
pub const SEP: &str = " [SEP] ";

/// Fixed strings of the pages; the renderer and the classifier share them so they cannot drift apart.
pub(crate) const WEBSHOP: &str = "WebShop";
pub(crate) const INSTRUCTION: &str = "Instruction:";
pub(crate) const SEARCH: &str = "Search";
pub(crate) const BACK_TO_SEARCH: &str = "Back to Search";
pub(crate) const PREV: &str = "< Prev";
pub(crate) const NEXT: &str = "Next >";
pub(crate) const DESCRIPTION: &str = "Description";
pub(crate) const FEATURES: &str = "Features";
pub(crate) const REVIEWS: &str = "Reviews";
pub(crate) const BUY_NOW: &str = "Buy Now";
pub(crate) const THANK_YOU: &str = "Thank you for shopping with us!";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageType {
    Search,
    Results,
    Item,
    /// Description, Features or Reviews of an item.
    ItemSub,
    Done,
}

impl PageType {
    pub const ALL: [PageType; 5] =
        [PageType::Search, PageType::Results, PageType::Item, PageType::ItemSub, PageType::Done];

    /// The name used in run files (`Step::page`) and as the coarse anchor.
    pub fn as_str(self) -> &'static str {
        match self {
            PageType::Search => "search",
            PageType::Results => "results",
            PageType::Item => "item",
            PageType::ItemSub => "item_sub",
            PageType::Done => "done",
        }
    }

    /// Inverse of [`PageType::as_str`].
    pub fn parse(name: &str) -> Option<PageType> {
        PageType::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for PageType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `Page {p} (Total results: {n})`, the header of a results page.
pub(crate) fn is_results_header(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix("Page ") else {
        return false;
    };
    let Some((page, rest)) = rest.split_once(" (Total results: ") else {
        return false;
    };
    let Some(total) = rest.strip_suffix(')') else {
        return false;
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    all_digits(page) && all_digits(total)
}

/// Recognises the page an observation shows, raw or GiGPO-formatted.
///
/// The layout after the instruction decides: results pages open with `Back to Search` and the
/// `Page p (Total results: n)` header; item pages and their sub-pages open with `Back to Search`,
/// `< Prev`, and only the item page ends with its four fixed buttons. Text that matches no layout
/// (not produced by this environment) is classified by the most telling string it contains.
pub fn classify_observation(obs: &str) -> PageType {
    let segments: Vec<&str> = obs.split(SEP).map(unquote).collect();
    // The raw search page is the only one that starts with the site name.
    if segments.first() == Some(&WEBSHOP) {
        return PageType::Search;
    }
    // Drop the instruction label and the instruction itself when present (raw form).
    let rest: &[&str] = match segments.iter().position(|s| *s == INSTRUCTION) {
        Some(i) => segments.get(i + 2..).unwrap_or(&[]),
        None => &segments,
    };
    match rest {
        [only] if *only == SEARCH => PageType::Search,
        [first, ..] if *first == THANK_YOU => PageType::Done,
        [back, header, ..] if *back == BACK_TO_SEARCH && is_results_header(header) => PageType::Results,
        [back, prev, ..] if *back == BACK_TO_SEARCH && *prev == PREV => {
            if rest.ends_with(&[DESCRIPTION, FEATURES, REVIEWS, BUY_NOW]) {
                PageType::Item
            } else {
                PageType::ItemSub
            }
        }
        _ => {
            if obs.contains(THANK_YOU) {
                PageType::Done
            } else if obs.contains(BUY_NOW) {
                PageType::Item
            } else if obs.contains("(Total results: ") {
                PageType::Results
            } else if obs.contains(PREV) {
                PageType::ItemSub
            } else {
                PageType::Search
            }
        }
    }
}

/// A GiGPO-formatted segment without its single quotes.
fn unquote(segment: &str) -> &str {
    segment.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')).unwrap_or(segment)
}

/// WebShop's page anchor of an observation (its page type's name), as the environment registry gives it
/// for recorded steps that lack their `page` ([`crate::env::Registered::page_anchor`]).
pub fn page_anchor(observation: &str) -> &'static str {
    classify_observation(observation).as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_serde_matches_as_str() {
        for p in PageType::ALL {
            assert_eq!(PageType::parse(p.as_str()), Some(p));
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{}\"", p.as_str()));
        }
        assert_eq!(PageType::parse("nope"), None);
    }

    #[test]
    fn classifies_raw_pages() {
        let i = "Instruction: [SEP] i need a red shoe, and price lower than 50.00 dollars";
        assert_eq!(classify_observation(&format!("WebShop [SEP] {i} [SEP] Search")), PageType::Search);
        assert_eq!(
            classify_observation(&format!(
                "{i} [SEP] Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] B0 [SEP] T [SEP] $1.0"
            )),
            PageType::Results
        );
        assert_eq!(
            classify_observation(&format!(
                "{i} [SEP] Back to Search [SEP] Page 7 (Total results: 50) [SEP] < Prev [SEP] Next >"
            )),
            PageType::Results
        );
        let item = format!(
            "{i} [SEP] Back to Search [SEP] < Prev [SEP] size [SEP] 8 [SEP] Shoe [SEP] Price: $1.0 [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now"
        );
        assert_eq!(classify_observation(&item), PageType::Item);
        assert_eq!(
            classify_observation(&format!("{i} [SEP] Back to Search [SEP] < Prev [SEP] soft")),
            PageType::ItemSub
        );
        assert_eq!(classify_observation(&format!("{i} [SEP] Back to Search [SEP] < Prev")), PageType::ItemSub);
        assert_eq!(classify_observation(&format!("{i} [SEP] Back to Search [SEP] < Prev [SEP] ")), PageType::ItemSub);
        assert_eq!(
            classify_observation("Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] 0.5"),
            PageType::Done
        );
    }

    #[test]
    fn classifies_gigpo_formatted_pages() {
        assert_eq!(classify_observation("'Search'"), PageType::Search);
        assert_eq!(
            classify_observation("'Back to Search' [SEP] 'Page 2 (Total results: 12)' [SEP] '< Prev' [SEP] 'Next >'"),
            PageType::Results
        );
        assert_eq!(
            classify_observation(
                "'Back to Search' [SEP] '< Prev' [SEP] 'T' [SEP] 'Price: $1.0' [SEP] 'Rating: N.A.' [SEP] 'Description' [SEP] 'Features' [SEP] 'Reviews' [SEP] 'Buy Now'"
            ),
            PageType::Item
        );
        assert_eq!(classify_observation("'Back to Search' [SEP] '< Prev' [SEP] 'bullet'"), PageType::ItemSub);
        assert_eq!(classify_observation("'Thank you for shopping with us!' [SEP] 'x'"), PageType::Done);
    }

    #[test]
    fn results_header_needs_numbers() {
        assert!(is_results_header("Page 10 (Total results: 0)"));
        assert!(!is_results_header("Page x (Total results: 0)"));
        assert!(!is_results_header("Page 1 (Total results: )"));
        assert!(!is_results_header("Page 1 (Total results: 3"));
    }
}
