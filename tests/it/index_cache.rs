//! The index kept on disk between sessions, on the real binary, with the
//! cache in a temporary XDG_CACHE_HOME or `[index] cache_dir`: restarts,
//! a tree changed while no server ran, concurrent servers, a killed
//! writer, damaged and hostile cache files, the deny-list, and
//! `index status|clear`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use mcp_project_helper::config::IndexCacheConfig;
use mcp_project_helper::index::cache::{Committed, RootCache};
use mcp_project_helper::index::segment::{ContentHash, FileRecord};
use mcp_project_helper::walk::Stamp;

#[cfg(unix)]
use crate::common::output_within;
use crate::common::{
    RawServer, Server, TempProject, cli_command, eventually, matches, server_command,
    wait_for_index,
};

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
                hash: ContentHash::of(name.as_bytes()),
                filter: None,
            })
            .collect();
        let segment = cache
            .write_segment(&lock, &files, [(7, vec![0u32])])
            .unwrap();
        cache.commit(&lock, &[Committed::new(segment, 0)]).unwrap();
        cache
    }
}

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
    // The operator's cache_dir gets the same subfolder XDG_CACHE_HOME does.
    let cache = sandbox.commit_segment(&sandbox.cache_home, &["lib.rs", "main.rs"]);
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
    let segment = cache.folder().join(&cache.committed().unwrap()[0].name);
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

// ---- The server keeps its index on disk ----

/// A project and its own cache folder (XDG_CACHE_HOME for the servers).
struct Scene {
    project: TempProject,
    cache_home: tempfile::TempDir,
}

/// The project-relative name of the scene's source file `i`.
fn source(i: usize) -> String {
    format!("src/m{}/f{i}.rs", i % 7)
}

impl Scene {
    fn new(files: usize) -> Scene {
        let project = TempProject::new();
        for i in 0..files {
            project.write(
                &source(i),
                format!("fn item_{i}() {{ let token_{i} = {i}; }}\n// common words\n"),
            );
        }
        // Large enough for a long-gram filter.
        let mut large = String::new();
        let mut line = 0;
        while large.len() < 40 * 1024 {
            large.push_str(&format!("large_line_{line} CONST_VALUE_{line}\n"));
            line += 1;
        }
        project
            .write("large.txt", large)
            .write("bin/blob.bin", b"token_1\0binary\n")
            .write(".env", "SECRET_TOKEN_VALUE=hunter2\n")
            .write("keys/id_rsa", "PRIVATE_KEY_MATERIAL\n");
        Scene {
            project,
            cache_home: tempfile::tempdir().unwrap(),
        }
    }

    fn log(&self, name: &str) -> PathBuf {
        self.project.outside().join(format!("{name}.log"))
    }

    fn cache_env(&self) -> [(&str, &str); 1] {
        [("XDG_CACHE_HOME", self.cache_home.path().to_str().unwrap())]
    }

    /// A server with a debug log `name.log` and this scene's cache.
    async fn server(&self, name: &str) -> Server {
        let log = self.log(name);
        Server::start_with(
            &self.project.root,
            &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
            &self.cache_env(),
        )
        .await
    }

    /// [`Scene::server`] with more environment variables.
    async fn server_with(&self, name: &str, env: &[(&str, &str)]) -> Server {
        let log = self.log(name);
        let mut all = self.cache_env().to_vec();
        all.extend_from_slice(env);
        Server::start_with(
            &self.project.root,
            &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
            &all,
        )
        .await
    }

    #[cfg(unix)]
    /// A server driven with raw lines, its debug log `name.log`.
    fn raw_server(&self, name: &str) -> RawServer {
        let log = self.log(name);
        let mut command = server_command(
            Some(&self.project.root),
            &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
        );
        command.env("XDG_CACHE_HOME", self.cache_home.path());
        RawServer::spawn(command)
    }

    #[cfg(unix)]
    /// `index status` for the project, answered within 20 s.
    fn index_status(&self) -> String {
        let mut command = cli_command(&["index", "status"]);
        command
            .arg("--root")
            .arg(&self.project.root)
            .env("XDG_CACHE_HOME", self.cache_home.path());
        let output = output_within(command, Duration::from_secs(20));
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The root's cache as the library sees it (XDG_CACHE_HOME's folder).
    fn root_cache(&self) -> RootCache {
        let config = IndexCacheConfig {
            cache_dir: Some(self.cache_home.path().to_path_buf()),
            ..IndexCacheConfig::default()
        };
        // The server names a root as `dunce` does (no `\\?\` on Windows).
        RootCache::locate(&config, dunce::simplified(&self.project.root)).unwrap()
    }

    /// [`Scene::server`] with the operator config `config` (as `name.toml`).
    async fn configured(&self, name: &str, config: &str) -> Server {
        let path = self.project.outside().join(format!("{name}.toml"));
        std::fs::write(&path, config).unwrap();
        let log = self.log(name);
        let args = [
            "--config",
            path.to_str().unwrap(),
            "--log-level",
            "debug",
            "--log-file",
            log.to_str().unwrap(),
        ];
        Server::start_with(&self.project.root, &args, &self.cache_env()).await
    }

