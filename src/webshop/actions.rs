//! Action strings: how the original splits them and how it lists the actions a page offers.

use std::sync::LazyLock;

use regex::Regex;

/// The search entry of the available actions; the trainer's prompt asks the policy to fill in the query.
pub const SEARCH_ACTION: &str = "search[<your query>]";

/// The original's `(.+)\[(.+)\]`, applied with Python's `re.match`: anchored at the start only, so
/// text after the last `]` is ignored; both groups are greedy and `.` stops at a newline.
static ACTION_RE: LazyLock<Regex> = LazyLock::new(|| match Regex::new(r"^(.+)\[(.+)\]") {
    Ok(re) => re,
    Err(err) => unreachable!("constant action pattern: {err}"),
});

/// An action string split into its name and its (lower-cased) argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedAction {
    /// Everything before the bracket, unchanged (`search`, `click`; case matters).
    pub name: String,
    /// The bracketed argument, lower-cased; `None` when the string does not match the pattern.
    pub arg: Option<String>,
}

/// Splits an action as the original does. A string that does not match keeps the whole string as the name.
pub fn parse_action(action: &str) -> ParsedAction {
    match ACTION_RE.captures(action) {
        Some(caps) => ParsedAction {
            name: caps.get(1).map_or("", |m| m.as_str()).to_owned(),
            arg: caps.get(2).map(|m| m.as_str().to_lowercase()),
        },
        None => ParsedAction { name: action.to_owned(), arg: None },
    }
}

/// Clickable names in page order without repeats: the original keys its clickables by text in a
/// dictionary, so a repeated text keeps its first position.
pub fn dedup_clickables(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The action strings of a page: the search entry when the page has a search bar, then one click per
/// clickable.
pub fn available_actions(has_search_bar: bool, clickables: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(clickables.len() + 1);
    if has_search_bar {
        out.push(SEARCH_ACTION.to_owned());
    }
    out.extend(clickables.iter().map(|c| format!("click[{c}]")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> (String, Option<String>) {
        let p = parse_action(s);
        (p.name, p.arg)
    }

    #[test]
    fn splits_like_python_re_match() {
        assert_eq!(parsed("search[Red Shoes]"), ("search".into(), Some("red shoes".into())));
        assert_eq!(parsed("click[B0ABC]"), ("click".into(), Some("b0abc".into())));
        // Greedy groups: the name runs to the last `[` that still leaves a `]` after it.
        assert_eq!(parsed("search[a[b]c]"), ("search[a".into(), Some("b]c".into())));
        assert_eq!(parsed("click[x] and more"), ("click".into(), Some("x".into())));
        assert_eq!(parsed("click[x]]"), ("click".into(), Some("x]".into())));
        // No match: empty argument, missing name, newline inside, no brackets.
        assert_eq!(parsed("click[]"), ("click[]".into(), None));
        assert_eq!(parsed("[x]"), ("[x]".into(), None));
        assert_eq!(parsed("click[a\nb]"), ("click[a\nb]".into(), None));
        assert_eq!(parsed("buy now"), ("buy now".into(), None));
        assert_eq!(parsed(""), ("".into(), None));
    }

    #[test]
    fn repeated_clickables_keep_their_first_position() {
        let names = ["back to search", "8", "red", "8"].map(String::from);
        assert_eq!(dedup_clickables(names), ["back to search", "8", "red"]);
    }

    #[test]
    fn available_actions_put_search_first() {
        let c = ["back to search".to_owned(), "next >".to_owned()];
        assert_eq!(available_actions(false, &c), ["click[back to search]", "click[next >]"]);
        assert_eq!(available_actions(true, &["search".to_owned()]), [SEARCH_ACTION, "click[search]"]);
    }
}
