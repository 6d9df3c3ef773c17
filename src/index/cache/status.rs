//! `mcp-project-helper index status|clear`: what the cache of a root holds,
//! and dropping it.

use std::fmt::Write;
use std::path::Path;

use super::evict::folder_bytes;
use super::{CacheError, RootCache, is_ours};
use crate::config::IndexCacheConfig;

/// Where the cache of `root` lives, its size, and what its committed
/// segments cover (each one is opened and checked, as a server would).
pub fn status(config: &IndexCacheConfig, root: &Path) -> Result<String, CacheError> {
    let mut out = String::new();
    let _ = writeln!(out, "root: {}", root.display());
    let cache = match RootCache::locate(config, root) {
        Ok(cache) => cache,
        Err(CacheError::Off) => {
            out.push_str(
                "index cache: off ([index] persist = false): the index lives in memory only\n",
            );
            return Ok(out);
        }
        Err(error) => return Err(error),
    };
    let _ = writeln!(out, "index cache: {}", cache.folder().display());
    if std::fs::symlink_metadata(cache.folder()).is_err() {
        out.push_str("state: empty (no server has written an index for this root yet)\n");
        return Ok(out);
    }
    if !is_ours(cache.folder()) {
        out.push_str(NOT_OURS);
        out.push('\n');
        return Ok(out);
    }
    let _ = writeln!(
        out,
        "size on disk: {}",
        megabytes(folder_bytes(cache.folder()))
    );
    let committed = match cache.committed() {
        Ok(committed) => committed,
        Err(error) => {
            let _ = writeln!(
                out,
                "state: unusable ({error}); the next server rebuilds it"
            );
            return Ok(out);
        }
    };
    if committed.is_empty() {
        out.push_str("state: empty (no index committed yet)\n");
    }
    let mut files = 0u64;
    let mut usable = true;
    // No segment outgrows the disk budget: its writer gives up first.
    let max_bytes = config.max_disk_mb.saturating_mul(1024 * 1024);
    for super::Committed { name, first_id, .. } in &committed {
        match cache.open_segment(name, max_bytes) {
            Ok(segment) => {
                files += u64::from(segment.file_count());
                let _ = writeln!(
                    out,
                    "segment {name}: {} files (ids from {first_id}), {} trigrams, {}",
                    segment.file_count(),
                    segment.trigram_count(),
                    megabytes(segment.bytes() as u64)
                );
            }
            Err(error) => {
                usable = false;
                let _ = writeln!(out, "segment {name}: unusable ({error})");
            }
        }
    }
    if !committed.is_empty() {
        if usable {
            let _ = writeln!(out, "state: ready, {files} files covered");
        } else {
            out.push_str("state: unusable; the next server rebuilds it\n");
        }
    }
    if cache.folder().is_dir() && cache.try_lock_writer()?.is_none() {
        out.push_str("writer: a server is writing it now\n");
    }
    Ok(out)
}

