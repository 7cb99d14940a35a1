//! The TUI's config file (`--config FILE`: `[keys]`, `[theme]`, `[advantages]`, `[burst.profiles.NAME]`): any
//! bytes are a config or an error that names the file, never a panic; an accepted config has a key for `quit`
//! and takes every theme preset the command line offers.
#![no_main]

use gigscope::tui::{Action, Config};
use gigscope_fuzz::scratch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = scratch();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, data).unwrap();
    match Config::load(Some(&file), true) {
        Ok(config) => {
            assert!(!config.keymap.keys(Action::Quit).is_empty(), "a config accepted without a key for quit");
            for preset in [None, Some("dark"), Some("light"), Some("high-contrast")] {
                for present in [false, true] {
                    let _ = config.clone().with_display(preset, present);
                }
            }
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains("config.toml"), "a config error that names no file: {message}");
        }
    }
});
