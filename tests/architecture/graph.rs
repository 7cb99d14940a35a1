//! The file-level import graph of a crate's `src/`: which file each file imports, by `use crate::…`,
//! `use super::…`, `use self::…`, a child module's name, and by inline `crate::…` / `super::…` paths, with
//! re-exports (`pub use`, globs included) followed to the file that defines the item. A module's own file is its
//! `mod.rs` (or `name.rs`); the crate root (`lib.rs`) and the binary's `main.rs` are not files of any module
//! here. Unit-test modules (`#[cfg(test)] mod … { … }`) are left out, and so are comments and the inside of
//! string and character literals. Nested packages (a directory with its own `Cargo.toml`) are other crates.
//!
//! This is the Rust form of `/work/tools/imports.py`, the developers' prototype, and draws the same graph on
//! the same source (its one difference: a string or comment that holds `use …;` or `crate::…` is no edge here).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;

/// A module path (`["run", "source", "verl"]`); the crate root is the empty path.
type ModPath = Vec<String>;

/// One name a `use` brings in: its full path as written (`["crate", "run", "Episode"]`, a glob ending in `*`,
/// `self` for the module itself) and the alias it is bound to, if any.
struct Use {
    path: Vec<String>,
    alias: Option<String>,
}

impl Use {
    /// The name this import binds in the file (`None` for a glob).
    fn binds(&self) -> Option<&str> {
        if let Some(alias) = &self.alias {
            return Some(alias);
        }
        match self.path.as_slice() {
            [.., last] if last == "*" => None,
            [.., module, last] if last == "self" => Some(module),
            [.., last] => Some(last),
            [] => None,
        }
    }
}

struct File {
    module: ModPath,
    uses: Vec<Use>,
    /// Names of the items the file defines (`struct`, `enum`, `fn`, `trait`, `type`, `const`, `static`,
    /// `union`, `macro_rules!`).
    defines: BTreeSet<String>,
    /// Inline `crate::…` / `super::…` paths outside `use` declarations.
    inline: Vec<Vec<String>>,
}

/// Files (relative to `src/`, `/`-separated) and the files each imports.
pub struct Graph {
    pub edges: BTreeMap<String, BTreeSet<String>>,
    /// Each file's code: comments removed, literals emptied, unit tests left out.
    pub code: BTreeMap<String, String>,
}

impl Graph {
    /// Read every `.rs` file under `src` and draw the graph. Panics with the file's name when one cannot be read.
    pub fn of_crate(src: &Path) -> Graph {
        let mut sources = BTreeMap::new();
        collect(src, src, &mut sources);
        let code: BTreeMap<String, String> =
            sources.iter().map(|(name, text)| (name.clone(), without_unit_tests(&code_only(text)))).collect();
        let files: BTreeMap<String, File> = code.iter().map(|(name, code)| (name.clone(), parse(name, code))).collect();
        let modules: BTreeMap<ModPath, String> =
            files.iter().map(|(name, f)| (f.module.clone(), name.clone())).collect();
        let crate_ = Crate { files: &files, modules: &modules };
        let mut edges = BTreeMap::new();
        for (name, file) in &files {
            let targets: BTreeSet<String> = file
                .uses
                .iter()
                .map(|u| &u.path)
                .chain(&file.inline)
                .filter_map(|path| crate_.absolute(&file.module, path))
                .filter_map(|path| crate_.resolve(&path, &[]))
                .filter(|target| target != name)
                .collect();
            edges.insert(name.clone(), targets);
        }
        Graph { edges, code }
    }

    /// The import circles: each a set of two or more files that reach each other (strongly connected
    /// components), its files sorted, the circles sorted.
    pub fn circles(&self) -> Vec<Vec<String>> {
        let mut tarjan = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        };
        for file in self.edges.keys() {
            if !tarjan.index.contains_key(file.as_str()) {
                tarjan.visit(file);
            }
        }
        let mut circles: Vec<Vec<String>> = tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut c: Vec<String> = c.into_iter().map(str::to_string).collect();
                c.sort();
                c
            })
            .collect();
        circles.sort();
        circles
    }
}

struct Crate<'a> {
    files: &'a BTreeMap<String, File>,
    modules: &'a BTreeMap<ModPath, String>,
}

