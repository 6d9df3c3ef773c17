//! Keeps the build's index on disk. The build hands its posting lists to a
//! [`SegmentWriter`] in runs of consecutive ids; each run is written as a
//! segment of the root's cache folder and mapped at once, so the lists
//! leave the heap as the build goes. At the end the runs are committed
//! together; until then the previous commit stays in use by every reader.
//! One server writes a folder at a time (its writer lock, held from the
//! first run to the commit).

use std::time::Instant;

use super::base::{BaseIndex, Layer};
use super::cache::{CacheError, RootCache, WriterLock, evict_over_budget};
use super::postings::Shard;
use super::segment::{FileRecord, FilterBits};
use super::tree::Content;
use crate::walk::Stamp;

pub(super) struct SegmentWriter<'a> {
    cache: &'a RootCache,
    lock: WriterLock,
    max_disk_bytes: u64,
    /// The segments written so far, in id order, and their bytes.
    written: Vec<String>,
    written_bytes: u64,
    started: Instant,
}

impl<'a> SegmentWriter<'a> {
    /// `None` when the folder cannot be used or another server is writing
    /// it (then this build keeps its lists in memory).
    pub(super) fn open(cache: &'a RootCache, max_disk_bytes: u64) -> Option<Self> {
        let locked = cache.create().and_then(|()| cache.try_lock_writer());
        if let Ok(Some(lock)) = &locked
            && let Err(error) = cache.remove_uncommitted(lock)
        {
            tracing::debug!("index cache: {error}; what a killed writer left stays");
        }
        match locked {
            Ok(Some(lock)) => Some(SegmentWriter {
                cache,
                lock,
                max_disk_bytes,
                written: Vec::new(),
                written_bytes: 0,
                started: Instant::now(),
            }),
            Ok(None) => {
                tracing::debug!(
                    "index cache: another server is writing it; this build stays in memory"
                );
                None
            }
            Err(error) => {
                tracing::info!("index cache: {error}; the index stays in memory");
                None
            }
        }
    }

    /// Writes `shard` (ids `records` describe, from its first id on) as a
    /// segment and maps it: the layer that replaces the shard. When the
    /// root's segments alone would be over `[index] max_disk_mb`, the
    /// root's cache is given up instead (every segment of it removed, the
    /// committed ones too) and the build keeps its lists in memory.
    pub(super) fn write(
        &mut self,
        shard: &Shard,
        records: &[FileRecord],
    ) -> Result<Layer, CacheError> {
        let first_id = shard.id_range().start;
        let local = shard
            .lists()
            .map(|(trigram, ids)| (trigram, ids.into_iter().map(|id| id - first_id).collect()));
        let name = self.cache.write_segment(&self.lock, records, local)?;
        self.written.push(name.clone());
        let segment = self.cache.open_segment(&name, u64::MAX)?;
        self.written_bytes = self.written_bytes.saturating_add(segment.bytes() as u64);
        if self.written_bytes > self.max_disk_bytes {
            drop(segment);
            // Segments this session maps stay readable (on Windows, where a
            // mapped file cannot be removed, they go at a later commit).
            self.cache.commit(&self.lock, &[])?;
            return Err(CacheError::OverBudget {
                budget: self.max_disk_bytes,
            });
        }
        Ok(Layer::Mapped { first_id, segment })
    }

    /// Makes the segments written the root's committed index (replacing
    /// the previous one) and keeps the cache within its disk budget.
    pub(super) fn commit(self) {
        let committed = self
            .cache
            .commit(&self.lock, &self.written)
            .and_then(|()| self.cache.mark_used());
        match committed {
            Ok(()) => {
                tracing::debug!(
                    "index cache: wrote segments ({}) to {} and committed them, in {} ms",
                    self.written.len(),
                    self.cache.folder().display(),
                    self.started.elapsed().as_millis()
                );
                for removed in evict_over_budget(self.cache, self.max_disk_bytes) {
                    tracing::debug!(
                        "index cache: removed {} (least recently used, over [index] max_disk_mb)",
                        removed.display()
                    );
                }
            }
            Err(error) => {
                tracing::info!("index cache: not written ({error}); the index stays in memory")
            }
        }
    }
}

/// One record per base id in `ids`, in id order: the file's first name,
/// the stamp it was read with and its filter, from `files` (what the build
/// read, in path order, from the first of those ids on). `None` when the
/// ids do not follow the files.
pub(super) fn records<'a>(
    base: &'a BaseIndex,
    files: &'a [(String, Stamp, Content)],
    ids: std::ops::Range<u32>,
) -> Option<Vec<FileRecord<'a>>> {
    let mut records = Vec::with_capacity(ids.len());
    let mut next = ids.start;
    for (relative, stamp, content) in files {
        let Content::Base(id) = *content else {
            continue;
        };
        if id < next || !ids.contains(&id) {
            // Another name of a file already listed.
            continue;
        }
        let first_name = base.name(id)?;
        if id != next || first_name.name != relative {
            return None;
        }
        let filter = base.filter(id).map(|filter| {
            let (case, words) = filter.parts();
            FilterBits { case, words }
        });
        records.push(FileRecord {
            name: relative,
            stamp: *stamp,
            filter,
        });
        next += 1;
    }
    (next == ids.end).then_some(records)
}
