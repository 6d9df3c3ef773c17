//! The protocol surface: the three revisions, the tool list with its
//! annotations and schemas, structuredContent, malformed input, concurrency,
//! shutdown on stdin EOF, and a stdout that carries nothing but JSON-RPC.

#[cfg(target_os = "linux")]
use crate::common;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use crate::common::{
    RawServer, Server, TempProject, call_request, cancel_notification, demo_root, strings, text_of,
};
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};

const TOOL_ORDER: [&str; 9] = [
    "search_project_files",
    "read_project_file",
    "list_project_directory",
    "find_project_files",
    "outline_project_file",
    "find_symbol_definitions",
    "find_symbol_references",
    "get_docs",
    "run_project_check",
];
const READ_TOOLS: [&str; 8] = [
    "search_project_files",
    "read_project_file",
    "list_project_directory",
    "find_project_files",
    "outline_project_file",
    "find_symbol_definitions",
    "find_symbol_references",
    "get_docs",
];

fn numbered_project() -> TempProject {
    let project = TempProject::new();
    for i in 1..=50 {
        project.write(&format!("f{i:02}.txt"), format!("file {i}\n"));
    }
    project
}

/// The `_meta` every request carries in the stateless 2026-07-28 revision.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// The structuredContent of a successful tools/call response, after checking
/// that its text content is the same JSON.
fn structured(response: &Value) -> &Value {
    let result = &response["result"];
    assert_eq!(result["isError"], false, "{response}");
    let text = result["content"][0]["text"].as_str().expect("text content");
    assert_eq!(result["content"][0]["type"], "text");
    let parsed: Value = serde_json::from_str(text).expect("text content is JSON");
    assert_eq!(
        parsed, result["structuredContent"],
        "text and structuredContent differ"
    );
    &result["structuredContent"]
}

#[tokio::test]
async fn initialize_answers_the_2025_revisions() {
    for version in ["2025-06-18", "2025-11-25"] {
        let mut server = RawServer::start(&demo_root(), &[]);
        let answer = server.initialize(version).await;
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], version);
        assert_eq!(result["serverInfo"]["name"], "mcp-project-helper");
        assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        assert!(result["capabilities"]["tools"].is_object(), "{result}");

        server
            .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
        let listed = server.recv_id(&json!(1)).await;
        assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 9);

        server
            .send(&call_request(
                2,
                "read_project_file",
                json!({"path": "demo_app/models.py", "end_line": 1}),
            ))
            .await;
        let answer = server.recv_id(&json!(2)).await;
        assert_eq!(structured(&answer)["file"], "demo_app/models.py");

        server
            .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
            .await;
        assert_eq!(server.recv_id(&json!(3)).await["result"], json!({}));
        let (rest, code) = server.finish().await;
        assert_eq!(code, Some(0), "{version}");
        assert!(rest.is_empty(), "{rest}");
    }
}

#[tokio::test]
async fn stateless_2026_revision_discover_then_call() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                      "params": {"_meta": stateless_meta()}}),
        )
        .await;
    let discovered = server.recv_id(&json!(1)).await;
    let result = &discovered["result"];
    let versions = strings(&result["supportedVersions"]);
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(
            versions.iter().any(|v| v == version),
            "{version} in {versions:?}"
        );
    }
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    let info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "mcp-project-helper", "{result}");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));

    server
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                      "params": {"_meta": stateless_meta()}}))
        .await;
    let listed = server.recv_id(&json!(2)).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOL_ORDER);

    server
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "find_project_files",
                                 "arguments": {"pattern": "*.py", "path": "demo_app"},
                                 "_meta": stateless_meta()}}))
        .await;
    let answer = server.recv_id(&json!(3)).await;
    assert_eq!(
        strings(&structured(&answer)["files"]),
        vec![
            "demo_app/__init__.py",
            "demo_app/models.py",
            "demo_app/services.py"
        ]
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn stateless_tool_call_without_initialize_or_discover() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server
        .send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "read_project_file",
                                 "arguments": {"path": "demo_app/models.py", "start_line": 6, "end_line": 7},
                                 "_meta": stateless_meta()}}))
        .await;
    let answer = server.recv_id(&json!(7)).await;
    let out = structured(&answer);
    assert_eq!(out["content"], "@dataclass\nclass Product:\n");
    assert_eq!(out["total_lines"], 20);

    server
        .send(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                      "params": {"name": "read_project_file",
                                 "arguments": {"path": "../../../../etc/passwd"},
                                 "_meta": stateless_meta()}}))
        .await;
    let answer = server.recv_id(&json!(8)).await;
    assert_eq!(answer["result"]["isError"], true);
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

