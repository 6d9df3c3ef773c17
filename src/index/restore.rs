//! Serves a new session from the index kept on disk: maps the root's
//! committed segment and, against the file list just walked (the stat
//! sweep), gives every file whose stamp is the segment's its base id at
//! once. Changed and new files stay candidates until they are read; files
//! gone (or now hidden by the walker) lose their base names.

use std::time::Instant;

use super::base::{BaseIndex, BasePostings};
use super::cache::RootCache;
use super::live::Live;
use super::ngram::GramFilter;
use super::tree::Content;

/// What the sweep found.
pub(super) struct Restored {
    pub(super) unchanged: usize,
    pub(super) changed: usize,
    pub(super) gone: usize,
}

impl Restored {
    /// Whether the segment is out of date enough to be written again: a
    /// file gone (so nothing the walker now hides stays on disk), or a
    /// sixteenth of the files changed.
    pub(super) fn is_stale(&self, files_to_read: usize) -> bool {
        self.gone > 0 || (self.changed + files_to_read) * 16 > self.unchanged.max(1)
    }
}

/// Installs the committed segment of `cache` as `live`'s base; `None`
/// (and `live` untouched) when there is none or it is unusable.
pub(super) fn restore(cache: &RootCache, live: &mut Live) -> Option<Restored> {
    let started = Instant::now();
    // A folder someone else owns, or a link, is never read (in a shared
    // XDG_CACHE_HOME another user could plant one).
    if let Err(error) = cache.create() {
        tracing::debug!("index cache: {error}; the index stays in memory");
        return None;
    }
    let committed = match cache.committed() {
        Ok(committed) => committed,
        Err(error) => {
            tracing::debug!("index cache: {error}; rebuilding");
            return None;
        }
    };
    let name = committed.last()?;
    let segment = match cache.open_segment(name) {
        Ok(segment) => segment,
        Err(error) => {
            tracing::debug!("index cache: {error}; rebuilding");
            return None;
        }
    };
    let mut base = BaseIndex::default();
    let mut restored = Restored {
        unchanged: 0,
        changed: 0,
        gone: 0,
    };
    let files = (0..segment.file_count())
        .map(|id| segment.file(id))
        .collect::<Option<Vec<_>>>()?;
    for (id, file) in (0u32..).zip(files) {
        let filter = file
            .filter
            .and_then(|(case, words)| GramFilter::from_parts(case, words));
        base.push(id, file.name, &file.stamp, filter);
        // Adopted only by a settled file of the same stamp, not indexed yet.
        if live.tree.adopt(file.name, file.stamp, Content::Base(id)) {
            restored.unchanged += 1;
            continue;
        }
        live.tree.lose_base(file.name);
        if live.tree.get(file.name).is_some() {
            restored.changed += 1;
        } else {
            restored.gone += 1;
        }
    }
    base.shard = BasePostings::Mapped(segment);
    base.seal();
    live.base = base;
    tracing::debug!(
        "index cache: segment {name} used: {} files unchanged, {} changed, {} gone (sweep {} ms)",
        restored.unchanged,
        restored.changed,
        restored.gone,
        started.elapsed().as_millis()
    );
    let _ = cache.mark_used();
    Some(restored)
}
