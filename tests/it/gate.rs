//! The path gate, the deny-list and the opener, through the protocol: every
//! rejected path form through every file tool; planted secrets that must
//! never surface through search, find, list, read or get_docs; symlink
//! escapes; a sibling folder whose name starts with the root's name; a
//! folder swapped for a symlink while calls run; a docs folder that leads
//! outside the root; operator path globs under docs; paths too long to
//! look at; and the secrets added to the deny-list.

use std::path::Path;

use crate::common::{self, Server, TempProject, strings};
use serde_json::{Value, json};

/// Every planted secret carries this marker; no output may ever contain it.
const MARKER: &str = "TOPSECRET";

/// A root `<tmp>/proj` full of secrets, with a sibling `<tmp>/proj-secret`,
/// a file `<tmp>/outside.md`, and symlinks that lead out.
fn planted_project() -> TempProject {
    let project = TempProject::new();
    project
        .write("src/main.rs", "fn main() {}\n")
        .write("README.md", "# Readme\n\npublic words\n")
        .write(".env", format!("API_KEY={MARKER}-env\n"))
        .write(
            "config/.env.production",
            format!("DB={MARKER}-env-production\n"),
        )
        .write(".env.example", "API_KEY=\n")
        .write("id_rsa", format!("{MARKER}-id-rsa\n"))
        .write("keys/id_rsa.pub", format!("{MARKER}-id-rsa-pub\n"))
        .write("keys/id_ed25519", format!("{MARKER}-ed25519\n"))
        .write("x.pem", format!("{MARKER}-pem\n"))
        .write("keys/server.key", format!("{MARKER}-key\n"))
        .write(
            ".git/config",
            format!("[remote]\n url = https://{MARKER}@example.com\n"),
        )
        .write(".git/HEAD", format!("ref: {MARKER}\n"))
        .write("vendor/lib/.git/config", format!("{MARKER}-submodule\n"))
        .write("docs/public.md", "# Public\n\nNothing secret here.\n")
        .write("docs/.env.md", format!("# Env\n\n{MARKER}-docs-env\n"))
        .write("docs/id_rsa.md", format!("# Key\n\n{MARKER}-docs-key\n"));
    let outside = project.outside();
    common::write_file(
        &outside.join("proj-secret/key.txt"),
        format!("{MARKER}-sibling\n").as_bytes(),
    );
    common::write_file(
        &outside.join("outside.md"),
        format!("# Outside\n\n{MARKER}-outside\n").as_bytes(),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(outside.join("proj-secret"), project.root.join("out")).unwrap();
        symlink("/etc/passwd", project.root.join("passwd")).unwrap();
        symlink("..", project.root.join("up")).unwrap();
        symlink(".env", project.root.join("innocent.txt")).unwrap();
        symlink(
            outside.join("outside.md"),
            project.root.join("docs/escape.md"),
        )
        .unwrap();
        symlink("../.env", project.root.join("docs/envlink.md")).unwrap();
        symlink(
            outside.join("proj-secret"),
            project.root.join("docs/sibling"),
        )
        .unwrap();
    }
    project
}

/// Every path form the gate must refuse, with a fragment of the message
/// that says why.
fn rejected_forms() -> Vec<(&'static str, &'static str)> {
    let mut forms = vec![
        ("/etc/passwd", "absolute"),
        ("/", "absolute"),
        ("\\Windows\\win.ini", "absolute"),
        ("C:\\Windows\\win.ini", "drive"),
        ("C:x", "drive"),
        ("c:/x", "drive"),
        ("\\\\server\\share\\x", "absolute"),
        ("\\\\?\\C:\\x", "absolute"),
        ("//?/C:/x", "absolute"),
        ("\\\\.\\pipe\\x", "absolute"),
        ("CON", "device"),
        ("NUL", "device"),
        ("nul.txt", "device"),
        ("src/COM1", "device"),
        ("file.txt::$DATA", "':'"),
        ("src/main.rs:stream", "':'"),
        ("src.", "'.'"),
        ("a\0b", "NUL"),
        ("..", "leaves the project root"),
        ("../proj-secret/key.txt", "leaves the project root"),
        ("../../../../etc/passwd", "leaves the project root"),
        ("src/../../proj-secret", "leaves the project root"),
        ("..\\proj-secret\\key.txt", "leaves the project root"),
        ("./src/../../..", "leaves the project root"),
    ];
    if cfg!(unix) {
        forms.extend([
            ("out", "outside the project root"),
            ("out/key.txt", "outside the project root"),
            ("passwd", "outside the project root"),
            ("up", "outside the project root"),
            ("up/proj-secret/key.txt", "outside the project root"),
        ]);
    }
    forms
}

