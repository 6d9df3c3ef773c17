//! The checked-in host configs start the installed binary and serve
//! `demo_project`: each file is read, its variables are expanded the way its
//! host expands them, exactly the command it names is started (with the
//! built binary's folder first on PATH, as an install puts it on PATH), and a
//! tool call completes through rmcp's client. `config <host>` output is
//! checked the same way. (hosts_cli.rs beside it drives the real host CLIs.)
//!
//! Each test runs in a scratch copy of the project so the log lands in the
//! copy's `target/mcp-project-helper.log`, not in the repository.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::{
    SETTINGS_ENV, Server, binary, cli_command, copy_dir, demo_root, repo_dir, test_cache_home,
};
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
        assert!(
            !arg.contains("target/debug") && !arg.contains("target/release"),
            "build folder in args: {arg}"
        );
    }
}

/// A scratch project folder holding a copy of demo_project.
fn scratch_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&demo_root(), &dir.path().join("demo_project"));
    dir
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
        .env("XDG_CACHE_HOME", test_cache_home())
        .env_remove("CLAUDE_PROJECT_DIR");
    for name in SETTINGS_ENV {
        cmd.env_remove(name);
    }
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
async fn claude_code_mcp_json_serves_demo_project_from_any_subfolder() {
    // Claude Code expands nothing here and starts the server in the folder
    // it was launched from; the relative root resolves against the
    // repository top (the folder holding `.git`), so a launch from a
    // subfolder serves the same demo_project.
    let (_, entry) = entry(".mcp.json", "mcpServers");
    assert_points_at_installed_binary(&entry);
    assert!(
        entry.args.iter().all(|a| !a.contains('$')),
        "no variables: {:?}",
        entry.args
    );
    let project = scratch_project();
    std::fs::create_dir_all(project.path().join(".git")).expect("mark the repository top");
    let subfolder = project.path().join("src").join("deep");
    std::fs::create_dir_all(&subfolder).expect("mkdir");
    for cwd in [project.path(), subfolder.as_path()] {
        start_and_call(
            &entry.command,
            &entry.args,
            cwd,
            &[],
            Some(project.path().join("target").join("mcp-project-helper.log")),
        )
        .await;
    }
    assert!(!subfolder.join("target").exists(), "log went to the top");
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
        Some(
            workspace
                .path()
                .join("target")
                .join("mcp-project-helper.log"),
        ),
    )
    .await;
}

// Asks git, which the Wine prefix Windows is tested in lacks; the checked-in
// configs are the same files on every platform.
#[cfg(unix)]
#[test]
fn both_configs_serve_demo_project_and_log_to_an_ignored_folder() {
    // A host session leaves `git status` clean: the log goes where git
    // ignores it.
    let ignored = std::process::Command::new("git")
        .args(["check-ignore", "-q", "target/mcp-project-helper.log"])
        .current_dir(repo_dir())
        .status()
        .expect("run git");
    assert!(ignored.success(), "target/ is not ignored by git");
    let (_, claude) = entry(".mcp.json", "mcpServers");
    let (_, vscode) = entry(".vscode/mcp.json", "servers");
    assert_eq!(
        claude.args,
        [
            "--root",
            "demo_project",
            "--log-file",
            "target/mcp-project-helper.log"
        ]
    );
    assert_eq!(
        vscode.args,
        [
            "--root",
            "${workspaceFolder}/demo_project",
            "--log-file",
            "${workspaceFolder}/target/mcp-project-helper.log"
        ]
    );
}

#[test]
fn vscode_expansion_is_modelled() {
    assert_eq!(
        expand_vscode("${workspaceFolder}/p", Path::new("/w")),
        "/w/p"
    );
}

/// `config ARGS` output: the text, and the document (JSON, or Codex's
/// TOML converted to JSON) that follows the comment lines.
fn config_output(args: &[&str]) -> (String, Value) {
    let output = cli_command(&["config"])
        .args(args)
        .output()
        .expect("run config");
    assert!(output.status.success(), "config {args:?} failed");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let (_, document) = text.split_once("\n\n").expect("a document block");
    let json = if document.starts_with('[') {
        let table: toml::Table = toml::from_str(document).expect("TOML parses");
        serde_json::to_value(table).expect("as JSON")
    } else {
        serde_json::from_str(document).expect("snippet JSON parses")
    };
    (text, json)
}

