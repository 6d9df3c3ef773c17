//! Hostile trees: special files, symlink loops, odd names, unreadable
//! entries, deep nesting, huge files, long lines, crowded folders, huge
//! arguments. Every call must answer (a result or a tool error, never a
//! hang), and the server must keep serving afterwards.

#[cfg(unix)]
use std::path::Path;
#[cfg(unix)]
use std::process::Stdio;

#[cfg(unix)]
use crate::common;
use crate::common::{Server, TempProject, strings};
#[cfg(unix)]
use serde_json::Value;
use serde_json::json;

/// Proves the server still answers, and answers correctly.
async fn still_serving(server: &Server) {
    let out = server
        .ok("read_project_file", json!({"path": "ok.txt"}))
        .await;
    assert_eq!(out["content"], "still here\n");
}

fn base_project() -> TempProject {
    let project = TempProject::new();
    project.write("ok.txt", "still here\n");
    project
}

#[cfg(unix)]
fn entry_type(out: &Value, path: &str) -> String {
    out["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path)
        .unwrap_or_else(|| panic!("{path} not listed in {out}"))["type"]
        .as_str()
        .unwrap()
        .to_string()
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[tokio::test]
async fn fifos_sockets_and_devices_are_refused_without_blocking() {
    use std::os::unix::fs::symlink;
    let project = base_project();
    mkfifo(&project.root.join("pipe.txt"));
    symlink("pipe.txt", project.root.join("pipe-link.txt")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(project.root.join("sock")).unwrap();
    symlink("/dev/null", project.root.join("devnull")).unwrap();
    symlink("/dev/zero", project.root.join("devzero")).unwrap();
    let server = Server::start(&project.root).await;

    for path in ["pipe.txt", "pipe-link.txt", "sock"] {
        let message = server.err("read_project_file", json!({"path": path})).await;
        assert!(message.contains("not a regular file"), "{path}: {message}");
    }
    for path in ["devnull", "devzero"] {
        let message = server.err("read_project_file", json!({"path": path})).await;
        assert!(
            message.contains("outside the project root"),
            "{path}: {message}"
        );
    }
    let listed = server.ok("list_project_directory", json!({})).await;
    assert_eq!(entry_type(&listed, "pipe.txt"), "other");
    assert_eq!(entry_type(&listed, "sock"), "other");
    assert_eq!(entry_type(&listed, "devnull"), "symlink");
    let found = server
        .ok("find_project_files", json!({"pattern": "*"}))
        .await;
    assert_eq!(
        strings(&found["files"]),
        vec!["ok.txt"],
        "only regular files are found"
    );
    still_serving(&server).await;
    server.stop().await;
}

/// A device node inside the root (not a symlink out of it). Creating one
/// needs root; without it the test says so and checks nothing.
#[cfg(unix)]
#[tokio::test]
async fn device_nodes_inside_the_root_are_refused() {
    let project = base_project();
    let made = ["c 1 3 nulldev", "c 1 5 zerodev"].iter().all(|spec| {
        let parts: Vec<&str> = spec.split(' ').collect();
        std::process::Command::new("mknod")
            .arg(project.root.join(parts[3]))
            .args(&parts[..3])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    if !made {
        common::needs_root(
            "device_nodes_inside_the_root_are_refused",
            "mknod is not permitted here (needs root)",
        );
        return;
    }
    let server = Server::start(&project.root).await;
    for path in ["nulldev", "zerodev"] {
        let message = server.err("read_project_file", json!({"path": path})).await;
        assert!(message.contains("not a regular file"), "{path}: {message}");
    }
    let listed = server.ok("list_project_directory", json!({})).await;
    assert_eq!(entry_type(&listed, "zerodev"), "other");
    still_serving(&server).await;
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn search_and_docs_skip_fifos_without_blocking() {
    let project = base_project();
    project.write("docs/guide.md", "# Guide\n\nneedle in the docs\n");
    mkfifo(&project.root.join("pipe.txt"));
    mkfifo(&project.root.join("docs/pipe.md"));
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "still"}))
        .await;
    assert_eq!(out["count"], 1);
    assert_eq!(out["matches"][0]["file"], "ok.txt");
    let out = server.ok("get_docs", json!({"query": "needle"})).await;
    assert_eq!(out["results"][0]["file"], "guide.md");
    let out = server.ok("get_docs", json!({})).await;
    assert_eq!(out["count"], 1);
    still_serving(&server).await;
    server.stop().await;
}

#[cfg(unix)]
fn loop_project() -> TempProject {
    use std::os::unix::fs::symlink;
    let project = base_project();
    project.write("sub/inner.txt", "inner\n");
    symlink("loop_b", project.root.join("loop_a")).unwrap();
    symlink("loop_a", project.root.join("loop_b")).unwrap();
    symlink("self", project.root.join("self")).unwrap();
    symlink(".", project.root.join("dirloop")).unwrap();
    symlink("..", project.root.join("sub/back")).unwrap();
    project
}

#[cfg(unix)]
#[tokio::test]
async fn symlink_loops_are_reported_and_never_followed() {
    let project = loop_project();
    let server = Server::start(&project.root).await;

    for path in ["loop_a", "self", "loop_b/x"] {
        server.err("read_project_file", json!({"path": path})).await;
    }
    // A loop that ends inside the root is just a long way to a real file.
    let out = server
        .ok(
            "read_project_file",
            json!({"path": "dirloop/sub/back/dirloop/ok.txt"}),
        )
        .await;
    assert_eq!(out["content"], "still here\n");

    let listed = server
        .ok("list_project_directory", json!({"depth": 5}))
        .await;
    for link in ["loop_a", "loop_b", "self", "dirloop", "sub/back"] {
        assert_eq!(entry_type(&listed, link), "symlink", "{link}");
    }
    assert_eq!(listed["count"], 8, "{listed}");

    let found = server
        .ok("find_project_files", json!({"pattern": "**/*"}))
        .await;
    assert_eq!(strings(&found["files"]), vec!["ok.txt", "sub/inner.txt"]);
    still_serving(&server).await;
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn search_survives_symlink_loops() {
    let project = loop_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "inner"}))
        .await;
    assert_eq!(out["count"], 1, "a loop must not repeat a file: {out}");
    assert_eq!(out["matches"][0]["file"], "sub/inner.txt");
    still_serving(&server).await;
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn odd_file_names_are_listed_and_never_break_the_protocol() {
    use std::os::unix::ffi::OsStrExt;
    let project = base_project();
    let bad = std::ffi::OsStr::from_bytes(b"bad\xff name.txt");
    std::fs::write(project.root.join(bad), "latin\n").unwrap();
    project
        .write("line\nbreak.txt", "newline in the name\n")
        .write("quote\"d.txt", "quote in the name\n")
        .write("ctrl\u{1}char.txt", "control char in the name\n")
        .write("日本/ファイル.txt", "unicode\n");
    let server = Server::start(&project.root).await;

    let listed = server
        .ok("list_project_directory", json!({"depth": 2}))
        .await;
    let paths: Vec<String> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    assert!(
        paths.contains(&"bad\u{FFFD} name.txt".to_string()),
        "{paths:?}"
    );
    assert!(paths.contains(&"line\nbreak.txt".to_string()), "{paths:?}");
    assert!(
        paths.contains(&"日本/ファイル.txt".to_string()),
        "{paths:?}"
    );

    let found = server
        .ok("find_project_files", json!({"pattern": "*.txt"}))
        .await;
    assert_eq!(found["count"], 6);

    for (path, content) in [
        ("line\nbreak.txt", "newline in the name\n"),
        ("quote\"d.txt", "quote in the name\n"),
        ("ctrl\u{1}char.txt", "control char in the name\n"),
        ("日本/ファイル.txt", "unicode\n"),
    ] {
        let out = server.ok("read_project_file", json!({"path": path})).await;
        assert_eq!(out["content"], content, "{path:?}");
        assert_eq!(out["file"], path);
    }
    // A name that is not UTF-8 cannot be spelled in JSON; its lossy form is
    // a clear tool error, not a crash.
    let message = server
        .err("read_project_file", json!({"path": "bad\u{FFFD} name.txt"}))
        .await;
    assert!(message.contains("does not exist"), "{message}");
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn two_hundred_levels_of_nesting() {
    let project = base_project();
    // Windows: 60 levels, 300 characters, past MAX_PATH all the same. Under
    // Wine a path that long resolves one name at a time (see
    // src/security/canonical.rs), so a walk 200 levels deep outlasts the
    // client's timeout there; Windows resolves it in one call.
    let levels = if cfg!(windows) { 60 } else { 200 };
    let deep: String = (0..levels).map(|i| format!("n{i:03}/")).collect();
    project.write(&format!("{deep}deep.txt"), "bottom\n");
    let server = Server::start(&project.root).await;

    let out = server
        .ok(
            "read_project_file",
            json!({"path": format!("{deep}deep.txt")}),
        )
        .await;
    assert_eq!(out["content"], "bottom\n");
    let found = server
        .ok("find_project_files", json!({"pattern": "deep.txt"}))
        .await;
    assert_eq!(strings(&found["files"]), vec![format!("{deep}deep.txt")]);
    let found = server
        .ok(
            "find_project_files",
            json!({"pattern": format!("**/n{:03}/*.txt", levels - 1)}),
        )
        .await;
    assert_eq!(found["count"], 1);
    let listed = server
        .ok("list_project_directory", json!({"depth": 5}))
        .await;
    assert_eq!(listed["count"], 6, "ok.txt and five levels: {listed}");
    let listed = server
        .ok(
            "list_project_directory",
            json!({"path": &deep[..deep.len() - 1]}),
        )
        .await;
    assert_eq!(listed["entries"][0]["name"], "deep.txt");
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn search_reaches_the_bottom_of_deep_nesting() {
    let project = base_project();
    let deep: String = (0..200).map(|i| format!("n{i:03}/")).collect();
    project.write(&format!("{deep}deep.txt"), "bottom needle\n");
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "bottom needle"}))
        .await;
    assert_eq!(out["matches"][0]["file"], format!("{deep}deep.txt"));
    still_serving(&server).await;
    server.stop().await;
}

/// 520,000 lines of 101 bytes: 52.5 MB.
fn big_file_project() -> (TempProject, String) {
    let project = base_project();
    let mut text = String::with_capacity(52_520_000);
    for i in 1..=520_000 {
        text.push_str(&format!("{i:0>100}\n"));
    }
    text.replace_range(50..56, "needle");
    project.write("big.log", &text);
    (project, text)
}

#[tokio::test]
async fn a_50_mb_file_is_capped_and_its_end_is_reachable() {
    let (project, text) = big_file_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("read_project_file", json!({"path": "big.log"}))
        .await;
    assert_eq!(out["truncated"], true);
    assert_eq!(out["size"], 52_520_000);
    assert_eq!(out["total_lines"], 520_000);
    let content = out["content"].as_str().unwrap();
    assert_eq!(content.len(), 200 * 1024);
    assert!(text.starts_with(content));

    let out = server
        .ok(
            "read_project_file",
            json!({"path": "big.log", "start_line": 519_999}),
        )
        .await;
    assert_eq!(
        out["content"],
        format!("{:0>100}\n{:0>100}\n", 519_999, 520_000)
    );
    assert_eq!(out["truncated"], false);

    let listed = server.ok("list_project_directory", json!({})).await;
    let big = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "big.log")
        .unwrap();
    assert_eq!(big["size"], 52_520_000);
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn search_skips_a_50_mb_file() {
    let (project, _text) = big_file_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "needle"}))
        .await;
    assert_eq!(out["count"], 0, "files over 2 MiB are skipped: {out}");
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn a_10000_character_line() {
    let project = base_project();
    let line = format!("{}needle{}", "w".repeat(5000), "v".repeat(4994));
    assert_eq!(line.len(), 10_000);
    project.write("wide.txt", format!("{line}\nshort\n"));
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "read_project_file",
            json!({"path": "wide.txt", "end_line": 1}),
        )
        .await;
    assert_eq!(out["content"], format!("{line}\n"));
    assert_eq!(out["total_lines"], 2);
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn search_cuts_a_10000_character_line() {
    let project = base_project();
    let line = format!("{}needle{}", "w".repeat(5000), "v".repeat(4994));
    project.write("wide.txt", format!("{line}\n"));
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "needle"}))
        .await;
    assert_eq!(out["count"], 1);
    let text = out["matches"][0]["text"].as_str().unwrap();
    assert!(
        text.chars().count() <= 301,
        "{} chars",
        text.chars().count()
    );
    still_serving(&server).await;
    server.stop().await;
}

