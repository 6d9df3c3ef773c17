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
use std::time::Duration;

#[cfg(not(windows))]
use crate::common::{self, StderrWatch, server_command};
use crate::common::{Server, TempProject, matches, strings};
#[cfg(not(windows))]
use rmcp::ServiceExt;
#[cfg(not(windows))]
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const ROUNDS: usize = 4;
#[cfg(not(windows))]
const LARGE_TREE_FILES: usize = 5_000;
/// Rounds on the large tree after the first: every call there scans 5,000
/// files until a model answers, so fewer of them.
#[cfg(not(windows))]
const LARGE_TREE_ROUNDS: usize = 2;
/// How long a large-tree test waits for the model's readiness before it
/// edits anyway (a server without a model never logs it).
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

// Thousands of files through Wine's file server outrun the client's
// timeout; the small-tree rounds cover Windows.
#[cfg(not(windows))]
#[tokio::test]
async fn every_change_is_seen_on_a_large_tree() {
    large_tree_rounds(WATCH_ON).await;
}

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
    let (server, stderr, _) = start_logged(&project.root, env).await;
    // A first search while the model may still be building...
    let out = search_files(&server, "generated_4999()").await;
    assert_eq!(out, vec!["gen/d49/f04999.rs"]);
    exercise(&server, &project, 0).await;
    // ...and the rest once it is ready (or the wait is over).
    stderr.wait(READY_WAIT).await;
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

#[cfg(target_os = "linux")]
#[tokio::test]
async fn files_dated_in_the_future_settle_and_stay_exact() {
    future_dated(WATCH_ON).await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn files_dated_in_the_future_settle_and_stay_exact_with_notifications_off() {
    future_dated(WATCH_OFF).await;
}

/// Files whose modification times lie in the future (an archive's, a
/// skewed clock's) are trusted once seen unchanged a moment later: a call
/// then reads none of them for a token none holds. An edit that keeps
/// their size and future time is still seen by the next call.
#[cfg(target_os = "linux")]
async fn future_dated(env: &[(&str, &str)]) {
    const FILES: usize = 200;
    const FILE_BYTES: usize = 16 * 1024;
    let project = base_project();
    let future = std::time::SystemTime::now() + Duration::from_secs(30 * 86_400);
    let padding = "x".repeat(FILE_BYTES);
    for index in 0..FILES {
        let relative = format!("future/f{index:03}.txt");
        project.write(&relative, format!("future_{index}_end\n{padding}\n"));
        let file = fs::File::options()
            .write(true)
            .open(project.root.join(&relative))
            .expect("open for times");
        file.set_times(FileTimes::new().set_modified(future))
            .expect("set mtime");
    }
    let (server, stderr, pid) = start_logged(&project.root, env).await;
    stderr.wait(READY_WAIT).await;
    // Bytes the server has read (files, and its requests).
    let bytes_read = || {
        let io = fs::read_to_string(format!("/proc/{pid}/io")).expect("/proc/PID/io");
        io.lines()
            .find_map(|line| line.strip_prefix("rchar: "))
            .and_then(|value| value.parse::<usize>().ok())
            .expect("rchar")
    };
    let mut last_read = usize::MAX;
    for _ in 0..100 {
        let before = bytes_read();
        assert_eq!(
            search_files(&server, "nowhere_in_any_file").await,
            Vec::<String>::new()
        );
        last_read = bytes_read() - before;
        if last_read < FILES * FILE_BYTES / 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        last_read < FILES * FILE_BYTES / 4,
        "a call still reads {last_read} bytes of future-dated files"
    );
    let file = project.root.join("future/f007.txt");
    let rewritten = format!("future_7_new\n{padding}\n");
    rewrite_keeping_size_and_mtime(&file, rewritten.as_bytes());
    assert_eq!(
        search_files(&server, "future_7_new").await,
        vec!["future/f007.txt"]
    );
    assert_eq!(
        search_files(&server, "future_7_end").await,
        Vec::<String>::new()
    );
    assert_eq!(
        search_files(&server, "future_8_end").await,
        vec!["future/f008.txt"]
    );
    server.stop().await;
}

// Paths of 900 bytes: beyond what Windows takes without long-path support.
#[cfg(unix)]
#[tokio::test]
async fn changes_below_the_256th_folder_are_seen() {
    deep_tree(WATCH_ON).await;
}

// Paths of 900 bytes: beyond what Windows takes without long-path support.
#[cfg(unix)]
#[tokio::test]
async fn changes_below_the_256th_folder_are_seen_with_notifications_off() {
    deep_tree(WATCH_OFF).await;
}

/// A tree deeper than a client's path may go (256 names): files created,
/// edited, renamed and deleted at the bottom, and a deep folder renamed,
/// are seen by the next call as the scan sees them.
#[cfg(unix)]
async fn deep_tree(env: &[(&str, &str)]) {
    const LEVELS: usize = 300;
    let project = base_project();
    let deep: String = (0..LEVELS)
        .map(|level| format!("d{}/", level % 10))
        .collect();
    project.write(&format!("{deep}first.txt"), "deep_first_end\n");
    let (server, stderr, _) = start_logged(&project.root, env).await;
    stderr.wait(READY_WAIT).await;
    let none = Vec::<String>::new();
    let at = |name: &str| format!("{deep}{name}");
    assert_eq!(
        search_files(&server, "deep_first_end").await,
        vec![at("first.txt")]
    );
    for round in 0..ROUNDS {
        let token = format!("deep_created_{round}_end");
        let created = at(&format!("c{round}.txt"));
        project.write(&created, format!("{token}\n"));
        assert_eq!(search_files(&server, &token).await, vec![created.clone()]);
        assert!(find(&server, "**/c*.txt").await.contains(&created));
        let renamed = at(&format!("r{round}.txt"));
        fs::rename(project.root.join(&created), project.root.join(&renamed)).expect("rename");
        assert_eq!(search_files(&server, &token).await, vec![renamed.clone()]);
        fs::remove_file(project.root.join(&renamed)).expect("delete");
        assert_eq!(search_files(&server, &token).await, none);
        assert!(!find(&server, "**/r*.txt").await.contains(&renamed));
    }
    // A folder at level 280 renamed: everything below moves with it.
    let upper: String = (0..280).map(|level| format!("d{}/", level % 10)).collect();
    let lower: String = (280..LEVELS)
        .map(|level| format!("d{}/", level % 10))
        .collect();
    let (from, to) = (
        project.root.join(&upper),
        project.root.join(format!("{upper}moved")),
    );
    fs::rename(from.join("d0"), &to).expect("rename a deep folder");
    let moved = format!("{upper}moved/{}first.txt", &lower[3..]);
    assert_eq!(
        search_files(&server, "deep_first_end").await,
        vec![moved.clone()]
    );
    assert_eq!(find(&server, "**/first.txt").await, vec![moved]);
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
    folder_where_a_file_was(&project.root.join(&swap));
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
    #[cfg(unix)]
    hard_links_out_of_sight(server, project, round).await;
    #[cfg(target_os = "linux")]
    exchanges(server, project, round).await;
}

/// `renameat2(RENAME_EXCHANGE)`: each path takes the other's place at once.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).expect("no NUL");
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: both paths are NUL-terminated C strings.
    let result = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
}

