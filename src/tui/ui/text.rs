//! Text laid out to a width: word wrapping, and hanging indents for items that wrap.

/// Wrap `text` into lines of at most `width` characters, breaking at spaces when a word fits.
pub fn wrap(text: &str, width: usize, out: &mut dyn FnMut(&str)) {
    let width = width.max(1);
    let mut rest = text;
    while !rest.is_empty() {
        let cut = match rest.char_indices().nth(width) {
            None => rest.len(),
            // The line fits exactly when the next character is a space.
            Some((hard, ' ')) => hard,
            Some((hard, _)) => rest[..hard].rfind(' ').filter(|&i| i > 0).map_or(hard, |i| i + 1),
        };
        out(rest[..cut].trim_end());
        rest = rest[cut..].trim_start();
    }
}

/// `text` wrapped to `width` columns behind a two-column `marker`, continuation lines indented to match, so
/// long items stay readable as one block each. `out` gets each line's prefix and text apart, so a caller that
/// only counts lines builds no strings.
pub fn hanging(marker: &str, text: &str, width: usize, out: &mut dyn FnMut(&str, &str)) {
    let mut first = true;
    wrap(text, width.saturating_sub(2), &mut |l| {
        out(if first { marker } else { "  " }, l);
        first = false;
    });
}