#[cfg(not(windows))]
fn crowded_project() -> TempProject {
    let project = base_project();
    let crowd = project.root.join("crowd");
    std::fs::create_dir_all(&crowd).unwrap();
    for i in 0..20_000 {
        std::fs::write(crowd.join(format!("f{i:05}.txt")), format!("needle {i}\n")).unwrap();
    }
    project
}

// Not under Windows' test run: Wine answers each file open and canonical
// path with a round trip to wineserver, so a call over thousands of entries
// outlasts the client's 60 s timeout on a loaded 2-core machine. The
// behaviour is platform-independent; the small-tree tests run on Windows.
#[cfg(not(windows))]
#[tokio::test]
async fn a_folder_of_20000_files() {
    let project = crowded_project();
    let server = Server::start(&project.root).await;

    let listed = server
        .ok("list_project_directory", json!({"path": "crowd"}))
        .await;
    assert_eq!(listed["count"], 500);
    assert_eq!(listed["truncated"], true);
    assert_eq!(listed["entries"][0]["path"], "crowd/f00000.txt");
    let listed = server
        .ok(
            "list_project_directory",
            json!({"path": "crowd", "max_entries": 1_000_000}),
        )
        .await;
    assert_eq!(listed["count"], 2000);
    assert_eq!(listed["entries"][1999]["path"], "crowd/f01999.txt");

    let found = server
        .ok("find_project_files", json!({"pattern": "*.txt"}))
        .await;
    assert_eq!(found["count"], 200);
    assert_eq!(found["truncated"], true);
    let found = server
        .ok(
            "find_project_files",
            json!({"pattern": "crowd/*.txt", "max_results": 1_000_000}),
        )
        .await;
    assert_eq!(found["count"], 1000);
    let found = server
        .ok("find_project_files", json!({"pattern": "f19999.txt"}))
        .await;
    assert_eq!(strings(&found["files"]), vec!["crowd/f19999.txt"]);
    assert_eq!(found["truncated"], false);

    let out = server
        .ok("read_project_file", json!({"path": "crowd/f12345.txt"}))
        .await;
    assert_eq!(out["content"], "needle 12345\n");
    still_serving(&server).await;
    server.stop().await;
}

