//! Hostile input against the gate, the opener and get_docs, through the real
//! binary over stdio: a folder swapped for a symlink while calls run, a docs
//! folder that leads outside the root, operator path globs under docs,
//! paths too long to look at, and the secrets added to the deny-list.

use std::path::Path;

use crate::common::{self, Server, TempProject, strings};
#[cfg(unix)]
use serde_json::Value;
use serde_json::json;

/// Every planted outside or secret file carries this marker; no answer may
/// ever contain it.
const MARKER: &str = "GATELEAK";

#[cfg(unix)]
fn tool_answer_text(result: &rmcp::model::CallToolResult) -> String {
    let structured = result
        .structured_content
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    format!("{structured}\n{}", common::text_of(result))
}

/// A project whose `docs/area` folder will be swapped for a symlink to an
/// outside folder holding the same names (and one more) with the marker.
#[cfg(unix)]
fn swap_project() -> (TempProject, std::path::PathBuf) {
    let project = TempProject::new();
    project
        .write("docs/area/inside.md", "# Inside\n\nplain words\n")
        .write("docs/area/sub/deeper.md", "# Deeper\n\nplain words\n")
        .write("docs/index.md", "# Index\n\nplain words\n");
    let outside = project.outside().join("elsewhere");
    for (name, text) in [
        ("inside.md", format!("# {MARKER}\n\n{MARKER} words\n")),
        ("sub/deeper.md", format!("# {MARKER}\n\n{MARKER} words\n")),
        (
            &format!("{MARKER}-name.md"),
            "# Name\n\nplain words\n".into(),
        ),
    ] {
        common::write_file(&outside.join(name), text.as_bytes());
    }
    (project, outside)
}

/// Swaps `folder` for a symlink to `target` and back, again and again,
/// until `stop` is set; returns how many swaps it made.
#[cfg(unix)]
fn keep_swapping(
    folder: std::path::PathBuf,
    target: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let parked = folder.with_extension("parked");
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            std::fs::rename(&folder, &parked).expect("park the folder");
            std::os::unix::fs::symlink(&target, &folder).expect("link outside");
            std::thread::yield_now();
            std::fs::remove_file(&folder).expect("remove the link");
            std::fs::rename(&parked, &folder).expect("restore the folder");
            std::thread::yield_now();
            swaps += 1;
        }
        swaps
    })
}

