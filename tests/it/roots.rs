//! Root resolution through MCP roots: with no --root and no environment,
//! the client's first root becomes the project, and a roots change moves it.
#![allow(deprecated)] // roots are deprecated in 2026-07-28; 2025 clients use them

use crate::common;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ListRootsResult, Root,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

#[derive(Clone)]
struct RootsClient {
    roots: Arc<Mutex<Vec<String>>>,
    tool_list_changes: Arc<Mutex<u32>>,
}

impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build(),
            Implementation::new("roots-test", "1"),
        )
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = self.roots.lock().unwrap().clone();
        Ok(ListRootsResult::new(
            roots.into_iter().map(Root::new).collect(),
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.tool_list_changes.lock().unwrap() += 1;
    }
}

fn file_uri(path: &std::path::Path) -> String {
    format!("file://{}", path.display()).replace(' ', "%20")
}

async fn find_names(
    client: &rmcp::service::RunningService<RoleClient, RootsClient>,
) -> Vec<String> {
    let Value::Object(arguments) = json!({"pattern": "*.txt"}) else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("find_project_files").with_arguments(arguments))
        .await
        .expect("call");
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    let files = result.structured_content.expect("structured")["files"].clone();
    serde_json::from_value(files).expect("file list")
}

#[tokio::test]
async fn the_clients_first_root_becomes_the_project_and_follows_changes() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(first.path().join("with space")).unwrap();
    std::fs::write(first.path().join("with space/first.txt"), "1").unwrap();
    std::fs::write(second.path().join("second.txt"), "2").unwrap();
    std::fs::write(elsewhere.path().join("cwd.txt"), "cwd").unwrap();

    let handler = RootsClient {
        roots: Arc::new(Mutex::new(vec![
            "https://example.invalid/not-a-file-root".to_string(),
            file_uri(&first.path().join("with space")),
        ])),
        tool_list_changes: Arc::new(Mutex::new(0)),
    };
    let mut command = common::server_command(None, &[]);
    command.current_dir(elsewhere.path());
    let client = common::connect(handler.clone(), command)
        .await
        .expect("server starts");

    // The first call already waits for the roots answer.
    assert_eq!(find_names(&client).await, vec!["first.txt"]);

    *handler.roots.lock().unwrap() = vec![file_uri(second.path())];
    client.notify_roots_list_changed().await.unwrap();
    let mut names = Vec::new();
    for _ in 0..100 {
        names = find_names(&client).await;
        if names == ["second.txt"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(names, vec!["second.txt"]);
    assert!(*handler.tool_list_changes.lock().unwrap() >= 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_configured_root_ignores_the_clients_roots() {
    let client_root = tempfile::tempdir().unwrap();
    std::fs::write(client_root.path().join("client.txt"), "x").unwrap();
    let handler = RootsClient {
        roots: Arc::new(Mutex::new(vec![file_uri(client_root.path())])),
        tool_list_changes: Arc::new(Mutex::new(0)),
    };
    let command = common::server_command(Some(&common::demo_root()), &[]);
    let client = common::connect(handler, command)
        .await
        .expect("server starts");
    assert!(
        find_names(&client).await.is_empty(),
        "demo_project has no .txt files"
    );
    client.cancel().await.unwrap();
}

/// The server started in `dir` with no root named, with `home` as the
/// user's home folder and its log in `log`.
fn unnamed_server(
    dir: &std::path::Path,
    home: &std::path::Path,
    log: &std::path::Path,
) -> tokio::process::Command {
    let log = log.to_string_lossy().into_owned();
    let mut command = common::server_command(None, &["--log-file", &log]);
    command
        .current_dir(dir)
        .env("HOME", home)
        .env("USERPROFILE", home)
        .env("XDG_CACHE_HOME", home.join(".cache"));
    command
}

fn raw_initialize(capabilities: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": "no-roots", "version": "1"}}
    })
}

#[tokio::test]
async fn started_in_the_filesystem_root_or_home_with_nothing_named_it_refuses_saying_how() {
    let home = tempfile::tempdir().unwrap();
    let home = dunce::canonicalize(home.path()).unwrap();
    std::fs::write(home.join("private.txt"), "mine").unwrap();
    let filesystem_root = if cfg!(windows) { "C:\\" } else { "/" };
    for (dir, what) in [
        (
            std::path::PathBuf::from(filesystem_root),
            "a file system's root",
        ),
        (home.clone(), "your home folder"),
    ] {
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().join("server.log");
        let mut server = common::RawServer::spawn(unnamed_server(&dir, &home, &log));
        server.send(&raw_initialize(json!({}))).await;
        let answer = server.recv_id(&json!(0)).await;
        let message = answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for needed in [
            what,
            "--root",
            "MCP_PROJECT_HELPER_ROOT",
            "Zed",
            "config <host>",
        ] {
            assert!(message.contains(needed), "{needed:?} missing from {answer}");
        }
        let (rest, code) = server.finish().await;
        assert_eq!(code, Some(2), "{}: {rest}", dir.display());
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(logged.contains("no project to serve"), "{logged}");
    }
}

#[tokio::test]
async fn started_in_the_filesystem_root_the_clients_root_is_served() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("named.txt"), "x").unwrap();
    let handler = RootsClient {
        roots: Arc::new(Mutex::new(vec![file_uri(project.path())])),
        tool_list_changes: Arc::new(Mutex::new(0)),
    };
    let log = home.path().join("server.log");
    let command = unnamed_server(std::path::Path::new("/"), home.path(), &log);
    let client = common::connect(handler, command)
        .await
        .expect("server starts");
    assert_eq!(find_names(&client).await, vec!["named.txt"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn started_in_the_home_folder_a_client_without_a_file_root_ends_the_session() {
    let home = tempfile::tempdir().unwrap();
    let home = dunce::canonicalize(home.path()).unwrap();
    let log = home.join("server.log");
    let mut server = common::RawServer::spawn(unnamed_server(&home, &home, &log));
    server.send(&raw_initialize(json!({"roots": {}}))).await;
    let answer = server.recv_id(&json!(0)).await;
    assert!(answer.get("result").is_some(), "{answer}");
    server
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let request = server.recv().await;
    assert_eq!(request["method"], "roots/list", "{request}");
    server
        .send(
            &json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": [
                {"uri": "https://example.invalid/not-a-folder"}
            ]}}),
        )
        .await;
    // The server ends the session by itself: stdout closes before stdin.
    let status = tokio::time::timeout(Duration::from_secs(20), server.child.wait())
        .await
        .expect("the server ends the session")
        .expect("wait");
    assert_eq!(status.code(), Some(2));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("no project to serve") && logged.contains("your home folder"),
        "{logged}"
    );
}

