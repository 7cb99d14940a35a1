//! The crate's doors (the contract in `src/lib.rs`): a module is `pub` only where something outside the crate
//! names it: the binary (`src/main.rs`), the nested packages (the training plugin, the Python extension), the
//! integration tests, the fuzz targets and the benchmarks. Every other module is `pub(crate)` or private, so that
//! what the crate promises to others is the list of public modules and nothing else.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::graph::paths_into;

/// Every `.rs` file under `dir`, nested packages (a folder with its own `Cargo.toml`) kept apart:
/// `(files of this package, files of nested packages)`.
fn rust_files(dir: &Path, own: &mut Vec<PathBuf>, nested: &mut Vec<PathBuf>, in_nested: bool) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            let nested_here = in_nested || path.join("Cargo.toml").is_file();
            rust_files(&path, own, nested, nested_here);
        } else if path.extension().is_some_and(|x| x == "rs") {
            if in_nested {
                nested.push(path)
            } else {
                own.push(path)
            }
        }
    }
}

/// The module path (`run::source`) of each `pub mod NAME;` declared in the crate's files under `src/`.
fn public_modules(root: &Path, files: &[PathBuf]) -> Vec<(String, String)> {
    let declaration = Regex::new(r"(?m)^\s*pub mod (\w+);").unwrap();
    let mut out = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root.join("src")).expect("under src/");
        let mut module: Vec<String> =
            relative.with_extension("").iter().map(|part| part.to_string_lossy().into_owned()).collect();
        if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            module.pop();
        }
        let code = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for m in declaration.captures_iter(&code) {
            let path = module.iter().cloned().chain([m[1].to_string()]).collect::<Vec<_>>().join("::");
            out.push((path, relative.display().to_string()));
        }
    }
    out
}

#[test]
fn a_module_is_public_only_where_something_outside_the_crate_names_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut own, mut nested) = (Vec::new(), Vec::new());
    rust_files(&root.join("src"), &mut own, &mut nested, false);
    let main = root.join("src/main.rs");
    let lib_files: Vec<PathBuf> = own.iter().filter(|f| **f != main).cloned().collect();
    let mut outside = nested;
    outside.push(main);
    // The integration tests and benchmarks, and the fuzz targets (a package of their own under tests/).
    let mut fuzz = Vec::new();
    rust_files(&root.join("tests"), &mut outside, &mut fuzz, false);
    outside.extend(fuzz);
    let named: BTreeSet<String> = outside
        .iter()
        .flat_map(|file| paths_into("gigscope", &fs::read_to_string(file).unwrap_or_default()))
        .flat_map(|path| (1..=path.len()).map(move |n| path[..n].join("::")))
        .collect();
    assert!(named.contains("cli::main"), "the binary's door was not found: the scan of outside files is broken");
    let needless: Vec<String> = public_modules(root, &lib_files)
        .into_iter()
        .filter(|(module, _)| !named.contains(module))
        .map(|(module, file)| format!("{module} (src/{file})"))
        .collect();
    assert!(
        needless.is_empty(),
        "public modules that nothing outside the crate names (make them pub(crate)): {needless:#?}"
    );
}
