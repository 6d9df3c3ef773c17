//! Shared helpers for the integration tests: start the real binary and talk
//! to it over stdio, either through rmcp's client or as raw JSON lines.
#![allow(dead_code)] // each test binary uses a different subset

pub mod host_cli;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp-project-helper"))
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn demo_root() -> PathBuf {
    repo_dir().join("demo_project")
}

/// A running server driven by rmcp's client.
pub struct Server {
    pub client: RunningService<RoleClient, ()>,
}

impl Server {
    /// Starts the binary with `--root root` plus `args`, and the given
    /// extra environment variables.
    pub async fn start_with(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let root = root.to_path_buf();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let command = Command::new(binary()).configure(move |cmd| {
            cmd.arg("--root").arg(&root).args(&args);
            for (key, value) in &env {
                cmd.env(key, value);
            }
            cmd.env_remove("MCP_PROJECT_HELPER_ROOT")
                .env_remove("PROJECT_ROOT")
                .env_remove("MCP_PROJECT_HELPER_CONFIG");
        });
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn server");
        let client = ().serve(transport).await.expect("initialize");
        Server { client }
    }

    pub async fn start(root: &Path) -> Server {
        Self::start_with(root, &[], &[]).await
    }

    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be a JSON object")
        };
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        tokio::time::timeout(Duration::from_secs(60), self.client.call_tool(params))
            .await
            .expect("tool call timed out")
            .expect("tool call failed at the protocol level")
    }

    /// Calls a tool that must succeed; returns its structuredContent after
    /// checking that the text content carries the same JSON.
    pub async fn ok(&self, name: &str, arguments: Value) -> Value {
        let result = self.call(name, arguments.clone()).await;
        assert_ne!(
            result.is_error,
            Some(true),
            "{name}({arguments}) failed: {:?}",
            text_of(&result)
        );
        let structured = result
            .structured_content
            .clone()
            .expect("structuredContent present");
        let text: Value =
            serde_json::from_str(&text_of(&result)).expect("text content is the same JSON");
        assert_eq!(text, structured, "text and structuredContent differ");
        assert_eq!(structured["status"], "success");
        structured
    }

    /// Calls a tool that must fail with a tool error; returns its message.
    pub async fn err(&self, name: &str, arguments: Value) -> String {
        let result = self.call(name, arguments.clone()).await;
        assert_eq!(
            result.is_error,
            Some(true),
            "{name}({arguments}) should fail but returned {:?}",
            result.structured_content
        );
        let message = text_of(&result);
        assert!(!message.is_empty(), "error message is empty");
        message
    }

    pub async fn stop(self) {
        let _ = self.client.cancel().await;
    }
}

pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A server driven with raw JSON lines, for protocol-level tests.
pub struct RawServer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl RawServer {
    pub fn start(root: &Path, args: &[&str]) -> RawServer {
        let mut child = Command::new(binary())
            .arg("--root")
            .arg(root)
            .args(args)
            .env_remove("MCP_PROJECT_HELPER_ROOT")
            .env_remove("PROJECT_ROOT")
            .env_remove("MCP_PROJECT_HELPER_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn server");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        RawServer {
            child,
            stdin,
            stdout,
        }
    }

    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
        stdin.flush().await.expect("flush");
    }

    pub async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    /// Reads the next stdout line; every line must be a JSON-RPC message.
    pub async fn recv(&mut self) -> Value {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(30), self.stdout.read_line(&mut line))
            .await
            .expect("server answered in time")
            .expect("read stdout");
        assert!(read > 0, "server closed stdout");
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC: {line}");
        value
    }

    /// Reads until the response with `id` arrives (responses may come out of
    /// order, notifications may come between).
    pub async fn recv_id(&mut self, id: &Value) -> Value {
        loop {
            let message = self.recv().await;
            if &message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    pub async fn initialize(&mut self, protocol_version: &str) -> Value {
        self.send(&serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": protocol_version, "capabilities": {},
                       "clientInfo": {"name": "raw-test", "version": "1"}}
        }))
        .await;
        let answer = self.recv_id(&serde_json::json!(0)).await;
        self.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        answer
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Reads whatever remains on stdout after stdin closed, then the exit code.
    pub async fn finish(mut self) -> (String, Option<i32>) {
        self.close_stdin();
        let mut rest = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            let mut line = String::new();
            while self.stdout.read_line(&mut line).await.unwrap_or(0) > 0 {
                rest.push_str(&line);
                line.clear();
            }
        })
        .await;
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .expect("server exits after stdin EOF")
            .expect("wait");
        (rest, status.code())
    }
}

/// A temporary project whose root is `<tmp>/proj`, so that a test can put
/// things beside it (a sibling `proj-secret`, a file outside the root).
pub struct TempProject {
    pub dir: tempfile::TempDir,
    /// The canonical project root.
    pub root: PathBuf,
}

impl TempProject {
    pub fn new() -> TempProject {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("proj");
        std::fs::create_dir_all(&root).expect("create root");
        let root = std::fs::canonicalize(root).expect("canonical root");
        TempProject { dir, root }
    }

    /// Writes `bytes` at the root-relative `relative`, creating folders.
    pub fn write(&self, relative: &str, bytes: impl AsRef<[u8]>) -> &TempProject {
        write_file(&self.root.join(relative), bytes.as_ref());
        self
    }

    /// Creates the root-relative folder `relative` and its parents.
    pub fn mkdir(&self, relative: &str) -> &TempProject {
        std::fs::create_dir_all(self.root.join(relative)).expect("create dir");
        self
    }

    /// The temporary folder that holds the root.
    pub fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).expect("canonical tempdir")
    }
}

/// Writes a file, creating its parent folders.
pub fn write_file(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, bytes).expect("write file");
}

/// The strings of a JSON array of strings.
pub fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|item| item.as_str().expect("string item").to_string())
        .collect()
}

/// `(file, line, text)` of every match in a search result.
pub fn matches(out: &Value) -> Vec<(String, u64, String)> {
    out["matches"]
        .as_array()
        .unwrap_or_else(|| panic!("no matches array: {out}"))
        .iter()
        .map(|m| {
            (
                m["file"].as_str().expect("file").to_string(),
                m["line"].as_u64().expect("line"),
                m["text"].as_str().expect("text").to_string(),
            )
        })
        .collect()
}

/// One expected search hit, for comparing with [`matches`].
pub fn hit(file: &str, line: u64, text: &str) -> (String, u64, String) {
    (file.to_string(), line, text.to_string())
}
