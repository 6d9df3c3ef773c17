//! The container image, driven exactly as an editor's `docker run -i` config
//! drives it: `run -i --rm --network none --read-only --user 65532
//! -v demo_project:/project:ro`, with rmcp's client on stdin/stdout.
//!
//! `tests/support/build-image.sh` builds the static binary and the
//! Dockerfile's `prebuilt` stage once per test run; `tests/support/podman.sh`
//! uses a running Docker engine, else podman with this machine's settings.
//! The tests skip (with a message) only when neither exists; under
//! `CI=true` that is a failure.
//!
//! Linux only: the image is a Linux image built from a Linux binary.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::process::{Command as StdCommand, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::{self, Server, demo_root, repo_dir};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// Images larger than this fail the build: the published bound on the image
/// (docs/install.md). The ten grammars' parse tables are most of it.
const MAX_IMAGE_BYTES: u64 = 24 * 1024 * 1024;

fn support(script: &str) -> PathBuf {
    repo_dir().join("tests").join("support").join(script)
}

/// The image tag, built on first use; `None` when no container engine exists.
fn image() -> Option<&'static str> {
    static IMAGE: OnceLock<Option<String>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            if common::container_engine().is_none() {
                common::cannot_run(
                    "container tests",
                    "neither podman nor a running Docker engine was found (install podman and runc, or start Docker)",
                );
                return None;
            }
            let output = StdCommand::new(support("build-image.sh"))
                .stderr(Stdio::inherit())
                .output()
                .expect("run tests/support/build-image.sh");
            assert!(output.status.success(), "build-image.sh failed");
            let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
            let image = stdout
                .lines()
                .find_map(|line| line.strip_prefix("image="))
                .expect("build-image.sh prints image=<tag>");
            Some(image.to_string())
        })
        .as_deref()
}

fn engine() -> StdCommand {
    StdCommand::new(support("podman.sh"))
}

/// `podman.sh run -i --rm --network none --read-only --user 65532
/// -v demo_project:/project:ro [extra] IMAGE [server args]`.
fn run_command(image: &str, extra: &[&str], server_args: &[&str]) -> Command {
    let mut command = Command::new(support("podman.sh"));
    command
        .args(["run", "-i", "--rm", "--network", "none", "--read-only"])
        .args(["--user", "65532", "-v"])
        .arg(format!("{}:/project:ro", demo_root().display()))
        .args(extra)
        .arg(image)
        .args(server_args);
    command
}

async fn connect(image: &str) -> Server {
    let (transport, _stderr) = TokioChildProcess::builder(run_command(image, &[], &[]))
        .stderr(Stdio::null())
        .spawn()
        .expect("start the container");
    let client = ().serve(transport).await.expect("initialize through the container");
    Server { client }
}

#[test]
fn image_is_small_static_and_unprivileged() {
    let Some(image) = image() else { return };
    let output = engine()
        .args(["image", "inspect", image])
        .output()
        .expect("inspect image");
    assert!(output.status.success(), "image inspect failed");
    let inspect: Value = serde_json::from_slice(&output.stdout).expect("inspect JSON");
    let inspect = &inspect[0];

    let size = inspect["Size"].as_u64().expect("Size");
    assert!(
        size < MAX_IMAGE_BYTES,
        "image is {size} bytes, the limit is {MAX_IMAGE_BYTES}"
    );
    // FROM scratch plus one COPY: the binary is the only layer.
    assert_eq!(
        inspect["RootFS"]["Layers"].as_array().map(Vec::len),
        Some(1)
    );

    let config = &inspect["Config"];
    assert_eq!(config["User"], "65532:65532");
    assert_eq!(
        config["Entrypoint"],
        json!(["/usr/local/bin/mcp-project-helper", "--root", "/project"])
    );
    let labels = &config["Labels"];
    assert_eq!(
        labels["org.opencontainers.image.title"],
        "mcp-project-helper"
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "MIT");
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        labels["org.opencontainers.image.source"]
            .as_str()
            .is_some_and(|s| s.starts_with("https://github.com/")),
        "source label: {labels}"
    );
}

#[tokio::test]
async fn read_tools_work_through_the_container() {
    let Some(image) = image() else { return };
    let server = connect(image).await;

    let tools = server.client.list_all_tools().await.expect("tools/list");
    for name in [
        "search_project_files",
        "read_project_file",
        "list_project_directory",
        "find_project_files",
        "get_docs",
    ] {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is offered"));
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert_eq!(annotations.read_only_hint, Some(true), "{name}");
    }

    let listing = server.ok("list_project_directory", json!({})).await;
    let names: Vec<&str> = listing["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["README.md", "demo_app", "docs", "pyproject.toml", "tests"]
    );

    let read = server
        .ok("read_project_file", json!({"path": "demo_app/models.py"}))
        .await;
    let on_disk = std::fs::read_to_string(demo_root().join("demo_app/models.py")).expect("read");
    assert_eq!(read["content"], on_disk.as_str());

    let found = server
        .ok("find_project_files", json!({"pattern": "**/*.py"}))
        .await;
    assert_eq!(
        found["files"],
        json!([
            "demo_app/__init__.py",
            "demo_app/models.py",
            "demo_app/services.py",
            "tests/__init__.py",
            "tests/test_services.py"
        ])
    );

    let refused = server
        .err("read_project_file", json!({"path": "../etc/passwd"}))
        .await;
    assert!(!refused.contains("root:"), "leaked: {refused}");
    server.stop().await;
}

