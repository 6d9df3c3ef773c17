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