async fn assert_every_form_rejected(tool: &str, arguments: impl Fn(&str) -> Value) {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    for (path, why) in rejected_forms() {
        let message = server.err(tool, arguments(path)).await;
        assert!(
            message.contains(why),
            "{tool} path {path:?}: expected {why:?} in {message:?}"
        );
        assert!(
            !message.contains(MARKER) && !message.contains("root:x:0"),
            "{message}"
        );
        assert!(!message.contains('\n'), "one-line message: {message:?}");
    }
    // The server is still serving, with the same root.
    let out = server
        .ok("read_project_file", json!({"path": "src/main.rs"}))
        .await;
    assert_eq!(out["content"], "fn main() {}\n");
    server.stop().await;
}

#[tokio::test]
async fn read_rejects_every_path_form() {
    assert_every_form_rejected("read_project_file", |path| json!({"path": path})).await;
}

#[tokio::test]
async fn list_rejects_every_path_form() {
    assert_every_form_rejected("list_project_directory", |path| json!({"path": path})).await;
}

#[tokio::test]
async fn find_rejects_every_path_form() {
    assert_every_form_rejected(
        "find_project_files",
        |path| json!({"pattern": "*", "path": path}),
    )
    .await;
}

#[tokio::test]
async fn search_rejects_every_path_form() {
    assert_every_form_rejected(
        "search_project_files",
        |path| json!({"query": MARKER, "path": path}),
    )
    .await;
}

#[tokio::test]
async fn windows_forms_recognized_by_typed_path_are_refused() {
    use typed_path::{Utf8WindowsComponent, Utf8WindowsPath};
    let project = planted_project();
    let server = Server::start(&project.root).await;
    for input in [
        r"C:\Windows\win.ini",
        r"C:relative.txt",
        r"\\server\share\file.txt",
        r"\\?\C:\Windows",
        r"\\?\UNC\server\share",
        r"\\.\COM1",
        r"\\.\PhysicalDrive0",
        r"\rooted.txt",
    ] {
        // typed-path confirms that Windows would see a prefix or root here.
        let anchored = Utf8WindowsPath::new(input).components().any(|component| {
            matches!(
                component,
                Utf8WindowsComponent::Prefix(_) | Utf8WindowsComponent::RootDir
            )
        });
        assert!(anchored, "{input}");
        let message = server
            .err("read_project_file", json!({"path": input}))
            .await;
        assert!(message.contains("not allowed"), "{input}: {message}");
    }
    server.stop().await;
}

/// Root-relative paths of the planted secrets; none may be returned.
const SECRET_PATHS: &[&str] = &[
    ".env",
    "config/.env.production",
    "id_rsa",
    "keys/id_rsa.pub",
    "keys/id_ed25519",
    "x.pem",
    "keys/server.key",
    ".git",
    "vendor/lib/.git",
    "docs/.env.md",
    "docs/id_rsa.md",
];

fn is_secret(path: &str) -> bool {
    SECRET_PATHS
        .iter()
        .any(|secret| path == *secret || path.starts_with(&format!("{secret}/")))
}