async fn listed_tools() -> Vec<Value> {
    let server = Server::start(&demo_root()).await;
    let tools = server.client.list_all_tools().await.expect("tools/list");
    server.stop().await;
    tools
        .into_iter()
        .map(|tool| serde_json::to_value(tool).unwrap())
        .collect()
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

#[tokio::test]
async fn nine_tools_in_a_stable_order_with_the_spec_annotations() {
    let first = listed_tools().await;
    let names: Vec<&str> = first.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_ORDER);
    let second = listed_tools().await;
    assert_eq!(first, second, "the list is the same every time");

    for name in READ_TOOLS {
        let annotations = &tool(&first, name)["annotations"];
        assert_eq!(annotations["readOnlyHint"], true, "{name}");
        assert_eq!(annotations["openWorldHint"], false, "{name}");
    }
    let check = &tool(&first, "run_project_check")["annotations"];
    assert_eq!(check["readOnlyHint"], false);
    assert_eq!(check["destructiveHint"], false);
    assert_eq!(check["openWorldHint"], false);

    for tool in &first {
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(description.len() > 40, "{}: {description:?}", tool["name"]);
    }
}

fn properties(schema: &Value) -> &Map<String, Value> {
    schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no properties in {schema}"))
}

fn assert_input_schema(tools: &[Value], name: &str, expected: &[&str], required: &[&str]) {
    let schema = &tool(tools, name)["inputSchema"];
    assert_eq!(schema["type"], "object", "{name}");
    let found: BTreeSet<&str> = properties(schema).keys().map(String::as_str).collect();
    let wanted: BTreeSet<&str> = expected.iter().copied().collect();
    assert_eq!(found, wanted, "{name} parameters");
    for (property, definition) in properties(schema) {
        let description = definition["description"].as_str().unwrap_or_default();
        assert!(
            !description.trim().is_empty(),
            "{name}.{property} has no description"
        );
    }
    let required_found: BTreeSet<String> = schema
        .get("required")
        .map(|r| strings(r).into_iter().collect())
        .unwrap_or_default();
    let required_wanted: BTreeSet<String> = required.iter().map(|r| r.to_string()).collect();
    assert_eq!(required_found, required_wanted, "{name} required");
}

#[tokio::test]
async fn input_schemas_of_read_list_find_and_check_describe_every_parameter() {
    let tools = listed_tools().await;
    assert_input_schema(
        &tools,
        "read_project_file",
        &["path", "start_line", "end_line"],
        &["path"],
    );
    assert_input_schema(
        &tools,
        "list_project_directory",
        &["path", "depth", "max_entries", "include_ignored"],
        &[],
    );
    assert_input_schema(
        &tools,
        "find_project_files",
        &["pattern", "path", "max_results", "include_ignored"],
        &["pattern"],
    );
    assert_input_schema(
        &tools,
        "run_project_check",
        &["check_name"],
        &["check_name"],
    );
}

#[tokio::test]
async fn input_schemas_of_search_and_get_docs_describe_every_parameter() {
    let tools = listed_tools().await;
    assert_input_schema(
        &tools,
        "search_project_files",
        &[
            "query",
            "path",
            "max_results",
            "regex",
            "case_sensitive",
            "glob",
            "context_lines",
            "output_mode",
            "offset",
            "include_ignored",
        ],
        &["query"],
    );
    assert_input_schema(&tools, "get_docs", &["query", "max_results"], &[]);
}