impl Crate<'_> {
    /// `path` as written in the file of module `me`, made absolute; `None` when it leaves the crate.
    fn absolute(&self, me: &[String], path: &[String]) -> Option<ModPath> {
        let (first, rest) = path.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some([me, rest].concat()),
            "super" => {
                let mut base = me.to_vec();
                let mut path = path;
                while let Some(("super", tail)) = path.split_first().map(|(s, t)| (s.as_str(), t)) {
                    base.pop()?;
                    path = tail;
                }
                Some([base.as_slice(), path].concat())
            }
            _ => {
                let child = [me, std::slice::from_ref(first)].concat();
                self.modules.contains_key(&child).then(|| [me, path].concat())
            }
        }
    }

    /// The file that defines the item at absolute `path`: the deepest module file on the path, then through the
    /// imports of that file for a name it does not define itself (`seen`, the lookups this one is part of,
    /// stops a loop of re-exports).
    fn resolve(&self, path: &[String], seen: &[(String, String)]) -> Option<String> {
        let (file_name, rest) =
            (0..=path.len()).rev().find_map(|i| self.modules.get(&path[..i]).map(|f| (f.clone(), &path[i..])))?;
        let Some(name) = rest.first() else { return Some(file_name) };
        if name == "*" || name == "self" {
            return Some(file_name);
        }
        let file = &self.files[&file_name];
        let key = (file_name.clone(), name.clone());
        if file.defines.contains(name) || seen.contains(&key) {
            return Some(file_name);
        }
        let seen: Vec<(String, String)> = seen.iter().cloned().chain([key]).collect();
        for u in &file.uses {
            let glob = u.path.last().is_some_and(|last| last == "*");
            if !glob && u.binds() != Some(name.as_str()) {
                continue;
            }
            let Some(target) = self.absolute(&file.module, &u.path) else { continue };
            if glob {
                let through = [&target[..target.len() - 1], std::slice::from_ref(name)].concat();
                if let Some(found) = self.resolve(&through, &seen) {
                    if self.files[&found].defines.contains(name) {
                        return Some(found);
                    }
                }
            } else if let Some(found) = self.resolve(&target, &seen) {
                return Some(found);
            }
        }
        Some(file_name)
    }
}

/// Every `.rs` file under `dir` (relative to `src`), skipping the binary's `main.rs` and nested packages.
fn collect(src: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
        if path.is_dir() {
            if !path.join("Cargo.toml").exists() {
                collect(src, &path, out);
            }
            continue;
        }
        let rel = path.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
        if !rel.ends_with(".rs") || rel == "main.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.insert(rel, text);
    }
}

/// A file's module, imports and definitions from its code ([`code_only`], [`without_unit_tests`]).
fn parse(name: &str, code: &str) -> File {
    let mut module: ModPath = name.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        module.pop();
    }
    let use_decl = Regex::new(r"\buse\s+([^;]+);").unwrap();
    let mut uses = Vec::new();
    for m in use_decl.captures_iter(code) {
        use_tree(&tokens(&m[1]), &mut 0, &[], &mut uses);
    }
    let rest = use_decl.replace_all(code, "");
    let inline_path = Regex::new(r"\b(?:crate|super)(?:\s*::\s*\w+)+").unwrap();
    let inline =
        inline_path.find_iter(&rest).map(|m| m.as_str().split("::").map(|s| s.trim().to_string()).collect()).collect();
    let item =
        Regex::new(r"\b(?:struct|enum|fn|trait|type|const|static|union)\s+(\w+)|\bmacro_rules!\s*(\w+)").unwrap();
    let defines =
        item.captures_iter(code).filter_map(|c| c.get(1).or(c.get(2))).map(|m| m.as_str().to_string()).collect();
    File { module, uses, defines, inline }
}

