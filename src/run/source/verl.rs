//! Placeholder: the Verl reader is being written.

use std::path::{Path, PathBuf};

use super::{Layout, LiveEvent, RunSource, SourceOptions, SourcePoll};

#[derive(Debug)]
pub struct VerlSource {
    dir: PathBuf,
}

impl VerlSource {
    pub fn new(dir: &Path, _options: &SourceOptions) -> Self {
        VerlSource { dir: dir.to_path_buf() }
    }
}

impl RunSource for VerlSource {
    fn layout(&self) -> Layout {
        Layout::Verl
    }

    fn poll(&mut self) -> SourcePoll {
        let message = format!("{}: reading a {} is not written yet", self.dir.display(), Layout::Verl.name());
        SourcePoll { events: vec![LiveEvent::Error(message)], pending: false }
    }

    fn watches(&self, _path: &Path) -> bool {
        false
    }
}