#[tokio::test]
async fn user_snippets_start_this_binary() {
    let root = dunce::canonicalize(demo_root()).expect("canonical root");
    let root_arg = root.to_str().expect("UTF-8 root");
    let this_binary = dunce::canonicalize(binary()).expect("canonical binary");
    for (host, key, fixed_root) in [
        ("claude-code", "mcpServers", false),
        ("claude-desktop", "mcpServers", true),
        ("cursor", "mcpServers", false),
        ("vscode", "servers", false),
        ("codex", "mcp_servers", false),
        ("gemini", "mcpServers", false),
        ("windsurf", "mcpServers", true),
        ("zed", "context_servers", true),
        ("cline", "mcpServers", true),
        ("jetbrains", "mcpServers", true),
    ] {
        // A named root reaches every snippet.
        let (_, named) = config_output(&[host, "--scope", "user", "--root", root_arg]);
        assert_eq!(
            named[key]["project-helper"]["args"],
            json!(["--root", root_arg]),
            "{host}"
        );
        let output = cli_command(&["config", host, "--scope", "user"])
            .current_dir(&root)
            .output()
            .expect("run config");
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        let (_, document) = text.split_once("\n\n").expect("a document block");
        let json: Value = if host == "codex" {
            serde_json::to_value(toml::from_str::<toml::Table>(document).expect("TOML"))
                .expect("as JSON")
        } else {
            serde_json::from_str(document).expect("JSON")
        };
        assert!(text.contains("user scope"), "{text}");
        let server = &json[key]["project-helper"];
        let command = server["command"].as_str().expect("command");
        assert!(!command.starts_with(r"\\?\"), "plain path: {command}");
        assert_eq!(
            dunce::canonicalize(command).expect("command exists"),
            this_binary,
            "{host}"
        );
        let expected = if fixed_root {
            json!(["--root", root_arg])
        } else {
            json!([])
        };
        assert_eq!(server["args"], expected, "{host}");
    }

    // The pasted snippet really starts a working server.
    let (_, json) = config_output(&["claude-desktop", "--root", root_arg]);
    let server = &json["mcpServers"]["project-helper"];
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
fn project_snippets_name_the_installed_command_and_the_workspace() {
    let root = dunce::canonicalize(demo_root()).expect("canonical root");
    let root_arg = root.to_str().expect("UTF-8 root");
    for (host, key, file, root_value) in [
        ("claude-code", "mcpServers", ".mcp.json", "."),
        (
            "cursor",
            "mcpServers",
            ".cursor/mcp.json",
            "${workspaceFolder}",
        ),
        (
            "vscode",
            "servers",
            ".vscode/mcp.json",
            "${workspaceFolder}",
        ),
        ("codex", "mcp_servers", ".codex/config.toml", "."),
        ("gemini", "mcpServers", ".gemini/settings.json", "."),
    ] {
        // The file goes at the repository top; the root named below it is
        // written relative to it.
        let (text, json) = config_output(&[host, "--root", root_arg]);
        let first = text.lines().next().expect("a first line");
        assert!(first.contains("project scope"), "{text}");
        let top = dunce::canonicalize(repo_dir()).expect("canonical repository");
        let file = file
            .split('/')
            .fold(top, |path, part| path.join(part))
            .display()
            .to_string();
        assert!(first.ends_with(&file), "{host} names {file}:\n{text}");
        let server = &json[key]["project-helper"];
        assert_eq!(server["command"], "mcp-project-helper", "{host}");
        let expected = if root_value == "." {
            "demo_project".to_string()
        } else {
            format!("{root_value}/demo_project")
        };
        assert_eq!(server["args"], json!(["--root", expected]), "{host}");
    }
    // JetBrains keeps a project-level entry in its settings, with the
    // absolute root (it expands no variable).
    let (text, json) = config_output(&["jetbrains", "--scope", "project", "--root", root_arg]);
    assert!(text.contains("project scope"), "{text}");
    assert_eq!(
        json["mcpServers"]["project-helper"]["args"],
        json!(["--root", root_arg])
    );
    for host in ["claude-desktop", "windsurf", "zed", "cline"] {
        let output = cli_command(&["config", host, "--scope", "project"])
            .output()
            .expect("run config");
        assert!(!output.status.success(), "{host} has no project scope");
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(message.contains("use --scope user"), "{message}");
    }
}

#[test]
fn config_docker_form_mounts_the_root_read_only() {
    let root = dunce::canonicalize(demo_root()).expect("canonical root");
    let root_arg = root.to_str().expect("UTF-8 root");
    let (text, json) = config_output(&["claude-code", "--docker", "--root", root_arg]);
    let server = &json["mcpServers"]["project-helper"];
    assert_eq!(server["command"], "docker");
    let args = server["args"].as_array().expect("args");
    let mount = format!("type=bind,source={root_arg},target=/project,readonly");
    assert_eq!(args[..3], [json!("run"), json!("-i"), json!("--rm")]);
    assert!(args.contains(&json!(mount)), "{server}");
    assert!(
        text.lines().any(|l| l.starts_with(
            "claude mcp add --scope project --transport stdio project-helper -- docker run -i --rm"
        ) || l.starts_with(
            "claude mcp add --scope project --transport stdio project-helper '--' docker run -i --rm"
        )),
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
    let (text, json) = config_output(&["claude-desktop", "--root", &verbatim]);
    let server = &json["mcpServers"]["project-helper"];
    assert_eq!(server["args"], json!(["--root", plain]), "{text}");
    let command = server["command"].as_str().expect("command");
    assert!(!command.starts_with(r"\\?\"), "{command}");
    assert!(command.ends_with(".exe"), "{command}");
}

/// docs/integrations.md's table of hosts says what `config` does: a host
/// whose project scope is "none" is refused `--scope project`, every other
/// one gets it, and "fixed `--root`" in the user-scope column means the
/// user entry names the root.
#[test]
fn the_hosts_table_in_the_docs_agrees_with_the_cli() {
    let docs = std::fs::read_to_string(repo_dir().join("docs/integrations.md")).expect("read");
    let hosts = [
        ("Claude Code", "claude-code"),
        ("Claude Desktop", "claude-desktop"),
        ("Cursor", "cursor"),
        ("VS Code", "vscode"),
        ("Codex CLI", "codex"),
        ("Gemini CLI", "gemini"),
        ("Windsurf", "windsurf"),
        ("Zed", "zed"),
        ("Cline", "cline"),
        ("JetBrains AI Assistant", "jetbrains"),
    ];
    let root = dunce::canonicalize(demo_root()).expect("canonical root");
    for (title, host) in hosts {
        let row = docs
            .lines()
            .find(|line| line.starts_with(&format!("| {title} |")))
            .unwrap_or_else(|| panic!("no table row for {title}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (project, user_root) = (cells[2], cells[4]);
        let output = cli_command(&["config", host, "--scope", "project"])
            .current_dir(&root)
            .output()
            .expect("run config");
        assert_eq!(
            output.status.success(),
            !project.starts_with("none"),
            "{title}: the docs say project scope is {project:?}; {output:?}"
        );
        let output = cli_command(&["config", host, "--scope", "user"])
            .current_dir(&root)
            .output()
            .expect("run config");
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        let (_, document) = text.split_once("\n\n").expect("a document block");
        assert_eq!(
            document.contains("--root"),
            user_root.starts_with("fixed `--root`"),
            "{title}: the docs say the user root is {user_root:?}:\n{text}"
        );
    }
}

/// Where a script sends the reader in docs/install.md, that section exists.
#[test]
fn the_install_sections_scripts_point_at_exist() {
    let install = std::fs::read_to_string(repo_dir().join("docs/install.md")).expect("read");
    let script = "tests/support/podman.sh";
    let text = std::fs::read_to_string(repo_dir().join(script)).expect("read script");
    let section = text
        .split("docs/install.md, \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{script} names no docs/install.md section"));
    assert!(
        install
            .lines()
            .any(|line| line.starts_with('#') && line.trim_start_matches('#').trim() == section),
        "docs/install.md has no section {section:?} ({script} points at it)"
    );
}

/// README.md's "The two commands": exactly two, the second is what `.ci/run`
/// runs, and the first one's server (what `cargo run --release --` starts)
/// answers from the repository top on the documented arguments.
#[tokio::test]
async fn the_readmes_two_commands_are_what_ci_runs_and_the_server_answers() {
    let readme = std::fs::read_to_string(repo_dir().join("README.md")).expect("read");
    let section = readme
        .split("## The two commands")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a section named The two commands");
    let commands: Vec<&str> = section
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .map(str::trim)
        .collect();
    assert_eq!(
        commands,
        ["cargo run --release -- --root demo_project", "cargo test"]
    );
    let ci = std::fs::read_to_string(repo_dir().join(".ci/run")).expect("read .ci/run");
    let test_runs: Vec<&str> = ci
        .lines()
        .filter(|line| line.trim_start().starts_with("cargo test"))
        .collect();
    assert_eq!(test_runs, ["cargo test"]);
    let server_args: Vec<String> = commands[0]
        .split_once(" -- ")
        .expect("cargo run -- ARGS")
        .1
        .split_whitespace()
        .map(str::to_string)
        .collect();
    start_and_call(
        &binary().to_string_lossy(),
        &server_args,
        &repo_dir(),
        &[],
        None,
    )
    .await;
}
