//! The front door's links hold: every relative link in README.md, ARCHITECTURE.md and docs/*.md points at a file
//! or folder of the repository, and a link to a heading (`file.md#heading`, `#heading`) at a heading that is
//! there (GitHub's anchors: lower case, punctuation dropped, spaces as `-`, `-1`, `-2` … for repeats).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose links are checked.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ is there")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    docs
}

/// The text outside fenced code blocks and inline code, where links are links (the lines kept in place).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out += line;
        }
        out += "\n";
    }
    Regex::new(r"`[^`\n]*`").unwrap().replace_all(&out, "``").into_owned()
}

/// The anchors of a markdown file's headings, as GitHub makes them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !fenced) else { continue };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

#[test]
fn every_relative_link_in_the_docs_points_at_something_there() {
    let link =
        Regex::new(r#"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)|\bsrc="([^"]+)""#).unwrap();
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        for (number, line) in prose(&text).lines().enumerate() {
            for c in link.captures_iter(line) {
                let target = c.get(1).or(c.get(2)).or(c.get(3)).unwrap().as_str();
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let file = if path.is_empty() { doc.clone() } else { doc.parent().unwrap().join(path) };
                let place = format!("{}: `{target}`", doc.strip_prefix(root()).unwrap().display());
                if !file.exists() {
                    broken.push(format!("{place} (line {}): no such file", number + 1));
                } else if !anchor.is_empty() && file.extension().is_some_and(|e| e == "md") {
                    let target_text = std::fs::read_to_string(&file).unwrap();
                    if !anchors(&target_text).contains(anchor) {
                        broken.push(format!("{place}: no heading with the anchor #{anchor}"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 0, "no relative link found: the pattern no longer matches the documents");
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    let text = "# Run format\n## What `gigscope-run/1` is: a folder\n```\n# not a heading\n```\n## Run format\n";
    let found: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(found, ["run-format", "run-format-1", "what-gigscope-run1-is-a-folder"]);
}
