//! Hostile input to the process, the transport, the configuration and the
//! logs: checks that detach from their tree or write to the
//! server's stdout through /proc, malformed JSON-RPC, operator files that
//! are FIFOs, stdout itself or huge, deny globs that can never match, and
//! inputs that would make huge log lines. Every test drives the real binary.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{RawServer, demo_root, server_command};
#[cfg(target_os = "linux")]
use crate::common::{binary, cancel_notification, eventually, pid_in};
use serde_json::{Value, json};
use tempfile::TempDir;
#[cfg(target_os = "linux")]
use tokio::process::Command;

/// A project root plus an operator config in a folder beside it.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new(config_toml: &str) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("proj")).expect("root");
        std::fs::write(dir.path().join("helper.toml"), config_toml).expect("config");
        Setup { dir }
    }

    #[cfg(target_os = "linux")]
    fn root(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("helper.toml")
    }

    fn args(&self) -> Vec<String> {
        vec!["--config".to_string(), self.config().display().to_string()]
    }

    #[cfg(target_os = "linux")]
    fn raw_server(&self) -> RawServer {
        let args = self.args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        RawServer::start(&self.root(), &args)
    }
}

use crate::common::call_request as call;

fn check_call(id: u64, check_name: &str) -> Value {
    call(id, "run_project_check", json!({"check_name": check_name}))
}

/// The process exists and is not a zombie.
#[cfg(target_os = "linux")]
fn is_running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|close| stat[close + 1..].split_whitespace().next());
    state != Some("Z")
}

/// Asserts the process is dead, and kills it if not so that a failing test
/// leaves nothing behind.
#[cfg(target_os = "linux")]
fn assert_dead(pid: i32, what: &str) {
    let running = is_running(pid);
    if running {
        // SAFETY: kill only sends a signal.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    assert!(!running, "{what} (pid {pid}) outlived it");
}

/// Starts a detached daemon (its pid in `daemon.pid`), waits until it
/// wrote its pid, then runs `rest`.
#[cfg(target_os = "linux")]
fn daemon_script(detach: &str, rest: &str) -> String {
    let daemon = "sh -c 'echo $$ > daemon.pid.tmp; mv daemon.pid.tmp daemon.pid; exec sleep 1099'";
    let detached = match detach {
        "setsid" => format!("setsid {daemon} &"),
        _ => format!("(setsid {daemon} &)"),
    };
    format!("{detached}\nwhile [ ! -s daemon.pid ]; do sleep 0.05; done; {rest}")
}

#[cfg(target_os = "linux")]
fn config_with_checks(checks: &[(&str, String, Option<u64>)]) -> String {
    let mut toml = String::new();
    for (name, script, timeout) in checks {
        toml.push_str(&format!(
            "[checks.{name}]\nargv = [\"sh\", \"-c\", {}]\n",
            toml_string(script)
        ));
        if let Some(timeout) = timeout {
            toml.push_str(&format!("timeout_seconds = {timeout}\n"));
        }
    }
    toml
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).expect("string")
}

// ---------------------------------------------------------------- finding 9

