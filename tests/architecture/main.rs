//! The project's rules about its own shape, held on the files themselves: the import rule of the developers'
//! guide (no file imports one that imports it back; layers point down) and the documentation's links.

mod doors;
mod graph;
mod imports;
mod links;