// Not under Windows' test run: Wine answers each file open and canonical
// path with a round trip to wineserver, so a call over thousands of entries
// outlasts the client's 60 s timeout on a loaded 2-core machine. The
// behaviour is platform-independent; the small-tree tests run on Windows.
#[cfg(not(windows))]
#[tokio::test]
async fn search_in_a_folder_of_20000_files() {
    let project = crowded_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "max_results": 1000}),
        )
        .await;
    assert_eq!(out["count"], 200);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["matches"][0]["file"], "crowd/f00000.txt");
    let out = server
        .ok("search_project_files", json!({"query": "needle 19999"}))
        .await;
    assert_eq!(out["count"], 1);
    assert_eq!(out["matches"][0]["file"], "crowd/f19999.txt");
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn huge_arguments_are_answered() {
    let project = base_project();
    let server = Server::start(&project.root).await;

    let long_path = "a/".repeat(50_000);
    let message = server
        .err("read_project_file", json!({"path": long_path}))
        .await;
    assert!(
        message.len() < 200_000,
        "the message stays bounded: {} bytes",
        message.len()
    );

    let long_name = "x".repeat(100_000);
    server
        .err("read_project_file", json!({"path": long_name}))
        .await;

    let wild = "*a".repeat(2000);
    let message = server
        .err("find_project_files", json!({"pattern": wild}))
        .await;
    assert!(message.contains("at most 1024 characters"), "{message}");

    let braces = format!("{}x{}", "{a,".repeat(50), "}".repeat(50));
    let result = server
        .call("find_project_files", json!({"pattern": braces}))
        .await;
    // Either a result or a clear refusal; what matters is the answer.
    assert!(result.is_error.is_some() || result.structured_content.is_some());
    still_serving(&server).await;
    server.stop().await;
}