/// Removes the cache of `root`; refused while a server is writing it.
pub fn clear(config: &IndexCacheConfig, root: &Path) -> Result<String, CacheError> {
    let cache = match RootCache::locate(config, root) {
        Ok(cache) => cache,
        Err(CacheError::Off) => {
            return Ok("index cache: off ([index] persist = false): nothing to clear\n".into());
        }
        Err(error) => return Err(error),
    };
    let folder = cache.folder();
    if std::fs::symlink_metadata(folder).is_err() {
        return Ok(format!(
            "index cache: {} does not exist: nothing to clear\n",
            folder.display()
        ));
    }
    if !is_ours(folder) {
        return Err(CacheError::Io {
            path: folder.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, NOT_OURS),
        });
    }
    let Some(lock) = cache.try_lock_writer()? else {
        return Err(CacheError::Io {
            path: folder.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::ResourceBusy,
                "a server is writing this cache now; clear it once its build is done",
            ),
        });
    };
    let bytes = folder_bytes(folder);
    // What this program writes, and nothing else; the held lock last
    // (Windows removes no open file).
    for entry in std::fs::read_dir(folder)
        .map_err(super::io_error(folder))?
        .flatten()
    {
        let name = entry.file_name();
        if name != super::LOCK && is_written_here(&name.to_string_lossy()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    drop(lock);
    let _ = std::fs::remove_file(folder.join(super::LOCK));
    if std::fs::remove_dir(folder).is_err() {
        return Ok(format!(
            "index cache: removed the index from {} ({}); the folder stays: it holds files this program did not write\n",
            folder.display(),
            megabytes(bytes)
        ));
    }
    Ok(format!(
        "index cache: removed {} ({})\n",
        folder.display(),
        megabytes(bytes)
    ))
}

/// Said of a root's cache folder that is a link, another user's, or has
/// no marker: it is never read, written or removed.
const NOT_OURS: &str = "state: not a cache folder this program made (a link, another user's folder, or one without its marker); left alone";

/// Whether `name` is a file this program writes in a root's folder.
fn is_written_here(name: &str) -> bool {
    [super::MANIFEST, super::LOCK, super::USED, super::MARKER].contains(&name)
        || super::is_segment_name(name)
        || (name.starts_with('.') && name.ends_with(".tmp"))
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{committed_cache, config_in};
    use super::*;

    #[test]
    fn status_reports_segments_and_damage_and_clear_removes() {
        let (cache_dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let config = config_in(cache_dir.path());
        let before = status(&config, root.path()).unwrap();
        assert!(before.contains("state: empty"), "{before}");
        let cache = committed_cache(&config, root.path(), &["a", "b", "c"]);
        let ready = status(&config, root.path()).unwrap();
        assert!(ready.contains("state: ready, 3 files covered"), "{ready}");
        assert!(
            ready.contains(&cache.folder().display().to_string()),
            "{ready}"
        );
        let segment = cache.folder().join(&cache.committed().unwrap()[0].name);
        let mut bytes = std::fs::read(&segment).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&segment, bytes).unwrap();
        let damaged = status(&config, root.path()).unwrap();
        assert!(damaged.contains("unusable"), "{damaged}");
        let held = cache.try_lock_writer().unwrap().unwrap();
        assert!(clear(&config, root.path()).is_err());
        drop(held);
        let cleared = clear(&config, root.path()).unwrap();
        assert!(cleared.contains("removed"), "{cleared}");
        assert!(!cache.folder().exists());
        assert!(
            clear(&config, root.path())
                .unwrap()
                .contains("nothing to clear")
        );
    }

    #[cfg(unix)]
    #[test]
    fn status_and_clear_leave_alone_what_this_program_did_not_make() {
        let (cache_dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let config = config_in(cache_dir.path());
        let cache = RootCache::locate(&config, root.path()).unwrap();
        // The root's folder a link to someone's files.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("notes.txt"), "mine").unwrap();
        std::fs::create_dir_all(cache.folder().parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), cache.folder()).unwrap();
        assert!(status(&config, root.path()).unwrap().contains("left alone"));
        assert!(clear(&config, root.path()).is_err());
        let left: Vec<_> = std::fs::read_dir(elsewhere.path())
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(left.len(), 1, "nothing written or removed through the link");
        // A real folder without the marker.
        std::fs::remove_file(cache.folder()).unwrap();
        std::fs::create_dir(cache.folder()).unwrap();
        std::fs::write(cache.folder().join("manifest"), "mine").unwrap();
        assert!(clear(&config, root.path()).is_err());
        assert!(cache.folder().join("manifest").exists());
        // Ours, with a stranger's file in it: the index goes, the file stays.
        std::fs::remove_dir_all(cache.folder()).unwrap();
        let cache = committed_cache(&config, root.path(), &["a"]);
        std::fs::write(cache.folder().join("notes.txt"), "mine").unwrap();
        let cleared = clear(&config, root.path()).unwrap();
        assert!(cleared.contains("the folder stays"), "{cleared}");
        let left: Vec<String> = std::fs::read_dir(cache.folder())
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["notes.txt"]);
    }
}