/// The paths into crate `krate` that `code` names outside its comments and strings: each leaf of its
/// `use krate::…` trees and each inline `krate::…` path, without the leading `krate` (`["run", "Episode"]`).
pub fn paths_into(krate: &str, code: &str) -> Vec<Vec<String>> {
    let code = code_only(code);
    let use_decl = Regex::new(&format!(r"\buse\s+({krate}\s*::[^;]+);")).unwrap();
    let mut uses = Vec::new();
    for m in use_decl.captures_iter(&code) {
        use_tree(&tokens(&m[1]), &mut 0, &[], &mut uses);
    }
    let rest = use_decl.replace_all(&code, "");
    let inline = Regex::new(&format!(r"\b{krate}(?:\s*::\s*\w+)+")).unwrap();
    let inline = inline.find_iter(&rest).map(|m| m.as_str().split("::").map(|s| s.trim().to_string()).collect());
    uses.into_iter().map(|u| u.path).chain(inline).map(|path: Vec<String>| path[1..].to_vec()).collect()
}

/// The source with comments removed and string and character literals emptied (`""`, `' '`), so that only code
/// is searched. Lifetimes (`'a`) stay.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !out.chars().last().is_some_and(is_ident)
            && raw_string_hashes(&chars[i + if c == 'b' { 2 } else { 1 }..]).is_some()
        {
            let start = i + if c == 'b' { 2 } else { 1 };
            let hashes = raw_string_hashes(&chars[start..]).unwrap_or(0);
            i = start + hashes + 1;
            let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            while i < chars.len() && !chars[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            i += if next == Some('\\') { 3 } else { 2 };
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `Some(n)` when `rest` opens a raw string with `n` hashes (`"`, `#"`, `##"`, …).
fn raw_string_hashes(rest: &[char]) -> Option<usize> {
    let hashes = rest.iter().take_while(|&&c| c == '#').count();
    (rest.get(hashes) == Some(&'"')).then_some(hashes)
}

/// `code` without its `#[cfg(test)]` inline modules.
fn without_unit_tests(code: &str) -> String {
    let start = Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{").unwrap();
    let mut out = String::new();
    let mut rest = code;
    while let Some(m) = start.find(rest) {
        out.push_str(&rest[..m.start()]);
        let mut depth = 1;
        let body = &rest[m.end()..];
        let end = body
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(body.len(), |(at, _)| at + 1);
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

/// The tokens of a use tree: names, `::`, `{`, `}`, `,`, `*` (`r#` dropped from raw identifiers).
fn tokens(tree: &str) -> Vec<String> {
    let token = Regex::new(r"::|[{},*]|(?:r#)?\w+").unwrap();
    token.find_iter(tree).map(|m| m.as_str().trim_start_matches("r#").to_string()).collect()
}

/// Parse one use tree from `tokens[*at..]` under `prefix` into `out`.
fn use_tree(tokens: &[String], at: &mut usize, prefix: &[String], out: &mut Vec<Use>) {
    let mut path = prefix.to_vec();
    while let Some(token) = tokens.get(*at) {
        *at += 1;
        match token.as_str() {
            "::" => {}
            "{" => {
                while tokens.get(*at).is_some_and(|t| t != "}") {
                    use_tree(tokens, at, &path, out);
                    if tokens.get(*at).is_some_and(|t| t == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "*" => {
                path.push("*".to_string());
                out.push(Use { path, alias: None });
                return;
            }
            "}" | "," => {
                *at -= 1;
                return;
            }
            name => {
                path.push(name.to_string());
                if tokens.get(*at).is_some_and(|t| t == "::") {
                    continue;
                }
                let mut alias = None;
                if tokens.get(*at).is_some_and(|t| t == "as") {
                    alias = tokens.get(*at + 1).cloned();
                    *at += 2;
                }
                out.push(Use { path, alias });
                return;
            }
        }
    }
}

/// Tarjan's strongly connected components over [`Graph::edges`].
struct Tarjan<'a> {
    graph: &'a Graph,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on_stack: BTreeSet<&'a str>,
    components: Vec<Vec<&'a str>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, file: &'a str) {
        let n = self.index.len();
        self.index.insert(file, n);
        self.low.insert(file, n);
        self.stack.push(file);
        self.on_stack.insert(file);
        for target in self.graph.edges.get(file).into_iter().flatten() {
            let target = target.as_str();
            if !self.index.contains_key(target) {
                self.visit(target);
                let low = self.low[file].min(self.low[target]);
                self.low.insert(file, low);
            } else if self.on_stack.contains(target) {
                let low = self.low[file].min(self.index[target]);
                self.low.insert(file, low);
            }
        }
        if self.low[file] == self.index[file] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(member);
                component.push(member);
                if member == file {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}
