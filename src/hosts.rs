//! `mcp-project-helper config <host> [--docker]`: prints the MCP config
//! snippet an editor needs to start this server on one project.
//!
//! The snippet names the absolute path of the running binary (or the
//! container image) and the project root, so it works when pasted as is.
//! JSON is built with `serde_json`, never by concatenation, so Windows paths
//! come out with their backslashes escaped.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use crate::cli::{ConfigArgs, Host};
use crate::config::Config;

/// The name the server is registered under in every host's config.
pub const SERVER_NAME: &str = "project-helper";

/// The image the release workflow pushes (`.github/workflows/publish-image.yml`
/// tags `ghcr.io/<repository owner>/mcp-project-helper`).
pub const IMAGE: &str = "ghcr.io/mcp-project-helper/mcp-project-helper:latest";

/// How an editor starts the server: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
}

impl Launch {
    /// This binary, serving `root`.
    pub fn native(binary: &str, root: &str) -> Self {
        Self {
            command: binary.to_string(),
            args: vec!["--root".to_string(), root.to_string()],
        }
    }

    /// The container image, with `root` mounted read-only at `/project`
    /// (the image's entrypoint passes `--root /project`). `-i` keeps stdin
    /// open for the protocol; the server needs no network.
    pub fn docker(root: &str) -> Self {
        let args = [
            "run",
            "-i",
            "--rm",
            "--network",
            "none",
            "-v",
            &format!("{root}:/project:ro"),
            IMAGE,
        ];
        Self {
            command: "docker".to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }
}

/// How the `claude mcp add` one-liner quotes its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// sh, bash, zsh: single quotes.
    Posix,
    /// cmd and PowerShell: double quotes (Windows paths cannot contain `"`).
    Windows,
}

impl Shell {
    pub fn current() -> Self {
        if cfg!(windows) {
            Shell::Windows
        } else {
            Shell::Posix
        }
    }

    fn quote(self, word: &str) -> String {
        let plain = !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=\\".contains(c));
        let plain = plain && !(self == Shell::Posix && word.contains('\\'));
        if plain {
            return word.to_string();
        }
        match self {
            Shell::Posix => format!("'{}'", word.replace('\'', r"'\''")),
            Shell::Windows => format!("\"{word}\""),
        }
    }
}

/// One stdio server entry, fields in the order the hosts' docs show them.
#[derive(Debug, Serialize)]
struct StdioServer<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    command: &'a str,
    args: &'a [String],
}

/// The host's config document holding just this server: `mcpServers` for
/// Claude Code, Claude Desktop and Cursor; `servers` with `type: stdio` for
/// VS Code.
pub fn host_json(host: Host, launch: &Launch) -> Result<String, serde_json::Error> {
    let (key, kind) = match host {
        Host::ClaudeCode | Host::ClaudeDesktop | Host::Cursor => ("mcpServers", None),
        Host::Vscode => ("servers", Some("stdio")),
    };
    let server = StdioServer {
        kind,
        command: &launch.command,
        args: &launch.args,
    };
    let document = BTreeMap::from([(key, BTreeMap::from([(SERVER_NAME, server)]))]);
    serde_json::to_string_pretty(&document)
}

/// The `claude mcp add` command that registers `launch` with Claude Code.
pub fn claude_mcp_add(launch: &Launch, shell: Shell) -> String {
    let mut words = vec![
        "claude".to_string(),
        "mcp".to_string(),
        "add".to_string(),
        "--transport".to_string(),
        "stdio".to_string(),
        SERVER_NAME.to_string(),
        "--".to_string(),
    ];
    words.push(shell.quote(&launch.command));
    words.extend(launch.args.iter().map(|a| shell.quote(a)));
    words.join(" ")
}

/// The whole text `config` prints: `#` comment lines that say where the
/// snippet goes, then the snippet.
pub fn render(host: Host, launch: &Launch, shell: Shell) -> Result<String, serde_json::Error> {
    let json = host_json(host, launch)?;
    Ok(match host {
        Host::ClaudeCode => format!(
            "# Claude Code: run this once in the project folder:\n\
             {}\n\n\
             # Or merge this into .mcp.json in the project root (Claude Code asks before using it):\n\
             {json}\n",
            claude_mcp_add(launch, shell)
        ),
        Host::ClaudeDesktop => format!(
            "# Claude Desktop: merge this into claude_desktop_config.json, then restart Claude Desktop.\n\
             #   macOS:   ~/Library/Application Support/Claude/claude_desktop_config.json\n\
             #   Windows: %APPDATA%\\Claude\\claude_desktop_config.json\n\
             {json}\n"
        ),
        Host::Cursor => format!(
            "# Cursor: merge this into .cursor/mcp.json in the project (or ~/.cursor/mcp.json for every project).\n\
             {json}\n"
        ),
        Host::Vscode => format!(
            "# VS Code: merge this into .vscode/mcp.json in the workspace (or run \"MCP: Open User Configuration\").\n\
             {json}\n"
        ),
    })
}

pub fn print_snippet(args: &ConfigArgs, config: &Config) -> ExitCode {
    let text = match snippet_for_this_binary(args, config) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("mcp-project-helper config: {message}");
            return ExitCode::FAILURE;
        }
    };
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-project-helper config: cannot write to stdout: {error}");
            ExitCode::FAILURE
        }
    }
}