#[tokio::test]
async fn search_and_docs_work_through_the_container() {
    let Some(image) = image() else { return };
    let server = connect(image).await;

    let search = server
        .ok("search_project_files", json!({"query": "apply_discount"}))
        .await;
    assert_eq!(search["count"], 4, "{search}");
    let matches = search["matches"].as_array().expect("matches");
    assert!(
        matches.iter().all(|m| m["text"]
            .as_str()
            .is_some_and(|t| t.contains("apply_discount"))),
        "{search}"
    );

    let docs = server.ok("get_docs", json!({"query": "security"})).await;
    let headings: Vec<&str> = docs["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["heading"].as_str())
        .collect();
    assert!(headings.contains(&"Security"), "{docs}");
    server.stop().await;
}

#[tokio::test]
async fn run_project_check_reports_the_missing_toolchain() {
    let Some(image) = image() else { return };
    let server = connect(image).await;
    // The image holds one binary and no Python, so the detected `tests`
    // check (python -m pytest) cannot start: a tool error, not a crash.
    let message = server
        .err("run_project_check", json!({"check_name": "tests"}))
        .await;
    let lower = message.to_lowercase();
    assert!(lower.contains("python"), "names the program: {message}");
    assert!(
        lower.contains("not found") || lower.contains("path"),
        "says it is missing: {message}"
    );
    // The server is still serving after the failed check.
    server.ok("list_project_directory", json!({})).await;
    server.stop().await;
}

#[tokio::test]
async fn writes_are_impossible() {
    let Some(image) = image() else { return };
    // No tool writes; the server's only write is its log file. Point it at
    // the mounted project and at the image's own filesystem: both refuse.
    for target in [
        "/project/written-by-container.log",
        "/written-by-container.log",
    ] {
        let output = run_command(image, &[], &["--log-file", target])
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run the container");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "writing {target} succeeded");
        assert!(
            stderr.contains("Read-only file system"),
            "{target}: {stderr}"
        );
    }
    assert!(!demo_root().join("written-by-container.log").exists());
}

#[tokio::test]
async fn stdin_eof_ends_the_container() {
    let Some(image) = image() else { return };
    let name = format!("mcp-project-helper-eof-{}", std::process::id());
    let mut child = run_command(image, &["--name", &name], &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the container");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));

    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "container-test", "version": "1"}}
    });
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .expect("write initialize");
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut line))
        .await
        .expect("initialize answered")
        .expect("read stdout");
    let answer: Value = serde_json::from_str(&line).expect("JSON-RPC line");
    assert_eq!(answer["result"]["serverInfo"]["name"], "mcp-project-helper");

    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("the container exits after stdin EOF")
        .expect("wait");
    assert_eq!(status.code(), Some(0));

    // --rm removed it: nothing named `name` is left, running or stopped.
    let filter = format!("name=^{name}$");
    let output = engine()
        .args(["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
        .output()
        .expect("list containers");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "");
}

/// The entry `config <host> --docker` prints, run as the host would run it
/// (the engine through podman.sh, the test image for the published one),
/// on a project whose folder name holds `:`, spaces and non-ASCII.
#[tokio::test]
async fn the_printed_docker_entry_serves_a_folder_named_with_colon_space_and_non_ascii() {
    let Some(image) = image() else { return };
    let parent = tempfile::tempdir().expect("tempdir");
    let project = parent.path().join("shop: Zoë's ünïcode copy");
    common::copy_dir(&demo_root(), &project);
    // The container's user (65532) must be able to read the copy.
    let status = StdCommand::new("chmod")
        .args(["-R", "a+rX"])
        .arg(parent.path())
        .status()
        .expect("chmod");
    assert!(status.success());
    let root = project.to_str().expect("UTF-8");
    let output = common::cli_command(&["config", "claude-code", "--scope", "user", "--docker"])
        .args(["--root", root])
        .output()
        .expect("run config");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let (_, document) = text.split_once("\n\n").expect("a document block");
    let entry: Value = serde_json::from_str(document).expect("JSON");
    let entry = &entry["mcpServers"]["project-helper"];
    assert_eq!(entry["command"], "docker");
    let args: Vec<String> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|arg| arg.as_str().expect("string").to_string())
        .map(|arg| {
            if arg == mcp_project_helper::hosts::IMAGE {
                image.to_string()
            } else {
                arg
            }
        })
        .collect();
    assert!(args.contains(&format!("type=bind,source={root},target=/project,readonly")));
    let mut command = Command::new(support("podman.sh"));
    command.args(&args);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("start the container");
    let client = ().serve(transport).await.expect("initialize through the container");
    let server = Server { client };
    let read = server
        .ok("read_project_file", json!({"path": "demo_app/models.py"}))
        .await;
    let on_disk = std::fs::read_to_string(project.join("demo_app/models.py")).expect("read");
    assert_eq!(read["content"], on_disk.as_str());
    server.stop().await;
}