#[cfg(target_os = "linux")]
#[tokio::test]
async fn what_a_check_detaches_is_gone_when_it_ends_or_times_out() {
    let setup = Setup::new(&config_with_checks(&[
        ("setsid", daemon_script("setsid", "echo main done"), None),
        ("double", daemon_script("double", "echo main done"), None),
        ("slow", daemon_script("setsid", "sleep 60"), Some(1)),
    ]));
    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    for (id, name) in [(1, "setsid"), (2, "double"), (3, "slow")] {
        let _ = std::fs::remove_file(setup.root().join("daemon.pid"));
        server.send(&check_call(id, name)).await;
        let answer = server.recv_id(&json!(id)).await;
        let result = &answer["result"]["structuredContent"];
        if name == "slow" {
            assert_eq!(result["error"], "check timed out after 1s", "{answer}");
        } else {
            assert_eq!(result["stdout"], "main done\n", "{answer}");
        }
        // Killed and reaped before the answer was sent.
        let daemon = pid_in(&setup.root(), "daemon.pid").await;
        assert_dead(daemon, &format!("the daemon of check '{name}'"));
    }
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn what_a_check_detaches_is_gone_when_it_is_cancelled() {
    let setup = Setup::new(&config_with_checks(&[(
        "daemon",
        daemon_script("double", "sleep 60"),
        None,
    )]));
    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    server.send(&check_call(7, "daemon")).await;
    let daemon = pid_in(&setup.root(), "daemon.pid").await;
    server.send(&cancel_notification(7)).await;
    eventually("the cancelled check's daemon is dead", || {
        !is_running(daemon)
    })
    .await;
    // The server keeps serving.
    server
        .send(&json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}))
        .await;
    assert_eq!(server.recv_id(&json!(8)).await["result"], json!({}));
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn what_a_check_detaches_is_gone_when_the_server_exits() {
    let setup = Setup::new(&config_with_checks(&[(
        "daemon",
        daemon_script("setsid", "sleep 60"),
        None,
    )]));
    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    server.send(&check_call(3, "daemon")).await;
    let daemon = pid_in(&setup.root(), "daemon.pid").await;
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
    assert_dead(
        daemon,
        "a check's daemon after the server exited on stdin EOF",
    );
}

/// SIGKILL leaves the server no chance to clean up: the check's program
/// still dies (parent-death signal); what it detached is documented to
/// survive (docs/security.md).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_checks_program_dies_with_a_killed_server() {
    let setup = Setup::new(&config_with_checks(&[(
        "main",
        "echo $$ > main.pid.tmp; mv main.pid.tmp main.pid; exec sleep 1098".to_string(),
        None,
    )]));
    let mut server = setup.raw_server();
    server.initialize("2025-06-18").await;
    server.send(&check_call(4, "main")).await;
    let program = pid_in(&setup.root(), "main.pid").await;
    server.child.start_kill().expect("SIGKILL the server");
    let _ = server.child.wait().await;
    eventually("the check's program died with the server", || {
        !is_running(program)
    })
    .await;
}

// ---------------------------------------------------------------- /proc/<ppid>/fd/1

/// A check may try to write to the server's stdout through
/// `/proc/$PPID/fd/1`; the server is not dumpable, so a check running as
/// the same (non-root) user is refused. Root (CAP_SYS_PTRACE) can still do
/// it, which docs/security.md says; so when the tests run as root the
/// server is started as `nobody` with setpriv (without options otherwise).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_check_cannot_write_to_the_servers_stdout_through_proc() {
    use std::os::unix::fs::PermissionsExt;
    let setup = Setup::new(&config_with_checks(&[(
        "sneak",
        "if printf 'SNEAKED\\n' > /proc/$PPID/fd/1; then echo wrote; else echo refused; fi"
            .to_string(),
        None,
    )]));
    for path in [setup.dir.path().to_path_buf(), setup.root()] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let server_args = [
        "--root".to_string(),
        setup.root().display().to_string(),
        "--config".to_string(),
        setup.config().display().to_string(),
    ];
    // The server's stdout is a pipe made by the server's own user (through
    // `| cat`): a pipe made by root would refuse `nobody` by its mode alone.
    let mut command = Command::new("setpriv");
    let mut server_binary = binary();
    // SAFETY: geteuid only reads the caller's id.
    if unsafe { libc::geteuid() } == 0 {
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        // The build folder may not be open to `nobody` (a checkout in /root).
        let copy = setup.dir.path().join("mcp-project-helper");
        std::fs::copy(&server_binary, &copy).expect("copy the binary");
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        server_binary = copy;
    }
    command
        .args(["--", "sh", "-c", "\"$0\" \"$@\" | cat"])
        .arg(server_binary)
        .args(&server_args);
    let mut server = RawServer::spawn(command);
    server.initialize("2025-06-18").await;
    server.send(&check_call(1, "sneak")).await;
    // Reading fails on the sneaked line if it reached stdout.
    let answer = server.recv_id(&json!(1)).await;
    let result = &answer["result"]["structuredContent"];
    assert_eq!(result["stdout"], "refused\n", "{answer}");
    assert!(
        result["stderr"]
            .as_str()
            .is_some_and(|err| err.contains("ermission denied")),
        "{answer}"
    );
    let (rest, code) = server.finish().await;
    assert_eq!(rest, "", "nothing but answers on stdout");
    assert_eq!(code, Some(0));
}

