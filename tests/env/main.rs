//! The environment port and the environments other than WebShop (which has its own test binary).

mod port;
mod recorder;
mod sokoban;
