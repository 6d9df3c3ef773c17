//! Shared helpers for the integration tests: start the real binary and talk
//! to it over stdio, either through rmcp's client or as raw JSON lines.
#![allow(dead_code)] // each test binary uses a different subset

#[cfg(unix)]
pub mod host_cli;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp-project-helper"))
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn demo_root() -> PathBuf {
    repo_dir().join("demo_project")
}

/// Variables that would set the root or config of a server the tests start
/// from whoever runs the tests.
/// The server's settings variables: every spawn of the server, directly or
/// through a host CLI, removes them so the developer's environment cannot leak in.
pub const SETTINGS_ENV: [&str; 8] = [
    "MCP_PROJECT_HELPER_ROOT",
    "PROJECT_ROOT",
    "MCP_PROJECT_HELPER_CONFIG",
    "MCP_PROJECT_HELPER_DOCS_ROOT",
    "MCP_PROJECT_HELPER_LOG_FILE",
    "MCP_PROJECT_HELPER_LOG_LEVEL",
    "MCP_PROJECT_HELPER_WATCH",
    "MCP_PROJECT_HELPER_SCRUB_MS",
];

/// Where the servers the tests start keep their index cache: never the
/// user's own cache folder. Shared by every test, as a user's is by every
/// session: answers must be exact whatever an earlier server left there.
pub fn test_cache_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("index-cache")
}

/// The server's command with a clean environment. `root: None` leaves the
/// root to the client's roots or the working directory.
pub fn server_command(root: Option<&Path>, args: &[&str]) -> Command {
    let mut command = Command::new(binary());
    if let Some(root) = root {
        command.arg("--root").arg(root);
    }
    command.args(args).env("XDG_CACHE_HOME", test_cache_home());
    for name in SETTINGS_ENV {
        command.env_remove(name);
    }
    command
}

/// The binary as a command-line program (`checks`, `config`), with a clean
/// environment and no stdin.
pub fn cli_command(args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(binary());
    command
        .args(args)
        .stdin(Stdio::null())
        .env("XDG_CACHE_HOME", test_cache_home());
    for name in SETTINGS_ENV {
        command.env_remove(name);
    }
    command
}

/// Spawns `command` and completes the MCP handshake with `handler` as the
/// client; the server's stderr is discarded.
pub async fn connect<H: ClientHandler>(
    handler: H,
    command: Command,
) -> Result<RunningService<RoleClient, H>, String> {
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("spawn server: {error}"))?;
    handler
        .serve(transport)
        .await
        .map_err(|error| format!("initialize: {error}"))
}

/// A test that cannot run here says so on stderr, visibly. Under `CI=true`
/// that is a failure: CI installs everything the tests need, so a missing
/// tool there is a broken setup, not a pass.
pub fn cannot_run(test: &str, reason: &str) {
    if std::env::var("CI").is_ok_and(|value| value == "true") {
        panic!("{test} cannot run under CI=true: {reason}");
    }
    say_skipped(test, reason);
}

/// Written past the harness's capture, so the skip shows in every run.
fn say_skipped(test: &str, reason: &str) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("SKIPPED {test}: {reason}\n").as_bytes(),
    );
}

/// A test that needs root where the tests run unprivileged (GitHub's
/// runners do, with `CI=true`): it says so visibly, and passes nothing off
/// as checked. Missing tools go through [`cannot_run`] instead.
pub fn needs_root(test: &str, reason: &str) {
    say_skipped(test, reason);
}

/// The container engine the image tests use: Docker when its engine runs,
/// else podman; `None` when neither is usable.
pub fn container_engine() -> Option<&'static str> {
    let runs = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if runs("docker", &["info"]) {
        Some("docker")
    } else if runs("podman", &["--version"]) {
        Some("podman")
    } else {
        None
    }
}

/// A running server driven by rmcp's client.
pub struct Server {
    pub client: RunningService<RoleClient, ()>,
}