#[tokio::test]
async fn read_refuses_every_secret_in_every_spelling() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    for path in [
        ".env",
        "./.env",
        "src/../.env",
        ".ENV",
        ".\\.env",
        "config/.env.production",
        "id_rsa",
        "keys/id_rsa.pub",
        "keys/ID_RSA.pub",
        "keys/id_ed25519",
        "x.pem",
        "keys/server.key",
        ".git/config",
        ".git/HEAD",
        ".git",
        "vendor/lib/.git/config",
        "docs/.env.md",
        "docs/id_rsa.md",
    ] {
        let message = server
            .err_saying("read_project_file", json!({"path": path}), "deny-list")
            .await;
        assert!(!message.contains(MARKER), "{message}");
    }
    #[cfg(unix)]
    for path in ["innocent.txt", "docs/envlink.md"] {
        let message = server.err("read_project_file", json!({"path": path})).await;
        assert!(
            message.contains("deny-list"),
            "a symlink to a secret: {path}: {message}"
        );
    }
    // The templates stay readable.
    let out = server
        .ok("read_project_file", json!({"path": ".env.example"}))
        .await;
    assert_eq!(out["content"], "API_KEY=\n");
    server.stop().await;
}

#[tokio::test]
async fn list_never_shows_a_secret() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    for path in [".", "keys", "config", "docs", "vendor"] {
        let out = server
            .ok("list_project_directory", json!({"path": path, "depth": 5}))
            .await;
        let paths: Vec<&str> = out["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert!(!paths.iter().any(|p| is_secret(p)), "{path}: {paths:?}");
        assert!(!out.to_string().contains(MARKER));
    }
    let out = server
        .ok("list_project_directory", json!({"depth": 5}))
        .await;
    let text = out.to_string();
    for shown in [
        "\"src/main.rs\"",
        "\".env.example\"",
        "\"keys\"",
        "\"docs/public.md\"",
    ] {
        assert!(text.contains(shown), "{shown} missing from {text}");
    }
    for path in [".git", "vendor/lib/.git"] {
        server
            .err_saying("list_project_directory", json!({"path": path}), "deny-list")
            .await;
    }
    server.stop().await;
}

#[tokio::test]
async fn find_never_returns_a_secret() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    for pattern in [
        "**/*",
        "*",
        ".env*",
        "*.pem",
        "*.key",
        "id_*",
        "**/.git/**",
        "config",
        "*.md",
        "**/.*",
    ] {
        let out = server
            .ok(
                "find_project_files",
                json!({"pattern": pattern, "max_results": 1000}),
            )
            .await;
        let files = strings(&out["files"]);
        assert!(!files.iter().any(|f| is_secret(f)), "{pattern}: {files:?}");
    }
    let out = server
        .ok("find_project_files", json!({"pattern": ".env*"}))
        .await;
    assert_eq!(strings(&out["files"]), vec![".env.example"]);
    server
        .err_saying(
            "find_project_files",
            json!({"pattern": "*", "path": ".git"}),
            "deny-list",
        )
        .await;
    server.stop().await;
}

#[tokio::test]
async fn search_never_returns_a_secret() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    for arguments in [
        json!({"query": MARKER}),
        json!({"query": MARKER.to_lowercase(), "case_sensitive": false}),
        json!({"query": ".", "regex": true, "max_results": 200}),
        json!({"query": "^", "regex": true, "output_mode": "files_with_matches", "max_results": 200}),
        json!({"query": MARKER, "glob": "*.pem"}),
        json!({"query": MARKER, "glob": ".env"}),
        json!({"query": MARKER, "path": "keys"}),
        json!({"query": MARKER, "path": "docs", "output_mode": "count"}),
    ] {
        let out = server.ok("search_project_files", arguments.clone()).await;
        // The query is echoed back; only the results must be clean.
        for field in ["matches", "files", "counts"] {
            let Some(results) = out.get(field) else {
                continue;
            };
            assert!(!results.to_string().contains(MARKER), "{arguments}: {out}");
            for item in results.as_array().unwrap() {
                let file = item.as_str().or(item["file"].as_str()).unwrap();
                assert!(!is_secret(file), "{arguments}: {file}");
            }
        }
    }
    // The public files are searched: the search itself works.
    let out = server
        .ok("search_project_files", json!({"query": "public words"}))
        .await;
    assert_eq!(out["count"], 1);
    assert_eq!(out["matches"][0]["file"], "README.md");
    server
        .err_saying(
            "search_project_files",
            json!({"query": "x", "path": ".git"}),
            "deny-list",
        )
        .await;
    server.stop().await;
}

