//! The checked-in editor configs start the installed binary and serve
//! `demo_project`: each file is read, its variables are expanded the way its
//! host expands them, exactly the command it names is started (with the
//! built binary's folder first on PATH, as an install puts it on PATH), and a
//! tool call completes through rmcp's client.
//!
//! Each test runs in a scratch copy of the project so the log lands in the
//! copy's `evidence/tool-calls.log`, not in the repository.

mod common;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{Server, binary, demo_root, repo_dir};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::process::Command;

/// One stdio server entry of an editor config, before expansion.
struct Entry {
    command: String,
    args: Vec<String>,
}

fn entry(file: &str, servers_key: &str) -> (Value, Entry) {
    let text = std::fs::read_to_string(repo_dir().join(file)).expect("read config");
    let json: Value = serde_json::from_str(&text).expect("config is JSON");
    let server = &json[servers_key]["project-helper"];
    let command = server["command"].as_str().expect("command").to_string();
    let args = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect();
    (server.clone(), Entry { command, args })
}

/// Claude Code: `${VAR}` and `${VAR:-default}` (the default when VAR is
/// unset or empty); an unset `${VAR}` without default stays as written.
fn expand_claude_code(text: &str, env: &HashMap<&str, String>) -> String {
    expand(text, |inner| {
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env.get(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => value.clone(),
            (None, Some(default)) => default.to_string(),
            (None, None) => format!("${{{inner}}}"),
        }
    })
}

/// VS Code: `${workspaceFolder}`, `${userHome}` and `${env:NAME}`; any other
/// variable fails the test, so the config cannot silently rely on one this
/// test does not model.
fn expand_vscode(text: &str, workspace: &Path) -> String {
    expand(text, |inner| match inner {
        "workspaceFolder" => workspace.display().to_string(),
        "userHome" => std::env::var("HOME")
            .or_else(|_| std::env::var("USERPROFILE"))
            .expect("home folder"),
        _ => match inner.strip_prefix("env:") {
            Some(name) => std::env::var(name).unwrap_or_default(),
            None => panic!("VS Code variable ${{{inner}}} is not modelled by this test"),
        },
    })
}

/// Replaces each `${...}` in `text` with `resolve(inside)`.
fn expand(text: &str, mut resolve: impl FnMut(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let end = rest[start..].find('}').expect("closing brace") + start;
        out.push_str(&rest[..start]);
        out.push_str(&resolve(&rest[start + 2..end]));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The installed command must be found on PATH, never in a build folder.
fn assert_points_at_installed_binary(entry: &Entry) {
    assert_eq!(entry.command, "mcp-project-helper");
    for arg in &entry.args {
        assert!(!arg.contains("target/"), "build folder in args: {arg}");
    }
}

/// A scratch project folder holding a copy of demo_project.
fn scratch_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&demo_root(), &dir.path().join("demo_project"));
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        if name == "__pycache__" || name == ".pytest_cache" {
            continue;
        }
        let path = entry.path();
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).expect("copy");
        }
    }
}

/// PATH with the built binary's folder first.
fn path_with_binary() -> OsString {
    let bin_dir = binary().parent().expect("binary folder").to_path_buf();
    let mut dirs = vec![bin_dir];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).expect("join PATH")
}

