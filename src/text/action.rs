//! A step's action as the environment parsed it from a language model's response (issue 26 item 5): two
//! responses that name the same action with different thoughts are the same action.
//!
//! [`ActionRule::Tagged`] (the default) takes the text between the first `<action>` and the first `</action>`
//! after it, trimmed, as verl-agent's prompts ask the policy to write it; a response without the pair is its
//! own action, trimmed (the environments gigscope trains record bare actions such as `click[buy now]`).
//! [`ActionRule::Pattern`] takes a user's regex: its first capture group where the regex has one and it took
//! part in the match, else the whole match; a response it does not match is its own action, trimmed.
//!
//! The rule is `Copy` so that it travels inside the engine's settings: a pattern is compiled once per process
//! and per distinct text ([`ActionRule::pattern`]), and two rules are equal when their texts are.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex::Regex;

/// How a response's action is read from it.
#[derive(Clone, Copy, Debug, Default)]
pub enum ActionRule {
    /// The content of `<action>…</action>`, else the whole response.
    #[default]
    Tagged,
    /// A user's regex (compiled once for the process; see [`ActionRule::pattern`]).
    Pattern(&'static Regex),
}

impl PartialEq for ActionRule {
    fn eq(&self, other: &ActionRule) -> bool {
        self.pattern_text() == other.pattern_text()
    }
}

/// Patterns compiled so far, by their text: a rule is `Copy`, so each distinct pattern is compiled once and
/// kept for the process (a user types a handful).
static COMPILED: LazyLock<Mutex<HashMap<String, &'static Regex>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

impl ActionRule {
    /// The rule of a user's pattern; an invalid regex is an error naming it.
    pub fn pattern(text: &str) -> Result<ActionRule, regex::Error> {
        let mut compiled = COMPILED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&re) = compiled.get(text) {
            return Ok(ActionRule::Pattern(re));
        }
        let re: &'static Regex = Box::leak(Box::new(Regex::new(text)?));
        compiled.insert(text.to_owned(), re);
        Ok(ActionRule::Pattern(re))
    }

    /// The pattern's text (`None` for the tagged rule), as settings record it.
    pub fn pattern_text(&self) -> Option<&'static str> {
        match self {
            ActionRule::Tagged => None,
            ActionRule::Pattern(re) => Some(re.as_str()),
        }
    }

    /// The action of `response` under this rule (a slice of it).
    pub fn extract<'a>(&self, response: &'a str) -> &'a str {
        let found = match self {
            ActionRule::Tagged => tagged(response),
            ActionRule::Pattern(re) => re.captures(response).and_then(|caps| caps.get(1).or_else(|| caps.get(0))),
        };
        found.map_or(response, |m| m.as_str()).trim()
    }
}

/// The text between the first `<action>` and the first `</action>` after it.
fn tagged(response: &str) -> Option<regex::Match<'_>> {
    static TAGS: LazyLock<Regex> = LazyLock::new(|| match Regex::new(r"(?s)<action>(.*?)</action>") {
        Ok(re) => re,
        Err(err) => unreachable!("constant action pattern: {err}"),
    });
    TAGS.captures(response).and_then(|caps| caps.get(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_responses_with_different_thoughts_are_one_action() {
        let rule = ActionRule::Tagged;
        let a = "<think>the shirt is blue</think>\n<action> click[buy now] </action>";
        let b = "<think>price is right, buy</think><action>click[buy now]</action> trailing";
        assert_eq!(rule.extract(a), "click[buy now]");
        assert_eq!(rule.extract(a), rule.extract(b));
        // The first pair; the content may span lines.
        assert_eq!(rule.extract("<action>up\n</action><action>down</action>"), "up");
        assert_eq!(rule.extract("x <action>\nleft\n</action>"), "left");
    }

    #[test]
    fn a_response_without_the_pair_is_its_own_action() {
        let rule = ActionRule::Tagged;
        assert_eq!(rule.extract("  click[medium] "), "click[medium]");
        assert_eq!(rule.extract("<action>unclosed"), "<action>unclosed");
        assert_eq!(rule.extract("</action>wrong order<action>"), "</action>wrong order<action>");
    }

    #[test]
    fn a_pattern_takes_its_first_group_else_its_match() {
        let grouped = ActionRule::pattern(r"Action:\s*(\w+)").unwrap();
        assert_eq!(grouped.extract("Thought: go.\nAction: push"), "push");
        assert_eq!(grouped.extract("no action here"), "no action here", "no match: the response itself");
        let whole = ActionRule::pattern(r"click\[[^\]]*\]").unwrap();
        assert_eq!(whole.extract("I will click[buy now] now"), "click[buy now]");
        // An optional group that took no part in the match gives the whole match.
        let optional = ActionRule::pattern(r"go(?: to (\w+))?").unwrap();
        assert_eq!(optional.extract("go"), "go");
    }

    #[test]
    fn rules_compare_by_their_text_and_compile_once() {
        let a = ActionRule::pattern(r"A:(\w+)").unwrap();
        let b = ActionRule::pattern(r"A:(\w+)").unwrap();
        assert_eq!(a, b);
        match (a, b) {
            (ActionRule::Pattern(x), ActionRule::Pattern(y)) => assert!(std::ptr::eq(x, y)),
            _ => panic!("patterns"),
        }
        assert_ne!(a, ActionRule::Tagged);
        assert_eq!(a.pattern_text(), Some(r"A:(\w+)"));
        assert!(ActionRule::pattern("(unclosed").is_err());
    }
}
