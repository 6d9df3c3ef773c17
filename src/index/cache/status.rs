//! `mcp-project-helper index status|clear`: what the cache of a root holds,
//! and dropping it.

use std::fmt::Write;
use std::path::Path;

use super::evict::folder_bytes;
use super::{CacheError, RootCache};
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
    if !cache.folder().is_dir() {
        out.push_str("state: empty (no server has written an index for this root yet)\n");
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
    if !folder.is_dir() {
        return Ok(format!(
            "index cache: {} does not exist: nothing to clear\n",
            folder.display()
        ));
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
    // Everything but the held lock first (Windows removes no open file).
    for entry in std::fs::read_dir(folder)
        .map_err(super::io_error(folder))?
        .flatten()
    {
        if entry.file_name() != super::LOCK {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    drop(lock);
    std::fs::remove_dir_all(folder).map_err(super::io_error(folder))?;
    Ok(format!(
        "index cache: removed {} ({})\n",
        folder.display(),
        megabytes(bytes)
    ))
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
}
