//! Run directories: the on-disk format, a streaming reader that never loses or invents data, and writers.
//!
//! The bottom layer of gigscope with `text/`: it imports nothing outside `run/`. Its files, leaves first (each
//! imports only files listed before it):
//!
//! - `error.rs` ([`RunError`], [`LineError`]), `settings.rs` (the trainer's advantage settings),
//!   `packed_column.rs` (numbers kept narrower than their type where the values allow), `span.rs` (where a line
//!   is on disk, its checksum, one positioned read, file stamps), `layout.rs` ([`Layout`]);
//! - `format.rs`: the records of gigscope-run/1; `dir.rs`: the run directory's plain files (`run.json`);
//!   `bursts.rs`: which burst wrote which bytes of `episodes.jsonl` (`run.json`'s `bursts` ranges);
//! - `jsonl.rs`: [`JsonlTail`], the incremental reader of any JSON Lines file;
//! - `group_sizes.rs`: [`GroupSizes`], each group's size counted episode by episode, and [`partial_groups`];
//! - `text_on_disk.rs`: episodes without their text ([`text_on_disk::LeanEpisode`]) and the store that reads
//!   the text back; `step_columns.rs`: their steps by column ([`StepsRef`]); `lean_episodes.rs`: a viewer's
//!   episodes in that form by column ([`LeanEpisodes`]), their ids indexed where the viewer admits them;
//!   `lean_line.rs`: a line parsed straight into that form; `lean_reading.rs`: [`LeanReading`];
//! - `writer.rs`, `synth.rs`, `cache.rs` (the load cache), `spill.rs` (the text of episodes without a line of
//!   their own, written for a viewer to read back);
//! - `source/`: the readers of each layout and their registry (a new trainer format goes there: see its docs);
//! - `in_memory.rs`: [`Run`], the run in memory, built by [`apply`]ing a source's events;
//! - `truth.rs`: measured ground truth kept beside a run.

pub mod bursts;
pub mod cache;
mod dir;
mod error;
mod format;
mod group_sizes;
mod in_memory;
mod jsonl;
mod layout;
mod lean_episodes;
mod lean_line;
mod lean_reading;
mod packed_column;
pub(crate) mod settings;
pub mod source;
mod span;
pub(crate) mod spill;
mod step_columns;
pub mod synth;
pub mod text_on_disk;
pub mod tokens;
pub mod truth;
mod verifiers_traces;
mod writer;

pub use dir::{check_run_dir, episodes_size, read_meta};
pub use error::{LineError, RunError};
pub use format::*;
pub use group_sizes::{partial_groups, GroupSizes, PartialGroup};
pub use in_memory::{
    apply, apply_handing_back, check_episodes_file, duplicate_id, read_all, read_once, Applied, EpisodeIds, ReadAt,
    Refused, Run, SkippedFile,
};
pub(crate) use jsonl::parse_json;
pub use jsonl::{JsonlTail, TailBatch, TailPosition};
pub use layout::Layout;
pub use lean_episodes::{IdRef, LeanEpisodeRef, LeanEpisodes, LeanSlice, TextAt};
pub use lean_reading::{ClassifierOf, LeanReading};
pub(crate) use packed_column::{shrink_slack, F64Column, OffsetColumn, U32Column};
pub use source::SourceOptions;
pub use span::{content_checksum, line_checksum, LineSpan, ReadFrom};
pub use step_columns::StepsRef;
pub use text_on_disk::{anchor_hash, state_hash};
pub use writer::{process_alive, torn_tail_file, write_atomic, RunWriter};