/// Two folders exchanged, then a file and a folder: each side's old and
/// new contents are seen, and so are files made under either afterwards.
#[cfg(target_os = "linux")]
async fn exchanges(server: &Server, project: &TempProject, round: usize) {
    let dir = format!("r{round}");
    let at = |relative: &str| project.root.join(format!("{dir}/{relative}"));
    let (one, two) = (
        format!("swap_one_{round}_end"),
        format!("swap_two_{round}_end"),
    );
    project
        .write(&format!("{dir}/xa/one.txt"), format!("{one}\n"))
        .write(&format!("{dir}/xb/two.txt"), format!("{two}\n"))
        .write(&format!("{dir}/xb/sub/three.txt"), "three\n")
        .write(&format!("{dir}/xfile.txt"), format!("{one}\n"));
    let with_dir = |names: &[&str]| -> Vec<String> {
        names.iter().map(|name| format!("{dir}/{name}")).collect()
    };
    assert_eq!(
        search_files(server, &one).await,
        with_dir(&["xa/one.txt", "xfile.txt"])
    );
    exchange(&at("xa"), &at("xb"));
    assert_eq!(
        search_files(server, &one).await,
        with_dir(&["xb/one.txt", "xfile.txt"])
    );
    assert_eq!(search_files(server, &two).await, with_dir(&["xa/two.txt"]));
    assert_eq!(
        find(server, &format!("{dir}/**/three.txt")).await,
        with_dir(&["xa/sub/three.txt"])
    );
    // Until their stamps are old enough to trust, the exchanged folders
    // are listed again by every call: wait, and let one call trust them,
    // so that only the change feed can tell of what is made in them next.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(search_files(server, &two).await, with_dir(&["xa/two.txt"]));
    let later = format!("swap_later_{round}_end");
    for name in ["xa/later.txt", "xb/later.txt", "xa/sub/later.txt"] {
        project.write(&format!("{dir}/{name}"), format!("{later}\n"));
    }
    assert_eq!(
        search_files(server, &later).await,
        with_dir(&["xa/later.txt", "xa/sub/later.txt", "xb/later.txt"])
    );
    // A file and a folder exchanged.
    exchange(&at("xfile.txt"), &at("xb"));
    assert_eq!(
        search_files(server, &one).await,
        with_dir(&["xb", "xfile.txt/one.txt"])
    );
    let last = format!("swap_last_{round}_end");
    project.write(&format!("{dir}/xfile.txt/last.txt"), format!("{last}\n"));
    assert_eq!(
        search_files(server, &last).await,
        with_dir(&["xfile.txt/last.txt"])
    );
    assert!(
        list(server, &dir, 2)
            .await
            .contains(&format!("{dir}/xfile.txt/later.txt"))
    );
}

