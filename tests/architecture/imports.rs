//! The import rule on the whole crate (`src/`, drawn by [`Graph`]): each file imports only files that do not
//! import it back, and no layer imports a layer above it. ARCHITECTURE.md describes the layers.
//!
//! The circles and upward arrows that are still there are listed below, so that the expected state is written
//! down: a test fails when a new one appears, and also when a listed one is gone and the list still names it
//! (a circle that only shrank is both: replace its line). The failure prints the lists as they now are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::graph::Graph;

/// The layers, bottom up, by top-level module of `src/`. A file may import files of its own layer and of the
/// layers below, never of a layer above. A top-level module listed nowhere that implements the environment
/// port's `Environment` is an environment: adding one touches no list here.
const LAYERS: &[(&str, &[&str])] = &[
    ("plain data: the run format and text", &["text", "run"]),
    ("the environment port and the advantage engine", &["env", "advantage"]),
    (ENVIRONMENTS, &["webshop", "sokoban"]),
    ("the registry of environments", &["env_registry"]),
    ("trainer, index, live watcher, plugin host, Ray jobs", &["trainer", "index", "live", "plugin_host", "ray_job"]),
    ("front ends", &["tui", "cli"]),
];

const ENVIRONMENTS: &str = "environments";

/// Import circles still in the code, one a line: the files of each (relative to `src/`, sorted, space-separated).
const CIRCLES_LEFT: &[&str] = &[];

/// Imports from a layer to a layer above it still in the code, one a line: `from -> to`.
const UPWARD_LEFT: &[&str] = &[];

fn crate_graph() -> Graph {
    Graph::of_crate(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// Compare what is found with what a list says, and fail with both differences and the list to write.
fn expect_listed(
    list_name: &str,
    what: &str,
    found: &BTreeSet<String>,
    listed: &[&str],
    detail: impl Fn(&str) -> String,
) {
    let listed: BTreeSet<String> = listed.iter().map(|s| s.to_string()).collect();
    let new: Vec<&String> = found.difference(&listed).collect();
    let gone: Vec<&String> = listed.difference(found).collect();
    if new.is_empty() && gone.is_empty() {
        return;
    }
    let mut message = String::new();
    for line in &new {
        message += &format!("new {what} (not in {list_name}):\n  {line}\n{}", detail(line));
    }
    for line in &gone {
        message += &format!("no longer in the code, remove it from {list_name}:\n  {line}\n");
    }
    message += &format!("{list_name} as the code now is:\n");
    for line in found {
        message += &format!("    \"{line}\",\n");
    }
    panic!("{message}");
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let graph = crate_graph();
    let circles: BTreeMap<String, Vec<String>> = graph.circles().into_iter().map(|c| (c.join(" "), c)).collect();
    let found: BTreeSet<String> = circles.keys().cloned().collect();
    expect_listed("CIRCLES_LEFT", "import circle", &found, CIRCLES_LEFT, |line| {
        // Each file's imports inside the circle: where to cut it.
        let members = &circles[line];
        let mut out = String::new();
        for file in members {
            let inside: Vec<&str> =
                graph.edges[file].iter().filter(|t| members.contains(t)).map(String::as_str).collect();
            out += &format!("    {file} -> {}\n", inside.join(" "));
        }
        out
    });
}

/// The layer of each top-level module of the crate (the index in [`LAYERS`]), or what is wrong with it.
fn layers(graph: &Graph) -> BTreeMap<String, Result<usize, String>> {
    let implements_environment = regex::Regex::new(r"\bimpl\b[^{;]*\bEnvironment\s+for\b").unwrap();
    let mut layers = BTreeMap::new();
    for (file, code) in &graph.code {
        let top = top_module(file);
        if top == "lib" {
            continue;
        }
        let listed = LAYERS.iter().position(|(_, modules)| modules.contains(&top));
        let environment = LAYERS.iter().position(|(name, _)| *name == ENVIRONMENTS).unwrap();
        let layer = match listed {
            Some(layer) => Ok(layer),
            None if implements_environment.is_match(code) => Ok(environment),
            None => Err(format!("src/{top} is in no layer: add it to LAYERS in {} (and to ARCHITECTURE.md)", file!())),
        };
        let entry = layers.entry(top.to_string()).or_insert(layer.clone());
        if entry.is_err() && layer.is_ok() {
            *entry = layer;
        }
    }
    layers
}

/// The top-level module a file belongs to (`lib` for the crate root).
fn top_module(file: &str) -> &str {
    file.split('/').next().unwrap_or(file).trim_end_matches(".rs")
}

#[test]
fn layers_import_only_layers_below_them() {
    let graph = crate_graph();
    let layers = layers(&graph);
    let unplaced: Vec<&String> = layers.values().filter_map(|l| l.as_ref().err()).collect();
    assert!(unplaced.is_empty(), "{unplaced:#?}");
    let layer = |file: &str| layers.get(top_module(file)).and_then(|l| l.as_ref().ok().copied());
    let mut upward = BTreeSet::new();
    for (from, targets) in &graph.edges {
        for to in targets {
            if let (Some(a), Some(b)) = (layer(from), layer(to)) {
                if b > a {
                    upward.insert(format!("{from} -> {to}"));
                }
            }
        }
    }
    expect_listed("UPWARD_LEFT", "upward import", &upward, UPWARD_LEFT, |line| {
        let (from, to) = line.split_once(" -> ").unwrap();
        format!("    ({} imports {})\n", LAYERS[layer(from).unwrap()].0, LAYERS[layer(to).unwrap()].0)
    });
}

/// The graph itself on a small crate written for the test: a circle made through a re-export is found, and
/// imports in comments, strings and unit tests are not imports.
#[test]
fn the_graph_follows_reexports_and_skips_comments_strings_and_unit_tests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
    write(
        "a/mod.rs",
        "mod inner;\npub use inner::Thing;\n// use crate::c::Other;\nconst S: &str = \"crate::c::Other; use crate::c::Other;\";\n\
         #[cfg(test)]\nmod tests {\n    use crate::c::Other;\n}\n",
    );
    write("a/inner.rs", "pub struct Thing;\npub fn f() -> char { crate::b::g(); '}' }\n");
    write("b.rs", "use crate::a::{self, Thing as Renamed};\npub fn g() {}\n");
    write("c.rs", "pub struct Other;\npub fn h() { super::a::inner_free(); }\n");
    std::fs::write(src.join("main.rs"), "use gigscope_test::c::Other; fn main() {}\n").unwrap();

    let graph = Graph::of_crate(&src);
    let edges = |f: &str| graph.edges[f].iter().map(String::as_str).collect::<Vec<_>>();
    assert_eq!(edges("a/mod.rs"), ["a/inner.rs"], "the re-export; not the comment, the string or the unit test");
    assert_eq!(edges("b.rs"), ["a/inner.rs", "a/mod.rs"], "Thing through the re-export, and `self`");
    assert_eq!(edges("a/inner.rs"), ["b.rs"]);
    assert_eq!(edges("c.rs"), ["a/mod.rs"], "an inline super:: path");
    assert!(!graph.edges.contains_key("main.rs"), "the binary's root is not a file of the library");
    assert_eq!(graph.circles(), [["a/inner.rs", "a/mod.rs", "b.rs"]], "b imports a (`self`), a its inner file");
}
