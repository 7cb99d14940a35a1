//! The WebShop port: catalog, goals, pages, reward, search (against pyserini and the Python WebShop) and the
//! environment, from the library and through `gigscope webshop`.

#[path = "../support/python.rs"]
mod python;

mod catalog;
mod catalog_demo;
mod catalog_pyfloat;
mod env;
mod env_cli;
mod goals;
mod pages;
mod reward;
mod reward_fuzz;
mod search;
mod search_agreement;
mod search_lucene;
mod search_pruning;
