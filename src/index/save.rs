//! Keeps the index on disk. A [`SegmentWriter`] holds the root's writer
//! lock; it writes segments made on the heap (a build's runs as they fill,
//! the background's merged layers when it is idle) to the cache folder and
//! maps them, then commits the layers together: until then the previous
//! commit stays in use by every reader. One server writes a folder at a
//! time.

use std::time::Instant;

use super::cache::{CacheError, Committed, RootCache, WriterLock, evict_over_budget};
use super::merge::{Input, merge_into};
use super::segment::{Segment, write_segment};

pub(super) struct SegmentWriter<'a> {
    cache: &'a RootCache,
    lock: WriterLock,
    max_disk_bytes: u64,
    /// What the layers to commit take on disk so far.
    written_bytes: u64,
    started: Instant,
}

impl<'a> SegmentWriter<'a> {
    /// `None` when the folder cannot be used or another server is writing
    /// it (then the index stays in memory). `kept_bytes`: what the layers
    /// already stored there and committed again take.
    pub(super) fn open(cache: &'a RootCache, max_disk_bytes: u64, kept_bytes: u64) -> Option<Self> {
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
                written_bytes: kept_bytes,
                started: Instant::now(),
            }),
            Ok(None) => {
                tracing::debug!(
                    "index cache: another server is writing it; this index stays in memory"
                );
                None
            }
            Err(error) => {
                tracing::info!("index cache: {error}; the index stays in memory");
                None
            }
        }
    }

    /// Writes `segment` (held on the heap) to the cache and maps it: its
    /// file's name and the mapped segment, which replaces it. When the
    /// root's segments alone would be over `[index] max_disk_mb`, the
    /// root's cache is given up instead (every segment of it removed, the
    /// committed ones too) and the index stays in memory.
    pub(super) fn store(&mut self, segment: &Segment) -> Result<(String, Segment), CacheError> {
        let bytes = segment.raw();
        self.written_bytes = self.written_bytes.saturating_add(bytes.len() as u64);
        if self.written_bytes > self.max_disk_bytes {
            // Segments this session maps stay readable (on Windows, where a
            // mapped file cannot be removed, they go at a later commit).
            self.cache.commit(&self.lock, &[])?;
            return Err(CacheError::OverBudget {
                budget: self.max_disk_bytes,
            });
        }
        let name = self.cache.store_segment(&self.lock, bytes)?;
        let mapped = self.cache.open_segment(&name, u64::MAX)?;
        Ok((name, mapped))
    }

    /// Merges `inputs` straight into a new segment file of the cache (no
    /// copy of it on the heap) and maps it, as [`SegmentWriter::store`]
    /// does with a segment made on the heap.
    pub(super) fn store_merged(
        &mut self,
        inputs: &[Input],
        pause: &mut dyn FnMut(),
    ) -> Result<(String, Segment), CacheError> {
        let (name, ()) = self
            .cache
            .write_segment_with(&self.lock, |folder, name, root| {
                merge_into(inputs, false, pause, |records, lists| {
                    write_segment(folder, name, root, records, lists)
                })
                .map(|_| ())
            })?;
        let path = self.cache.folder().join(&name);
        let bytes = std::fs::metadata(&path).map_or(0, |metadata| metadata.len());
        self.written_bytes = self.written_bytes.saturating_add(bytes);
        if self.written_bytes > self.max_disk_bytes {
            self.cache.commit(&self.lock, &[])?;
            return Err(CacheError::OverBudget {
                budget: self.max_disk_bytes,
            });
        }
        let mapped = self.cache.open_segment(&name, u64::MAX)?;
        Ok((name, mapped))
    }

    /// Makes `layers` the root's committed index (replacing the previous
    /// one) and keeps the cache within its disk budget.
    pub(super) fn commit(self, layers: &[Committed]) {
        let committed = self
            .cache
            .commit(&self.lock, layers)
            .and_then(|()| self.cache.mark_used());
        match committed {
            Ok(()) => {
                tracing::debug!(
                    "index cache: wrote segments ({}) to {} and committed them, in {} ms",
                    layers.len(),
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