#[tokio::test]
async fn an_explicit_home_root_is_served() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("notes.txt"), "x").unwrap();
    let home_arg = home.path().to_string_lossy().into_owned();
    let server = common::Server::start_with(
        home.path(),
        &[],
        &[
            ("HOME", home_arg.as_str()),
            ("USERPROFILE", home_arg.as_str()),
        ],
    )
    .await;
    let out = server
        .ok("find_project_files", json!({"pattern": "*.txt"}))
        .await;
    assert_eq!(out["files"], json!(["notes.txt"]));
    server.stop().await;
}

// Not under Windows' test run: Wine answers each file open and canonical
// path with a round trip to wineserver, so a call over thousands of entries
// outlasts the client's 60 s timeout on a loaded 2-core machine. The
// behaviour is platform-independent; the small-tree tests run on Windows.
#[cfg(not(windows))]
#[tokio::test]
async fn an_explicit_root_with_very_many_folders_is_served_with_one_line_about_the_cost() {
    let project = tempfile::tempdir().unwrap();
    for index in 0..=10_000 {
        std::fs::create_dir(project.path().join(format!("d{index}"))).unwrap();
    }
    std::fs::write(project.path().join("d7/found.txt"), "x").unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("server.log");
    let log_arg = log.to_string_lossy().into_owned();
    let server = common::Server::start_with(project.path(), &["--log-file", &log_arg], &[]).await;
    let out = server
        .ok("find_project_files", json!({"pattern": "*.txt"}))
        .await;
    assert_eq!(out["files"], json!(["d7/found.txt"]));
    let cost = |text: &str| text.matches("holds more than 10000 folders").count();
    common::eventually("the cost is logged", || {
        std::fs::read_to_string(&log).is_ok_and(|text| cost(&text) == 1)
    })
    .await;
    server.stop().await;
    assert_eq!(cost(&std::fs::read_to_string(&log).unwrap()), 1);
}
