//! Every answer reflects the tree as it is when the call starts (SPEC, "Tools
//! and their output"), whatever the server caches or indexes: a create,
//! edit (also one that keeps the size and the modification time), delete or
//! rename of a file or a folder, or an ignore-file edit, followed AT ONCE
//! (no sleep) by a search, find or list through the real binary, is seen
//! by that call. Each scenario repeats for several rounds, with change
//! notifications on and switched off (`MCP_PROJECT_HELPER_WATCH=off`, the
//! fallback that re-checks the tree), on a small tree and on a generated
//! tree of 5,000 files, where the tree model is given time to be ready
//! before the edits start.

use std::fs::{self, FileTimes};
use std::path::Path;
#[cfg(not(windows))]
use std::process::Stdio;
#[cfg(not(windows))]
use std::sync::Arc;
#[cfg(not(windows))]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(windows))]
use std::time::Duration;
#[cfg(not(windows))]
use std::time::Instant;

#[cfg(not(windows))]
use crate::common::server_command;
use crate::common::{Server, TempProject, matches, strings};
#[cfg(not(windows))]
use rmcp::ServiceExt;
#[cfg(not(windows))]
use rmcp::transport::TokioChildProcess;
use serde_json::json;
#[cfg(not(windows))]
use tokio::io::{AsyncBufReadExt, BufReader};

const ROUNDS: usize = 4;
#[cfg(not(windows))]
const LARGE_TREE_FILES: usize = 5_000;
/// Rounds on the large tree after the first: every call there scans 5,000
/// files until a model answers, so fewer of them.
#[cfg(not(windows))]
const LARGE_TREE_ROUNDS: usize = 2;
/// How long a large-tree test waits for the model's "index ready" log line
/// before it edits anyway (a server without a model never prints it).
#[cfg(not(windows))]
const READY_WAIT: Duration = Duration::from_secs(15);

/// Notifications as the operator has them (on, where the OS offers them).
const WATCH_ON: &[(&str, &str)] = &[];
const WATCH_OFF: &[(&str, &str)] = &[("MCP_PROJECT_HELPER_WATCH", "off")];