fn snippet_for_this_binary(args: &ConfigArgs, config: &Config) -> Result<String, String> {
    let root = config.root_or_working_dir()?;
    let root = utf8(&root, "the project root")?;
    let launch = if args.docker {
        Launch::docker(root)
    } else {
        let binary = std::env::current_exe()
            .map_err(|error| format!("cannot find the path of this binary: {error}"))?;
        Launch::native(utf8(&binary, "this binary's path")?, root)
    };
    render(args.host, &launch, Shell::current())
        .map_err(|error| format!("cannot format the snippet: {error}"))
}

fn utf8<'a>(path: &'a Path, what: &str) -> Result<&'a str, String> {
    path.to_str().ok_or_else(|| {
        format!(
            "{what} ({}) is not valid UTF-8, which JSON configs cannot hold; use a UTF-8 path",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    const WINDOWS_EXE: &str = r"C:\Users\Zoë\My Tools\mcp-project-helper.exe";
    const WINDOWS_ROOT: &str = r"D:\work\shop";

    /// The JSON part of a rendered snippet, parsed back.
    fn json_of(text: &str) -> Value {
        let start = text.find("\n{").expect("snippet has a JSON block") + 1;
        serde_json::from_str(&text[start..]).expect("snippet JSON parses")
    }

    fn server(json: &Value, key: &str) -> Value {
        json[key][SERVER_NAME].clone()
    }

    #[test]
    fn windows_paths_round_trip_through_every_host_json() {
        let launch = Launch::native(WINDOWS_EXE, WINDOWS_ROOT);
        for host in [Host::ClaudeCode, Host::ClaudeDesktop, Host::Cursor] {
            let text = render(host, &launch, Shell::Windows).unwrap();
            let entry = server(&json_of(&text), "mcpServers");
            assert_eq!(entry["command"], WINDOWS_EXE, "{host:?}");
            assert_eq!(entry["args"], json!(["--root", WINDOWS_ROOT]), "{host:?}");
            assert!(
                text.contains(r#""C:\\Users\\Zoë\\My Tools\\mcp-project-helper.exe""#),
                "backslashes are escaped in {host:?}:\n{text}"
            );
        }
    }

    #[test]
    fn vscode_uses_servers_with_stdio_type() {
        let launch = Launch::native("/opt/bin/mcp-project-helper", "/home/ann/shop");
        let json = json_of(&render(Host::Vscode, &launch, Shell::Posix).unwrap());
        assert!(json.get("mcpServers").is_none());
        let entry = server(&json, "servers");
        assert_eq!(entry["type"], "stdio");
        assert_eq!(entry["command"], "/opt/bin/mcp-project-helper");
        assert_eq!(entry["args"], json!(["--root", "/home/ann/shop"]));
    }

    #[test]
    fn claude_code_prints_the_one_liner_and_the_mcp_json_form() {
        let launch = Launch::native("/opt/bin/mcp-project-helper", "/home/ann/shop");
        let text = render(Host::ClaudeCode, &launch, Shell::Posix).unwrap();
        assert!(text.contains(
            "\nclaude mcp add --transport stdio project-helper -- /opt/bin/mcp-project-helper --root /home/ann/shop\n"
        ), "{text}");
        let entry = server(&json_of(&text), "mcpServers");
        assert_eq!(entry["command"], "/opt/bin/mcp-project-helper");
    }

    #[test]
    fn one_liner_quotes_paths_for_the_shell() {
        let launch = Launch::native(WINDOWS_EXE, WINDOWS_ROOT);
        assert_eq!(
            claude_mcp_add(&launch, Shell::Windows),
            r#"claude mcp add --transport stdio project-helper -- "C:\Users\Zoë\My Tools\mcp-project-helper.exe" --root D:\work\shop"#
        );
        let launch = Launch::native("/home/o'neil/bin/mcp-project-helper", "/srv/my shop");
        assert_eq!(
            claude_mcp_add(&launch, Shell::Posix),
            r#"claude mcp add --transport stdio project-helper -- '/home/o'\''neil/bin/mcp-project-helper' --root '/srv/my shop'"#
        );
    }

    #[test]
    fn docker_form_mounts_the_root_read_only() {
        let launch = Launch::docker(WINDOWS_ROOT);
        let entry = server(
            &json_of(&render(Host::Cursor, &launch, Shell::Windows).unwrap()),
            "mcpServers",
        );
        assert_eq!(entry["command"], "docker");
        assert_eq!(
            entry["args"],
            json!([
                "run",
                "-i",
                "--rm",
                "--network",
                "none",
                "-v",
                r"D:\work\shop:/project:ro",
                IMAGE
            ])
        );
    }

    #[test]
    fn every_host_snippet_is_comment_lines_then_json() {
        let launch = Launch::native("/bin/x", "/p");
        for host in [Host::ClaudeDesktop, Host::Cursor, Host::Vscode] {
            let text = render(host, &launch, Shell::Posix).unwrap();
            let (comments, json) = text.split_at(text.find("\n{").expect("json") + 1);
            assert!(comments.lines().all(|l| l.starts_with('#')), "{text}");
            serde_json::from_str::<Value>(json).expect("rest is exactly one JSON document");
        }
    }
}
