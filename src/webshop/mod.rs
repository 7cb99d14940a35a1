//! The WebShop text environment (Yao et al. 2022), in-process: catalog, search, pages, actions, reward, goals.

pub mod actions;
pub mod catalog;
pub mod env;
pub mod goals;
pub mod page;
pub(crate) mod policy_features;
pub mod product_search;
pub(crate) mod pyrandom;
pub mod render;
pub mod reward;
pub(crate) mod shop;
pub mod synthetic_catalog;
pub mod tasks;
pub mod token_set_ratio;