/// The effective uid of this test process: a fresh file is owned by it.
#[cfg(unix)]
fn effective_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    let probe = tempfile::NamedTempFile::new().expect("probe file");
    probe.as_file().metadata().expect("metadata").uid()
}

/// Starts the server as `nobody` (uid/gid 65534) when this test runs as
/// root, since root reads files whatever their mode; `None` when that is
/// impossible here.
#[cfg(unix)]
async fn start_unprivileged(root: &Path) -> Option<Server> {
    start_unprivileged_with(root, &[]).await
}

/// [`start_unprivileged`] with extra command-line arguments.
#[cfg(unix)]
async fn start_unprivileged_with(root: &Path, args: &[&str]) -> Option<Server> {
    if effective_uid() != 0 {
        return Some(Server::start_with(root, args, &[]).await);
    }
    let mut command = common::server_command(Some(root), args);
    command.uid(65534).gid(65534);
    let client = common::connect((), command).await.ok()?;
    Some(Server { client })
}

/// A project with unreadable entries; its folders are made removable
/// again when it is dropped, even after a failed assertion.
#[cfg(unix)]
struct LockedProject(TempProject);

#[cfg(unix)]
impl Drop for LockedProject {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        for dir in ["locked_dir", "blind_dir"] {
            let _ = std::fs::set_permissions(
                self.0.root.join(dir),
                std::fs::Permissions::from_mode(0o755),
            );
        }
    }
}

