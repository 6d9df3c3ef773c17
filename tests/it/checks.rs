//! `run_project_check` and the `checks` subcommand, through the real binary
//! and a real MCP client over stdio.

use crate::common;
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::{Arc, Mutex};
#[cfg(unix)]
use std::time::Duration;

use crate::common::eventually;
use crate::common::{RawServer, cancel_notification};
use crate::common::{Server, demo_root};
#[cfg(unix)]
use crate::common::{pid_in, text_of};
#[cfg(unix)]
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
#[cfg(unix)]
use rmcp::service::{NotificationContext, RunningService};
#[cfg(unix)]
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A project folder and an operator config file kept outside it.
struct Setup {
    root: TempDir,
    _config_dir: TempDir,
    config: PathBuf,
}

impl Setup {
    fn new(config_toml: &str) -> Setup {
        let root = tempfile::tempdir().expect("root");
        let config_dir = tempfile::tempdir().expect("config dir");
        let config = config_dir.path().join("helper.toml");
        std::fs::write(&config, config_toml).expect("write config");
        Setup {
            root,
            _config_dir: config_dir,
            config,
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn args(&self) -> Vec<&str> {
        vec!["--config", self.config.to_str().expect("utf-8 path")]
    }

    async fn server(&self) -> Server {
        Server::start_with(self.root(), &self.args(), &[]).await
    }

    fn raw_server(&self) -> RawServer {
        RawServer::start(self.root(), &self.args())
    }
}

fn check(name: &str) -> Value {
    json!({ "check_name": name })
}

/// Every process (zombies included) whose process group is `pgid`, read
/// from the process table.
#[cfg(target_os = "linux")]
fn group_members(pgid: i32) -> Vec<String> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ..."; comm may contain anything.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.get(2).and_then(|pgrp| pgrp.parse::<i32>().ok()) == Some(pgid) {
            members.push(format!("{pid} {}", stat.trim_end()));
        }
    }
    members
}

/// The whole tree is gone from the process table: no process and no zombie.
#[cfg(target_os = "linux")]
async fn assert_tree_gone(pgid: i32) {
    let mut members = Vec::new();
    for _ in 0..200 {
        members = group_members(pgid);
        if members.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("processes of the check's group {pgid} are left: {members:#?}");
}

/// An rmcp client that records the progress notifications it receives.
#[cfg(unix)]
#[derive(Clone, Default)]
struct ProgressRecorder {
    seen: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

#[cfg(unix)]
impl ProgressRecorder {
    fn messages(&self) -> Vec<String> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .filter_map(|param| param.message.clone())
            .collect()
    }

    fn progress_values(&self) -> Vec<f64> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .map(|param| param.progress)
            .collect()
    }
}

#[cfg(unix)]
impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().expect("lock").push(params);
    }
}

#[cfg(unix)]
async fn start_recording_client(
    setup: &Setup,
) -> (
    RunningService<RoleClient, ProgressRecorder>,
    ProgressRecorder,
) {
    let config = setup.config.to_string_lossy().into_owned();
    let command = common::server_command(Some(setup.root()), &["--config", &config]);
    let recorder = ProgressRecorder::default();
    let client = common::connect(recorder.clone(), command)
        .await
        .expect("server starts");
    (client, recorder)
}

#[cfg(unix)]
async fn call_on(
    client: &RunningService<RoleClient, ProgressRecorder>,
    name: &str,
) -> rmcp::model::CallToolResult {
    let Value::Object(arguments) = check(name) else {
        unreachable!()
    };
    let params = CallToolRequestParams::new("run_project_check").with_arguments(arguments);
    tokio::time::timeout(Duration::from_secs(60), client.call_tool(params))
        .await
        .expect("tool call timed out")
        .expect("tool call failed at the protocol level")
}

// ---------------------------------------------------------------------------
// The prototype's fourth verification request, and the schema.