// ---------------------------------------------------------------- protocol edges

#[tokio::test]
async fn bare_json_values_get_invalid_request_with_null_id() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    for (index, line) in ["null", "42", "\"hi\"", "true", "[]", "{}"]
        .iter()
        .enumerate()
    {
        server.send_line(line).await;
        // The decoder answers before it reads the next line, so the error
        // comes before the ping's answer.
        server
            .send(&json!({"jsonrpc": "2.0", "id": index, "method": "ping"}))
            .await;
        let first = server.recv().await;
        assert_eq!(first["id"], Value::Null, "{line}: {first}");
        assert_eq!(first["error"]["code"], -32600, "{line}: {first}");
        assert_eq!(server.recv_id(&json!(index)).await["result"], json!({}));
    }
    let (rest, code) = server.finish().await;
    assert_eq!((rest.as_str(), code), ("", Some(0)));
}

#[tokio::test]
async fn unrepresentable_numbers_keep_the_id_and_bad_params_are_invalid_params() {
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    let lines = [
        (
            1,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_project_file","arguments":{"path":"README.md","n":1e400}}}"#.to_string(),
        ),
        (2, r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":null}"#.to_string()),
        (
            3,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_project_file","arguments":"README.md"}}"#.to_string(),
        ),
        (
            4,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_project_file","arguments":42}}"#.to_string(),
        ),
        (
            5,
            format!(
                r#"{{"jsonrpc":"2.0","method":"ping","params":{{"deep":{}{}}},"id":5}}"#,
                "[".repeat(200),
                "]".repeat(200)
            ),
        ),
    ];
    for (id, line) in &lines {
        server.send_line(line).await;
        let answer = server.recv_id(&json!(id)).await;
        assert_eq!(answer["error"]["code"], -32602, "{line}: {answer}");
    }
    let (rest, code) = server.finish().await;
    assert_eq!((rest.as_str(), code), ("", Some(0)));
}

/// Generated requests (known and unknown methods, arbitrary params, numbers
/// serde cannot hold, deep nesting) over the real binary: every id is
/// answered exactly once and stdout carries only JSON-RPC.
#[tokio::test]
async fn fuzzed_requests_are_each_answered_exactly_once() {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("false".to_string()),
            Just("1e400".to_string()),
            Just("123456789012345678901234567890".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            ".{0,10}".prop_map(|s| Value::String(s).to_string()),
            Just(format!("{}{}", "[".repeat(150), "]".repeat(150))),
        ];
        leaf.prop_recursive(4, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("path".to_string()),
                            Just("query".to_string()),
                            Just("pattern".to_string()),
                            "[a-z_]{1,8}"
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|pairs| {
                    let members: Vec<String> = pairs
                        .into_iter()
                        .map(|(key, value)| format!("{}:{value}", Value::String(key)))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }
    let method = prop::sample::select(vec![
        "ping",
        "tools/list",
        "tools/call",
        "tools/call",
        "tools/call",
        "resources/list",
        "prompts/list",
        "completion/complete",
        "logging/setLevel",
        "no/such/method",
    ]);
    let tool = prop::sample::select(vec![
        "search_project_files",
        "read_project_file",
        "list_project_directory",
        "find_project_files",
        "get_docs",
        "no_such_tool",
    ]);
    let request = (method, tool, prop::option::of(json_text()), any::<bool>());

    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let mut server = RawServer::start(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    let mut expected = Vec::new();
    for index in 0..300u64 {
        let (method, tool, params, string_id) =
            request.new_tree(&mut runner).expect("generate").current();
        let id = if string_id {
            json!(format!("id-{index}"))
        } else {
            json!(index + 1000)
        };
        let params = match (method, params) {
            ("tools/call", Some(arguments)) => {
                format!(r#","params":{{"name":"{tool}","arguments":{arguments}}}"#)
            }
            (_, Some(params)) => format!(r#","params":{params}"#),
            (_, None) => String::new(),
        };
        server
            .send_line(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"{params}}}"#
            ))
            .await;
        expected.push(id);
    }
    let mut answered: HashMap<String, usize> = HashMap::new();
    while answered.len() < expected.len() {
        let message = server.recv().await;
        if message.get("method").is_none() {
            *answered.entry(message["id"].to_string()).or_default() += 1;
        }
    }
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    for line in rest.lines() {
        let message: Value = serde_json::from_str(line).expect("stdout line is JSON");
        if message.get("method").is_none() {
            *answered.entry(message["id"].to_string()).or_default() += 1;
        }
    }
    for id in &expected {
        assert_eq!(answered.get(&id.to_string()), Some(&1), "id {id}");
    }
    assert_eq!(answered.len(), expected.len(), "answers to unknown ids");
}

// ---------------------------------------------------------------- start-up

/// Runs the server to completion with `args` (stdin closed at once), with
/// stdout going to `stdout`; returns (exit code, stderr).
async fn start_up(args: &[&str], stdout: Stdio) -> (Option<i32>, String) {
    let child = server_command(Some(&demo_root()), args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("start-up must not hang")
        .expect("wait");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[cfg(unix)]
#[tokio::test]
async fn a_log_file_that_is_stdout_is_refused_at_start_up() {
    for log_file in ["/dev/stdout", "/proc/self/fd/1"] {
        let child = server_command(Some(&demo_root()), &["--log-file", log_file])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .expect("no hang")
            .expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{log_file}: {stderr}");
        assert!(
            output.stdout.is_empty(),
            "{log_file}: stdout got {:?}",
            output.stdout
        );
        assert!(
            stderr.contains("not a regular file (a FIFO or pipe)"),
            "{stderr}"
        );
    }
    // stdout redirected to a regular file, and the same file as log file.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.jsonl");
    let file = std::fs::File::create(&out).expect("create");
    let (code, stderr) = start_up(
        &["--log-file", &out.display().to_string()],
        Stdio::from(file),
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is the same file as stdout"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "");
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_as_log_file_or_config_fails_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let fifo = fifo.display().to_string();
    for flag in ["--log-file", "--config"] {
        let (code, stderr) = start_up(&[flag, &fifo], Stdio::null()).await;
        assert_eq!(code, Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains("not a regular file (a FIFO or pipe)"),
            "{stderr}"
        );
    }
}

#[tokio::test]
async fn a_config_with_20000_checks_is_refused_naming_the_limit() {
    let mut toml = String::from("[checks]\n");
    for index in 0..20_000 {
        toml.push_str(&format!("check{index} = [\"true\"]\n"));
    }
    let setup = Setup::new(&toml);
    let args = setup.args();
    let (code, stderr) = start_up(&[&args[0], &args[1]], Stdio::null()).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("20000 checks configured; at most 100 are allowed"),
        "{stderr}"
    );
    let big = setup.dir.path().join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(1024 * 1024))).expect("write");
    let (code, stderr) = start_up(&["--config", &big.display().to_string()], Stdio::null()).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("larger than 1048576 bytes (1 MiB)"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------- finding 3

#[tokio::test]
async fn deny_globs_that_can_never_match_are_start_up_errors() {
    for (glob, fix) in [
        ("secrets/", Some("secrets/**")),
        ("/private/**", Some("private/**")),
        ("sub\\private\\**", Some("sub/private/**")),
        ("", None),
    ] {
        let setup = Setup::new(&format!("[deny]\nglobs = [{}]\n", toml_string(glob)));
        let args = setup.args();
        let (code, stderr) = start_up(&[&args[0], &args[1]], Stdio::null()).await;
        assert_eq!(code, Some(2), "{glob:?}: {stderr}");
        assert!(stderr.contains("can never match"), "{glob:?}: {stderr}");
        if let Some(fix) = fix {
            assert!(
                stderr.contains(&format!("write {fix:?} instead")),
                "{stderr}"
            );
        }
    }
}

// ---------------------------------------------------------------- logging

/// A host that pipes stderr and never reads it fills the pipe after a
/// hundred or so calls' lines: the server keeps answering (the lines wait
/// in a bounded queue, then are dropped and counted), and once stderr is
/// read the count is written, then the lines that follow.
#[tokio::test]
async fn a_server_whose_stderr_is_never_read_keeps_answering() {
    // More lines than the pipe (64 KiB, lines of about 250 bytes) and the
    // queue (1,024 lines) hold together.
    const CALLS: u64 = 1600;
    let (mut server, stderr) = RawServer::start_with_stderr(&demo_root(), &[]);
    server.initialize("2025-11-25").await;
    let missing = format!("missing/{}.txt", "x".repeat(120));
    for id in 1..=CALLS {
        server
            .send(&call(id, "read_project_file", json!({"path": missing})))
            .await;
        let answer = server.recv_id(&json!(id)).await;
        assert_eq!(answer["result"]["isError"], true, "call {id}: {answer}");
    }
    // Read from now on: the writer gets through again.
    let (lines, mut read) = tokio::sync::mpsc::unbounded_channel();
    let reading = tokio::spawn(async move {
        use tokio::io::AsyncBufReadExt;
        let mut stderr = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = stderr.next_line().await {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let last = CALLS + 1;
    server
        .send(&call(
            last,
            "read_project_file",
            json!({"path": "last-call.txt"}),
        ))
        .await;
    server.recv_id(&json!(last)).await;
    // The lines up to the last call's, written once those queued before it
    // are out.
    let mut text = String::new();
    let written = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = read.recv().await {
            text.push_str(&line);
            text.push('\n');
            if line.contains("last-call.txt") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        written,
        Ok(true),
        "the last call's line never came:\n{text}"
    );
    let (rest, code) = server.finish().await;
    assert_eq!((rest.as_str(), code), ("", Some(0)));
    reading.abort();
    let dropped = text
        .lines()
        .find_map(|line| line.strip_prefix("mcp-project-helper: "))
        .and_then(|note| note.split(' ').next())
        .and_then(|count| count.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no count of dropped lines in:\n{text}"));
    assert!((1..CALLS).contains(&dropped), "{dropped} dropped");
    assert!(
        text.contains("log lines dropped: stderr was not read as fast as they came"),
        "{text}"
    );
    let after_note = text.split("log lines dropped").nth(1).unwrap_or_default();
    assert!(after_note.contains("last-call.txt"), "{text}");
}

// ---------------------------------------------------------------- finding 11

/// A megabyte of input in a check name, a tool name and a path makes log
/// lines of a bounded length that still say how big the input was.
#[tokio::test]
async fn huge_inputs_make_bounded_log_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("server.log");
    let log_arg = log.display().to_string();
    let mut server = RawServer::start(&demo_root(), &["--log-file", &log_arg]);
    server.initialize("2025-11-25").await;
    let huge = "x".repeat(1024 * 1024);
    server.send(&check_call(1, &huge)).await;
    server.recv_id(&json!(1)).await;
    server.send(&call(2, &huge, json!({}))).await;
    server.recv_id(&json!(2)).await;
    server
        .send(&call(
            3,
            "read_project_file",
            json!({"path": format!("/{huge}")}),
        ))
        .await;
    server.recv_id(&json!(3)).await;
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
    let text = std::fs::read_to_string(&log).expect("log file");
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 8 * 1024, "a log line of {longest} bytes");
    let cut = text.matches("bytes)").count();
    assert!(cut >= 3, "every huge field is marked as cut:\n{text}");
}
