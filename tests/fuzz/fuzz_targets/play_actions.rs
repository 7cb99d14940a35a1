//! Actions typed in play (and sent by a policy), one per line, stepped in WebShop (demo catalog) and Sokoban from
//! their first task: any text is an action the environment answers, never a panic.
#![no_main]

use std::sync::{Mutex, OnceLock};

use gigscope::env::{EnvOptions, Environment};
use libfuzzer_sys::fuzz_target;

/// The first task of each environment, started once.
fn started() -> &'static Mutex<Vec<Box<dyn Environment>>> {
    static ENVS: OnceLock<Mutex<Vec<Box<dyn Environment>>>> = OnceLock::new();
    ENVS.get_or_init(|| {
        let envs = ["webshop", "sokoban"]
            .iter()
            .map(|name| {
                let tasks = gigscope::env_registry::open(name, &EnvOptions::default()).expect("the environment opens");
                tasks.start(0).expect("its first task starts").env
            })
            .collect();
        Mutex::new(envs)
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let envs = started().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for env in envs.iter() {
        let mut env = env.box_clone();
        for action in text.lines().take(40) {
            if env.available_actions().is_empty() {
                break;
            }
            let _ = env.step(action);
            let _ = env.anchor();
        }
        let _ = env.outcome();
        let _ = env.state_fingerprint();
    }
});
