//! list_project_directory and find_project_files through the real binary:
//! entries, depth and count clamps, glob semantics, and the shared ignore
//! rules (skip list, .gitignore/.ignore, deny-list).

use crate::common::{Server, TempProject, strings};
use serde_json::{Value, json};

fn sample_project() -> TempProject {
    let project = TempProject::new();
    project
        .write("README.md", "# demo\n")
        .write("src/main.rs", "fn main() {}\n")
        .write("src/lib.rs", "pub fn x() {}\n")
        .write("src/a.ts", "a")
        .write("src/b.tsx", "b")
        .write("src/deep/c.ts", "c")
        .write("src/deep/deeper/d.ts", "d")
        .write("app/models.py", "class A: pass\n")
        .write("app/services.py", "def f(): pass\n")
        .write("tests/test_services.py", "def test(): pass\n")
        .write("setup.py", "")
        .write(".github/workflows/ci.yml", "on: push\n")
        .write(".env.example", "KEY=\n")
        .write(".env", "KEY=secret\n")
        .write("certs/server.pem", "pem")
        .write("node_modules/pkg/index.js", "x")
        .write("target/debug/app.rs", "x")
        .write(".venv/lib/site.py", "x")
        .write("app/__pycache__/models.cpython-312.pyc", "x")
        .write("pkg.egg-info/PKG-INFO", "x")
        .write("build/out.txt", "x")
        .write("src/gen/generated.rs", "x")
        .write("scratch/todo.txt", "x")
        .write(".gitignore", "build/\n")
        .write("src/.gitignore", "gen/\n")
        .write(".ignore", "scratch/\n");
    project
}

fn entry_paths(out: &Value) -> Vec<String> {
    out["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect()
}

fn entry<'a>(out: &'a Value, path: &str) -> &'a Value {
    out["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path)
        .unwrap_or_else(|| panic!("no entry {path} in {out}"))
}

#[tokio::test]
async fn list_defaults_to_the_roots_direct_children_sorted() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server.ok("list_project_directory", json!({})).await;
    assert_eq!(out["path"], ".");
    assert_eq!(
        entry_paths(&out),
        vec![
            ".env.example",
            ".github",
            ".gitignore",
            ".ignore",
            "README.md",
            "app",
            "certs",
            "setup.py",
            "src",
            "tests"
        ]
    );
    assert_eq!(out["count"], 10);
    assert_eq!(out["truncated"], false);

    let readme = entry(&out, "README.md");
    assert_eq!(readme["name"], "README.md");
    assert_eq!(readme["type"], "file");
    assert_eq!(readme["size"], 7);
    let src = entry(&out, "src");
    assert_eq!(src["type"], "dir");
    assert!(src.get("size").is_none(), "folders carry no size: {src}");
    server.stop().await;
}

#[tokio::test]
async fn list_a_subfolder_with_depth() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("list_project_directory", json!({"path": "src", "depth": 2}))
        .await;
    assert_eq!(out["path"], "src");
    // src/gen is hidden by src/.gitignore; depth 2 stops above deeper/d.ts.
    assert_eq!(
        entry_paths(&out),
        vec![
            "src/.gitignore",
            "src/a.ts",
            "src/b.tsx",
            "src/deep",
            "src/deep/c.ts",
            "src/deep/deeper",
            "src/lib.rs",
            "src/main.rs"
        ]
    );
    let c = entry(&out, "src/deep/c.ts");
    assert_eq!(c["name"], "c.ts");
    assert_eq!(c["size"], 1);

    let out = server
        .ok(
            "list_project_directory",
            json!({"path": "./src/deep/", "depth": 1}),
        )
        .await;
    assert_eq!(out["path"], "src/deep");
    assert_eq!(entry_paths(&out), vec!["src/deep/c.ts", "src/deep/deeper"]);
    server.stop().await;
}

#[tokio::test]
async fn list_depth_is_clamped_to_1_through_5() {
    let project = TempProject::new();
    project.write("l1/l2/l3/l4/l5/l6/l7/file.txt", "x");
    let server = Server::start(&project.root).await;

    let zero = server
        .ok("list_project_directory", json!({"depth": 0}))
        .await;
    assert_eq!(entry_paths(&zero), vec!["l1"]);

    let five = server
        .ok("list_project_directory", json!({"depth": 5}))
        .await;
    assert_eq!(
        entry_paths(&five),
        vec!["l1", "l1/l2", "l1/l2/l3", "l1/l2/l3/l4", "l1/l2/l3/l4/l5"]
    );
    let huge = server
        .ok("list_project_directory", json!({"depth": 1000}))
        .await;
    assert_eq!(entry_paths(&huge), entry_paths(&five));
    server.stop().await;
}

