//! Keeps the cache within `[index] max_disk_mb`: the folders of the roots
//! used least recently go first, never the current root's, never one whose
//! writer is at work, never a folder without this program's marker (see
//! [`RootCache::create`]). When the current root's folder alone is over the
//! budget, the writer gives its cache up (`save.rs`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{LOCK, RootCache, USED, is_folder_name, is_ours};

/// One root's folder in the base folder.
struct Candidate {
    path: PathBuf,
    bytes: u64,
    used: SystemTime,
}

/// Removes other roots' folders from the base folder of `current`, least
/// recently used first, until the folders together hold at most
/// `budget_bytes`. Returns the folders removed.
pub fn evict_over_budget(current: &RootCache, budget_bytes: u64) -> Vec<PathBuf> {
    let Some(base) = current.folder().parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut candidates: Vec<Candidate> = entries
        .flatten()
        .filter(|entry| is_folder_name(&entry.file_name().to_string_lossy()))
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter(|entry| is_ours(&entry.path()))
        .map(|entry| {
            let path = entry.path();
            Candidate {
                bytes: folder_bytes(&path),
                used: last_used(&path),
                path,
            }
        })
        .collect();
    let mut total: u64 = candidates.iter().map(|candidate| candidate.bytes).sum();
    candidates.sort_by_key(|candidate| candidate.used);
    let mut removed = Vec::new();
    for candidate in candidates {
        if total <= budget_bytes {
            break;
        }
        if candidate.path == current.folder() || writer_at_work(&candidate.path) {
            continue;
        }
        if std::fs::remove_dir_all(&candidate.path).is_ok() {
            total = total.saturating_sub(candidate.bytes);
            removed.push(candidate.path);
        }
    }
    removed
}

/// Bytes of the regular files directly in `folder` (the cache makes no
/// subfolders; links are not followed).
pub(super) fn folder_bytes(folder: &Path) -> u64 {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.metadata().ok())
                .filter(|metadata| metadata.is_file())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}

fn last_used(folder: &Path) -> SystemTime {
    std::fs::symlink_metadata(folder.join(USED))
        .or_else(|_| std::fs::symlink_metadata(folder))
        .and_then(|metadata| metadata.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn writer_at_work(folder: &Path) -> bool {
    super::private::open_kept_file(&folder.join(LOCK))
        .map(|file| matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{committed_cache, config_in};
    use super::*;
    use std::time::Duration;

    #[test]
    fn least_recently_used_other_roots_go_first() {
        let cache_dir = tempfile::tempdir().unwrap();
        let config = config_in(cache_dir.path());
        let roots: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
        let caches: Vec<RootCache> = roots
            .iter()
            .map(|root| committed_cache(&config, root.path(), &["a", "b"]))
            .collect();
        let epoch = SystemTime::now() - Duration::from_secs(3600);
        for (age, cache) in caches.iter().enumerate() {
            cache.mark_used().unwrap();
            let used = std::fs::OpenOptions::new()
                .write(true)
                .open(cache.folder().join(USED))
                .unwrap();
            used.set_modified(epoch + Duration::from_secs(age as u64 * 60))
                .unwrap();
        }
        // Not ours: never touched, even named as ours are.
        let base = caches[0].folder().parent().unwrap();
        let stranger = base.join("Documents");
        let lookalike = base.join("notes-0123456789abcdef");
        for folder in [&stranger, &lookalike] {
            std::fs::create_dir(folder).unwrap();
            std::fs::write(folder.join("big"), vec![0; 4096]).unwrap();
        }
        // The oldest is the current root: it stays; the next oldest has a
        // writer at work: it stays too.
        let _writer = caches[1].try_lock_writer().unwrap().unwrap();
        let one = folder_bytes(caches[0].folder());
        let removed = evict_over_budget(&caches[0], 2 * one);
        assert_eq!(removed, [caches[2].folder(), caches[3].folder()]);
        assert!(caches[0].folder().exists() && caches[1].folder().exists());
        assert!(stranger.join("big").exists() && lookalike.join("big").exists());
        assert!(evict_over_budget(&caches[0], 2 * one).is_empty());
    }
}
