//! Stand-in for the change feed (helper "watch" owns the real one): it
//! never sees changes, so every drain answers `Unknown` and the tree model
//! re-validates itself with a stat sweep.

use std::path::{Path, PathBuf};

/// Watches one project root.
pub struct ChangeWatcher;

/// What changed since the last drain.
pub enum Changes {
    /// Absolute paths of changed files or folders (may repeat).
    Paths(Vec<PathBuf>),
    /// Events may have been lost: re-validate everything.
    Unknown,
}

impl ChangeWatcher {
    /// Starts watching `root` (the canonical project root). Never fails.
    pub fn start(_root: &Path, _ignored: impl Fn(&Path, bool) -> bool + Send + 'static) -> Self {
        tracing::debug!("change notifications: not available; each call re-validates the tree");
        Self
    }

    /// Every change completed before this call, or `Unknown`.
    pub fn drain(&self) -> Changes {
        Changes::Unknown
    }
}