/// Starts `command args` the way an editor does and checks that tools work
/// on the demo project and, when `log` is given, that the call is logged
/// there.
async fn start_and_call(
    command: &str,
    args: &[String],
    cwd: &Path,
    env: &[(&str, &Path)],
    log: Option<PathBuf>,
) {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .current_dir(cwd)
        .env("PATH", path_with_binary())
        .env_remove("MCP_PROJECT_HELPER_ROOT")
        .env_remove("PROJECT_ROOT")
        .env_remove("MCP_PROJECT_HELPER_CONFIG")
        .env_remove("MCP_PROJECT_HELPER_LOG_FILE")
        .env_remove("CLAUDE_PROJECT_DIR");
    for (key, value) in env {
        cmd.env(key, value);
    }
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start `{command}` from PATH: {e}"));
    let server = Server {
        client: ().serve(transport).await.expect("initialize"),
    };

    let read = server
        .ok("read_project_file", json!({"path": "demo_app/models.py"}))
        .await;
    let on_disk = std::fs::read_to_string(demo_root().join("demo_app/models.py")).expect("read");
    assert_eq!(read["content"], on_disk.as_str());
    let listing = server.ok("list_project_directory", json!({})).await;
    assert!(listing["count"].as_u64().is_some_and(|n| n > 0));
    server.stop().await;

    let Some(log) = log else { return };
    // The log line is written when the call completes; allow the file a
    // moment to appear on slow file systems (this bounds a wait, it does not
    // assert a duration).
    let mut logged = String::new();
    for _ in 0..50 {
        logged = std::fs::read_to_string(&log).unwrap_or_default();
        if logged.contains("read_project_file") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        logged.contains("read_project_file"),
        "tool call not logged in {}:\n{logged}",
        log.display()
    );
}

#[tokio::test]
async fn claude_code_mcp_json_with_claude_project_dir_set() {
    let (_, entry) = entry(".mcp.json", "mcpServers");
    assert_points_at_installed_binary(&entry);
    let project = scratch_project();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let env = HashMap::from([("CLAUDE_PROJECT_DIR", project.path().display().to_string())]);
    let command = expand_claude_code(&entry.command, &env);
    let args: Vec<String> = entry
        .args
        .iter()
        .map(|a| expand_claude_code(a, &env))
        .collect();
    assert!(
        args.iter().all(|a| !a.contains("${")),
        "unexpanded: {args:?}"
    );
    start_and_call(
        &command,
        &args,
        elsewhere.path(),
        &[("CLAUDE_PROJECT_DIR", project.path())],
        Some(project.path().join("evidence").join("tool-calls.log")),
    )
    .await;
}

#[tokio::test]
async fn claude_code_mcp_json_falls_back_to_the_working_directory() {
    // Without CLAUDE_PROJECT_DIR the `:-.` default applies; Claude Code
    // starts servers in the project folder, so `.` is the project.
    let (_, entry) = entry(".mcp.json", "mcpServers");
    let project = scratch_project();
    let env = HashMap::new();
    let command = expand_claude_code(&entry.command, &env);
    let args: Vec<String> = entry
        .args
        .iter()
        .map(|a| expand_claude_code(a, &env))
        .collect();
    assert!(args.iter().any(|a| a.starts_with("./")), "{args:?}");
    start_and_call(
        &command,
        &args,
        project.path(),
        &[],
        Some(project.path().join("evidence").join("tool-calls.log")),
    )
    .await;
}

#[tokio::test]
async fn vscode_mcp_json_with_workspace_folder() {
    let (server, entry) = entry(".vscode/mcp.json", "servers");
    assert_eq!(server["type"], "stdio");
    assert_points_at_installed_binary(&entry);
    let workspace = scratch_project();
    let command = expand_vscode(&entry.command, workspace.path());
    let args: Vec<String> = entry
        .args
        .iter()
        .map(|a| expand_vscode(a, workspace.path()))
        .collect();
    start_and_call(
        &command,
        &args,
        workspace.path(),
        &[],
        Some(workspace.path().join("evidence").join("tool-calls.log")),
    )
    .await;
}

#[test]
fn both_configs_serve_demo_project_and_log_to_evidence() {
    let (_, claude) = entry(".mcp.json", "mcpServers");
    let (_, vscode) = entry(".vscode/mcp.json", "servers");
    assert_eq!(
        claude.args,
        [
            "--root",
            "${CLAUDE_PROJECT_DIR:-.}/demo_project",
            "--log-file",
            "${CLAUDE_PROJECT_DIR:-.}/evidence/tool-calls.log"
        ]
    );
    assert_eq!(
        vscode.args,
        [
            "--root",
            "${workspaceFolder}/demo_project",
            "--log-file",
            "${workspaceFolder}/evidence/tool-calls.log"
        ]
    );
}