#[tokio::test]
async fn every_change_is_seen_by_the_next_call() {
    let project = base_project();
    let server = Server::start_with(&project.root, &[], WATCH_ON).await;
    for round in 0..ROUNDS {
        exercise(&server, &project, round).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn every_change_is_seen_with_notifications_off() {
    let project = base_project();
    let server = Server::start_with(&project.root, &[], WATCH_OFF).await;
    for round in 0..ROUNDS {
        exercise(&server, &project, round).await;
    }
    server.stop().await;
}

// Not under Windows' test run: Wine answers each file open and canonical
// path with a round trip to wineserver, so a call over thousands of entries
// outlasts the client's 60 s timeout on a loaded 2-core machine. The
// behaviour is platform-independent; the small-tree tests run on Windows.
#[cfg(not(windows))]
#[tokio::test]
async fn every_change_is_seen_on_a_large_tree() {
    large_tree_rounds(WATCH_ON).await;
}

// Not under Windows' test run: Wine answers each file open and canonical
// path with a round trip to wineserver, so a call over thousands of entries
// outlasts the client's 60 s timeout on a loaded 2-core machine. The
// behaviour is platform-independent; the small-tree tests run on Windows.
#[cfg(not(windows))]
#[tokio::test]
async fn every_change_is_seen_on_a_large_tree_with_notifications_off() {
    large_tree_rounds(WATCH_OFF).await;
}

#[cfg(not(windows))]
async fn large_tree_rounds(env: &[(&str, &str)]) {
    let project = base_project();
    for index in 0..LARGE_TREE_FILES {
        project.write(
            &format!("gen/d{:02}/f{index:05}.rs", index % 50),
            format!("pub fn generated_{index}() -> usize {{ {index} }}\n"),
        );
    }
    let (server, ready) = start_logged(&project.root, env).await;
    // A first search while the model may still be building...
    let out = search_files(&server, "generated_4999()").await;
    assert_eq!(out, vec!["gen/d49/f04999.rs"]);
    exercise(&server, &project, 0).await;
    // ...and the rest once it is ready (or the wait is over).
    let waited = Instant::now();
    while !ready.load(Ordering::SeqCst) && waited.elapsed() < READY_WAIT {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for round in 1..=LARGE_TREE_ROUNDS {
        exercise(&server, &project, round).await;
    }
    // Files of the generated tree change too.
    let file = "gen/d07/f00007.rs";
    project.write(file, "pub fn rewritten_7() -> usize { 7 }\n");
    assert_eq!(search_files(&server, "rewritten_7").await, vec![file]);
    assert_eq!(
        search_files(&server, "generated_7()").await,
        Vec::<String>::new()
    );
    server.stop().await;
}

/// A project with a root `.gitignore` that the rounds edit.
fn base_project() -> TempProject {
    let project = TempProject::new();
    project
        .write(".gitignore", "*.tmp\n")
        .write("README.md", "# freshness\n")
        .write("src/main.rs", "fn main() {}\n");
    project
}

/// One round of every kind of change, each checked by the very next call.
/// Tokens carry the round number, so rounds never see each other's files.
async fn exercise(server: &Server, project: &TempProject, round: usize) {
    let dir = format!("r{round}");
    let none = Vec::<String>::new();

    // Create a file (in a new folder).
    let created = format!("{dir}/created.txt");
    let token = format!("token_created_{round}_end");
    project.write(&created, format!("{token}\n"));
    assert_eq!(search_files(server, &token).await, vec![created.clone()]);
    assert!(find(server, "**/created.txt").await.contains(&created));
    assert!(list(server, &dir, 1).await.contains(&created));

    // Edit: same size, and the modification time put back, so that only
    // the content (and the change time) differ.
    let edited = format!("{dir}/edited.txt");
    let old = format!("old_value_{round}_AAAA");
    let new = format!("new_value_{round}_BBBB");
    project.write(&edited, format!("{old}\n"));
    assert_eq!(search_files(server, &old).await, vec![edited.clone()]);
    rewrite_keeping_size_and_mtime(&project.root.join(&edited), format!("{new}\n").as_bytes());
    assert_eq!(search_files(server, &old).await, none);
    let out = server
        .ok("search_project_files", json!({"query": new}))
        .await;
    assert_eq!(matches(&out), vec![(edited.clone(), 1, new.clone())]);

    // Edit that grows the file: a second line.
    let grown = format!("grown_line_{round}_end");
    project.write(&edited, format!("{new}\n{grown}\n"));
    let out = server
        .ok("search_project_files", json!({"query": grown}))
        .await;
    assert_eq!(matches(&out), vec![(edited.clone(), 2, grown.clone())]);

    // Delete a file.
    fs::remove_file(project.root.join(&created)).expect("delete");
    assert_eq!(search_files(server, &token).await, none);
    assert!(!find(server, "**/created.txt").await.contains(&created));
    assert!(!list(server, &dir, 1).await.contains(&created));

    // Rename a file.
    let renamed = format!("{dir}/renamed.txt");
    fs::rename(project.root.join(&edited), project.root.join(&renamed)).expect("rename");
    assert_eq!(search_files(server, &new).await, vec![renamed.clone()]);
    assert_eq!(
        find(server, &format!("{dir}/*.txt")).await,
        vec![renamed.clone()]
    );

    // Create a folder tree, then rename it, then delete it.
    let deep_token = format!("deep_token_{round}_end");
    project.write(
        &format!("{dir}/deep/er/file.txt"),
        format!("{deep_token}\n"),
    );
    assert_eq!(
        search_files(server, &deep_token).await,
        vec![format!("{dir}/deep/er/file.txt")]
    );
    assert!(
        list(server, &dir, 3)
            .await
            .contains(&format!("{dir}/deep/er/file.txt"))
    );
    fs::rename(
        project.root.join(format!("{dir}/deep")),
        project.root.join(format!("{dir}/moved")),
    )
    .expect("rename folder");
    assert_eq!(
        search_files(server, &deep_token).await,
        vec![format!("{dir}/moved/er/file.txt")]
    );
    assert_eq!(
        find(server, "**/file.txt").await,
        vec![format!("{dir}/moved/er/file.txt")]
    );
    // A file made in the renamed folder right after the rename.
    let after_token = format!("after_move_{round}_end");
    project.write(
        &format!("{dir}/moved/er/after.txt"),
        format!("{after_token}\n"),
    );
    assert_eq!(
        search_files(server, &after_token).await,
        vec![format!("{dir}/moved/er/after.txt")]
    );
    fs::remove_dir_all(project.root.join(format!("{dir}/moved"))).expect("delete folder");
    assert_eq!(search_files(server, &deep_token).await, none);
    assert_eq!(search_files(server, &after_token).await, none);
    assert!(
        !list(server, &dir, 3)
            .await
            .iter()
            .any(|p| p.contains("moved"))
    );

    // A file replaced by a folder of the same name.
    let swap = format!("{dir}/swap");
    let swap_token = format!("swap_token_{round}_end");
    project.write(&swap, format!("{swap_token}\n"));
    assert_eq!(search_files(server, &swap_token).await, vec![swap.clone()]);
    fs::remove_file(project.root.join(&swap)).expect("delete");
    project.write(&format!("{swap}/inner.txt"), format!("{swap_token}\n"));
    assert_eq!(
        search_files(server, &swap_token).await,
        vec![format!("{swap}/inner.txt")]
    );

    // Ignore files: a folder and a pattern hidden, then shown again.
    let hidden = format!("{dir}/hidden/h.txt");
    let hidden_token = format!("hidden_token_{round}_end");
    project.write(&hidden, format!("{hidden_token}\n"));
    assert_eq!(
        search_files(server, &hidden_token).await,
        vec![hidden.clone()]
    );
    let gitignore = project.root.join(".gitignore");
    let before = fs::read_to_string(&gitignore).expect("read .gitignore");
    fs::write(&gitignore, format!("{before}{dir}/hidden/\n")).expect("edit .gitignore");
    assert_eq!(search_files(server, &hidden_token).await, none);
    assert!(!find(server, "**/h.txt").await.contains(&hidden));
    assert!(!list(server, &dir, 2).await.contains(&hidden));
    // A file written in the ignored folder while it is ignored...
    let while_ignored = format!("{dir}/hidden/later.txt");
    project.write(&while_ignored, format!("{hidden_token}\n"));
    assert_eq!(search_files(server, &hidden_token).await, none);
    // ...is there once the folder is no longer ignored.
    fs::write(&gitignore, &before).expect("restore .gitignore");
    assert_eq!(
        search_files(server, &hidden_token).await,
        vec![hidden.clone(), while_ignored.clone()]
    );
    assert!(find(server, "**/h.txt").await.contains(&hidden));

    let log = format!("{dir}/notes.log");
    let log_token = format!("log_token_{round}_end");
    project.write(&log, format!("{log_token}\n"));
    assert_eq!(search_files(server, &log_token).await, vec![log.clone()]);
    project.write(&format!("{dir}/.ignore"), "*.log\n");
    assert_eq!(search_files(server, &log_token).await, none);
    assert!(!find(server, "**/*.log").await.contains(&log));
    fs::remove_file(project.root.join(format!("{dir}/.ignore"))).expect("delete .ignore");
    assert_eq!(search_files(server, &log_token).await, vec![log.clone()]);
    assert!(find(server, "**/*.log").await.contains(&log));

    #[cfg(unix)]
    hard_links(server, project, round).await;
}

/// A file with two names in different folders: a write through one name
/// changes what both hold, though only that name's folder reports it.
#[cfg(unix)]
async fn hard_links(server: &Server, project: &TempProject, round: usize) {
    let (first, second) = (
        format!("r{round}/la/one.txt"),
        format!("r{round}/lb/two.txt"),
    );
    let (old, new) = (
        format!("linked_old_{round}_end"),
        format!("linked_new_{round}_end"),
    );
    project.write(&first, format!("{old}\n"));
    project.mkdir(&format!("r{round}/lb"));
    fs::hard_link(project.root.join(&first), project.root.join(&second)).expect("hard link");
    let both = vec![first.clone(), second.clone()];
    // Until its stamp is old enough to trust, a new file is searched
    // whatever its index says: let both names be indexed first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(search_files(server, &old).await, both);
    fs::write(project.root.join(&second), format!("{new}\n")).expect("write through a link");
    assert_eq!(search_files(server, &new).await, both);
    assert_eq!(search_files(server, &old).await, Vec::<String>::new());
}

/// Rewrites `path` with `bytes` of the same length and puts its
/// modification time back: only the content and the change time differ.
fn rewrite_keeping_size_and_mtime(path: &Path, bytes: &[u8]) {
    let before = fs::metadata(path).expect("stat");
    assert_eq!(before.len(), bytes.len() as u64, "same size");
    let modified = before.modified().expect("mtime");
    fs::write(path, bytes).expect("rewrite");
    let file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for times");
    file.set_times(FileTimes::new().set_modified(modified))
        .expect("set mtime");
    drop(file);
    let after = fs::metadata(path).expect("stat");
    assert_eq!(after.len(), before.len());
    assert_eq!(after.modified().expect("mtime"), modified);
}

async fn search_files(server: &Server, query: &str) -> Vec<String> {
    let out = server
        .ok(
            "search_project_files",
            json!({"query": query, "output_mode": "files_with_matches", "max_results": 200}),
        )
        .await;
    strings(&out["files"])
}

async fn find(server: &Server, pattern: &str) -> Vec<String> {
    let out = server
        .ok(
            "find_project_files",
            json!({"pattern": pattern, "max_results": 1000}),
        )
        .await;
    strings(&out["files"])
}

async fn list(server: &Server, path: &str, depth: u64) -> Vec<String> {
    let out = server
        .ok(
            "list_project_directory",
            json!({"path": path, "depth": depth, "max_entries": 5000}),
        )
        .await;
    out["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {out}"))
        .iter()
        .map(|entry| entry["path"].as_str().expect("path").to_string())
        .collect()
}

/// Starts the server with debug logging and reads its stderr, setting the
/// flag when the tree model says it is ready ("index ready").
#[cfg(not(windows))]
async fn start_logged(root: &Path, env: &[(&str, &str)]) -> (Server, Arc<AtomicBool>) {
    let mut command = server_command(Some(root), &["--log-level", "debug"]);
    for (key, value) in env {
        command.env(key, value);
    }
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");
    let ready = Arc::new(AtomicBool::new(false));
    if let Some(stderr) = stderr {
        let ready = Arc::clone(&ready);
        // Reads to the end, so that the server never blocks on a full pipe.
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("index ready") {
                    ready.store(true, Ordering::SeqCst);
                }
            }
        });
    }
    let client = ().serve(transport).await.expect("initialize");
    (Server { client }, ready)
}

#[test]
fn the_rewrite_helper_keeps_size_and_mtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("f.txt");
    fs::write(&path, "aaaa").expect("write");
    rewrite_keeping_size_and_mtime(&path, b"bbbb");
    assert_eq!(fs::read(&path).expect("read"), b"bbbb");
}