impl Server {
    /// Starts the binary with `--root root` plus `args`, and the given
    /// extra environment variables.
    pub async fn start_with(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = server_command(Some(root), args);
        command.envs(env.iter().copied());
        let client = connect((), command).await.expect("server starts");
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
    /// [`Server::err`], whose message must say `reason`.
    pub async fn err_saying(&self, name: &str, arguments: Value, reason: &str) -> String {
        let message = self.err(name, arguments.clone()).await;
        assert!(
            message.contains(reason),
            "{name}({arguments}) should say {reason:?}: {message}"
        );
        message
    }

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

/// The client's cancel of request `id`, for a [`RawServer`].
pub fn cancel_notification(id: u64) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": id, "reason": "test"}})
}

/// A raw `tools/call` request, for a [`RawServer`].
pub fn call_request(id: u64, tool: &str, arguments: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}})
}

pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How long a server may take to exit once its stdin is closed: under Wine,
/// with four test threads at once, Wine's shared server now and then stalls
/// a process for seconds (a check's process tree being ended among them).
const EXIT_DEADLINE: Duration = if cfg!(windows) {
    Duration::from_secs(30)
} else {
    Duration::from_secs(5)
};

/// A server driven with raw JSON lines, for protocol-level tests.
pub struct RawServer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl RawServer {
    pub fn start(root: &Path, args: &[&str]) -> RawServer {
        Self::start_with(root, args, &[])
    }

    /// With settings variables of the test's own (`server_command` clears
    /// the caller's).
    pub fn start_with(root: &Path, args: &[&str], env: &[(&str, &str)]) -> RawServer {
        let mut command = server_command(Some(root), args);
        command.envs(env.iter().copied());
        Self::launch(command, Stdio::null())
    }

    /// With stderr piped and handed to the test, to read or never to read.
    pub fn start_with_stderr(root: &Path, args: &[&str]) -> (RawServer, ChildStderr) {
        let mut server = Self::launch(server_command(Some(root), args), Stdio::piped());
        let stderr = server.child.stderr.take().expect("stderr");
        (server, stderr)
    }

    /// Drives any command that runs the server (under another user, say);
    /// the settings variables are cleared as for [`server_command`].
    pub fn spawn(mut command: Command) -> RawServer {
        for name in SETTINGS_ENV {
            command.env_remove(name);
        }
        Self::launch(command, Stdio::null())
    }

    fn launch(mut command: Command, stderr: Stdio) -> RawServer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
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
        let status = tokio::time::timeout(EXIT_DEADLINE, self.child.wait())
            .await
            .expect("server exits after stdin EOF")
            .expect("wait");
        (rest, status.code())
    }
}

/// The line the server logs (at the default level) once its index covers
/// the tree: the one readiness signal the tests wait on (see [`log_holds`]
/// and [`StderrWatch`]).
pub const INDEX_READY: &str = "index ready";

/// How long a test waits for the index of a small tree: seconds in a debug
/// build, more on a machine busy with other tests.
pub const INDEX_DEADLINE: Duration = Duration::from_secs(120);

