//! Keeps the build's index on disk: writes it as a segment of the root's
//! cache folder and commits it, when no other server is writing there.

use std::time::Instant;

use super::base::{BaseIndex, BasePostings};
use super::build::Indexed;
use super::cache::{RootCache, evict_over_budget};
use super::segment::{FileRecord, FilterBits};
use super::tree::Content;

/// Writes the files `indexed` holds under their first names, with their
/// posting lists and filters, as the root's one committed segment. Any
/// failure only leaves the previous commit in place.
pub(super) fn save(cache: &RootCache, indexed: &Indexed, max_disk_bytes: u64) {
    let started = Instant::now();
    let BasePostings::Built(shard) = &indexed.base.shard else {
        return;
    };
    let Some(records) = records(&indexed.base, indexed) else {
        tracing::debug!("index cache: the build's ids do not follow its files; nothing written");
        return;
    };
    let written = cache.create().and_then(|()| {
        let Some(lock) = cache.try_lock_writer()? else {
            tracing::debug!("index cache: another server is writing it; nothing written");
            return Ok(None);
        };
        let name = cache.write_segment(&lock, &records, shard.lists())?;
        cache.commit(&lock, std::slice::from_ref(&name))?;
        cache.mark_used()?;
        Ok(Some(name))
    });
    match written {
        Ok(Some(name)) => {
            tracing::debug!(
                "index cache: wrote segment {name} of {} files to {} in {} ms",
                records.len(),
                cache.folder().display(),
                started.elapsed().as_millis()
            );
            for removed in evict_over_budget(cache, max_disk_bytes) {
                tracing::debug!(
                    "index cache: removed {} (least recently used, over [index] max_disk_mb)",
                    removed.display()
                );
            }
        }
        Ok(None) => {}
        Err(error) => {
            tracing::info!("index cache: not written ({error}); the index stays in memory")
        }
    }
}

/// One record per base id, in id order: the file's first name, the stamp
/// it was read with and its filter.
fn records<'a>(base: &'a BaseIndex, indexed: &'a Indexed) -> Option<Vec<FileRecord<'a>>> {
    let mut records = Vec::with_capacity(base.names.len());
    let mut filters = base.filters.iter().peekable();
    for (relative, stamp, content) in &indexed.files {
        let Content::Base(id) = content else {
            continue;
        };
        let first_name = base.names.get(*id as usize)?;
        if first_name.key.0 != *relative {
            continue;
        }
        if *id as usize != records.len() {
            return None;
        }
        let filter = filters.next_if(|(with, _)| with == id).map(|(_, filter)| {
            let (case, words) = filter.parts();
            FilterBits { case, words }
        });
        records.push(FileRecord {
            name: relative,
            stamp: *stamp,
            filter,
        });
    }
    (records.len() == base.names.len()).then_some(records)
}
