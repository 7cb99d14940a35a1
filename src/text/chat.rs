//! The prompt of a chat model as a person reads it: the user's turn out of a chat-templated prompt.
//!
//! Trainers log prompts after the tokenizer's chat template, often decoded with the special tokens dropped, so
//! the role markers survive only as text: ChatML (Qwen) decodes `<|im_start|>user\n…<|im_end|>` to a line
//! `user` followed by the turn, Llama 3 `<|start_header_id|>user<|end_header_id|>\n\n…<|eot_id|>` to the same
//! with a blank line, and some logs write `user: …` inline. [`user_turn`] finds the turns in any of these
//! forms (special tokens kept or dropped) and gives the last user turn's text, its line breaks kept.

/// The roles of a chat template's turns.
const ROLES: [&str; 4] = ["system", "user", "assistant", "tool"];

/// Special tokens of the common templates: removed, except the Llama 3 header's end, which ends the role line.
const DROPPED: [&str; 6] =
    ["<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|eot_id|>", "<|begin_of_text|>", "<|endoftext|>"];
const HEADER_END: &str = "<|end_header_id|>";

/// The last user turn of chat-templated `prompt`, trimmed, with its line breaks; `None` when the prompt shows
/// no user turn (plain text, or a template this does not know).
pub fn user_turn(prompt: &str) -> Option<String> {
    let mut text = prompt.replace(HEADER_END, "\n");
    for token in DROPPED {
        if text.contains(token) {
            text = text.replace(token, "\n");
        }
    }
    by_role_lines(&text).or_else(|| inline(&text))
}

/// Turns introduced by a line that holds only the role's name (`user`, or `user:`).
fn by_role_lines(text: &str) -> Option<String> {
    let role_of = |line: &str| {
        let name = line.trim().trim_end_matches(':');
        ROLES.iter().copied().find(|r| *r == name)
    };
    let mut last_user = None;
    let mut current: Option<(&str, Vec<&str>)> = None;
    for line in text.lines() {
        match role_of(line) {
            Some(role) => {
                if let Some(("user", lines)) = current.take() {
                    last_user = Some(lines);
                }
                current = Some((role, Vec::new()));
            }
            None => {
                if let Some((_, lines)) = current.as_mut() {
                    lines.push(line);
                }
            }
        }
    }
    if let Some(("user", lines)) = current {
        last_user = Some(lines);
    }
    let turn = last_user?.join("\n");
    let turn = turn.trim();
    (!turn.is_empty()).then(|| turn.to_string())
}

/// Turns written inline: `system: … user: … assistant:`, a role name followed by a colon at the start or
/// after whitespace.
fn inline(text: &str) -> Option<String> {
    // Found from the colons (a byte search) looking back for a role's name, not by trying every role at every
    // character: a long prompt or observation is read once.
    let marker_before = |colon: usize| {
        let before = &text[..colon];
        let role = ROLES.iter().copied().find(|r| before.ends_with(r))?;
        let at = colon - role.len();
        text[..at].chars().next_back().is_none_or(char::is_whitespace).then_some((at, role))
    };
    let starts: Vec<(usize, &str)> = text.match_indices(':').filter_map(|(colon, _)| marker_before(colon)).collect();
    let (k, &(at, role)) = starts.iter().enumerate().rev().find(|(_, (_, r))| *r == "user")?;
    let begin = at + role.len() + 1;
    let end = starts.get(k + 1).map_or(text.len(), |&(next, _)| next);
    let turn = text[begin..end].trim();
    (!turn.is_empty()).then(|| turn.to_string())
}

#[cfg(test)]
mod tests {
    use super::user_turn;

    #[test]
    fn chatml_decoded_without_its_special_tokens() {
        let prompt = "system\nYou are a helpful assistant.\nuser\nwhat is two plus two\nassistant\n";
        assert_eq!(user_turn(prompt).as_deref(), Some("what is two plus two"));
    }

    #[test]
    fn chatml_with_its_special_tokens_and_a_turn_of_two_lines() {
        let prompt = "<|im_start|>user\nfirst line\nsecond line<|im_end|>\n<|im_start|>assistant\n";
        assert_eq!(user_turn(prompt).as_deref(), Some("first line\nsecond line"));
    }

    #[test]
    fn llama3_headers_kept_or_dropped() {
        let kept = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhow tall is it<|eot_id|>\
                    <|start_header_id|>assistant<|end_header_id|>\n\n";
        assert_eq!(user_turn(kept).as_deref(), Some("how tall is it"));
        let dropped = "user\n\nhow tall is it\n\nassistant\n\n";
        assert_eq!(user_turn(dropped).as_deref(), Some("how tall is it"));
    }

    #[test]
    fn inline_roles_and_the_last_user_turn_of_several() {
        let prompt = "system: be brief . user: What is 6 * 7 ? assistant: 42 user: and plus 3 ? assistant:";
        assert_eq!(user_turn(prompt).as_deref(), Some("and plus 3 ?"));
    }

    #[test]
    fn inline_markers_only_after_whitespace_or_at_the_start() {
        let prompt = "user: first ok · xuser: not a turn\tassistant: fine ünïcödé user:last one";
        assert_eq!(user_turn(prompt).as_deref(), Some("last one"));
        assert_eq!(user_turn("user:alone").as_deref(), Some("alone"));
        assert_eq!(user_turn("éuser: no tool:").as_deref(), None);
        assert_eq!(user_turn(": user: x :").as_deref(), Some("x :"));
    }

    #[test]
    fn plain_text_has_no_user_turn() {
        assert_eq!(user_turn("i need a red cotton hat"), None);
        assert_eq!(user_turn("the username: bob"), None);
    }
}