#[test]
fn expansion_follows_each_host() {
    let env = HashMap::from([("A", "x".to_string()), ("EMPTY", String::new())]);
    assert_eq!(expand_claude_code("${A}/${A:-d}", &env), "x/x");
    assert_eq!(expand_claude_code("${EMPTY:-d}/${UNSET:-d}", &env), "d/d");
    assert_eq!(expand_claude_code("${UNSET}", &env), "${UNSET}");
    assert_eq!(
        expand_vscode("${workspaceFolder}/p", Path::new("/w")),
        "/w/p"
    );
}

/// `config <host>` output: the `#` comment lines, then the JSON document.
fn config_output(args: &[&str]) -> (String, Value) {
    let output = std::process::Command::new(binary())
        .arg("config")
        .args(args)
        .env_remove("MCP_PROJECT_HELPER_ROOT")
        .env_remove("PROJECT_ROOT")
        .output()
        .expect("run config");
    assert!(output.status.success(), "config {args:?} failed");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let start = text.find("\n{").expect("a JSON block") + 1;
    let json = serde_json::from_str(&text[start..]).expect("snippet JSON parses");
    (text, json)
}

#[tokio::test]
async fn config_snippets_start_this_binary() {
    let root = dunce::canonicalize(demo_root()).expect("canonical root");
    let root_arg = root.to_str().expect("UTF-8 root");
    let this_binary = dunce::canonicalize(binary()).expect("canonical binary");
    for (host, key) in [
        ("claude-code", "mcpServers"),
        ("claude-desktop", "mcpServers"),
        ("cursor", "mcpServers"),
        ("vscode", "servers"),
    ] {
        let (_, json) = config_output(&[host, "--root", root_arg]);
        let server = &json[key]["project-helper"];
        let command = server["command"].as_str().expect("command");
        assert!(!command.starts_with(r"\\?\"), "plain path: {command}");
        assert_eq!(
            dunce::canonicalize(command).expect("command exists"),
            this_binary,
            "{host}"
        );
        assert_eq!(server["args"], json!(["--root", root_arg]), "{host}");
    }

    // The pasted snippet really starts a working server.
    let (text, json) = config_output(&["vscode", "--root", root_arg]);
    assert!(text.starts_with("# VS Code"), "{text}");
    let server = &json["servers"]["project-helper"];
    let args: Vec<String> = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string").to_string())
        .collect();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let command = server["command"].as_str().expect("command");
    start_and_call(command, &args, elsewhere.path(), &[], None).await;
}

#[test]
fn config_docker_form_mounts_the_root_read_only() {
    let root = dunce::canonicalize(demo_root()).expect("canonical root");
    let root_arg = root.to_str().expect("UTF-8 root");
    let (text, json) = config_output(&["claude-code", "--docker", "--root", root_arg]);
    let server = &json["mcpServers"]["project-helper"];
    assert_eq!(server["command"], "docker");
    let args = server["args"].as_array().expect("args");
    let mount = format!("{root_arg}:/project:ro");
    assert_eq!(args[..3], [json!("run"), json!("-i"), json!("--rm")]);
    assert!(args.contains(&json!(mount)), "{server}");
    assert!(
        text.lines().any(|l| l
            .starts_with("claude mcp add --transport stdio project-helper -- docker run -i --rm")),
        "{text}"
    );
}

/// Windows: a `\\?\` root (as some tools hand out) is printed in the plain
/// drive-letter form, which every editor and `docker -v` understand.
#[cfg(windows)]
#[test]
fn config_prints_plain_drive_paths_for_verbatim_roots() {
    let root = dunce::canonicalize(demo_root()).expect("canonical root");
    let plain = root.to_str().expect("UTF-8 root");
    assert!(
        plain.as_bytes().get(1) == Some(&b':'),
        "drive path: {plain}"
    );
    let verbatim = format!(r"\\?\{plain}");
    let (text, json) = config_output(&["cursor", "--root", &verbatim]);
    let server = &json["mcpServers"]["project-helper"];
    assert_eq!(server["args"], json!(["--root", plain]), "{text}");
    let command = server["command"].as_str().expect("command");
    assert!(!command.starts_with(r"\\?\"), "{command}");
    assert!(command.ends_with(".exe"), "{command}");
}
