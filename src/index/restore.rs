//! Serves a new session from the index kept on disk: maps the root's
//! committed segments and, against the file list just walked (the stat
//! sweep), gives every file whose stamp is the segment's its base id at
//! once. Changed and new files stay candidates until they are read; files
//! gone (or now hidden by the walker) lose their base names.

use std::time::Instant;

use super::base::{BaseIndex, Layer};
use super::cache::RootCache;
use super::live::Live;
use super::segment::Segment;
use super::tree::Content;
use crate::walk;

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
/// (and `live` untouched) when there is none or it is unusable. The
/// segments together may take at most `max_bytes` (what an index of the
/// tree just listed can hold, within the disk budget): a larger one is
/// refused before it is read.
pub(super) fn restore(cache: &RootCache, live: &mut Live, max_bytes: u64) -> Option<Restored> {
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
            tracing::info!("index cache: {error}; rebuilding");
            return None;
        }
    };
    if committed.is_empty() {
        return None;
    }
    let mut segments = Vec::with_capacity(committed.len());
    let mut room = max_bytes;
    for name in &committed {
        match cache.open_segment(name, room) {
            Ok(segment) => {
                room = room.saturating_sub(segment.bytes() as u64);
                segments.push(segment);
            }
            Err(error) => {
                tracing::info!("index cache: {error}; rebuilding");
                return None;
            }
        }
    }
    if !in_path_order(&segments) {
        tracing::debug!("index cache: its segments overlap; rebuilding");
        return None;
    }
    let mut base = BaseIndex::default();
    let mut restored = Restored {
        unchanged: 0,
        changed: 0,
        gone: 0,
    };
    let mut first_id = 0u32;
    for mut segment in segments {
        let files = (0..segment.file_count())
            .map(|local| segment.file(local))
            .collect::<Option<Vec<_>>>()?;
        for (id, file) in (first_id..).zip(files) {
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
        // The sweep read every name and stamp: pages a search may never need.
        segment.drop_resident_pages();
        let next = first_id.checked_add(segment.file_count())?;
        base.shard.push(Layer::Mapped { first_id, segment });
        first_id = next;
    }
    // Names are read from the segments.
    base.names_mapped_before(first_id);
    base.seal();
    live.base = base;
    tracing::debug!(
        "index cache: {} segments used: {} files unchanged, {} changed, {} gone (sweep {} ms)",
        committed.len(),
        restored.unchanged,
        restored.changed,
        restored.gone,
        started.elapsed().as_millis()
    );
    let _ = cache.mark_used();
    Some(restored)
}

/// Whether each segment's names all come after the previous segment's:
/// ids follow path order across the segments too.
fn in_path_order(segments: &[Segment]) -> bool {
    segments.windows(2).all(|pair| {
        let last = pair[0].file_count().checked_sub(1);
        match (last.and_then(|last| pair[0].file(last)), pair[1].file(0)) {
            (Some(last), Some(first)) => walk::path_order(last.name, first.name).is_lt(),
            _ => true,
        }
    })
}