fn assert_output_schema(tools: &[Value], name: &str, fields: &[&str]) {
    let schema = &tool(tools, name)["outputSchema"];
    assert_eq!(schema["type"], "object", "{name} outputSchema: {schema}");
    let found = properties(schema);
    for field in fields.iter().chain(&["status"]) {
        assert!(
            found.contains_key(*field),
            "{name} outputSchema lacks {field}"
        );
    }
}

#[tokio::test]
async fn output_schemas_of_read_list_find_and_check_declare_their_fields() {
    let tools = listed_tools().await;
    assert_output_schema(
        &tools,
        "read_project_file",
        &[
            "file",
            "content",
            "size",
            "truncated",
            "start_line",
            "end_line",
            "total_lines",
        ],
    );
    assert_output_schema(
        &tools,
        "list_project_directory",
        &["path", "entries", "count", "truncated"],
    );
    assert_output_schema(
        &tools,
        "find_project_files",
        &["pattern", "path", "files", "count", "truncated"],
    );
    assert_output_schema(
        &tools,
        "run_project_check",
        &[
            "check_name",
            "exit_code",
            "passed",
            "duration_ms",
            "stdout",
            "stderr",
            "truncated",
        ],
    );
}

#[tokio::test]
async fn output_schemas_of_search_and_get_docs_declare_their_fields() {
    let tools = listed_tools().await;
    assert_output_schema(
        &tools,
        "search_project_files",
        &["query", "path", "matches", "count", "truncated"],
    );
    assert_output_schema(
        &tools,
        "get_docs",
        &["query", "results", "count", "truncated"],
    );
}

#[tokio::test]
async fn schemas_of_the_symbol_tools_declare_every_parameter_and_field() {
    let tools = listed_tools().await;
    assert_input_schema(&tools, "outline_project_file", &["path"], &["path"]);
    assert_input_schema(
        &tools,
        "find_symbol_definitions",
        &["name", "kind", "path", "max_results", "offset"],
        &["name"],
    );
    assert_output_schema(
        &tools,
        "outline_project_file",
        &["file", "language", "count", "truncated", "symbols"],
    );
    assert_output_schema(
        &tools,
        "find_symbol_definitions",
        &["name", "definitions", "count", "truncated"],
    );
    assert_input_schema(
        &tools,
        "find_symbol_references",
        &["name", "path", "max_results", "offset"],
        &["name"],
    );
    assert_output_schema(
        &tools,
        "find_symbol_references",
        &[
            "name",
            "references",
            "count",
            "truncated",
            "files_without_grammar",
        ],
    );
}