#[tokio::test]
async fn list_max_entries_truncates_and_is_clamped_to_1_through_2000() {
    let project = TempProject::new();
    for i in 0..2100 {
        project.write(&format!("many/f{i:04}.txt"), "x");
    }
    let server = Server::start(&project.root).await;

    let out = server
        .ok(
            "list_project_directory",
            json!({"path": "many", "max_entries": 3}),
        )
        .await;
    assert_eq!(
        entry_paths(&out),
        vec!["many/f0000.txt", "many/f0001.txt", "many/f0002.txt"]
    );
    assert_eq!(out["count"], 3);
    assert_eq!(out["truncated"], true);

    let out = server
        .ok(
            "list_project_directory",
            json!({"path": "many", "max_entries": 0}),
        )
        .await;
    assert_eq!(out["count"], 1);
    assert_eq!(out["truncated"], true);

    let out = server
        .ok("list_project_directory", json!({"path": "many"}))
        .await;
    assert_eq!(out["count"], 500, "default max_entries");
    assert_eq!(out["truncated"], true);

    let out = server
        .ok(
            "list_project_directory",
            json!({"path": "many", "max_entries": 100000}),
        )
        .await;
    assert_eq!(out["count"], 2000);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["entries"][1999]["path"], "many/f1999.txt");

    let out = server
        .ok(
            "list_project_directory",
            json!({"path": "many", "max_entries": 2100}),
        )
        .await;
    assert_eq!(out["count"], 2000);

    let project_small = TempProject::new();
    project_small.write("a.txt", "x").write("b.txt", "x");
    let small = Server::start(&project_small.root).await;
    let out = small
        .ok("list_project_directory", json!({"max_entries": 2}))
        .await;
    assert_eq!(out["count"], 2);
    assert_eq!(
        out["truncated"], false,
        "exactly max_entries is not truncated"
    );
    small.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn list_applies_the_skip_list_ignore_files_and_deny_list() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("list_project_directory", json!({"depth": 5}))
        .await;
    let paths = entry_paths(&out);
    for hidden in [
        ".env",
        "certs/server.pem",
        "node_modules",
        "target",
        ".venv",
        "app/__pycache__",
        "pkg.egg-info",
        "build",
        "src/gen",
        "scratch",
    ] {
        assert!(
            !paths
                .iter()
                .any(|p| p == hidden || p.starts_with(&format!("{hidden}/"))),
            "{hidden} must not be listed: {paths:?}"
        );
    }
    for shown in [
        ".github/workflows/ci.yml",
        ".env.example",
        "certs",
        "app/models.py",
    ] {
        assert!(
            paths.iter().any(|p| p == shown),
            "{shown} must be listed: {paths:?}"
        );
    }
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn list_reports_symlinks_and_special_files_without_following() {
    let project = sample_project();
    std::os::unix::fs::symlink(project.root.join("src"), project.root.join("src-link")).unwrap();
    std::os::unix::fs::symlink("README.md", project.root.join("readme-link")).unwrap();
    let fifo = project.root.join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let server = Server::start(&project.root).await;

    let out = server
        .ok("list_project_directory", json!({"depth": 3}))
        .await;
    let link = entry(&out, "src-link");
    assert_eq!(link["type"], "symlink");
    assert!(link.get("size").is_none());
    assert_eq!(entry(&out, "readme-link")["type"], "symlink");
    assert_eq!(entry(&out, "pipe")["type"], "other");
    assert!(
        !entry_paths(&out).iter().any(|p| p.starts_with("src-link/")),
        "a symlinked folder is not descended into"
    );

    // Naming a symlinked folder inside the root explicitly is allowed.
    let out = server
        .ok("list_project_directory", json!({"path": "src-link/deep"}))
        .await;
    assert_eq!(out["path"], "src-link/deep");
    assert_eq!(out["count"], 2);
    server.stop().await;
}