#[cfg(unix)]
fn permission_project() -> LockedProject {
    use std::os::unix::fs::PermissionsExt;
    let project = base_project();
    project
        .write("locked.txt", "no one may read this\n")
        .write("locked_dir/inner.txt", "hidden inside\n")
        .write("blind_dir/seen.txt", "names visible, files not\n");
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // `nobody` must be able to reach the root.
    mode(project.dir.path(), 0o755);
    mode(&project.root, 0o755);
    mode(&project.root.join("ok.txt"), 0o644);
    mode(&project.root.join("locked.txt"), 0o000);
    mode(&project.root.join("locked_dir"), 0o000);
    mode(&project.root.join("blind_dir"), 0o644);
    LockedProject(project)
}

#[cfg(unix)]
#[tokio::test]
async fn permission_denied_files_and_folders() {
    let project = permission_project();
    let Some(server) = start_unprivileged(&project.0.root).await else {
        common::cannot_run(
            "permission_denied_files_and_folders",
            "running as root and cannot start the server as uid 65534, so file modes would not apply",
        );
        return;
    };
    still_serving(&server).await;

    let message = server
        .err("read_project_file", json!({"path": "locked.txt"}))
        .await;
    assert!(message.contains("ermission denied"), "{message}");

    let listed = server
        .ok("list_project_directory", json!({"depth": 3}))
        .await;
    let paths: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for shown in ["blind_dir", "locked.txt", "locked_dir", "ok.txt"] {
        assert!(paths.contains(&shown), "{shown}: {paths:?}");
    }
    assert!(
        !paths.iter().any(|p| p.starts_with("locked_dir/")),
        "{paths:?}"
    );

    let found = server
        .ok("find_project_files", json!({"pattern": "*.txt"}))
        .await;
    let files = strings(&found["files"]);
    assert!(files.contains(&"ok.txt".to_string()), "{files:?}");
    assert!(files.contains(&"locked.txt".to_string()), "{files:?}");
    assert!(
        !files.contains(&"locked_dir/inner.txt".to_string()),
        "{files:?}"
    );

    // Whatever the wording, a file behind an unreadable folder is a tool
    // error and the server keeps going.
    server
        .err("read_project_file", json!({"path": "locked_dir/inner.txt"}))
        .await;
    server
        .err("read_project_file", json!({"path": "blind_dir/seen.txt"}))
        .await;
    still_serving(&server).await;
    server.stop().await;
}