/// Needs Python with pytest, which the Wine prefix Windows is tested in has
/// not: on Windows the `.cmd` checks below run the same runner.
#[cfg(unix)]
#[tokio::test]
async fn demo_project_tests_pass_through_the_tool() {
    let server = Server::start(&demo_root()).await;
    let result = server.ok("run_project_check", check("tests")).await;
    assert_eq!(result["check_name"], "tests");
    assert_eq!(result["exit_code"], 0, "{result:#}");
    assert_eq!(result["passed"], true);
    assert!(
        result["stdout"]
            .as_str()
            .expect("stdout")
            .contains("2 passed"),
        "{result:#}"
    );
    assert_eq!(result["truncated"], false);
    assert!(result["duration_ms"].is_u64());
    assert!(result.get("error").is_none());
    server.stop().await;
}

#[tokio::test]
async fn input_schema_lists_and_describes_the_checks() {
    let server = Server::start(&demo_root()).await;
    let tools = server.client.list_tools(None).await.expect("tools/list");
    let tool = tools
        .tools
        .iter()
        .find(|tool| tool.name == "run_project_check")
        .expect("run_project_check listed");
    let check_name = &tool.input_schema["properties"]["check_name"];
    assert_eq!(check_name["enum"], json!(["tests"]));
    let description = check_name["description"].as_str().expect("description");
    assert!(description.contains("python -m pytest -q"), "{description}");
    let output = tool.output_schema.as_ref().expect("output schema");
    for field in [
        "status",
        "check_name",
        "exit_code",
        "passed",
        "stdout",
        "truncated",
    ] {
        assert!(
            output["properties"].get(field).is_some(),
            "{field} in {output:?}"
        );
    }
    let annotations = tool.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.read_only_hint, Some(false));
    assert_eq!(annotations.destructive_hint, Some(false));
    assert_eq!(annotations.open_world_hint, Some(false));
    server.stop().await;
}

// ---------------------------------------------------------------------------
// Refusals: nothing is spawned.

#[cfg(unix)]
#[tokio::test]
async fn unknown_name_spawns_nothing_and_lists_known_names() {
    let setup = Setup::new("[checks]\nmarker = [\"touch\", \"spawned.marker\"]\n");
    let marker = setup.root().join("spawned.marker");
    let server = setup.server().await;

    for unknown in ["markers", "marker; touch spawned.marker", "", "../marker"] {
        let message = server.err("run_project_check", check(unknown)).await;
        assert!(message.contains("unknown check"), "{message}");
        assert!(message.contains("known checks are marker"), "{message}");
        assert!(!message.contains('\n'), "one line: {message}");
        assert!(!marker.exists(), "'{unknown}' spawned the marker check");
    }

    // The configured check really would have created the marker.
    let result = server.ok("run_project_check", check("marker")).await;
    assert_eq!(result["passed"], true);
    assert!(marker.exists());
    server.stop().await;
}