/// The review saw 14 leaking answers in 8 s of this race: outside names
/// through list/find, outside content through read/search/get_docs.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_an_outside_symlink_never_leaks() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (project, outside) = swap_project();
    let server = Server::start(&project.root).await;
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = keep_swapping(project.root.join("docs/area"), outside, stop.clone());

    let calls = [
        ("read_project_file", json!({"path": "docs/area/inside.md"})),
        (
            "read_project_file",
            json!({"path": "docs/area/sub/deeper.md"}),
        ),
        (
            "search_project_files",
            json!({"query": "words", "max_results": 200}),
        ),
        (
            "search_project_files",
            json!({"query": "words", "path": "docs/area"}),
        ),
        ("list_project_directory", json!({"depth": 5})),
        ("list_project_directory", json!({"path": "docs/area"})),
        ("find_project_files", json!({"pattern": "**/*"})),
        ("get_docs", json!({"query": "words", "max_results": 50})),
        ("get_docs", json!({})),
    ];
    let mut leaks = Vec::new();
    let mut inside_reads = 0;
    // Bounded: a fixed number of rounds (about 1,800 calls).
    for _ in 0..200 {
        for (tool, arguments) in &calls {
            let result = server.call(tool, arguments.clone()).await;
            let text = tool_answer_text(&result);
            if text.contains(MARKER) {
                leaks.push(format!("{tool}({arguments}): {text}"));
            }
            if *tool == "read_project_file" && text.contains("plain words") {
                inside_reads += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    server.stop().await;
    assert!(swaps > 0, "the folder was never swapped");
    assert!(
        inside_reads > 0,
        "no read ever succeeded, so nothing was shown"
    );
    assert!(
        leaks.is_empty(),
        "{} answers leaked outside names or content, e.g. {}",
        leaks.len(),
        leaks[0]
    );
}

#[cfg(unix)]
#[tokio::test]
async fn get_docs_refuses_a_docs_folder_that_is_a_symlink_out_of_the_root() {
    let project = TempProject::new();
    project.write("README.md", "# Readme\n");
    let outside = project.outside().join("elsewhere");
    common::write_file(
        &outside.join("notes.md"),
        format!("# Notes\n\n{MARKER}\n").as_bytes(),
    );
    std::os::unix::fs::symlink(&outside, project.root.join("docs")).unwrap();
    let server = Server::start(&project.root).await;
    for arguments in [json!({}), json!({"query": MARKER})] {
        let message = server.err("get_docs", arguments).await;
        assert!(
            message.contains("outside the project root") && message.contains("refused"),
            "{message}"
        );
        assert!(!message.contains(MARKER), "{message}");
    }
    // The file tools refuse the same folder, as before.
    let message = server
        .err("read_project_file", json!({"path": "docs/notes.md"}))
        .await;
    assert!(message.contains("outside the project root"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn a_docs_flag_outside_the_root_is_served_and_nothing_leaves_that_folder() {
    let project = TempProject::new();
    project.write("README.md", "# Readme\n");
    let handbook = project.outside().join("handbook");
    common::write_file(&handbook.join("ops.md"), b"# Ops\n\nrotate the widgets\n");
    common::write_file(
        &handbook.join(".env.md"),
        format!("# Env\n\nwidgets {MARKER}\n").as_bytes(),
    );
    // Beside the named folder, reachable only through links inside it.
    let beside = project.outside().join("private");
    common::write_file(
        &beside.join("plan.md"),
        format!("# Plan\n\nwidgets {MARKER}\n").as_bytes(),
    );
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&beside, handbook.join("linked")).unwrap();
        std::os::unix::fs::symlink(beside.join("plan.md"), handbook.join("plan.md")).unwrap();
    }
    let docs = handbook.to_string_lossy().into_owned();
    let server = Server::start_with(&project.root, &["--docs", &docs], &[]).await;
    let found = server.ok("get_docs", json!({"query": "widgets"})).await;
    assert_eq!(found["results"][0]["file"], "ops.md", "{found}");
    assert_eq!(found["count"], 1, "{found}");
    assert!(found["results"][0].get("path").is_none(), "{found}");
    let listed = server.ok("get_docs", json!({})).await;
    assert_eq!(listed["count"], 1, "{listed}");
    assert!(!found.to_string().contains(MARKER) && !listed.to_string().contains(MARKER));
    // The project's own tools still see only the project.
    server
        .err("read_project_file", json!({"path": "../handbook/ops.md"}))
        .await;
    server.stop().await;
}

#[tokio::test]
async fn operator_path_globs_apply_to_get_docs_relative_to_the_root() {
    let project = TempProject::new();
    project
        .write("docs/public.md", "# Public\n\nshared words\n")
        .write(
            "docs/internal/plan.md",
            format!("# Plan\n\nshared words {MARKER}\n"),
        )
        .write("deny.toml", "[deny]\nglobs = [\"docs/internal/**\"]\n");
    let config = project
        .root
        .join("deny.toml")
        .to_string_lossy()
        .into_owned();
    let server = Server::start_with(&project.root, &["--config", &config], &[]).await;
    let found = server.ok("get_docs", json!({"query": "shared"})).await;
    assert_eq!(found["count"], 1, "{found}");
    assert_eq!(found["results"][0]["file"], "public.md");
    let listed = server.ok("get_docs", json!({})).await;
    assert!(!listed.to_string().contains(MARKER), "{listed}");
    assert!(!listed.to_string().contains("internal"), "{listed}");
    // The file tools agree.
    let message = server
        .err(
            "read_project_file",
            json!({"path": "docs/internal/plan.md"}),
        )
        .await;
    assert!(message.contains("deny-list"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn paths_too_long_to_look_at_are_refused_naming_the_limit() {
    let project = TempProject::new();
    project.write("ok.txt", "still here\n");
    let server = Server::start(&project.root).await;
    let long = "a/".repeat(50_000); // 100 KB
    let deep = "a/".repeat(300); // 600 bytes, 300 names
    let checks = [
        (long.as_str(), "4096 bytes"),
        (deep.as_str(), "256 components"),
    ];
    for (path, limit) in checks {
        for (tool, arguments) in [
            ("read_project_file", json!({"path": path})),
            ("list_project_directory", json!({"path": path})),
            ("find_project_files", json!({"pattern": "*", "path": path})),
            ("search_project_files", json!({"query": "x", "path": path})),
        ] {
            let message = server.err(tool, arguments).await;
            assert!(message.contains(limit), "{tool}: {message}");
            assert!(message.len() < 1_000, "{tool}: {} bytes", message.len());
        }
    }
    // An error that echoes a path shows a bounded part of it.
    let missing = format!("{}missing.txt", format!("{}/", "b".repeat(250)).repeat(12));
    let message = server
        .err("read_project_file", json!({"path": missing}))
        .await;
    assert!(message.contains("does not exist"), "{message}");
    assert!(message.len() < 1_000, "{} bytes", message.len());
    let out = server
        .ok("read_project_file", json!({"path": "ok.txt"}))
        .await;
    assert_eq!(out["content"], "still here\n");
    server.stop().await;
}

#[tokio::test]
async fn secrets_added_to_the_deny_list_are_never_served() {
    let secrets = [
        ".envrc",
        "certs/client.p12",
        "certs/client.pfx",
        "keys/id_dsa",
        "keys/id_ecdsa.pub",
        ".netrc",
        "pkg/.pypirc",
        "web/.npmrc",
    ];
    let project = TempProject::new();
    project.write("README.md", "# Readme\n");
    for secret in secrets {
        project.write(secret, format!("token={MARKER}\n"));
    }
    let server = Server::start(&project.root).await;
    for secret in secrets {
        let message = server
            .err("read_project_file", json!({"path": secret}))
            .await;
        assert!(message.contains("deny-list"), "{secret}: {message}");
    }
    let searched = server
        .ok("search_project_files", json!({"query": MARKER}))
        .await;
    assert_eq!(searched["count"], 0, "{searched}");
    let found = server
        .ok("find_project_files", json!({"pattern": "**/*"}))
        .await;
    let names = strings(&found["files"]);
    let listed = server
        .ok("list_project_directory", json!({"depth": 3}))
        .await;
    for secret in secrets {
        let name = Path::new(secret).file_name().unwrap().to_string_lossy();
        assert!(
            !names.iter().any(|n| n.ends_with(name.as_ref())),
            "{names:?}"
        );
        assert!(!listed.to_string().contains(name.as_ref()), "{listed}");
    }
    server.stop().await;
}