/// The model is told the truth: the entry exists but cannot be read.
#[cfg(unix)]
#[tokio::test]
async fn a_file_behind_an_unreadable_folder_is_reported_as_unreadable() {
    let project = permission_project();
    let Some(server) = start_unprivileged(&project.0.root).await else {
        common::cannot_run(
            "a_file_behind_an_unreadable_folder_is_reported_as_unreadable",
            "running as root and cannot start the server as uid 65534",
        );
        return;
    };
    for path in ["locked_dir/inner.txt", "blind_dir/seen.txt"] {
        let message = server.err("read_project_file", json!({"path": path})).await;
        assert!(message.contains("ermission denied"), "{path}: {message}");
    }
    // Listing a folder that cannot be read is not an empty success.
    let message = server
        .err("list_project_directory", json!({"path": "locked_dir"}))
        .await;
    assert!(message.contains("ermission denied"), "{message}");
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn search_survives_unreadable_files_and_folders() {
    let project = permission_project();
    let Some(server) = start_unprivileged(&project.0.root).await else {
        common::cannot_run(
            "search_survives_unreadable_files_and_folders",
            "running as root and cannot start the server as uid 65534",
        );
        return;
    };
    let out = server
        .ok("search_project_files", json!({"query": "still here"}))
        .await;
    assert_eq!(out["count"], 1);
    let out = server
        .ok("search_project_files", json!({"query": "hidden inside"}))
        .await;
    assert_eq!(out["count"], 0);
    still_serving(&server).await;
    server.stop().await;
}

/// A file the server cannot read is listed and found with the size `stat`
/// gives, by the tree model as by the scan.
#[cfg(unix)]
#[tokio::test]
async fn unreadable_files_are_listed_with_their_size() {
    use std::os::unix::fs::PermissionsExt;
    let project = permission_project();
    // A folder the unprivileged server may write its log and config to.
    let logs = tempfile::tempdir().expect("log dir");
    std::fs::set_permissions(logs.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let log = logs.path().join("indexed.log");
    let no_index = logs.path().join("no-index.toml");
    std::fs::write(&no_index, "[index]\nenabled = false\n").unwrap();
    let indexed_args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
    let scanning_args = ["--config", no_index.to_str().unwrap()];
    let (Some(indexed), Some(scanning)) = (
        start_unprivileged_with(&project.0.root, &indexed_args).await,
        start_unprivileged_with(&project.0.root, &scanning_args).await,
    ) else {
        common::cannot_run(
            "unreadable_files_are_listed_with_their_size",
            "running as root and cannot start the server as uid 65534",
        );
        return;
    };
    common::wait_for_index(&log).await;
    let size_of = |out: &serde_json::Value, path: &str| {
        out["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["path"] == path)
            .map(|entry| entry["size"].clone())
    };
    for server in [&indexed, &scanning] {
        // Twice: the first call may still settle the fresh files' stamps.
        for _ in 0..2 {
            let listed = server.ok("list_project_directory", json!({})).await;
            assert_eq!(size_of(&listed, "locked.txt"), Some(json!(21)), "{listed}");
            assert_eq!(size_of(&listed, "ok.txt"), Some(json!(11)), "{listed}");
        }
    }
    indexed.stop().await;
    scanning.stop().await;
}
