//! Text algorithms: those whose exact Python behaviour gigscope reproduces (`difflib`, `pyfloat`), the user's
//! turn of a chat-templated prompt (`chat`), and a response's action as the environment parsed it (`action`).

pub(crate) mod action;
pub(crate) mod chat;
pub mod difflib;
pub mod pyfloat;

/// Python's `str.strip()` with no argument: Unicode whitespace plus the separators U+001C..U+001F, which
/// Python counts as whitespace and Rust's `char::is_whitespace` does not.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}
