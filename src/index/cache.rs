//! Where indexes live (a cache directory outside the run) and the fingerprints that decide whether an
//! existing index still matches the run and the advantage settings.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::source::IndexSource;
use crate::advantage::AdvantageSettings;
use crate::advantage::KeyedAnchor;

/// Bump when the schema or the meaning of a field changes: old indexes are then rebuilt, never misread (4: steps
/// without a recorded page are indexed under their environment's page anchor; 5: `stored_adv`, `delta`,
/// `rewards.NAME`, and no `reward` or `return` for an unscored TRL completion; 6: `action` is the action extracted
/// by the settings' action rule, `response` the whole response).
pub(crate) const INDEX_FORMAT: u32 = 6;

/// The cache root: `$GIGSCOPE_CACHE`, else `$XDG_CACHE_HOME/gigscope`, else `~/.cache/gigscope`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = non_empty("GIGSCOPE_CACHE") {
        return Some(dir);
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return Some(dir.join("gigscope"));
    }
    non_empty("HOME").map(|home| home.join(".cache").join("gigscope"))
}

/// First 16 hex digits of SHA-256: short enough for a path, long enough not to collide in a cache.
fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The advantage fields depend on every setting, so the settings are part of the index's key. `Debug` of
/// the resolved settings prints floats in shortest round-trip form, so equal settings give equal keys.
pub(crate) fn settings_key(settings: &AdvantageSettings) -> String {
    short_hash(format!("v{INDEX_FORMAT} {settings:?}").as_bytes())
}

/// `<cache>/index/<hash of the canonical run path>/<settings key>`.
pub(crate) fn index_dir(cache_root: &Path, canonical_run: &Path, settings: &AdvantageSettings) -> PathBuf {
    let run_key = short_hash(canonical_run.as_os_str().as_encoded_bytes());
    cache_root.join("index").join(run_key).join(settings_key(settings))
}

/// A running FNV-1a hash over what identifies the indexed episodes (ids, groups, iterations, step counts,
/// rewards, actions). It extends episode by episode, so the index can tell whether the episodes it was
/// given are the ones it indexed before (same prefix) or the run was truncated or replaced. Content, not
/// the file's inode, is the identity: a copy of the same run reuses the index, a rewrite does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PrefixDigest(u64);

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Default for PrefixDigest {
    fn default() -> Self {
        PrefixDigest(FNV_OFFSET)
    }
}

impl PrefixDigest {
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
        // A separator so that ("ab", "c") and ("a", "bc") differ.
        self.0 = (self.0 ^ 0xff).wrapping_mul(FNV_PRIME);
    }

    /// Add what identifies episode `e` of `source`: its ids, iteration, outcome and per step the reward and the
    /// hash of its exact anchor (the same whether the episode is held with its text or without it).
    pub(crate) fn episode(&mut self, source: &(impl IndexSource + ?Sized), e: usize) {
        let steps = source.step_count(e);
        self.bytes(source.episode_id(e).joined().as_bytes());
        self.bytes(source.group(e).as_bytes());
        self.bytes(&source.iteration(e).to_le_bytes());
        self.bytes(&(steps as u64).to_le_bytes());
        self.bytes(&[u8::from(source.success(e))]);
        for t in 0..steps {
            self.bytes(&source.reward(e, t).to_bits().to_le_bytes());
            self.bytes(&source.anchor_key(e, t, KeyedAnchor::Exact).to_le_bytes());
        }
    }

    pub(crate) fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }

    pub(crate) fn of(source: &(impl IndexSource + ?Sized), episodes: std::ops::Range<usize>) -> Self {
        let mut digest = PrefixDigest::default();
        for e in episodes {
            digest.episode(source, e);
        }
        digest
    }
}
