//! The index kept on disk: `index status|clear` on the real binary, with
//! the cache in a temporary XDG_CACHE_HOME or `[index] cache_dir`.

use std::path::{Path, PathBuf};

use mcp_project_helper::config::IndexCacheConfig;
use mcp_project_helper::index::cache::RootCache;
use mcp_project_helper::index::segment::FileRecord;
use mcp_project_helper::walk::Stamp;

use crate::common::cli_command;

struct Sandbox {
    _dirs: [tempfile::TempDir; 2],
    root: PathBuf,
    cache_home: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let (root, cache_home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(root.path().join("main.rs"), "fn main() {}\n").unwrap();
        Sandbox {
            root: dunce::canonicalize(root.path()).unwrap(),
            cache_home: dunce::canonicalize(cache_home.path()).unwrap(),
            _dirs: [root, cache_home],
        }
    }

    /// Runs `index ARGS` for the sandbox's root: (exit code, stdout, stderr).
    fn index(&self, args: &[&str]) -> (i32, String, String) {
        let output = cli_command(&["index"])
            .args(args)
            .arg("--root")
            .arg(&self.root)
            .env("XDG_CACHE_HOME", &self.cache_home)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    fn config_file(&self, text: &str) -> PathBuf {
        let path = self.cache_home.join("operator.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A committed segment of `names` in the cache at `base`, as a server
    /// would leave it.
    fn commit_segment(&self, base: &Path, names: &[&str]) -> RootCache {
        let config = IndexCacheConfig {
            cache_dir: Some(base.to_path_buf()),
            ..IndexCacheConfig::default()
        };
        let cache = RootCache::locate(&config, &self.root).unwrap();
        cache.create().unwrap();
        let lock = cache.try_lock_writer().unwrap().unwrap();
        let stamp = Stamp::of(&std::fs::metadata(&self.root).unwrap());
        let files: Vec<FileRecord> = names
            .iter()
            .map(|name| FileRecord {
                name,
                stamp,
                filter: None,
            })
            .collect();
        let segment = cache
            .write_segment(&lock, &files, [(7, [0u32].as_slice())])
            .unwrap();
        cache.commit(&lock, &[segment]).unwrap();
        cache
    }
}

/// XDG_CACHE_HOME is Linux's (macOS and Windows ask the system for the
/// folder); the other tests name the folder in the config.
#[cfg(target_os = "linux")]
#[test]
fn index_status_and_clear_in_the_users_cache_folder() {
    let sandbox = Sandbox::new();
    let base = sandbox.cache_home.join("mcp-project-helper");
    let (code, empty, _) = sandbox.index(&["status"]);
    assert_eq!(code, 0);
    assert!(
        empty.contains(&format!("index cache: {}", base.display())),
        "{empty}"
    );
    assert!(empty.contains("state: empty"), "{empty}");
    let cache = sandbox.commit_segment(&base, &["lib.rs", "main.rs"]);
    let (code, ready, _) = sandbox.index(&["status"]);
    assert_eq!(code, 0);
    assert!(
        ready.contains(&cache.folder().display().to_string()),
        "{ready}"
    );
    assert!(ready.contains("state: ready, 2 files covered"), "{ready}");
    assert!(ready.contains("size on disk:"), "{ready}");
    let (code, cleared, _) = sandbox.index(&["clear"]);
    assert_eq!(code, 0);
    assert!(cleared.contains("removed"), "{cleared}");
    assert!(!cache.folder().exists());
    let (_, after, _) = sandbox.index(&["status"]);
    assert!(after.contains("state: empty"), "{after}");
}

#[test]
fn index_status_follows_the_configured_cache_dir_and_persist() {
    let sandbox = Sandbox::new();
    let elsewhere = sandbox.cache_home.join("elsewhere");
    let config = sandbox.config_file(&format!(
        "[index]\ncache_dir = {:?}\n",
        elsewhere.to_string_lossy()
    ));
    sandbox.commit_segment(&elsewhere, &["main.rs"]);
    let (code, status, _) = sandbox.index(&["status", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        status.contains(&elsewhere.display().to_string()),
        "{status}"
    );
    assert!(status.contains("1 files covered"), "{status}");

    let off = sandbox.config_file("[index]\npersist = false\n");
    let (code, status, _) = sandbox.index(&["status", "--config", off.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(status.contains("in memory only"), "{status}");
}

#[test]
fn a_cache_dir_inside_the_root_is_refused() {
    let sandbox = Sandbox::new();
    let inside = sandbox.config_file(&format!(
        "[index]\ncache_dir = {:?}\n",
        sandbox.root.join(".cache").to_string_lossy()
    ));
    let (code, _, error) = sandbox.index(&["status", "--config", inside.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(error.contains("inside the project root"), "{error}");
    assert!(!sandbox.root.join(".cache").exists());
}

#[test]
fn a_damaged_segment_is_reported_unusable() {
    let sandbox = Sandbox::new();
    let base = sandbox.cache_home.join("cache");
    let config = sandbox.config_file(&format!(
        "[index]\ncache_dir = {:?}\n",
        base.to_string_lossy()
    ));
    let cache = sandbox.commit_segment(&base, &["main.rs"]);
    let segment = cache.folder().join(&cache.committed().unwrap()[0]);
    let length = std::fs::metadata(&segment).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(length / 2)
        .unwrap();
    let (code, status, _) = sandbox.index(&["status", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(status.contains("unusable"), "{status}");
}