/// Waits until the file `log`, which a server writes its log to, holds
/// `line`, for at most `deadline`; true when it did. A file gives no
/// signal, so it is looked at every 50 ms.
pub async fn log_holds(log: &Path, line: &str, deadline: Duration) -> bool {
    let until = tokio::time::Instant::now() + deadline;
    loop {
        if std::fs::read_to_string(log).is_ok_and(|text| text.contains(line)) {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server whose index is built (its debug log `indexed.log` beside the
/// root) and one with the index switched off, on the same project: what
/// the differential tests compare.
pub async fn indexed_and_scanning_servers(project: &TempProject) -> (Server, Server) {
    let outside = project.outside();
    let log = outside.join("indexed.log");
    let no_index = outside.join("no-index.toml");
    std::fs::write(&no_index, "[index]\nenabled = false\n").unwrap();
    let indexed = Server::start_with(
        &project.root,
        &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
        &[],
    )
    .await;
    let scanning = Server::start_with(
        &project.root,
        &["--config", no_index.to_str().unwrap()],
        &[],
    )
    .await;
    wait_for_index(&log).await;
    (indexed, scanning)
}

/// Waits until the server logging to `log` has built its
/// index, so that the build's own work is over.
pub async fn wait_for_index(log: &Path) {
    if !log_holds(log, INDEX_READY, INDEX_DEADLINE).await {
        panic!(
            "the index was not ready within {} s; log:\n{}",
            INDEX_DEADLINE.as_secs(),
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
}

/// A server's stderr, read to the end on a task of its own (so that the
/// server never blocks on a full pipe), signalling the first line that
/// holds what the watch was made for.
pub struct StderrWatch {
    seen: std::sync::Arc<(std::sync::atomic::AtomicBool, tokio::sync::Notify)>,
}

impl StderrWatch {
    pub fn spawn(stderr: tokio::process::ChildStderr, line: &'static str) -> Self {
        use std::sync::atomic::Ordering;
        let seen = std::sync::Arc::new((
            std::sync::atomic::AtomicBool::new(false),
            tokio::sync::Notify::new(),
        ));
        let signal = std::sync::Arc::clone(&seen);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(text)) = lines.next_line().await {
                if text.contains(line) && !signal.0.swap(true, Ordering::SeqCst) {
                    signal.1.notify_waiters();
                }
            }
        });
        Self { seen }
    }

    /// Waits for the line, at most `deadline`; true when it came.
    pub async fn wait(&self, deadline: Duration) -> bool {
        use std::sync::atomic::Ordering;
        let (flag, notify) = &*self.seen;
        let notified = notify.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so a line in between is not
        // missed.
        notified.as_mut().enable();
        if flag.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::timeout(deadline, notified).await.is_ok() || flag.load(Ordering::SeqCst)
    }
}

/// Waits out the file system's clock tick: the server distrusts a stamp
/// younger than the tick (0.1 s) and treats such a file as a candidate
/// whatever its contents, so a test that wants the index to narrow lets
/// the files it just wrote age first. A wait on the clock, not on the
/// server: there is nothing of the server's to observe.
pub async fn let_stamps_settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Copies the folder `from` to `to`, leaving out Python caches (a copy of
/// demo_project for tests that write into it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        if name == "__pycache__" || name == ".pytest_cache" {
            continue;
        }
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).expect("copy");
        }
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

/// Polls `condition` until it holds; panics with `what` after 60 s (a
/// debug build under Wine on two busy cores can take 20 s to write a cache).
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

/// The pid a check's process wrote (with a final newline) to `file`.
pub async fn pid_in(root: &Path, file: &str) -> i32 {
    let path = root.join(file);
    let mut pid = None;
    eventually("the check wrote a pid", || {
        pid = std::fs::read_to_string(&path)
            .ok()
            .filter(|text| text.ends_with('\n'))
            .and_then(|text| text.trim().parse().ok());
        pid.is_some()
    })
    .await;
    pid.expect("pid")
}

/// Makes a FIFO at `path`: a reader that opens it blocks until a writer
/// comes, unless it opens without blocking.
#[cfg(unix)]
pub fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `command` to its end, or kills it after `deadline` and panics: a
/// command-line answer must come in bounded time.
#[cfg(unix)]
pub fn output_within(
    mut command: std::process::Command,
    deadline: Duration,
) -> std::process::Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    match receiver.recv_timeout(deadline) {
        Ok(output) => output.expect("wait"),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            panic!("{command:?} did not answer within {deadline:?}");
        }
    }
}

/// The peak resident memory of process `pid` (`VmHWM`), in KiB.
#[cfg(target_os = "linux")]
pub fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the process's status")
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}
