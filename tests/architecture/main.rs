//! The project's rules about its own shape, held on the files themselves: the import rule of the developers'
//! guide (no file imports one that imports it back; layers point down), the documentation's links, and the
//! binary's hot text (the streaming commands' functions placed together, `scripts/hot-text`).

mod doors;
mod graph;
mod hot_text;
mod imports;
mod links;
