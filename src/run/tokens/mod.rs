//! Per-token data of a run: what each update pushed, token by token, beside the run (`tokens/`), never in
//! `episodes.jsonl`'s lines.
//!
//! A step (one response of the policy) has its token ids, each token's text and offset in the response, the
//! loss mask, and whichever [`Channel`]s the trainer recorded; a channel not recorded is null, never 0.
//! [`StepTokens::derived`] gives the sampler–trainer mismatch, the KL to the reference (verl's k1 and k3)
//! and the effective weight; [`StepSummary`] what a step's trained tokens add up to, and [`foreign_turns`] the
//! tokens of turns the policy did not write (a trained one is a defect of the data); [`count_lengths`] the
//! responses' lengths in trained tokens, for DEPO's efficiency term.
//!
//! On disk (`assets/tokens.schema.json` and the README's "Tokens" section): `tokens/index.jsonl`, one JSON
//! line per step record (episode, step, chunk, byte offset and length, token count, text bytes, channels),
//! and chunk files holding the records' columns (layout in [`record`]'s doc). Writers append a chunk's bytes
//! first and their index lines after, so an index line is only ever read once its record is complete; a torn
//! index line is held back like any torn line. The reader ([`TokenStore`]) holds the index (a few dozen bytes
//! per step) and reads a step's record with one positioned read when asked: the store's size does not
//! matter to opening it. A bad index line or a record that cannot be read is an error naming the file, the
//! line and the record; every other record still reads.
//!
//! The same store also reads the per-token data verifiers' saved rollouts carry (`traces.jsonl` beside
//! `tokens/`, prime-rl's traces; [`verifiers`]): each sampled assistant turn is a step, its line read again
//! when the step is asked for.

mod lengths;
mod record;
mod store;
mod summary;
mod verifiers;

pub use lengths::{count_lengths, Counted, CountedEpisodes, Lengths};
pub use record::{record_len, Channel, Derived, StepTokens, VALUE_COLUMNS};
pub use store::{IndexLine, StepEntry, StepRecord, TokenError, TokenStore, TokenWriter, TOKENS_DIR, TOKEN_INDEX_FILE};
pub use summary::{foreign_turns, StepSummary};