    /// A server that scans (no index, nothing kept).
    async fn scanner(&self) -> Server {
        let config = self.project.outside().join("scan.toml");
        std::fs::write(&config, "[index]\nenabled = false\npersist = false\n").unwrap();
        Server::start_with(
            &self.project.root,
            &["--config", config.to_str().unwrap()],
            &self.cache_env(),
        )
        .await
    }

    /// The root's cache folder.
    fn folder(&self) -> PathBuf {
        let base = self.cache_home.path().join("mcp-project-helper");
        let mut folders: Vec<PathBuf> = std::fs::read_dir(&base)
            .map(|entries| entries.map(|entry| entry.unwrap().path()).collect())
            .unwrap_or_default();
        assert_eq!(
            folders.len(),
            1,
            "one folder per root in {}",
            base.display()
        );
        folders.remove(0)
    }

    /// The committed segments' paths.
    fn segments(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.folder())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "idx"))
            .collect()
    }

    /// A server `name` whose answers equal `scanner`'s from its first call,
    /// and its log once its index is ready.
    async fn session_beside(&self, name: &str, scanner: &Server) -> (Server, String) {
        let server = self.server(name).await;
        assert_same_answers(&server, scanner).await;
        wait_for_index(&self.log(name)).await;
        let log = log_text(&self.log(name));
        (server, log)
    }

    /// Runs a server until it has written its segment, then stops it.
    async fn write_cache(&self, name: &str) {
        let server = self.server(name).await;
        wait_for_log(&self.log(name), "index cache: wrote segment").await;
        server.stop().await;
    }
}

async fn wait_for_log(log: &Path, line: &str) {
    let what = format!("{} says {line:?}", log.display());
    eventually(&what, || {
        std::fs::read_to_string(log).is_ok_and(|text| text.contains(line))
    })
    .await;
}