#[tokio::test]
async fn get_docs_never_returns_a_secret_or_anything_outside_the_docs_root() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("get_docs", json!({"query": MARKER, "max_results": 50}))
        .await;
    assert_eq!(out["count"], 0, "{out}");
    let out = server
        .ok("get_docs", json!({"query": "outside", "max_results": 50}))
        .await;
    assert!(!out["results"].to_string().contains(MARKER), "{out}");
    let out = server.ok("get_docs", json!({"max_results": 50})).await;
    assert!(!out["results"].to_string().contains(MARKER), "{out}");
    let files: Vec<&str> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, vec!["public.md"]);
    server.stop().await;
}

#[tokio::test]
async fn operator_deny_globs_apply_to_every_file_tool() {
    let project = planted_project();
    project
        .write("notes.secret", format!("{MARKER}-operator\n"))
        .write("private/plan.txt", format!("{MARKER}-private\n"))
        .write(
            "other/private/ok.txt",
            "not covered: the glob is anchored at the root\n",
        );
    let config = project.outside().join("operator.toml");
    common::write_file(&config, b"[deny]\nglobs = [\"*.secret\", \"private/**\"]\n");
    let server =
        Server::start_with(&project.root, &["--config", &config.to_string_lossy()], &[]).await;
    for path in ["notes.secret", "private/plan.txt"] {
        server
            .err_saying("read_project_file", json!({"path": path}), "deny-list")
            .await;
    }
    let out = server
        .ok("read_project_file", json!({"path": "other/private/ok.txt"}))
        .await;
    assert_eq!(out["file"], "other/private/ok.txt");

    let found = server
        .ok(
            "find_project_files",
            json!({"pattern": "**/*", "max_results": 1000}),
        )
        .await;
    let files = strings(&found["files"]);
    assert!(files.contains(&"other/private/ok.txt".to_string()));
    assert!(
        !files
            .iter()
            .any(|f| f == "notes.secret" || f.starts_with("private/")),
        "{files:?}"
    );
    let listed = server
        .ok("list_project_directory", json!({"depth": 5}))
        .await;
    assert!(!listed.to_string().contains("notes.secret"));
    assert!(!listed.to_string().contains("\"private/plan.txt\""));
    server.stop().await;
}

