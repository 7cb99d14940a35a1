//! Placeholder: the Trl reader is being written.

use std::path::{Path, PathBuf};

use super::{Layout, LiveEvent, RunSource, SourceOptions, SourcePoll};

#[derive(Debug)]
pub struct TrlSource {
    dir: PathBuf,
}

impl TrlSource {
    pub fn new(dir: &Path, _options: &SourceOptions) -> Self {
        TrlSource { dir: dir.to_path_buf() }
    }
}

impl RunSource for TrlSource {
    fn layout(&self) -> Layout {
        Layout::Trl
    }

    fn poll(&mut self) -> SourcePoll {
        let message = format!("{}: reading a {} is not written yet", self.dir.display(), Layout::Trl.name());
        SourcePoll { events: vec![LiveEvent::Error(message)], pending: false }
    }

    fn watches(&self, _path: &Path) -> bool {
        false
    }
}