/// Files with a second name the change watcher cannot see: in a skipped
/// folder (`node_modules`), removed before the next call, or moved out of
/// the project with its folder; and an ignore file edited through such a
/// name. A write through that name is seen by the next call all the same.
#[cfg(unix)]
async fn hard_links_out_of_sight(server: &Server, project: &TempProject, round: usize) {
    let dir = format!("r{round}");
    let root = &project.root;
    let link = |from: &str, to: &str| {
        fs::create_dir_all(root.join(to).parent().expect("parent")).expect("mkdir");
        fs::hard_link(root.join(from), root.join(to)).expect("hard link");
    };
    let token = |what: &str, version: &str| format!("{what}_{version}_{round}_end");
    let skipped = format!("{dir}/skipped/one.txt");
    let removed = format!("{dir}/removed/one.txt");
    let moved = format!("{dir}/staying/one.txt");
    for (file, what) in [
        (&skipped, "skipped"),
        (&removed, "unlinked"),
        (&moved, "away"),
    ] {
        project.write(file, format!("{}\n", token(what, "old")));
    }
    link(&skipped, &format!("node_modules/pkg{round}/two.txt"));
    link(&removed, &format!("{dir}/removed_too/two.txt"));
    link(&moved, &format!("{dir}/leaving/two.txt"));
    let ignoring = format!("{dir}/ignoring");
    project
        .write(
            &format!("{ignoring}/shown.txt"),
            format!("{}\n", token("ignored", "old")),
        )
        .write(&format!("{ignoring}/.gitignore"), "# nothing\n");
    link(
        &format!("{ignoring}/.gitignore"),
        &format!("node_modules/pkg{round}/rules"),
    );
    // Until its stamp is old enough to trust, a new file is searched
    // whatever its index says: let every name be indexed first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (file, what) in [
        (&skipped, "skipped"),
        (&removed, "unlinked"),
        (&moved, "away"),
    ] {
        assert!(
            search_files(server, &token(what, "old"))
                .await
                .contains(file)
        );
    }
    let shown = vec![format!("{ignoring}/shown.txt")];
    assert_eq!(search_files(server, &token("ignored", "old")).await, shown);

    let write = |name: &str, what: &str| {
        fs::write(root.join(name), format!("{}\n", token(what, "new"))).expect("write");
    };
    write(&format!("node_modules/pkg{round}/two.txt"), "skipped");
    assert_eq!(
        search_files(server, &token("skipped", "new")).await,
        vec![skipped]
    );
    assert_eq!(
        search_files(server, &token("skipped", "old")).await,
        Vec::<String>::new()
    );

    write(&format!("{dir}/removed_too/two.txt"), "unlinked");
    fs::remove_file(root.join(format!("{dir}/removed_too/two.txt"))).expect("delete");
    assert_eq!(
        search_files(server, &token("unlinked", "new")).await,
        vec![removed]
    );

    write(&format!("{dir}/leaving/two.txt"), "away");
    let away = project.outside().join(format!("leaving{round}"));
    fs::rename(root.join(format!("{dir}/leaving")), away).expect("move out");
    assert_eq!(
        search_files(server, &token("away", "new")).await,
        vec![moved]
    );

    let rules = root.join(format!("node_modules/pkg{round}/rules"));
    fs::write(&rules, "shown.txt\n").expect("edit the rules through the other name");
    assert_eq!(
        search_files(server, &token("ignored", "old")).await,
        Vec::<String>::new()
    );
    assert!(!find(server, "**/shown.txt").await.contains(&shown[0]));
    fs::write(&rules, "# nothing\n").expect("edit the rules back");
    assert_eq!(search_files(server, &token("ignored", "old")).await, shown);
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
    common::let_stamps_settle().await;
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

/// Makes a folder where a file was just deleted. Where a deleted file's
/// name stays taken while a handle to it is open (Wine, and Windows before
/// POSIX delete semantics), the server may still be reading it for its
/// index: the folder is made once the name is free.
fn folder_where_a_file_was(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while let Err(error) = fs::create_dir(path) {
        // A name held that way still answers stat, so only time tells.
        assert!(
            error.kind() == std::io::ErrorKind::AlreadyExists
                && std::time::Instant::now() < deadline,
            "make folder {}: {error}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts the server at the default log level, watching its stderr for
/// the index's readiness (said at that level); also gives the server's pid.
#[cfg(not(windows))]
async fn start_logged(root: &Path, env: &[(&str, &str)]) -> (Server, StderrWatch, u32) {
    let mut command = server_command(Some(root), &[]);
    for (key, value) in env {
        command.env(key, value);
    }
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");
    let pid = transport.id().expect("server pid");
    let watch = StderrWatch::spawn(stderr.expect("stderr piped"), common::INDEX_READY);
    let client = ().serve(transport).await.expect("initialize");
    (Server { client }, watch, pid)
}

#[test]
fn the_rewrite_helper_keeps_size_and_mtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("f.txt");
    fs::write(&path, "aaaa").expect("write");
    rewrite_keeping_size_and_mtime(&path, b"bbbb");
    assert_eq!(fs::read(&path).expect("read"), b"bbbb");
}