fn log_text(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// Queries whose answers the cache could get wrong: rare identifiers of
/// edited, added, deleted and untouched files, a regex, case folding.
fn queries() -> Vec<Value> {
    let mut queries: Vec<Value> = [
        "token_3",
        "token_42",
        "item_7()",
        "EDITED_MARKER",
        "ADDED_MARKER",
        "token_5 ",
        "CONST_VALUE_77",
        "const_value_77",
        "large_line_1000",
        "SECRET_TOKEN",
        "hunter2",
        "PRIVATE_KEY",
        "common words",
        "binary",
    ]
    .iter()
    .flat_map(|query| {
        [
            json!({"query": query, "max_results": 500}),
            json!({"query": query, "case_sensitive": false, "output_mode": "files_with_matches"}),
        ]
    })
    .collect();
    queries.push(json!({"query": r"token_1\d\b", "regex": true, "max_results": 500}));
    queries.push(json!({"query": r"(EDITED|ADDED)_MARKER", "regex": true}));
    queries
}

async fn assert_same_answers(cached: &Server, scanner: &Server) {
    for arguments in queries() {
        let with_cache = cached.call("search_project_files", arguments.clone()).await;
        let scanned = scanner
            .call("search_project_files", arguments.clone())
            .await;
        assert_eq!(
            with_cache.structured_content, scanned.structured_content,
            "search_project_files({arguments}) differs with the cache"
        );
    }
}

#[tokio::test]
async fn a_second_server_answers_from_the_cache_as_a_scan_does() {
    let scene = Scene::new(300);
    // Stamps younger than the clock tick are not trusted: let them settle.
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    assert_eq!(scene.segments().len(), 1);
    let scanner = scene.scanner().await;
    let (second, log) = scene.session_beside("second", &scanner).await;
    // The 300 sources and the large file; the binary file is read again.
    assert!(
        log.contains("used: 301 files unchanged, 0 changed, 0 gone"),
        "{log}"
    );
    assert!(log.contains("1 changed or new files to read"), "{log}");
    assert_same_answers(&second, &scanner).await;
    second.stop().await;
    scanner.stop().await;
}

#[tokio::test]
async fn the_configured_cache_dir_holds_the_index() {
    let scene = Scene::new(50);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cache_dir = scene.project.outside().join("configured-cache");
    let config = format!("[index]\ncache_dir = {:?}\n", cache_dir.to_string_lossy());
    let log = scene.log("configured");
    let first = scene.configured("configured", &config).await;
    wait_for_log(&log, "index cache: wrote segment").await;
    first.stop().await;
    assert!(!scene.cache_home.path().join("mcp-project-helper").exists());
    let folders: Vec<_> = std::fs::read_dir(&cache_dir).unwrap().collect();
    assert_eq!(folders.len(), 1);
    std::fs::remove_file(&log).unwrap();
    let second = scene.configured("configured", &config).await;
    let scanner = scene.scanner().await;
    assert_same_answers(&second, &scanner).await;
    wait_for_log(&log, "files unchanged").await;
    second.stop().await;
    scanner.stop().await;
}

#[tokio::test]
async fn persist_false_keeps_the_index_in_memory_only() {
    let scene = Scene::new(20);
    let log = scene.log("memory");
    let server = scene
        .configured("memory", "[index]\npersist = false\n")
        .await;
    server
        .ok("search_project_files", json!({"query": "token_3"}))
        .await;
    wait_for_index(&log).await;
    server.stop().await;
    assert!(
        std::fs::read_dir(scene.cache_home.path())
            .unwrap()
            .next()
            .is_none()
    );
}

/// Every file's stamp moved while no server ran, its text kept (a
/// `chmod -R`, a checkout that rewrites identical files): the next session
/// reads the files again but indexes none of them, taking their ids back,
/// and rewrites the segment with the new stamps, so the session after it
/// finds nothing changed.
#[cfg(unix)]
#[tokio::test]
async fn files_whose_stamps_moved_but_not_their_text_are_not_indexed_again() {
    use std::os::unix::fs::PermissionsExt;
    let scene = Scene::new(200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    for i in 0..200 {
        let path = scene.project.root.join(source(i));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let scanner = scene.scanner().await;
    let (second, log) = scene.session_beside("second", &scanner).await;
    assert!(
        log.contains("1 files unchanged, 200 changed, 0 gone"),
        "{log}"
    );
    assert_eq!(files_taken_back(&log), 200, "{log}");
    assert_same_answers(&second, &scanner).await;
    second.stop().await;
    let (third, log) = scene.session_beside("third", &scanner).await;
    assert!(log.contains("0 changed, 0 gone"), "{log}");
    third.stop().await;
    scanner.stop().await;
}

#[tokio::test]
async fn files_a_checkout_wrote_anew_with_their_old_text_are_still_found() {
    let scene = Scene::new(300);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    // As git checks a file out: its text written to a new file renamed over
    // the old one (a new inode, the same text). A few of many: their layer
    // is not rewritten for them, its records keep the old stamps.
    let rewritten = [3, 42, 77];
    for i in rewritten {
        let path = scene.project.root.join(source(i));
        let text = std::fs::read(&path).unwrap();
        let fresh = path.with_extension("new");
        std::fs::write(&fresh, &text).unwrap();
        std::fs::rename(&fresh, &path).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let scanner = scene.scanner().await;
    let (second, log) = scene.session_beside("second", &scanner).await;
    // By the background, or by a call that read them first.
    assert_eq!(files_taken_back(&log), 3, "{log}");
    // Their ids taken back, each is found where it is now.
    for i in rewritten {
        let query = format!("token_{i} = {i};");
        let found = second
            .ok("search_project_files", json!({"query": query}))
            .await;
        assert_eq!(matches(&found).len(), 1, "{query}: {found}");
    }
    assert_same_answers(&second, &scanner).await;
    second.stop().await;
    scanner.stop().await;
}

/// How many files the log says got their ids back: "index: N files ...
/// hold the text indexed before".
fn files_taken_back(log: &str) -> usize {
    log.lines()
        .filter(|line| line.contains("hold the text indexed before"))
        .filter_map(|line| {
            line.split("index: ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum()
}

#[tokio::test]
async fn a_tree_changed_while_no_server_ran_is_exact_from_the_first_call() {
    let scene = Scene::new(200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    let root = &scene.project.root;
    // Same size, new content: only the stamp's times tell.
    let edited = root.join("src/m3/f3.rs");
    let before = std::fs::read_to_string(&edited).unwrap();
    let after = format!("{:<width$}\n", "// EDITED_MARKER", width = before.len() - 1);
    assert_eq!(before.len(), after.len());
    std::fs::write(&edited, after).unwrap();
    scene
        .project
        .write("src/new/added.rs", "fn ADDED_MARKER() { token_42(); }\n");
    std::fs::remove_file(root.join("src/m0/f42.rs")).unwrap();
    std::fs::remove_file(root.join("src/m5/f5.rs")).unwrap();
    let second = scene.server("second").await;
    let scanner = scene.scanner().await;
    // No wait: the very first calls are exact.
    assert_same_answers(&second, &scanner).await;
    let found = second
        .ok("search_project_files", json!({"query": "EDITED_MARKER"}))
        .await;
    assert_eq!(matches(&found).len(), 1, "{found}");
    wait_for_index(&scene.log("second")).await;
    let log = log_text(&scene.log("second"));
    // 200 sources and the large file, less the edited and the deleted.
    assert!(
        log.contains("198 files unchanged, 1 changed, 2 gone"),
        "{log}"
    );
    // The edited, the added and the binary file.
    assert!(log.contains("3 changed or new files to read"), "{log}");
    assert_same_answers(&second, &scanner).await;
    // The files read again are written as a new layer and committed with
    // the old one and its dead ids.
    wait_for_log(&scene.log("second"), "index cache: wrote segment").await;
    second.stop().await;
    let (third, log) = scene.session_beside("third", &scanner).await;
    assert!(log.contains("0 changed, 0 gone"), "{log}");
    third.stop().await;
    scanner.stop().await;
}

#[tokio::test]
async fn a_session_served_from_the_cache_sees_every_change_from_its_first_call() {
    let scene = Scene::new(300);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    let second = scene.server("second").await;
    // From the first call on (which waits for the restore), a file written
    // just before a call is found by it.
    for round in 0..5 {
        let word = format!("FRESH_WORD_{round}");
        scene
            .project
            .write(&format!("src/fresh/f{round}.rs"), format!("// {word}\n"));
        let found = second
            .ok("search_project_files", json!({"query": word}))
            .await;
        assert_eq!(matches(&found).len(), 1, "round {round}: {found}");
    }
    let log = log_text(&scene.log("second"));
    assert!(log.contains("used: 301 files unchanged"), "{log}");
    second.stop().await;
}

#[tokio::test]
async fn two_servers_at_once_share_one_cache() {
    let scene = Scene::new(300);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (a, b) = tokio::join!(scene.server("a"), scene.server("b"));
    let scanner = scene.scanner().await;
    assert_same_answers(&a, &scanner).await;
    assert_same_answers(&b, &scanner).await;
    wait_for_index(&scene.log("a")).await;
    wait_for_index(&scene.log("b")).await;
    assert_same_answers(&a, &scanner).await;
    assert_same_answers(&b, &scanner).await;
    a.stop().await;
    b.stop().await;
    assert_eq!(scene.segments().len(), 1, "one committed segment");
    let third = scene.server("third").await;
    assert_same_answers(&third, &scanner).await;
    wait_for_log(&scene.log("third"), "files unchanged").await;
    third.stop().await;
    scanner.stop().await;
}

#[tokio::test]
async fn a_writer_killed_mid_write_leaves_a_usable_cache() {
    let scene = Scene::new(2000);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    // Changed files go into a new layer, which the next server writes;
    // killed while it does (or, on a fast machine, right after).
    for i in (0..2000).step_by(4) {
        scene.project.write(
            &source(i),
            format!("fn edited_{i}() {{ let token_{i} = {i}; }}\n"),
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = scene.log("killed");
    let mut command = server_command(
        Some(&scene.project.root),
        &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
    );
    command.env("XDG_CACHE_HOME", scene.cache_home.path());
    let mut killed = RawServer::spawn(command);
    killed.initialize("2025-06-18").await;
    let folder = scene.folder();
    eventually("the second server writes", || {
        let writing = std::fs::read_dir(&folder).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
        });
        writing || log_text(&log).contains("index cache: wrote segment")
    })
    .await;
    killed.child.start_kill().unwrap();
    killed.child.wait().await.unwrap();
    let third = scene.server("third").await;
    let scanner = scene.scanner().await;
    assert_same_answers(&third, &scanner).await;
    wait_for_index(&scene.log("third")).await;
    let log = log_text(&scene.log("third"));
    assert!(log.contains("files unchanged"), "the cache was used: {log}");
    third.stop().await;
    scanner.stop().await;
}

/// Damages the committed segment at the path given, or its manifest.
type Damage = fn(&Path);

#[tokio::test]
async fn damaged_or_hostile_cache_files_are_rebuilt_and_never_change_an_answer() {
    let scene = Scene::new(200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let scanner = scene.scanner().await;
    let damages: [(&str, Damage); 5] = [
        ("flipped", |segment| {
            let mut bytes = std::fs::read(segment).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x55;
            std::fs::write(segment, bytes).unwrap();
        }),
        ("truncated", |segment| {
            let length = std::fs::metadata(segment).unwrap().len();
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(segment)
                .unwrap();
            file.set_len(length / 3).unwrap();
        }),
        ("garbage", |segment| {
            std::fs::write(segment, b"MPHIDX\r\n\x01\0\0\0 not really a segment").unwrap();
        }),
        ("empty", |segment| std::fs::write(segment, b"").unwrap()),
        ("manifest elsewhere", |segment| {
            let manifest = segment.with_file_name("manifest");
            let body = "mcp-project-helper index 1\nsegment ../../../../etc/passwd\n";
            std::fs::write(manifest, format!("{body}check 00000000\n")).unwrap();
        }),
    ];
    scene.write_cache("writer").await;
    // Each reader rebuilds and writes the segment the next round damages.
    for (round, (what, damage)) in damages.iter().enumerate() {
        let segments = scene.segments();
        assert_eq!(segments.len(), 1);
        damage(&segments[0]);
        let name = format!("reader{round}");
        let reader = scene.server(&name).await;
        assert_same_answers(&reader, &scanner).await;
        wait_for_index(&scene.log(&name)).await;
        let log = log_text(&scene.log(&name));
        assert!(log.contains("rebuilding"), "{what}: {log}");
        assert!(!log.contains("files unchanged"), "{what}: {log}");
        assert_same_answers(&reader, &scanner).await;
        wait_for_log(&scene.log(&name), "index cache: wrote segment").await;
        reader.stop().await;
    }
    scanner.stop().await;
}

#[tokio::test]
async fn deny_listed_files_never_enter_the_cache_and_its_files_are_private() {
    let scene = Scene::new(10);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    let folder = scene.folder();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        for secret in [&b".env"[..], b"id_rsa", b"hunter2", b"SECRET_TOKEN"] {
            assert!(
                !bytes.windows(secret.len()).any(|window| window == secret),
                "{} holds {:?}",
                path.display(),
                String::from_utf8_lossy(secret)
            );
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", path.display());
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for folder in [folder.as_path(), folder.parent().unwrap()] {
            let mode = std::fs::metadata(folder).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", folder.display());
        }
    }
    // What `index status` says of it.
    let output = cli_command(&["index", "status"])
        .arg("--root")
        .arg(&scene.project.root)
        .env("XDG_CACHE_HOME", scene.cache_home.path())
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&output.stdout);
    assert!(
        status.contains("state: ready, 11 files covered"),
        "{status}"
    );
}

/// A cache folder reached through a link (planted in a shared cache home,
/// say) is neither read nor written.
#[cfg(unix)]
#[tokio::test]
async fn a_linked_cache_folder_is_never_used() {
    let scene = Scene::new(20);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("first").await;
    let planted = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        scene.cache_home.path().join("mcp-project-helper"),
        planted.path().join("mcp-project-helper"),
    )
    .unwrap();
    let log = scene.log("planted");
    let server = Server::start_with(
        &scene.project.root,
        &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
        &[("XDG_CACHE_HOME", planted.path().to_str().unwrap())],
    )
    .await;
    let scanner = scene.scanner().await;
    assert_same_answers(&server, &scanner).await;
    wait_for_index(&log).await;
    let text = log_text(&log);
    assert!(text.contains("not a folder of the current user"), "{text}");
    assert!(!text.contains("files unchanged"), "{text}");
    server.stop().await;
    scanner.stop().await;
}

// ---- Hostile cache files: each refused before it is read ----

/// The search every hostile-cache test asks, with what a scan answers.
fn probe() -> Value {
    json!({"query": "token_3", "max_results": 500})
}

#[cfg(unix)]
/// Initializes `raw`, lists its tools and asks [`probe`]: the structured
/// answer.
async fn raw_answers(raw: &mut RawServer) -> Value {
    raw.initialize("2025-06-18").await;
    raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    let tools = raw.recv_id(&json!(1)).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty()),
        "{tools}"
    );
    raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search_project_files", "arguments": probe()}}))
        .await;
    let answer = raw.recv_id(&json!(2)).await;
    answer["result"]["structuredContent"].clone()
}

#[cfg(unix)]
async fn scanned(scanner: &Server) -> Value {
    let result = scanner.call("search_project_files", probe()).await;
    serde_json::to_value(result.structured_content).unwrap()
}

#[cfg(unix)]
/// Replaces `path` by what `plant` makes there.
fn replace_with(path: &Path, plant: impl FnOnce(&Path)) {
    std::fs::remove_file(path).unwrap();
    plant(path);
}

/// A FIFO, a link to a FIFO or a link to a valid copy in the place of the
/// manifest or a segment is opened without blocking or following and
/// refused: `index status` answers, the server answers from its first call
/// (it walks, then rebuilds), and stdin EOF ends it at once, also while its
/// first call and its build are under way.
#[cfg(unix)]
#[tokio::test]
async fn fifos_and_links_in_the_cache_block_nothing_and_are_never_followed() {
    let scene = Scene::new(100);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let scanner = scene.scanner().await;
    let expected = scanned(&scanner).await;
    let elsewhere = scene.project.outside().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let fifo_elsewhere = elsewhere.join("fifo");
    crate::common::make_fifo(&fifo_elsewhere);
    type Plant = fn(&Scene, &Path, &Path) -> PathBuf;
    let plants: [(&str, &str, Plant); 4] = [
        (
            "a FIFO as the manifest",
            "not a regular file",
            |scene, _, _| {
                let manifest = scene.folder().join("manifest");
                replace_with(&manifest, crate::common::make_fifo);
                manifest
            },
        ),
        (
            "a FIFO as a segment",
            "not a regular file",
            |scene, _, _| {
                let segment = scene.segments().remove(0);
                replace_with(&segment, crate::common::make_fifo);
                segment
            },
        ),
        (
            "a link to a FIFO as a segment",
            "rebuilding",
            |scene, _, fifo| {
                let segment = scene.segments().remove(0);
                replace_with(&segment, |at| std::os::unix::fs::symlink(fifo, at).unwrap());
                segment
            },
        ),
        (
            "a link to a valid copy as a segment",
            "rebuilding",
            |scene, elsewhere, _| {
                let segment = scene.segments().remove(0);
                let copy = elsewhere.join("copy.idx");
                std::fs::copy(&segment, &copy).unwrap();
                replace_with(&segment, |at| {
                    std::os::unix::fs::symlink(&copy, at).unwrap()
                });
                segment
            },
        ),
    ];
    for (round, (what, logged, plant)) in plants.iter().enumerate() {
        scene.write_cache(&format!("writer{round}")).await;
        let planted = plant(&scene, &elsewhere, &fifo_elsewhere);
        // Held, so that no server here writes the cache again: what is
        // planted stays for every look below.
        let lock = scene.root_cache().try_lock_writer().unwrap().unwrap();
        let status = scene.index_status();
        assert!(status.contains("unusable"), "{what}: {status}");

        // EOF while the first call waits and the build starts.
        let mut leaving = scene.raw_server(&format!("leaving{round}"));
        leaving.initialize("2025-06-18").await;
        leaving
            .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search_project_files", "arguments": probe()}}))
            .await;
        leaving.finish().await;

        let name = format!("reader{round}");
        let mut reader = scene.raw_server(&name);
        assert_eq!(raw_answers(&mut reader).await, expected, "{what}");
        wait_for_index(&scene.log(&name)).await;
        let log = log_text(&scene.log(&name));
        assert!(log.contains(logged), "{what}: {log}");
        assert!(!log.contains("files unchanged"), "{what}: {log}");
        reader.finish().await;
        assert!(
            std::fs::symlink_metadata(&planted).is_ok(),
            "{what}: still in place"
        );
        drop(lock);
    }
    scanner.stop().await;
}

/// A segment of 16 GiB (sparse: a valid header, then zeros) is more than an
/// index of the tree can hold: refused before it is checksummed or mapped,
/// so the server's memory stays small and its answers come at once.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_oversized_sparse_segment_is_refused_unread() {
    let scene = Scene::new(100);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("writer").await;
    let segment = scene.segments().remove(0);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(16 << 30)
        .unwrap();
    let status = scene.index_status();
    assert!(
        status.contains("unusable") && status.contains("more than"),
        "{status}"
    );
    let scanner = scene.scanner().await;
    let mut reader = scene.raw_server("reader");
    assert_eq!(raw_answers(&mut reader).await, scanned(&scanner).await);
    wait_for_index(&scene.log("reader")).await;
    let log = log_text(&scene.log("reader"));
    assert!(log.contains("more than the"), "{log}");
    let peak = crate::common::peak_rss_kib(reader.child.id().unwrap());
    assert!(peak < 512 * 1024, "peak resident memory {peak} KiB");
    reader.finish().await;
    scanner.stop().await;
}

/// A segment others may write (mode 0666) or another user owns is not one
/// this user's server wrote: refused, rebuilt.
#[cfg(unix)]
#[tokio::test]
async fn a_shared_or_foreign_segment_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let scene = Scene::new(50);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let scanner = scene.scanner().await;
    let expected = scanned(&scanner).await;
    scene.write_cache("writer0").await;
    let segment = scene.segments().remove(0);
    std::fs::set_permissions(&segment, std::fs::Permissions::from_mode(0o666)).unwrap();
    let reader = scene.server("reader0").await;
    assert_same_answers(&reader, &scanner).await;
    wait_for_log(&scene.log("reader0"), "index cache: wrote segment").await;
    let log = log_text(&scene.log("reader0"));
    assert!(log.contains("mode 666, not 600"), "{log}");
    reader.stop().await;

    let segment = scene.segments().remove(0);
    if let Err(error) = std::os::unix::fs::chown(&segment, Some(65534), Some(65534)) {
        crate::common::needs_root(
            "a_shared_or_foreign_segment_is_refused (another user's segment)",
            &error.to_string(),
        );
        scanner.stop().await;
        return;
    }
    let mut reader = scene.raw_server("reader1");
    assert_eq!(raw_answers(&mut reader).await, expected);
    wait_for_index(&scene.log("reader1")).await;
    let log = log_text(&scene.log("reader1"));
    assert!(log.contains("owned by uid 65534"), "{log}");
    reader.finish().await;
    scanner.stop().await;
}

/// Replaces the root's committed segment by one that lists the same files
/// with the same stamps and content hashes but none of their trigrams,
/// sealed as a writer would: it passes every check on opening.
fn forge_without_postings(scene: &Scene) {
    let cache = scene.root_cache();
    let committed = cache.committed().unwrap();
    assert_eq!(committed.len(), 1);
    let segment = cache.open_segment(&committed[0].name, u64::MAX).unwrap();
    let files: Vec<(String, Stamp, ContentHash)> = (0..segment.file_count())
        .map(|id| {
            let file = segment.file(id).unwrap();
            (file.name.to_string(), file.stamp, file.hash)
        })
        .collect();
    drop(segment);
    let records: Vec<FileRecord> = files
        .iter()
        .map(|(name, stamp, hash)| FileRecord {
            name,
            stamp: *stamp,
            hash: *hash,
            filter: None,
        })
        .collect();
    let lock = cache.try_lock_writer().unwrap().unwrap();
    // One list for a trigram no file holds: the rest dropped.
    let forged = cache
        .write_segment(&lock, &records, [(0, vec![0u32])])
        .unwrap();
    cache.commit(&lock, &[Committed::new(forged, 0)]).unwrap();
}

/// A forged segment (postings dropped, checksums recomputed) gives wrong
/// answers while it is trusted; the scrub reads indexed files again in idle
/// time, finds the segment disagrees, drops it, and the answers are the
/// scan's again; the next session does not serve it.
#[tokio::test]
async fn the_scrub_drops_a_resealed_segment_that_lost_its_postings() {
    let scene = Scene::new(200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("writer").await;
    forge_without_postings(&scene);
    let scanner = scene.scanner().await;
    let expected = scanner.ok("search_project_files", probe()).await;
    assert!(!matches(&expected).is_empty(), "{expected}");

    // Without a scrub (an hour away) the forgery is believed.
    let trusting = scene
        .server_with("trusting", &[("MCP_PROJECT_HELPER_SCRUB_MS", "3600000")])
        .await;
    wait_for_index(&scene.log("trusting")).await;
    assert!(log_text(&scene.log("trusting")).contains("201 files unchanged, 0 changed, 0 gone"));
    let wrong = trusting.ok("search_project_files", probe()).await;
    assert!(matches(&wrong).is_empty(), "the forgery is served: {wrong}");
    trusting.stop().await;

    let scrubbed = scene
        .server_with("scrubbed", &[("MCP_PROJECT_HELPER_SCRUB_MS", "20")])
        .await;
    wait_for_log(&scene.log("scrubbed"), "a segment disagrees with").await;
    let scan = scanner.ok("search_project_files", probe()).await;
    let mut answer = Value::Null;
    for _ in 0..100 {
        answer = scrubbed.ok("search_project_files", probe()).await;
        if answer == scan {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answer, scan);
    assert_same_answers(&scrubbed, &scanner).await;
    scrubbed.stop().await;
    assert!(
        scene.root_cache().committed().unwrap().is_empty(),
        "the forged segment is no longer committed"
    );
    scanner.stop().await;
}

/// Pages of `pid`'s maps of segment files past the large folios that hold
/// their file tables and names (which calls read through the map): how
/// many of those pages are resident, and how many there are. A segment is
/// `header, root, files, names, filters, postings, lookup`; its header
/// gives each section's (offset u64, length u64) at 24 + 24 * section.
#[cfg(target_os = "linux")]
fn segment_pages_past_the_names(pid: u32) -> (u64, u64) {
    use std::io::{Read, Seek, SeekFrom};
    const PAGE: u64 = 4096;
    const LARGE_FOLIO: u64 = 2 * 1024 * 1024;
    const NAMES: usize = 2;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut pagemap = std::fs::File::open(format!("/proc/{pid}/pagemap")).unwrap();
    let (mut resident, mut pages) = (0, 0);
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || !fields[5].ends_with(".idx") {
            continue;
        }
        let (start, end) = fields[0].split_once('-').unwrap();
        let (start, end) = (
            u64::from_str_radix(start, 16).unwrap(),
            u64::from_str_radix(end, 16).unwrap(),
        );
        assert_eq!(fields[2], "00000000", "a segment is mapped whole: {line}");
        let header = std::fs::read(fields[5]).unwrap();
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
        let names_end = word(24 + 24 * NAMES) + word(24 + 24 * NAMES + 8);
        let from = start + names_end.div_ceil(LARGE_FOLIO) * LARGE_FOLIO;
        for page in (from..end).step_by(PAGE as usize) {
            let mut entry = [0u8; 8];
            pagemap.seek(SeekFrom::Start(page / PAGE * 8)).unwrap();
            pagemap.read_exact(&mut entry).unwrap();
            resident += u64::from_le_bytes(entry) >> 63;
            pages += 1;
        }
    }
    (resident, pages)
}

/// Searches read the lookup tables, posting lists and filters of mapped
/// segments from their files, not through the map: a touch of a map takes
/// a whole large folio of the page cache into the process, so a session
/// would otherwise keep resident every list it ever looked at.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_lists_a_search_reads_are_not_kept_resident() {
    let scene = large_index_scene();
    tokio::time::sleep(Duration::from_millis(300)).await;
    scene.write_cache("writer").await;
    let mut server = scene.raw_server("reader");
    server.initialize("2025-06-18").await;
    wait_for_index(&scene.log("reader")).await;
    let pid = server.child.id().expect("pid");
    let (_, pages) = segment_pages_past_the_names(pid);
    assert!(
        pages > 64,
        "the segments are mapped, their lists past the first large folio: {pages} pages"
    );
    // Lists are mostly bitmaps spread over the whole segment: 40 searches
    // of different words would touch pages everywhere in it.
    let words = [
        "a1b", "q_z9", "m0n4", "xy7_", "k2k", "p9t", "zz_0", "w3e", "u8i", "o6p",
    ];
    for (id, word) in (10..).zip(words.iter().cycle().take(40).enumerate()) {
        let query = format!("{}{}", word.1, word.0 % 7);
        server
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "search_project_files",
                    "arguments": {"query": query, "max_results": 5}}}))
            .await;
        let answer = server.recv_id(&json!(id)).await;
        assert_eq!(
            answer["result"]["structuredContent"]["status"], "success",
            "{answer}"
        );
    }
    let (resident, pages) = segment_pages_past_the_names(pid);
    assert_eq!(
        resident, 0,
        "{resident} of the segments' {pages} pages of lists and lookup tables are resident after the searches"
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

// ---- The disk budget ----

/// A tree whose index alone is larger than `max_disk_mb = 1`: 400 files
/// of pseudo-random identifiers, so that most trigrams are in many files.
fn large_index_scene() -> Scene {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_";
    let scene = Scene::new(0);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for file in 0..400 {
        let mut text = Vec::with_capacity(8 * 1024);
        while text.len() < 8 * 1024 {
            // xorshift: the same tree on every run.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push(ALPHABET[(state % ALPHABET.len() as u64) as usize]);
            if state.is_multiple_of(61) {
                text.push(b'\n');
            }
        }
        scene.project.write(&format!("gen/f{file}.rs"), text);
    }
    scene
}

fn bytes_under(folder: &Path) -> u64 {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| {
                    let metadata = std::fs::symlink_metadata(entry.path()).unwrap();
                    if metadata.is_dir() {
                        bytes_under(&entry.path())
                    } else {
                        metadata.len()
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// `max_disk_mb` bounds the current root too: an index larger than the
/// budget is not kept on disk (the session keeps it in memory and answers
/// as a scan does).
#[tokio::test]
async fn the_current_root_alone_over_max_disk_mb_keeps_nothing_on_disk() {
    let scene = large_index_scene();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = scene.configured("over", "[index]\nmax_disk_mb = 1\n").await;
    wait_for_index(&scene.log("over")).await;
    let log = log_text(&scene.log("over"));
    assert!(
        log.contains("more than [index] max_disk_mb (1 MB)"),
        "{log}"
    );
    let bytes = bytes_under(scene.cache_home.path());
    assert!(bytes <= 1024 * 1024, "the cache holds {bytes} bytes");
    assert!(scene.segments().is_empty());
    let scanner = scene.scanner().await;
    for query in ["a1b", "zz9", "_q_", "0o0o"] {
        let arguments = json!({"query": query, "max_results": 500});
        let served = server.call("search_project_files", arguments.clone()).await;
        let scanned = scanner.call("search_project_files", arguments).await;
        assert_eq!(
            served.structured_content, scanned.structured_content,
            "{query}"
        );
    }
    server.stop().await;
    scanner.stop().await;
}

/// Eviction removes only folders the server made: an operator's cache_dir
/// gets a subfolder of its own, and a folder named like a cache folder but
/// without the server's marker stays, while another root's old cache goes.
#[tokio::test]
async fn eviction_never_removes_a_folder_the_server_did_not_make() {
    let scene = Scene::new(20);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cache_dir = scene.project.outside().join("operator-cache");
    let notes = cache_dir.join("notes-0123456789abcdef");
    let inner_lookalike = cache_dir
        .join("mcp-project-helper")
        .join("notes-fedcba9876543210");
    for folder in [&notes, &inner_lookalike] {
        std::fs::create_dir_all(folder).unwrap();
        std::fs::write(folder.join("mine.txt"), vec![b'n'; 2 << 20]).unwrap();
    }
    // Another root's cache, made by the server's library, used long ago.
    let other_root = scene.project.outside().join("other");
    std::fs::create_dir(&other_root).unwrap();
    let config = IndexCacheConfig {
        cache_dir: Some(cache_dir.clone()),
        ..IndexCacheConfig::default()
    };
    let other = RootCache::locate(&config, &dunce::canonicalize(&other_root).unwrap()).unwrap();
    other.create().unwrap();
    std::fs::write(other.folder().join("seg-1-1.idx"), vec![0; 2 << 20]).unwrap();
    let text = format!(
        "[index]\ncache_dir = {:?}\nmax_disk_mb = 1\n",
        cache_dir.to_string_lossy()
    );
    let server = scene.configured("budget", &text).await;
    wait_for_log(&scene.log("budget"), "least recently used").await;
    server.stop().await;
    assert!(!other.folder().exists(), "another root's old cache goes");
    for folder in [&notes, &inner_lookalike] {
        assert_eq!(
            std::fs::metadata(folder.join("mine.txt")).unwrap().len(),
            2 << 20,
            "{} stays",
            folder.display()
        );
    }
}