#[tokio::test]
async fn structured_content_equals_the_text_json_on_the_wire() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    let calls = [
        ("read_project_file", json!({"path": "demo_app/services.py"})),
        ("list_project_directory", json!({"path": "demo_app"})),
        ("find_project_files", json!({"pattern": "**/*.py"})),
    ];
    for (id, (tool, arguments)) in calls.iter().enumerate() {
        server
            .send(&call_request(id as u64 + 1, tool, arguments.clone()))
            .await;
        let answer = server.recv_id(&json!(id + 1)).await;
        let out = structured(&answer);
        assert_eq!(out["status"], "success", "{tool}");
    }
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn tool_errors_are_one_line_is_error_results() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    server
        .send(&call_request(
            1,
            "read_project_file",
            json!({"path": "/etc/passwd"}),
        ))
        .await;
    let answer = server.recv_id(&json!(1)).await;
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("absolute path"), "{message}");
    assert!(
        message.contains("relative to the project root"),
        "says what is allowed: {message}"
    );
    assert!(!message.contains('\n'), "{message:?}");
    assert!(answer.get("error").is_none());
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn a_line_that_is_not_json_gets_a_parse_error_with_null_id() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    server.send_line("this is not json").await;
    let answer = server.recv().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(
        answer.get("id").is_some_and(Value::is_null),
        "id must be null: {answer}"
    );

    server
        .send_line("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":")
        .await;
    let answer = server.recv().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(answer.get("id").is_some_and(Value::is_null), "{answer}");

    server
        .send(&call_request(
            2,
            "read_project_file",
            json!({"path": "demo_app/__init__.py"}),
        ))
        .await;
    let answer = server.recv_id(&json!(2)).await;
    assert_eq!(structured(&answer)["file"], "demo_app/__init__.py");
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

/// JSON-RPC 2.0: an invalid request is answered with its id, or with a
/// null id when the id cannot be used.
#[tokio::test]
async fn an_invalid_request_is_answered_with_its_id_or_null() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    for (line, id) in [
        ("[]", Value::Null),
        (
            "[{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"ping\"}]",
            Value::Null,
        ),
        ("{\"jsonrpc\": \"2.0\", \"id\": 5}", json!(5)),
        (
            "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"tools/call\", \"params\": \"x\"}",
            json!(6),
        ),
        (
            "{\"jsonrpc\": \"2.0\", \"id\": {\"a\": 1}, \"method\": \"ping\"}",
            Value::Null,
        ),
    ] {
        server.send_line(line).await;
        let answer = server.recv().await;
        let code = answer["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{line}: {answer}"));
        assert!(code == -32600 || code == -32602, "{line}: {answer}");
        assert_eq!(answer.get("id"), Some(&id), "{line}: {answer}");
    }
    server
        .send(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
        .await;
    assert_eq!(server.recv_id(&json!(9)).await["result"], json!({}));
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn garbage_lines_never_stop_the_server() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    for line in [
        "this is not json",
        "{",
        "[]",
        "{}",
        "\"just a string\"",
        "12345",
        "null",
        "{\"jsonrpc\": \"2.0\"}",
        "{\"jsonrpc\": \"1.0\", \"id\": 99, \"method\": \"ping\"}",
        "\u{feff}{\"oops\": true}",
        "{\"jsonrpc\": \"2.0\", \"id\": {\"nested\": 1}, \"method\": \"ping\"}",
        &"[".repeat(10_000),
    ] {
        server.send_line(line).await;
    }
    server
        .send(&json!({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}))
        .await;
    let answer = server.recv_id(&json!(5)).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");

    server
        .send(&call_request(6, "list_project_directory", json!([1, 2])))
        .await;
    let answer = server.recv_id(&json!(6)).await;
    assert!(
        answer.get("error").is_some() || answer["result"]["isError"] == true,
        "arguments that are not an object are refused: {answer}"
    );

    server
        .send(&call_request(
            7,
            "read_project_file",
            json!({"path": "demo_app/models.py"}),
        ))
        .await;
    let answer = server.recv_id(&json!(7)).await;
    assert_eq!(structured(&answer)["total_lines"], 20);
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn wrong_argument_types_are_tool_errors_and_the_server_keeps_serving() {
    let project = numbered_project();
    let server = Server::start(&project.root).await;
    for (tool, arguments) in [
        ("read_project_file", json!({"path": 5})),
        (
            "read_project_file",
            json!({"path": "f01.txt", "start_line": "3"}),
        ),
        (
            "read_project_file",
            json!({"path": "f01.txt", "start_line": -1}),
        ),
        (
            "read_project_file",
            json!({"path": "f01.txt", "end_line": 1.5}),
        ),
        ("read_project_file", json!({})),
        ("read_project_file", json!({"path": null})),
        ("read_project_file", json!({"path": ["f01.txt"]})),
        (
            "find_project_files",
            json!({"pattern": "*.txt", "max_results": "x"}),
        ),
        ("find_project_files", json!({"pattern": 7})),
        ("list_project_directory", json!({"depth": "deep"})),
        ("list_project_directory", json!({"depth": -1})),
        ("list_project_directory", json!({"max_entries": {"a": 1}})),
        ("list_project_directory", json!({"depth": 1e30})),
        ("search_project_files", json!({"query": 5})),
        ("search_project_files", json!({})),
        ("run_project_check", json!({"check_name": false})),
    ] {
        let message = server.err(tool, arguments.clone()).await;
        assert!(!message.contains('\n'), "{tool}({arguments}): {message:?}");
    }
    let out = server
        .ok("read_project_file", json!({"path": "f07.txt"}))
        .await;
    assert_eq!(out["content"], "file 7\n");
    server.stop().await;
}

/// A model that sent a wrong type learns which parameter was wrong.
#[tokio::test]
async fn wrong_argument_types_name_the_parameter() {
    let project = numbered_project();
    let server = Server::start(&project.root).await;
    for (tool, arguments, parameter) in [
        ("read_project_file", json!({"path": 5}), "path"),
        (
            "find_project_files",
            json!({"pattern": "*", "max_results": "x"}),
            "max_results",
        ),
        ("list_project_directory", json!({"depth": -1}), "depth"),
    ] {
        let message = server.err(tool, arguments).await;
        assert!(message.contains(parameter), "{tool}: {message}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_error() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    server
        .send(&call_request(1, "delete_everything", json!({})))
        .await;
    let answer = server.recv_id(&json!(1)).await;
    assert!(answer.get("result").is_none(), "{answer}");
    let code = answer["error"]["code"].as_i64().expect("error code");
    assert!(code == -32602 || code == -32601, "{answer}");
    let (_, exit) = server.finish().await;
    assert_eq!(exit, Some(0));

    let server = Server::start(&demo_root()).await;
    let params = CallToolRequestParams::new("delete_everything").with_arguments(Map::new());
    assert!(server.client.call_tool(params).await.is_err());
    let out = server
        .ok("find_project_files", json!({"pattern": "models.py"}))
        .await;
    assert_eq!(strings(&out["files"]), vec!["demo_app/models.py"]);
    server.stop().await;
}

#[tokio::test]
async fn fifty_concurrent_calls_are_all_answered_correctly() {
    let project = numbered_project();
    let server = Server::start(&project.root).await;
    let mut tasks = Vec::new();
    for i in 1..=50u32 {
        let peer = server.client.peer().clone();
        tasks.push(tokio::spawn(async move {
            let (tool, arguments) = if i % 2 == 0 {
                ("read_project_file", json!({"path": format!("f{i:02}.txt")}))
            } else {
                (
                    "find_project_files",
                    json!({"pattern": format!("f{i:02}.*")}),
                )
            };
            let Value::Object(arguments) = arguments else {
                unreachable!()
            };
            let result = peer
                .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
                .await
                .expect("answered");
            (i, result)
        }));
    }
    for task in tasks {
        let (i, result) = tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("answered in time")
            .expect("task");
        assert_ne!(result.is_error, Some(true), "{i}: {}", text_of(&result));
        let out = result.structured_content.expect("structuredContent");
        if i % 2 == 0 {
            assert_eq!(out["content"], format!("file {i}\n"));
        } else {
            assert_eq!(strings(&out["files"]), vec![format!("f{i:02}.txt")]);
        }
    }
    server.stop().await;
}

/// A call whose work holds its thread leaves the server serving: a quick
/// call sent while a slow one runs is answered first.
#[tokio::test]
async fn a_quick_call_is_answered_while_a_slow_one_runs() {
    quick_call_answered_while_slow_calls_run(1).await;
}

/// As many slow calls at once as there are async workers and more: each
/// holds a thread, and the one reading the client is never left behind
/// one of them.
#[tokio::test]
async fn a_quick_call_is_answered_while_four_slow_ones_run() {
    quick_call_answered_while_slow_calls_run(4).await;
}

async fn quick_call_answered_while_slow_calls_run(slow: u64) {
    let project = TempProject::new();
    // The name in a comment of every file: a definitions call parses them
    // all (for seconds, so that a loaded machine still answers the quick
    // call first), and finds nothing.
    let source: String = (0..3000)
        .map(|i| format!("/* needle */ static int f{i}(int x) {{ return x + {i}; }}\n"))
        .collect();
    for i in 0..60 {
        project.write(&format!("d{}/f{i:02}.c", i % 4), &source);
    }
    project.write("small.txt", "small\n");
    let mut server = RawServer::start(&project.root, &[]);
    server.initialize("2025-06-18").await;
    for id in 1..=slow {
        server
            .send(&call_request(
                id,
                "find_symbol_definitions",
                json!({"name": "needle"}),
            ))
            .await;
    }
    // The slow calls have begun.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server
        .send(&call_request(
            100,
            "read_project_file",
            json!({"path": "small.txt"}),
        ))
        .await;
    let first = server.recv().await;
    assert_eq!(
        first["id"], 100,
        "the quick call waited for a slow one: {first}"
    );
    assert_eq!(first["result"]["structuredContent"]["content"], "small\n");
    // The slow ones are not waited for: cancelled, they stop, and the
    // server still ends cleanly.
    for id in 1..=slow {
        server.send(&cancel_notification(id)).await;
    }
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn fifty_pipelined_raw_requests_are_matched_by_id() {
    let project = numbered_project();
    let mut server = RawServer::start(&project.root, &[]);
    server.initialize("2025-06-18").await;
    for i in 1..=50u64 {
        server
            .send(&call_request(
                i,
                "read_project_file",
                json!({"path": format!("f{i:02}.txt")}),
            ))
            .await;
    }
    let mut answers: HashMap<u64, Value> = HashMap::new();
    while answers.len() < 50 {
        let message = server.recv().await;
        if let Some(id) = message["id"].as_u64() {
            assert!(
                answers.insert(id, message).is_none(),
                "id {id} answered twice"
            );
        }
    }
    for i in 1..=50u64 {
        assert_eq!(
            structured(&answers[&i])["content"],
            format!("file {i}\n"),
            "id {i}"
        );
    }
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

/// Pids of every process below `pid`, from /proc.
#[cfg(target_os = "linux")]
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The fields after the parenthesized command name: state, ppid, ...
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        if let Some(parent) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.entry(parent).or_default().push(child);
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(next) = queue.pop() {
        for child in parents.get(&next).cloned().unwrap_or_default() {
            found.push(child);
            queue.push(child);
        }
    }
    found
}

/// True while `pid` exists and is not a zombie.
#[cfg(target_os = "linux")]
fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

#[tokio::test]
async fn stdin_eof_exits_zero() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    server
        .send(&call_request(1, "list_project_directory", json!({})))
        .await;
    server.recv_id(&json!(1)).await;
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest}");

    // Before the handshake, too.
    let server = RawServer::start(&demo_root(), &[]);
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest}");
}

#[tokio::test]
async fn stdin_eof_with_requests_in_flight_exits_zero() {
    let project = numbered_project();
    let mut server = RawServer::start(&project.root, &[]);
    server.initialize("2025-11-25").await;
    for i in 1..=20u64 {
        server
            .send(&call_request(
                i,
                "find_project_files",
                json!({"pattern": "**/*"}),
            ))
            .await;
    }
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    for line in rest.lines() {
        let message: Value = serde_json::from_str(line).expect("JSON-RPC line");
        assert_eq!(message["jsonrpc"], "2.0");
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn stdin_eof_during_a_running_check_leaves_no_process() {
    let project = numbered_project();
    let config = project.outside().join("operator.toml");
    common::write_file(&config, b"[checks]\nslow = [\"sleep\", \"300\"]\n");
    let config = config.to_string_lossy().into_owned();
    let mut server = RawServer::start(&project.root, &["--config", &config]);
    let pid = server.child.id().expect("server pid");
    server.initialize("2025-11-25").await;
    server
        .send(&call_request(
            1,
            "run_project_check",
            json!({"check_name": "slow"}),
        ))
        .await;

    // Wait (bounded) until the check's process exists.
    let mut children = Vec::new();
    for _ in 0..100 {
        children = descendants(pid);
        if !children.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!children.is_empty(), "the check never started a process");

    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
    let mut alive = children.clone();
    for _ in 0..100 {
        alive.retain(|child| is_running(*child));
        if alive.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(alive.is_empty(), "processes left behind: {alive:?}");
}

/// Drives a session with successes, tool errors, protocol errors and
/// garbage; `RawServer::recv` fails on any stdout line that is not JSON-RPC.
async fn noisy_session(args: &[&str]) {
    let mut server = RawServer::start(&demo_root(), args);
    server.initialize("2025-11-25").await;
    server
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    server.recv_id(&json!(1)).await;
    let calls = [
        ("read_project_file", json!({"path": "demo_app/services.py"})),
        ("read_project_file", json!({"path": "../../etc/passwd"})),
        ("read_project_file", json!({"path": 5})),
        ("list_project_directory", json!({"depth": 3})),
        ("find_project_files", json!({"pattern": "**/*"})),
        ("find_project_files", json!({"pattern": "[bad"})),
        ("search_project_files", json!({"query": "apply_discount"})),
        ("get_docs", json!({"query": "security"})),
        ("run_project_check", json!({"check_name": "nope"})),
        ("no_such_tool", json!({})),
    ];
    for (id, (tool, arguments)) in calls.iter().enumerate() {
        let id = id as u64 + 2;
        server
            .send(&call_request(id, tool, arguments.clone()))
            .await;
        server.recv_id(&json!(id)).await;
    }
    server.send_line("garbage that is not JSON").await;
    server
        .send(&json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        .await;
    server.recv_id(&json!(99)).await;
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    for line in rest.lines() {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}

#[tokio::test]
async fn stdout_carries_only_json_rpc() {
    noisy_session(&[]).await;
}

#[tokio::test]
async fn stdout_carries_only_json_rpc_at_debug_level() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let log_arg = log.to_string_lossy().into_owned();
    noisy_session(&["--log-level", "DEBUG", "--log-file", &log_arg]).await;
    // The session was logged, just not on stdout.
    let logged = std::fs::read_to_string(&log).expect("log file");
    assert!(logged.contains("tool call"), "tool calls are logged");
    noisy_session(&["--log-level", "debug"]).await;
}

/// The log file gets a call's line before its answer goes out (only the
/// stderr copy waits for the answer): whoever reads the file once an
/// answer arrived finds that call's line, successes and tool errors alike.
#[tokio::test]
async fn the_log_file_holds_a_calls_line_when_its_answer_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let log_arg = log.to_string_lossy().into_owned();
    let mut server = RawServer::start(&demo_root(), &["--log-file", &log_arg]);
    server.initialize("2025-11-25").await;
    let calls = [
        ("read_project_file", json!({"path": "demo_app/services.py"})),
        ("read_project_file", json!({"path": "missing.py"})),
        ("search_project_files", json!({"query": "apply_discount"})),
        ("list_project_directory", json!({})),
    ];
    for round in 0..5u64 {
        for (index, (tool, arguments)) in calls.iter().enumerate() {
            let id = round * 10 + index as u64 + 1;
            server
                .send(&call_request(id, tool, arguments.clone()))
                .await;
            server.recv_id(&json!(id)).await;
            let logged = std::fs::read_to_string(&log).expect("log file");
            let lines = logged.matches(" tool call ").count() as u64;
            assert_eq!(
                lines,
                round * calls.len() as u64 + index as u64 + 1,
                "{tool} answered before its line was in the log file:\n{logged}"
            );
        }
    }
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

/// A line of demo_app/services.py, which `noisy_session` reads.
const FILE_CONTENT: &str = "MAX_DISCOUNT_PERCENT = 50.0";

#[tokio::test]
async fn the_log_never_carries_file_content() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let log_arg = log.to_string_lossy().into_owned();
    noisy_session(&["--log-file", &log_arg]).await;
    let logged = std::fs::read_to_string(&log).expect("log file");
    assert!(logged.contains("read_project_file"), "the read was logged");
    assert!(
        !logged.contains(FILE_CONTENT),
        "file content reached the log"
    );
}

#[tokio::test]
async fn the_debug_log_never_carries_file_content() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let log_arg = log.to_string_lossy().into_owned();
    noisy_session(&["--log-level", "DEBUG", "--log-file", &log_arg]).await;
    let logged = std::fs::read_to_string(&log).expect("log file");
    assert!(logged.contains("read_project_file"), "the read was logged");
    assert!(
        !logged.contains(FILE_CONTENT),
        "file content reached the DEBUG log"
    );
}