#[tokio::test]
async fn operator_deny_globs_apply_to_search() {
    let project = planted_project();
    project
        .write("notes.secret", format!("{MARKER}-operator\n"))
        .write("private/plan.txt", format!("{MARKER}-private\n"));
    let config = project.outside().join("operator.toml");
    common::write_file(&config, b"[deny]\nglobs = [\"*.secret\", \"private/**\"]\n");
    let server =
        Server::start_with(&project.root, &["--config", &config.to_string_lossy()], &[]).await;
    let out = server
        .ok("search_project_files", json!({"query": MARKER}))
        .await;
    assert_eq!(out["count"], 0, "{out}");
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_are_reported_but_never_lead_out() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("list_project_directory", json!({"depth": 5}))
        .await;
    let entries = out["entries"].as_array().unwrap();
    for link in ["out", "passwd", "up", "innocent.txt", "docs/escape.md"] {
        let entry = entries
            .iter()
            .find(|e| e["path"] == link)
            .unwrap_or_else(|| panic!("{link} not listed"));
        assert_eq!(entry["type"], "symlink", "{link}");
    }
    for entry in entries {
        let path = entry["path"].as_str().unwrap();
        assert!(
            !path.starts_with("out/")
                && !path.starts_with("up/")
                && !path.starts_with("docs/sibling/"),
            "a symlink was followed: {path}"
        );
    }
    let found = server
        .ok(
            "find_project_files",
            json!({"pattern": "**/*", "max_results": 1000}),
        )
        .await;
    let files = strings(&found["files"]);
    assert!(
        !files
            .iter()
            .any(|f| f.contains("key.txt") || f.starts_with("up/")),
        "{files:?}"
    );
    assert!(
        server
            .ok("find_project_files", json!({"pattern": "key.txt"}))
            .await["files"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn search_does_not_follow_symlinks_out() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    for query in [
        format!("{MARKER}-sibling"),
        format!("{MARKER}-outside"),
        "root:x:0".into(),
    ] {
        let out = server
            .ok("search_project_files", json!({"query": query}))
            .await;
        assert_eq!(out["count"], 0, "{query}: {out}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_sibling_whose_name_starts_with_the_roots_is_outside() {
    let project = planted_project();
    let server = Server::start(&project.root).await;
    let sibling = project.outside().join("proj-secret/key.txt");
    let sibling_text = sibling.to_string_lossy().into_owned();
    // The sibling's absolute path starts with the root's path as a string.
    assert!(sibling_text.starts_with(&*project.root.to_string_lossy()));
    for path in [
        sibling_text.as_str(),
        "../proj-secret/key.txt",
        "../proj-secret",
        "src/../../proj-secret/key.txt",
    ] {
        let message = server.err("read_project_file", json!({"path": path})).await;
        assert!(!message.contains(MARKER), "{message}");
        let message = server
            .err("list_project_directory", json!({"path": path}))
            .await;
        assert!(!message.contains(MARKER), "{message}");
    }
    // A root spelled with a trailing separator changes nothing. (Windows:
    // `\`, since the temp root is in the verbatim `\\?\` form, where `/`
    // is part of a name, not a separator.)
    let spelled = format!(
        "{}{}",
        project.root.to_string_lossy(),
        std::path::MAIN_SEPARATOR
    );
    let server2 = Server::start(Path::new(&spelled)).await;
    server2
        .err(
            "read_project_file",
            json!({"path": "../proj-secret/key.txt"}),
        )
        .await;
    let out = server2
        .ok("read_project_file", json!({"path": "src/main.rs"}))
        .await;
    assert_eq!(out["file"], "src/main.rs");
    server2.stop().await;
    server.stop().await;
}

/// Random path spellings built from dangerous pieces: whatever the server
/// accepts is a real file inside the root and never a secret.
#[test]
fn random_paths_never_escape_or_reveal_a_secret() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let project = planted_project();
    let server = runtime.block_on(Server::start(&project.root));

    // Harmless detours weigh more, so that many spellings still resolve.
    let component = prop_oneof![
        3 => Just("."),
        3 => Just(""),
        3 => Just("src/.."),
        3 => Just("keys/.."),
        3 => Just("up/proj"),
        3 => Just("out/.."),
        2 => Just(".."),
        1 => Just("up"),
        1 => Just("out"),
        1 => Just(".env"),
        1 => Just(".ENV"),
        1 => Just(".git"),
        1 => Just("proj"),
        1 => Just("proj-secret"),
        1 => Just("passwd"),
        1 => Just("innocent.txt"),
        1 => Just("C:"),
        1 => Just("CON"),
        1 => Just("x.pem"),
    ];
    // A prefix of dangerous pieces, then a real file (public or secret), so
    // that a good share of the spellings resolve to something.
    let target = prop_oneof![
        Just("src/main.rs"),
        Just("README.md"),
        Just(".env.example"),
        Just("docs/public.md"),
        Just(".env"),
        Just("x.pem"),
        Just("keys/server.key"),
        Just(".git/config"),
        Just("proj-secret/key.txt"),
        Just("proj/src/main.rs"),
        Just("etc/passwd"),
    ];
    let path = (
        prop_oneof![Just(""), Just("/"), Just("\\"), Just("\\\\"), Just("./")],
        prop::collection::vec(component, 0..5),
        target,
        prop_oneof![Just("/"), Just("\\")],
    )
        .prop_map(|(lead, parts, target, separator)| {
            let mut pieces = parts;
            pieces.extend(target.split('/'));
            format!("{lead}{}", pieces.join(separator))
        });

    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 300,
            failure_persistence: None,
            ..Config::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    runner
        .run(&path, |input| {
            let result = runtime.block_on(server.call("read_project_file", json!({"path": input})));
            let text = common::text_of(&result);
            prop_assert!(
                !text.contains(MARKER),
                "{input:?} revealed a secret: {text}"
            );
            prop_assert!(!text.contains("root:x:0"), "{input:?} revealed /etc/passwd");
            if result.is_error != Some(true) {
                let out = result.structured_content.expect("structuredContent");
                let file = out["file"].as_str().unwrap();
                prop_assert!(!file.split('/').any(|part| part == ".."), "{file}");
                prop_assert!(!is_secret(file), "{file}");
                let real = std::fs::canonicalize(project.root.join(file)).unwrap();
                prop_assert!(
                    real.starts_with(&project.root),
                    "{input:?} → {}",
                    real.display()
                );
            }
            Ok(())
        })
        .unwrap();
    runtime.block_on(server.stop());
}

/// Every outside or secret file the hostile tests plant carries this
/// marker; no answer may ever contain it.
const LEAK_MARKER: &str = "GATELEAK";

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
        (
            "inside.md",
            format!("# {LEAK_MARKER}\n\n{LEAK_MARKER} words\n"),
        ),
        (
            "sub/deeper.md",
            format!("# {LEAK_MARKER}\n\n{LEAK_MARKER} words\n"),
        ),
        (
            &format!("{LEAK_MARKER}-name.md"),
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
            if text.contains(LEAK_MARKER) {
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
        format!("# Notes\n\n{LEAK_MARKER}\n").as_bytes(),
    );
    std::os::unix::fs::symlink(&outside, project.root.join("docs")).unwrap();
    let server = Server::start(&project.root).await;
    for arguments in [json!({}), json!({"query": LEAK_MARKER})] {
        let message = server.err("get_docs", arguments).await;
        assert!(
            message.contains("outside the project root") && message.contains("refused"),
            "{message}"
        );
        assert!(!message.contains(LEAK_MARKER), "{message}");
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
        format!("# Env\n\nwidgets {LEAK_MARKER}\n").as_bytes(),
    );
    // Beside the named folder, reachable only through links inside it.
    let beside = project.outside().join("private");
    common::write_file(
        &beside.join("plan.md"),
        format!("# Plan\n\nwidgets {LEAK_MARKER}\n").as_bytes(),
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
    assert!(!found.to_string().contains(LEAK_MARKER) && !listed.to_string().contains(LEAK_MARKER));
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
            format!("# Plan\n\nshared words {LEAK_MARKER}\n"),
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
    assert!(!listed.to_string().contains(LEAK_MARKER), "{listed}");
    assert!(!listed.to_string().contains("internal"), "{listed}");
    // The file tools agree.
    server
        .err_saying(
            "read_project_file",
            json!({"path": "docs/internal/plan.md"}),
            "deny-list",
        )
        .await;
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
        project.write(secret, format!("token={LEAK_MARKER}\n"));
    }
    let server = Server::start(&project.root).await;
    for secret in secrets {
        server
            .err_saying("read_project_file", json!({"path": secret}), "deny-list")
            .await;
    }
    let searched = server
        .ok("search_project_files", json!({"query": LEAK_MARKER}))
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