#[tokio::test]
async fn missing_program_is_a_named_error_and_the_server_keeps_serving() {
    let setup = Setup::new("[checks]\nghost = [\"definitely-not-installed-4711\", \"--flag\"]\n");
    let server = setup.server().await;
    let message = server.err("run_project_check", check("ghost")).await;
    assert!(message.contains("check 'ghost' cannot run"), "{message}");
    assert!(
        message.contains("program 'definitely-not-installed-4711' was not found on PATH"),
        "{message}"
    );
    assert!(
        message.contains("searched "),
        "says where it looked: {message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
    let listing = server.ok("list_project_directory", json!({})).await;
    assert_eq!(listing["status"], "success");
    server.stop().await;
}

/// Windows: `npm` is `npm.cmd`. A check naming a program without extension
/// finds the `.cmd` through PATHEXT, and it is started correctly, with the
/// operator's arguments passed literally (cmd.exe metacharacters included).
#[cfg(windows)]
#[tokio::test]
async fn a_cmd_script_is_found_through_pathext_and_started_safely() {
    let bin = tempfile::tempdir().expect("bin dir");
    std::fs::write(
        bin.path().join("greet.cmd"),
        "@echo off\r\necho greet:%1\r\nexit /b 0\r\n",
    )
    .expect("write greet.cmd");
    let path = format!(
        "{};{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // TOML literal strings keep Windows backslashes as they are.
    let setup = Setup::new(&format!(
        "[checks.greet]\nargv = [\"greet\", \"a&b\"]\nenv = {{ PATH = '{path}' }}\n"
    ));
    let server = setup.server().await;
    let result = server.ok("run_project_check", check("greet")).await;
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["passed"], true);
    let stdout = result["stdout"].as_str().expect("stdout");
    // %1 keeps the quotes Rust added, so cmd.exe prints `&` literally.
    assert!(stdout.contains("greet:\"a&b\""), "{stdout}");
    server.stop().await;
}

/// Windows: a folder holding `scripts` (name, body) as `.cmd` files, and the
/// PATH (as a TOML literal string) that finds them first.
#[cfg(windows)]
fn cmd_scripts(scripts: &[(&str, &str)]) -> (TempDir, String) {
    let bin = tempfile::tempdir().expect("bin dir");
    for (name, body) in scripts {
        std::fs::write(bin.path().join(format!("{name}.cmd")), body).expect("write script");
    }
    let path = format!(
        "{};{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (bin, path)
}

/// Windows: exit code and both streams of a failing `.cmd` check, run by
/// the runner without Python or a Unix shell.
#[cfg(windows)]
#[tokio::test]
async fn a_failing_cmd_check_reports_exit_code_and_output() {
    let (_bin, path) = cmd_scripts(&[(
        "fail",
        "@echo off\r\necho about to fail\r\necho oops 1>&2\r\nexit /b 3\r\n",
    )]);
    let setup = Setup::new(&format!(
        "[checks.fail]\nargv = [\"fail\"]\nenv = {{ PATH = '{path}' }}\n"
    ));
    let server = setup.server().await;
    let result = server.ok("run_project_check", check("fail")).await;
    assert_eq!(result["status"], "success");
    assert_eq!(result["passed"], false);
    assert_eq!(result["exit_code"], 3);
    assert_eq!(result["stdout"], "about to fail\r\n");
    assert_eq!(result["stderr"].as_str().map(str::trim_end), Some("oops"));
    server.stop().await;
}

/// Windows: how many `ping.exe` processes run (the grandchild of the
/// `hang` script below; no other test starts one).
#[cfg(windows)]
fn running_pings() -> usize {
    let listed = std::process::Command::new("tasklist")
        .output()
        .expect("tasklist runs");
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|line| line.to_ascii_lowercase().starts_with("ping.exe"))
        .count()
}

/// Windows: the check runs in a Job object, so its whole tree (cmd.exe and
/// the ping.exe it started) dies on a timeout, on cancellation and when the
/// server exits. One test, because all three watch the same process name.
#[cfg(windows)]
#[tokio::test]
async fn a_cmd_checks_whole_tree_dies_on_timeout_cancel_and_server_exit() {
    let (_bin, path) = cmd_scripts(&[(
        "hang",
        "@echo off\r\necho started\r\nping -n 600 127.0.0.1 >nul\r\n",
    )]);
    let setup = Setup::new(&format!(
        "[checks.slow]\nargv = [\"hang\"]\ntimeout_seconds = 2\nenv = {{ PATH = '{path}' }}\n\
         [checks.hang]\nargv = [\"hang\"]\nenv = {{ PATH = '{path}' }}\n"
    ));
    assert_eq!(running_pings(), 0, "a ping.exe runs before the test");

    let server = setup.server().await;
    let result = server.call("run_project_check", check("slow")).await;
    assert_eq!(result.is_error, Some(true));
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["error"], "check timed out after 2s");
    assert_eq!(structured["exit_code"], Value::Null);
    assert_eq!(structured["stdout"], "started\r\n");
    eventually("the timed-out check's ping.exe is gone", || {
        running_pings() == 0
    })
    .await;
    server.stop().await;

    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    server
        .send(&json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "run_project_check", "arguments": {"check_name": "hang"}}
        }))
        .await;
    eventually("the check's ping.exe runs", || running_pings() == 1).await;
    server.send(&cancel_notification(7)).await;
    eventually("the cancelled check's ping.exe is gone", || {
        running_pings() == 0
    })
    .await;
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));

    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    server
        .send(&json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "run_project_check", "arguments": {"check_name": "hang"}}
        }))
        .await;
    eventually("the check's ping.exe runs", || running_pings() == 1).await;
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
    eventually("the exited server's check's ping.exe is gone", || {
        running_pings() == 0
    })
    .await;
}

