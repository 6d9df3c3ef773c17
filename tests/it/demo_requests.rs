//! The prototype's verification requests, against demo_project, through
//! rmcp's client: what an assistant does first in a new project.

use crate::common::{Server, demo_root, hit, matches, strings};
use serde_json::json;

#[tokio::test]
async fn find_every_use_of_apply_discount() {
    let server = Server::start(&demo_root()).await;
    let out = server
        .ok("search_project_files", json!({"query": "apply_discount"}))
        .await;
    assert_eq!(out["query"], "apply_discount");
    assert_eq!(out["path"], ".");
    assert_eq!(
        matches(&out),
        vec![
            hit(
                "demo_app/services.py",
                12,
                "def apply_discount(order: Order, percent: float) -> float:"
            ),
            hit(
                "tests/test_services.py",
                1,
                "from demo_app.services import OrderBuilder, apply_discount"
            ),
            hit(
                "tests/test_services.py",
                6,
                "    assert apply_discount(order, 10) == 36.0"
            ),
            hit(
                "tests/test_services.py",
                11,
                "    assert apply_discount(order, 90) == 5.0"
            ),
        ]
    );
    assert_eq!(out["count"], 4);
    assert_eq!(out["truncated"], false);
    server.stop().await;
}

#[tokio::test]
async fn read_the_models() {
    let server = Server::start(&demo_root()).await;
    let out = server
        .ok("read_project_file", json!({"path": "demo_app/models.py"}))
        .await;
    let on_disk = std::fs::read_to_string(demo_root().join("demo_app/models.py")).unwrap();
    assert_eq!(out["file"], "demo_app/models.py");
    assert_eq!(out["content"], on_disk);
    assert_eq!(out["size"], on_disk.len());
    assert_eq!(out["total_lines"], 20);
    assert_eq!(out["start_line"], 1);
    assert_eq!(out["end_line"], 20);
    assert_eq!(out["truncated"], false);
    let content = out["content"].as_str().unwrap();
    assert!(content.contains("class Product:"));
    assert!(content.contains("class Order:"));
    assert!(content.contains("def total(self) -> float:"));
    server.stop().await;
}

#[tokio::test]
async fn list_and_find_the_package() {
    let server = Server::start(&demo_root()).await;
    let out = server
        .ok("list_project_directory", json!({"path": "demo_app"}))
        .await;
    let paths: Vec<&str> = out["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        vec![
            "demo_app/__init__.py",
            "demo_app/models.py",
            "demo_app/services.py"
        ]
    );
    let out = server
        .ok("find_project_files", json!({"pattern": "**/*.py"}))
        .await;
    assert_eq!(
        strings(&out["files"]),
        vec![
            "demo_app/__init__.py",
            "demo_app/models.py",
            "demo_app/services.py",
            "tests/__init__.py",
            "tests/test_services.py"
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn get_docs_finds_the_security_section() {
    let server = Server::start(&demo_root()).await;
    let out = server.ok("get_docs", json!({"query": "security"})).await;
    let first = &out["results"][0];
    assert_eq!(first["file"], "architecture.md");
    assert_eq!(first["heading"], "Security");
    let snippet = first["snippet"].as_str().unwrap();
    assert!(
        snippet.contains("Every path goes through one gate"),
        "{snippet}"
    );
    server.stop().await;
}

/// The assistant's way to explain a function: search for its definition,
/// then read exactly that function.
#[tokio::test]
async fn search_then_read_explains_apply_discount() {
    let server = Server::start(&demo_root()).await;
    let found = server
        .ok(
            "search_project_files",
            json!({"query": "def apply_discount", "glob": "*.py"}),
        )
        .await;
    assert_eq!(found["count"], 1);
    let definition = &found["matches"][0];
    assert_eq!(definition["file"], "demo_app/services.py");
    let line = definition["line"].as_u64().unwrap();
    assert_eq!(line, 12);

    let out = server
        .ok(
            "read_project_file",
            json!({"path": definition["file"], "start_line": line, "end_line": line + 7}),
        )
        .await;
    assert_eq!(
        out["content"],
        "def apply_discount(order: Order, percent: float) -> float:\n    \
         \"\"\"Return the order total after a percentage discount.\n\n    \
         The percentage is clamped to 0..MAX_DISCOUNT_PERCENT.\n    \"\"\"\n    \
         percent = max(0.0, min(percent, MAX_DISCOUNT_PERCENT))\n    \
         return round(order.total() * (1 - percent / 100), 2)\n\n"
    );
    assert_eq!(out["start_line"], 12);
    assert_eq!(out["end_line"], 19);

    // The clamp's limit is defined in the same file.
    let limit = server
        .ok(
            "search_project_files",
            json!({"query": "MAX_DISCOUNT_PERCENT =", "path": "demo_app"}),
        )
        .await;
    assert_eq!(limit["matches"][0]["text"], "MAX_DISCOUNT_PERCENT = 50.0");
    server.stop().await;
}

#[tokio::test]
async fn etc_passwd_is_refused_with_a_clear_message() {
    let server = Server::start(&demo_root()).await;
    let message = server
        .err(
            "read_project_file",
            json!({"path": "../../../../etc/passwd"}),
        )
        .await;
    assert!(
        message.contains("../../../../etc/passwd"),
        "names the path: {message}"
    );
    assert!(
        message.contains("leaves the project root"),
        "says what is wrong: {message}"
    );
    assert!(
        message.contains("only paths inside the project root"),
        "says what is allowed: {message}"
    );
    assert!(!message.contains("root:x:0"), "{message}");
    let message = server
        .err("read_project_file", json!({"path": "/etc/passwd"}))
        .await;
    assert!(message.contains("absolute path"), "{message}");
    server.stop().await;
}