#[tokio::test]
async fn list_refuses_files_and_missing_folders() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let message = server
        .err("list_project_directory", json!({"path": "README.md"}))
        .await;
    assert!(message.contains("not a directory"), "{message}");
    let message = server
        .err("list_project_directory", json!({"path": "nope"}))
        .await;
    assert!(message.contains("does not exist"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn list_an_explicitly_named_ignored_folder() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("list_project_directory", json!({"path": "build"}))
        .await;
    assert_eq!(entry_paths(&out), vec!["build/out.txt"]);
    server.stop().await;
}

async fn find(server: &Server, arguments: Value) -> Vec<String> {
    let out = server.ok("find_project_files", arguments).await;
    let files = strings(&out["files"]);
    assert_eq!(out["count"], files.len());
    files
}

#[tokio::test]
async fn find_glob_semantics_follow_the_spec() {
    let project = sample_project();
    let server = Server::start(&project.root).await;

    assert_eq!(
        find(&server, json!({"pattern": "**/*.py"})).await,
        vec![
            "app/models.py",
            "app/services.py",
            "setup.py",
            "tests/test_services.py"
        ]
    );
    // Without '/': the file name at any depth.
    assert_eq!(
        find(&server, json!({"pattern": "*.py"})).await,
        vec![
            "app/models.py",
            "app/services.py",
            "setup.py",
            "tests/test_services.py"
        ]
    );
    // With '/': '*' does not cross '/', '**' does.
    assert_eq!(
        find(&server, json!({"pattern": "src/*.ts"})).await,
        vec!["src/a.ts"]
    );
    assert_eq!(
        find(&server, json!({"pattern": "src/**/*.ts"})).await,
        vec!["src/a.ts", "src/deep/c.ts", "src/deep/deeper/d.ts"]
    );
    assert_eq!(
        find(&server, json!({"pattern": "src/*.{ts,tsx}"})).await,
        vec!["src/a.ts", "src/b.tsx"]
    );
    assert_eq!(
        find(&server, json!({"pattern": "test_?ervices.py"})).await,
        vec!["tests/test_services.py"]
    );
    assert_eq!(
        find(&server, json!({"pattern": "./src/*.rs"})).await,
        vec!["src/lib.rs", "src/main.rs"]
    );
    assert!(
        find(&server, json!({"pattern": "*.nothing"}))
            .await
            .is_empty()
    );
    server.stop().await;
}

#[tokio::test]
async fn find_patterns_are_relative_to_path_and_results_to_the_root() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "find_project_files",
            json!({"pattern": "deep/*.ts", "path": "src"}),
        )
        .await;
    assert_eq!(out["pattern"], "deep/*.ts");
    assert_eq!(out["path"], "src");
    assert_eq!(strings(&out["files"]), vec!["src/deep/c.ts"]);
    assert_eq!(
        find(&server, json!({"pattern": "*.ts", "path": "src/deep"})).await,
        vec!["src/deep/c.ts", "src/deep/deeper/d.ts"]
    );
    let message = server
        .err(
            "find_project_files",
            json!({"pattern": "*", "path": "README.md"}),
        )
        .await;
    assert!(message.contains("not a directory"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn find_returns_files_only_and_applies_the_same_ignore_rules() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let all = find(&server, json!({"pattern": "**/*"})).await;
    assert_eq!(
        all,
        vec![
            ".env.example",
            ".github/workflows/ci.yml",
            ".gitignore",
            ".ignore",
            "README.md",
            "app/models.py",
            "app/services.py",
            "setup.py",
            "src/.gitignore",
            "src/a.ts",
            "src/b.tsx",
            "src/deep/c.ts",
            "src/deep/deeper/d.ts",
            "src/lib.rs",
            "src/main.rs",
            "tests/test_services.py"
        ]
    );
    assert_eq!(find(&server, json!({"pattern": "*"})).await, all);
    assert_eq!(
        find(&server, json!({"pattern": "*.yml"})).await,
        vec![".github/workflows/ci.yml"],
        "hidden folders are searched like any other"
    );
    server.stop().await;
}

// Not under Windows' test run: Wine answers each file open and canonical
// path with a round trip to wineserver, so a call over thousands of entries
// outlasts the client's 60 s timeout on a loaded 2-core machine. The
// behaviour is platform-independent; the small-tree tests run on Windows.
#[cfg(not(windows))]
#[tokio::test]
async fn find_max_results_truncates_and_is_clamped_to_1_through_1000() {
    let project = TempProject::new();
    for i in 0..1100 {
        project.write(&format!("gen/m{i:04}.rs"), "x");
    }
    let server = Server::start(&project.root).await;

    let out = server
        .ok("find_project_files", json!({"pattern": "*.rs"}))
        .await;
    assert_eq!(out["count"], 200, "default max_results");
    assert_eq!(out["truncated"], true);
    assert_eq!(out["files"][0], "gen/m0000.rs");
    assert_eq!(out["files"][199], "gen/m0199.rs");

    let out = server
        .ok(
            "find_project_files",
            json!({"pattern": "*.rs", "max_results": 5000}),
        )
        .await;
    assert_eq!(out["count"], 1000);
    assert_eq!(out["truncated"], true);

    let out = server
        .ok(
            "find_project_files",
            json!({"pattern": "*.rs", "max_results": 0}),
        )
        .await;
    assert_eq!(strings(&out["files"]), vec!["gen/m0000.rs"]);
    assert_eq!(out["truncated"], true);

    let out = server
        .ok(
            "find_project_files",
            json!({"pattern": "m10*.rs", "max_results": 100}),
        )
        .await;
    assert_eq!(out["count"], 100);
    assert_eq!(
        out["truncated"], false,
        "exactly max_results is not truncated"
    );
    server.stop().await;
}

#[tokio::test]
async fn find_bad_globs_are_tool_errors_that_explain() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let message = server
        .err("find_project_files", json!({"pattern": "src/[a"}))
        .await;
    assert!(message.contains("invalid glob"), "{message}");
    let message = server
        .err("find_project_files", json!({"pattern": "  "}))
        .await;
    assert!(message.contains("empty"), "{message}");
    let message = server
        .err(
            "find_project_files",
            json!({"pattern": "*.rs", "path": "nope"}),
        )
        .await;
    assert!(message.contains("does not exist"), "{message}");
    server.stop().await;
}