// ---------------------------------------------------------------------------
// Running.

#[cfg(unix)]
#[tokio::test]
async fn failing_check_reports_exit_code_and_output() {
    let setup = Setup::new(
        "[checks.fail]\nargv = [\"sh\", \"-c\", \"echo about to fail; echo oops >&2; exit 3\"]\n",
    );
    let server = setup.server().await;
    let result = server.ok("run_project_check", check("fail")).await;
    assert_eq!(result["status"], "success");
    assert_eq!(result["passed"], false);
    assert_eq!(result["exit_code"], 3);
    assert_eq!(result["stdout"], "about to fail\n");
    assert_eq!(result["stderr"], "oops\n");
    assert_eq!(result["truncated"], false);
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn check_runs_in_the_root_with_its_extra_environment() {
    let setup = Setup::new(
        "[checks.where]\nargv = [\"sh\", \"-c\", \"pwd; echo $CHECK_EXTRA; echo ${HOME:+home-inherited}\"]\nenv = { CHECK_EXTRA = \"from-config\" }\n",
    );
    let server = setup.server().await;
    let result = server.ok("run_project_check", check("where")).await;
    let stdout = result["stdout"].as_str().expect("stdout");
    let lines: Vec<&str> = stdout.lines().collect();
    let root = std::fs::canonicalize(setup.root()).expect("canonical root");
    assert_eq!(Path::new(lines[0]), root);
    assert_eq!(lines[1], "from-config");
    assert_eq!(lines[2], "home-inherited");
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn ten_megabyte_flood_on_both_streams_returns_their_ends() {
    let script = "yes e | head -c 10485760 >&2 & yes o | head -c 10485760; wait; echo; echo END-OUT; echo END-ERR >&2";
    let setup = Setup::new(&format!(
        "[checks.flood]\nargv = [\"sh\", \"-c\", \"{script}\"]\n"
    ));
    let server = setup.server().await;
    let result = server.ok("run_project_check", check("flood")).await;
    assert_eq!(result["passed"], true, "{}", result["stderr"]);
    assert_eq!(result["truncated"], true);
    let stdout = result["stdout"].as_str().expect("stdout");
    let stderr = result["stderr"].as_str().expect("stderr");
    assert_eq!(stdout.chars().count(), 20_000);
    assert!(
        stdout.ends_with("o\n\nEND-OUT\n"),
        "{}",
        &stdout[stdout.len() - 40..]
    );
    assert_eq!(stderr.chars().count(), 20_000);
    assert!(
        stderr.ends_with("e\nEND-ERR\n"),
        "{}",
        &stderr[stderr.len() - 40..]
    );
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn output_cap_comes_from_the_operator_config() {
    let setup = Setup::new(
        "[limits]\noutput_chars = 10\n[checks]\nshort = [\"sh\", \"-c\", \"echo 0123456789abcdef\"]\n",
    );
    let server = setup.server().await;
    let result = server.ok("run_project_check", check("short")).await;
    assert_eq!(result["stdout"], "789abcdef\n");
    assert_eq!(result["truncated"], true);
    server.stop().await;
}

// ---------------------------------------------------------------------------
// Timeout, cancellation and shutdown kill the whole tree.

/// A check whose shell leads a group holding a grandchild.
#[cfg(unix)]
const TREE_SCRIPT: &str = "echo $$ > tree.pid; echo started; sleep 100 & sleep 100";

#[cfg(target_os = "linux")]
#[tokio::test]
async fn timeout_kills_the_grandchild_and_returns_the_spec_error() {
    let setup = Setup::new(&format!(
        "[checks.slow]\nargv = [\"sh\", \"-c\", \"{TREE_SCRIPT}\"]\ntimeout_seconds = 1\n"
    ));
    let server = setup.server().await;
    let result = server.call("run_project_check", check("slow")).await;
    assert_eq!(result.is_error, Some(true));
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let text: Value = serde_json::from_str(&text_of(&result)).expect("text is the same JSON");
    assert_eq!(text, structured);
    assert_eq!(structured["status"], "error");
    assert_eq!(structured["check_name"], "slow");
    assert_eq!(structured["error"], "check timed out after 1s");
    assert_eq!(structured["exit_code"], Value::Null);
    assert_eq!(structured["passed"], false);
    assert_eq!(structured["stdout"], "started\n");
    assert_eq!(structured["stderr"], "");
    assert_eq!(structured["truncated"], false);

    let pgid = pid_in(setup.root(), "tree.pid").await;
    assert_tree_gone(pgid).await;
    server.stop().await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancellation_kills_the_tree_and_nothing_more_is_answered() {
    let setup = Setup::new(&format!(
        "[checks]\nhang = [\"sh\", \"-c\", \"{TREE_SCRIPT}\"]\n"
    ));
    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    server
        .send(&json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "run_project_check", "arguments": {"check_name": "hang"},
                       "_meta": {"progressToken": "raw-token"}}
        }))
        .await;
    // The raw path carries progress too.
    loop {
        let message = server.recv().await;
        assert_ne!(message["id"], 7, "answered before cancellation: {message}");
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "raw-token");
            break;
        }
    }
    let pgid = pid_in(setup.root(), "tree.pid").await;
    assert!(!group_members(pgid).is_empty(), "the check runs");

    server.send(&cancel_notification(7)).await;
    assert_tree_gone(pgid).await;

    server
        .send(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
        .await;
    loop {
        let message = server.recv().await;
        assert_ne!(message["id"], 7, "a cancelled call was answered: {message}");
        if message["id"] == 8 {
            break;
        }
    }
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn server_shutdown_kills_a_running_check() {
    let setup = Setup::new(&format!(
        "[checks]\nhang = [\"sh\", \"-c\", \"{TREE_SCRIPT}\"]\n"
    ));
    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    server
        .send(&json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "run_project_check", "arguments": {"check_name": "hang"}}
        }))
        .await;
    let pgid = pid_in(setup.root(), "tree.pid").await;
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
    assert_tree_gone(pgid).await;
}

