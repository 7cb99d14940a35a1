//! The `gigscope` binary's hot text (`scripts/hot-text.ld`, see `scripts/hot-text` and build.rs): the linker
//! placed it, and its patterns still name the functions they were written for. A pattern names a function by
//! its section, with what changes from build to build left open (`*`); renaming or moving a function makes
//! its pattern match nothing, and the function falls back to its usual place, far from the others: once too
//! many have, the streaming commands map most of the binary's code again and this test asks for
//! `scripts/hot-text` to be run.

use std::path::Path;
use std::process::Command;

use regex::Regex;

/// The share of the script's patterns that must still match a function placed in the hot section.
const STILL_MATCHING: f64 = 0.9;

/// What matches `pattern`, whose only wildcard is `*` (the linker script's globs here), whole.
fn glob(pattern: &str) -> Regex {
    let parts: Vec<String> = pattern.split('*').map(regex::escape).collect();
    Regex::new(&format!("^{}$", parts.join(".*"))).expect("a glob's escaped parts make a regex")
}

fn patterns() -> Vec<String> {
    let script = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hot-text.ld"))
        .expect("scripts/hot-text.ld");
    script
        .lines()
        .filter_map(|line| line.trim().strip_prefix("*(.text."))
        .map(|rest| rest.split_whitespace().next().unwrap_or_default().to_owned())
        .collect()
}

/// The address range of the binary's `.text.hot` section (`readelf -SW`), if it has one.
fn hot_section(binary: &str) -> Option<(u64, u64)> {
    let out = Command::new("readelf").args(["-SW", binary]).output().expect("readelf (binutils) runs");
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    listing.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = fields.iter().position(|f| *f == ".text.hot")?;
        let address = u64::from_str_radix(fields.get(at + 2)?, 16).ok()?;
        let size = u64::from_str_radix(fields.get(at + 4)?, 16).ok()?;
        Some((address, address + size))
    })
}

#[test]
fn the_streaming_commands_functions_lie_together_at_the_start_of_the_binarys_code() {
    let binary = env!("CARGO_BIN_EXE_gigscope");
    let (start, end) = hot_section(binary).expect("the gigscope binary has a .text.hot section (build.rs)");
    let out = Command::new("nm").args(["--defined-only", binary]).output().expect("nm (binutils) runs");
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut hot: Vec<&str> = listing
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            let kind = fields.next()?;
            let name = fields.next()?;
            ((kind == "t" || kind == "T") && (start..end).contains(&address)).then_some(name)
        })
        .collect();
    hot.sort_unstable();
    assert!(
        hot.iter().any(|name| name.starts_with("_R") && name.contains("8gigscope")),
        "the binary's hot text holds no v0 symbol names, which the patterns are written for: was it built with \
         RUSTFLAGS set (which replaces .cargo/config.toml's `-C symbol-mangling-version=v0`)?"
    );
    let patterns = patterns();
    assert!(patterns.len() > 100, "scripts/hot-text.ld holds {} patterns", patterns.len());
    let unmatched: Vec<&String> = patterns
        .iter()
        .filter(|pattern| {
            // Every pattern starts with a fixed prefix: look only at the names that have it.
            let prefix = pattern.split('*').next().unwrap_or("");
            let (from, glob) = (hot.partition_point(|name| *name < prefix), glob(pattern));
            !hot[from..].iter().take_while(|name| name.starts_with(prefix)).any(|name| glob.is_match(name))
        })
        .collect();
    let matching = 1.0 - unmatched.len() as f64 / patterns.len() as f64;
    assert!(
        matching >= STILL_MATCHING,
        "{:.0} % of scripts/hot-text.ld's {} patterns match a function in the binary's hot text (at least {:.0} % \
         must): run scripts/hot-text after `cargo build --release --bin gigscope`; unmatched, for instance: {:?}",
        matching * 100.0,
        patterns.len(),
        STILL_MATCHING * 100.0,
        unmatched.iter().take(5).collect::<Vec<_>>()
    );
}

#[test]
fn a_hot_text_glob_matches_what_the_linker_would() {
    let glob_matches = |pattern: &str, name: &str| glob(pattern).is_match(name);
    assert!(glob_matches("_ZN3std2io5stdio6_print17h*", "_ZN3std2io5stdio6_print17h0123456789abcdefE"));
    assert!(glob_matches("_RNvCs*_8gigscope4main*", "_RNvCs1a2B_8gigscope4main"));
    assert!(glob_matches("_RNvCs*_8gigscope4main*", "_RNvCs1a2B_8gigscope4main.llvm.42"));
    assert!(!glob_matches("_RNvCs*_8gigscope4main*", "_RNvCs1a2B_3std4main"));
    assert!(!glob_matches("_RNvCs*_8gigscope4exit*", "_RNvCs1a2B_8gigscope4main"));
    assert!(glob_matches("a*b*c", "aXbYc"));
    assert!(!glob_matches("a*b*c", "aXbYd"));
    assert!(glob_matches("abc", "abc"));
    assert!(!glob_matches("abc", "abcd"));
}