// ---------------------------------------------------------------------------
// Progress and the one-at-a-time rule.

#[cfg(unix)]
#[tokio::test]
async fn progress_notifications_carry_the_last_output_line() {
    let setup = Setup::new(
        "[checks]\ntalk = [\"sh\", \"-c\", \"echo step-one; sleep 3; echo step-two\"]\n",
    );
    let (client, recorder) = start_recording_client(&setup).await;
    let result = call_on(&client, "talk").await;
    assert_ne!(result.is_error, Some(true), "{}", text_of(&result));
    eventually("progress notifications arrive", || {
        recorder
            .messages()
            .iter()
            .any(|message| message == "step-one")
    })
    .await;
    let values = recorder.progress_values();
    assert!(values.len() >= 2, "{values:?}");
    assert!(
        values.windows(2).all(|pair| pair[0] < pair[1]),
        "progress must increase: {values:?}"
    );
    let _ = client.cancel().await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_second_check_waits_its_turn_and_says_so() {
    let setup = Setup::new(
        "[checks]\nhold = [\"sh\", \"-c\", \"sleep 3\"]\nquick = [\"sh\", \"-c\", \"echo quick-done\"]\n",
    );
    let (client, recorder) = start_recording_client(&setup).await;
    let client = Arc::new(client);
    let first = tokio::spawn({
        let client = client.clone();
        async move { call_on(&client, "hold").await }
    });
    eventually("the first check runs", || {
        recorder
            .messages()
            .iter()
            .any(|message| message.starts_with("running 'hold'"))
    })
    .await;

    let second = call_on(&client, "quick").await;
    let second = second.structured_content.expect("structuredContent");
    assert_eq!(second["stdout"], "quick-done\n");
    let first = first.await.expect("first call");
    assert_eq!(
        first.structured_content.expect("structured")["passed"],
        true
    );

    let messages = recorder.messages();
    assert!(
        messages
            .iter()
            .any(|message| message.starts_with("waiting: 'hold' is running")),
        "{messages:#?}"
    );
}

// ---------------------------------------------------------------------------
// The `checks` subcommand and start-up validation.

fn run_cli(args: &[&str]) -> std::process::Output {
    common::cli_command(args).output().expect("run the binary")
}

#[test]
fn checks_subcommand_prints_programs_and_reasons() {
    let demo = demo_root();
    let output = run_cli(&["checks", "--root", demo.to_str().expect("utf-8")]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(stdout.contains("tests: python -m pytest -q"), "{stdout}");
    assert!(stdout.contains("detected from pyproject.toml"), "{stdout}");
    // Where Python is (the Wine prefix Windows is tested in has none) or
    // why it is unavailable.
    let python_missing = "unavailable: no Python interpreter found for 'python'";
    assert!(
        stdout.contains("program: ") || (cfg!(windows) && stdout.contains(python_missing)),
        "{stdout}"
    );

    let setup = Setup::new("[checks]\nghost = [\"definitely-not-installed-4711\"]\n");
    let mut args = vec!["checks", "--root", setup.root().to_str().expect("utf-8")];
    args.extend(setup.args());
    let output = run_cli(&args);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(
        stdout.contains("ghost: definitely-not-installed-4711"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("unavailable: program 'definitely-not-installed-4711' was not found on PATH"),
        "{stdout}"
    );
}

#[test]
fn bad_operator_config_is_rejected_at_start_up_with_line_and_key() {
    let setup = Setup::new(
        "[checks]\ntests = [\"cargo\", \"test\"]\n[checks.lint]\nargv = [\"cargo\"]\ntimeout = 5\n",
    );
    let mut args = vec!["--root", setup.root().to_str().expect("utf-8")];
    args.extend(setup.args());
    let output = run_cli(&args);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "nothing on stdout");
    let stderr = String::from_utf8(output.stderr).expect("utf-8");
    assert!(stderr.contains("line 5"), "{stderr}");
    assert!(stderr.contains("timeout"), "{stderr}");
}

#[test]
fn the_documented_example_config_is_accepted() {
    let docs = std::fs::read_to_string(common::repo_dir().join("docs/checks.md")).expect("docs");
    let start = docs.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let end = start + docs[start..].find("```").expect("end of the example");
    let setup = Setup::new(&docs[start..end]);
    let mut args = vec!["checks", "--root", setup.root().to_str().expect("utf-8")];
    args.extend(setup.args());
    let output = run_cli(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    for line in [
        "lint: cargo clippy --all-targets -- -D warnings",
        "smoke: scripts/smoke.sh --quick",
        "tests: cargo test --workspace",
        "typecheck: npx --no-install tsc --noEmit",
        "timeout: 300s",
    ] {
        assert!(stdout.contains(line), "{line} in {stdout}");
    }
}
